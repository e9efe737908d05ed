// Symbolic interval evaluation: the region [min, max] an expression covers as some of its
// variables range over intervals. Bound inference uses it to turn a consumer's loop ranges into
// the region of a producer it reads, e.g. io*8 + ii with ii in [0, 7] -> [io*8, io*8 + 7].
// Endpoints are simplified; an undefined endpoint is unbounded on that side.
#include "arith_internal.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/structural.h"

namespace kiln::ir::arith {

namespace {

class IntervalEvaluator {
 public:
  IntervalEvaluator(const AnalyzerState& st, const VarMap<IntervalSet>& dom) : st_(st), dom_(dom) {}

  IntervalSet eval(const Expr& e) {
    if (!depends(e)) return point(simp(e));
    switch (e.kind()) {
      case ExprKind::Var: return eval_var(e);
      case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div:
      case ExprKind::Mod: case ExprKind::FloorDiv: case ExprKind::FloorMod: case ExprKind::Min:
      case ExprKind::Max: {
        const auto* op = e.as<BinaryNode>();
        if (!op->a.dtype().is_int() || op->a.dtype().is_vector()) return {};
        return eval_binary(e.kind(), eval(op->a), eval(op->b));
      }
      case ExprKind::Select: {
        const auto* op = e.as<SelectNode>();
        return unite(eval(op->true_value), eval(op->false_value));
      }
      case ExprKind::Cast: {
        const auto* op = e.as<CastNode>();
        DataType from = op->value.dtype(), to = e.dtype();
        // Only widening integer casts keep order and values.
        if (!from.is_int() || !to.is_int() || to.bits < from.bits) return {};
        IntervalSet v = eval(op->value);
        return make(v.min.defined() ? simp(cast(to, v.min)) : Expr(),
                    v.max.defined() ? simp(cast(to, v.max)) : Expr());
      }
      case ExprKind::Let: {
        const auto* op = e.as<LetNode>();
        local_[op->var.get()] = eval(op->value);
        return eval(op->body);
      }
      case ExprKind::Broadcast: return eval(e.as<BroadcastNode>()->value);
      case ExprKind::Ramp: {
        const auto* op = e.as<RampNode>();
        IntervalSet base = eval(op->base);
        IntervalSet last = eval_binary(ExprKind::Mul, eval(op->stride),
                                       point(make_int(op->stride.dtype(), op->lanes - 1)));
        IntervalSet zero = point(make_zero(op->stride.dtype()));
        return eval_binary(ExprKind::Add, base, unite(zero, last));
      }
      default: return {};
    }
  }

 private:
  bool depends(const Expr& e) const {
    return uses_var(e, [this](const VarNode* v) {
      if (dom_.count(v) || local_.count(v)) return true;
      const VarInfo* info = st_.find(v);
      return info && (info->range || info->value.defined());
    });
  }

  Expr simp(const Expr& e) const { return rewrite_simplify(st_, e); }

  static IntervalSet point(const Expr& e) { return IntervalSet::single_point(e); }

  // Keeps single points recognisable (is_single_point compares identity).
  static IntervalSet make(const Expr& lo, const Expr& hi) {
    if (lo.defined() && hi.defined() && structural_equal(lo, hi)) return {lo, lo};
    return {lo, hi};
  }

  IntervalSet eval_var(const Expr& e) {
    const VarNode* v = e.as<VarNode>();
    if (auto it = local_.find(v); it != local_.end()) return it->second;
    if (auto it = dom_.find(v); it != dom_.end()) return it->second;
    const VarInfo* info = st_.find(v);
    if (info && info->value.defined()) return guarded_eval(info->value);
    if (!info || !info->range) return point(e);
    // A bound variable covers its range; the range ends may mention domain variables.
    const Range& r = *info->range;
    IntervalSet lo = guarded_eval(r.min);
    IntervalSet hi = guarded_eval(simp(sub(add(r.min, r.extent), make_int(r.min.dtype(), 1))));
    return make(lo.min, hi.max);
  }

  IntervalSet guarded_eval(const Expr& e) {
    // Ranges and values could in principle refer back to themselves; stop recursing deep.
    if (depth_ > 16) return {};
    ++depth_;
    IntervalSet r = eval(e);
    --depth_;
    return r;
  }

  IntervalSet unite(const IntervalSet& a, const IntervalSet& b) const {
    Expr lo = a.min.defined() && b.min.defined() ? simp(min(a.min, b.min)) : Expr();
    Expr hi = a.max.defined() && b.max.defined() ? simp(max(a.max, b.max)) : Expr();
    return make(lo, hi);
  }

  // Sign of a scalar expression from its constant bound: 1 (>= 0), -1 (<= 0), 0 unknown.
  int sign_of(const Expr& e) const {
    IntBound b = compute_bound(st_, nullptr, e);
    if (b.min_value >= 0) return 1;
    if (b.max_value <= 0) return -1;
    return 0;
  }

  Expr bin(ExprKind k, const Expr& x, const Expr& y) const {
    return x.defined() && y.defined() ? simp(make_binary(k, x, y)) : Expr();
  }

  // x op p for a single point p of known sign: monotone, so endpoints map to endpoints.
  IntervalSet monotone(ExprKind k, const IntervalSet& a, const Expr& p, int sign) const {
    Expr lo = bin(k, a.min, p), hi = bin(k, a.max, p);
    return sign > 0 ? make(lo, hi) : make(hi, lo);
  }

  IntervalSet eval_binary(ExprKind k, const IntervalSet& a, const IntervalSet& b) {
    switch (k) {
      case ExprKind::Add: return make(bin(k, a.min, b.min), bin(k, a.max, b.max));
      case ExprKind::Sub: return make(bin(k, a.min, b.max), bin(k, a.max, b.min));
      case ExprKind::Min: case ExprKind::Max: {
        // min: the low end needs both lows, the high end is capped by either high.
        bool is_min = k == ExprKind::Min;
        const Expr& a_lo = is_min ? a.min : a.max;
        const Expr& b_lo = is_min ? b.min : b.max;
        const Expr& a_hi = is_min ? a.max : a.min;
        const Expr& b_hi = is_min ? b.max : b.min;
        Expr both = bin(k, a_lo, b_lo);
        Expr either = a_hi.defined() && b_hi.defined() ? bin(k, a_hi, b_hi)
                                                       : (a_hi.defined() ? a_hi : b_hi);
        return is_min ? make(both, either) : make(either, both);
      }
      case ExprKind::Mul: {
        if (b.is_single_point() && sign_of(b.min) != 0) return monotone(k, a, b.min, sign_of(b.min));
        if (a.is_single_point() && sign_of(a.min) != 0) return monotone(k, b, a.min, sign_of(a.min));
        return corners(k, a, b);
      }
      case ExprKind::FloorDiv: case ExprKind::Div: {
        // Both floor and C division are monotone in the dividend for a fixed-sign divisor.
        if (b.is_single_point()) {
          IntBound bb = compute_bound(st_, nullptr, b.min);
          if (bb.min_value > 0) return monotone(k, a, b.min, 1);
          if (bb.max_value < 0) return monotone(k, a, b.min, -1);
        }
        return corners(k, a, b);
      }
      case ExprKind::FloorMod: case ExprKind::Mod: {
        if (!b.is_single_point()) return {};
        IntBound bb = compute_bound(st_, nullptr, b.min);
        if (bb.min_value <= 0) return {};
        const Expr& c = b.min;
        if (a.is_single_point()) return point(bin(k, a.min, c));
        bool nonneg = a.min.defined() && sign_of(a.min) > 0;
        if (k == ExprKind::Mod && !nonneg) return {};
        ExprKind fk = ExprKind::FloorDiv;
        Expr q0 = bin(fk, a.min, c), q1 = bin(fk, a.max, c);
        // Inside one period the remainder is the dividend shifted: it stays monotone.
        if (q0.defined() && q1.defined() && structural_equal(q0, q1)) {
          return make(bin(k, a.min, c), bin(k, a.max, c));
        }
        return make(make_zero(c.dtype()), simp(sub(c, make_int(c.dtype(), 1))));
      }
      default: return {};
    }
  }

  // Both intervals with constant ends: the extreme corner values.
  IntervalSet corners(ExprKind k, const IntervalSet& a, const IntervalSet& b) const {
    const IntImmNode* v[4] = {a.min.defined() ? a.min.as<IntImmNode>() : nullptr,
                              a.max.defined() ? a.max.as<IntImmNode>() : nullptr,
                              b.min.defined() ? b.min.as<IntImmNode>() : nullptr,
                              b.max.defined() ? b.max.as<IntImmNode>() : nullptr};
    for (auto* p : v) {
      if (!p) return {};
    }
    if ((k == ExprKind::FloorDiv || k == ExprKind::Div) && v[2]->value <= 0 && v[3]->value >= 0) return {};
    IntBound ab, bb;
    ab.min_value = v[0]->value, ab.max_value = v[1]->value;
    bb.min_value = v[2]->value, bb.max_value = v[3]->value;
    int64_t lo = kPosInf, hi = kNegInf;
    for (int64_t x : {ab.min_value, ab.max_value}) {
      for (int64_t y : {bb.min_value, bb.max_value}) {
        int64_t r = k == ExprKind::Mul ? bound_mul(x, y)
                    : k == ExprKind::FloorDiv ? floordiv_int(x, y)
                                              : x / y;
        lo = std::min(lo, r);
        hi = std::max(hi, r);
      }
    }
    if (is_inf(lo) || is_inf(hi)) return {};
    DataType t = a.min.dtype();
    return make(make_int(t, lo), make_int(t, hi));
  }

  const AnalyzerState& st_;
  const VarMap<IntervalSet>& dom_;
  VarMap<IntervalSet> local_;
  int depth_ = 0;
};

}  // namespace

IntervalSet eval_interval_impl(const AnalyzerState& st, const Expr& e, const VarMap<IntervalSet>& dom) {
  return IntervalEvaluator(st, dom).eval(e);
}

}  // namespace kiln::ir::arith
