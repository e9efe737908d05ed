// Constant integer bounds: the range [min, max] an integer expression can take given what the
// analyzer knows about its variables. Everything is inclusive and saturates to +-infinity.
#include <algorithm>

#include "arith_internal.h"

namespace kiln::ir::arith {

IntBound type_bound(DataType t) {
  IntBound b;
  if (t.is_bool()) {
    b.min_value = 0;
    b.max_value = 1;
  } else if (t.is_int() && t.bits < 64) {
    b.min_value = -(int64_t{1} << (t.bits - 1));
    b.max_value = (int64_t{1} << (t.bits - 1)) - 1;
  } else if (t.is_uint()) {
    b.min_value = 0;
    b.max_value = t.bits < 63 ? (int64_t{1} << t.bits) - 1 : kPosInf;
  }
  return b;
}

IntBound intersect(const IntBound& a, const IntBound& b) {
  IntBound r;
  r.min_value = std::max(a.min_value, b.min_value);
  r.max_value = std::min(a.max_value, b.max_value);
  return r;
}

namespace {

IntBound make_bound(int64_t lo, int64_t hi) {
  IntBound b;
  b.min_value = lo;
  b.max_value = hi;
  return b;
}

IntBound unite(const IntBound& a, const IntBound& b) {
  return make_bound(std::min(a.min_value, b.min_value), std::max(a.max_value, b.max_value));
}

// Bound of the four corner values of a monotone-per-argument binary function.
template <typename F>
IntBound corners(const IntBound& a, const IntBound& b, F f) {
  int64_t v[4] = {f(a.min_value, b.min_value), f(a.min_value, b.max_value),
                  f(a.max_value, b.min_value), f(a.max_value, b.max_value)};
  return make_bound(*std::min_element(v, v + 4), *std::max_element(v, v + 4));
}

// Floor (or truncating) division with an infinite dividend; divisor finite and non-zero.
int64_t bound_div(int64_t a, int64_t b, bool floor_mode) {
  if (is_inf(a)) return ((a > 0) == (b > 0)) ? kPosInf : kNegInf;
  return floor_mode ? floordiv_int(a, b) : a / b;
}

class BoundEvaluator {
 public:
  BoundEvaluator(const AnalyzerState& st, const VarMap<IntBound>* local) : st_(st), local_(local) {}

  IntBound eval(const Expr& e) {
    const DataType t = e.dtype();
    IntBound tb = type_bound(t.element_of());
    if (t.is_floating() || t.is_handle()) return IntBound();
    IntBound raw = eval_raw(e);
    // Signed index arithmetic is assumed not to overflow (as everywhere in index math), so
    // the type's range clips the bound. Unsigned arithmetic and narrowing casts wrap around
    // by definition: a bound leaving the type's range says nothing.
    bool wraps = t.is_uint() || e.kind() == ExprKind::Cast;
    if (wraps && (raw.min_value < tb.min_value || raw.max_value > tb.max_value)) return tb;
    return intersect(raw, tb);
  }

 private:
  IntBound eval_raw(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::IntImm: {
        int64_t v = e.as<IntImmNode>()->value;
        return make_bound(v, v);
      }
      case ExprKind::Var: return eval_var(e.as<VarNode>());
      case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div:
      case ExprKind::Mod: case ExprKind::FloorDiv: case ExprKind::FloorMod: case ExprKind::Min:
      case ExprKind::Max: {
        const auto* op = e.as<BinaryNode>();
        return eval_arith(e.kind(), eval(op->a), eval(op->b));
      }
      case ExprKind::Select: {
        const auto* op = e.as<SelectNode>();
        return unite(eval(op->true_value), eval(op->false_value));
      }
      case ExprKind::Cast: {
        const auto* op = e.as<CastNode>();
        if (!op->value.dtype().is_integer() && !op->value.dtype().is_bool()) return IntBound();
        return eval(op->value);  // eval() intersects with the target type's range
      }
      case ExprKind::Broadcast: return eval(e.as<BroadcastNode>()->value);
      case ExprKind::Ramp: {
        const auto* op = e.as<RampNode>();
        IntBound base = eval(op->base);
        IntBound step = eval_arith(ExprKind::Mul, eval(op->stride), make_bound(0, op->lanes - 1));
        return eval_arith(ExprKind::Add, base, step);
      }
      case ExprKind::Let: {
        const auto* op = e.as<LetNode>();
        VarMap<IntBound> inner = local_ ? *local_ : VarMap<IntBound>();
        inner[op->var.get()] = eval(op->value);
        return BoundEvaluator(st_, &inner).eval(op->body);
      }
      default: return IntBound();  // loads, calls, comparisons: the type's range
    }
  }

  IntBound eval_var(const VarNode* v) {
    if (local_) {
      auto it = local_->find(v);
      if (it != local_->end()) return it->second;
    }
    if (const VarInfo* info = st_.find(v)) return info->bound;
    return IntBound();
  }

  static IntBound eval_arith(ExprKind k, const IntBound& a, const IntBound& b) {
    switch (k) {
      case ExprKind::Add:
        return make_bound(bound_add(a.min_value, b.min_value), bound_add(a.max_value, b.max_value));
      case ExprKind::Sub:
        return make_bound(bound_add(a.min_value, bound_neg(b.max_value)),
                          bound_add(a.max_value, bound_neg(b.min_value)));
      case ExprKind::Mul: return corners(a, b, bound_mul);
      case ExprKind::Min:
        return make_bound(std::min(a.min_value, b.min_value), std::min(a.max_value, b.max_value));
      case ExprKind::Max:
        return make_bound(std::max(a.min_value, b.min_value), std::max(a.max_value, b.max_value));
      case ExprKind::FloorDiv: case ExprKind::Div: {
        // Monotone in each argument on either side of zero: corners work when the divisor
        // range is finite and excludes zero.
        if (is_inf(b.min_value) || is_inf(b.max_value)) return IntBound();
        if (b.min_value > 0 || b.max_value < 0) {
          bool fl = k == ExprKind::FloorDiv;
          return corners(a, b, [fl](int64_t x, int64_t y) { return bound_div(x, y, fl); });
        }
        return IntBound();
      }
      case ExprKind::FloorMod: {
        if (b.min_value > 0) {
          // Result in [0, b.max - 1]; a dividend already inside [0, b.min) is unchanged.
          if (a.min_value >= 0 && a.max_value < b.min_value) return a;
          int64_t hi = b.max_value == kPosInf ? kPosInf : b.max_value - 1;
          if (a.min_value >= 0) hi = std::min(hi, a.max_value);
          return make_bound(0, hi);
        }
        if (b.max_value < 0) {
          int64_t lo = b.min_value == kNegInf ? kNegInf : b.min_value + 1;
          return make_bound(lo, 0);
        }
        return IntBound();
      }
      case ExprKind::Mod: {
        // C remainder takes the dividend's sign, magnitude below |divisor|.
        if (b.min_value > 0 || b.max_value < 0) {
          int64_t m = b.min_value > 0 ? b.max_value : bound_neg(b.min_value);  // max |divisor|
          int64_t lim = m == kPosInf ? kPosInf : m - 1;
          int64_t lo = a.min_value >= 0 ? 0 : std::max(a.min_value, bound_neg(lim));
          int64_t hi = a.max_value <= 0 ? 0 : std::min(a.max_value, lim);
          return make_bound(lo, hi);
        }
        return IntBound();
      }
      default: return IntBound();
    }
  }

  const AnalyzerState& st_;
  const VarMap<IntBound>* local_;
};

}  // namespace

IntBound compute_bound(const AnalyzerState& st, const VarMap<IntBound>* local, const Expr& e) {
  return BoundEvaluator(st, local).eval(e);
}

}  // namespace kiln::ir::arith
