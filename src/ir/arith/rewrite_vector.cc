// Vector (Ramp/Broadcast) arithmetic, floating-point folding and casts of constants.
// Vector rules keep lane types intact: they only move work into the scalar base/stride/value,
// where the scalar rules apply.
#include <cmath>

#include "kiln/ir/structural.h"
#include "rewriter.h"

namespace kiln::ir::arith {

Expr Rewriter::rw_vector(ExprKind k, const Expr& a, const Expr& b) {
  const auto* ba = a.as<BroadcastNode>();
  const auto* bb = b.as<BroadcastNode>();
  const auto* ra = a.as<RampNode>();
  const auto* rb = b.as<RampNode>();
  if (ba && bb) return broadcast(rw_binary(k, ba->value, bb->value), ba->lanes);
  if (!a.dtype().element_of().is_int()) return Expr();
  if (is_comparison(k)) return rw_vector_compare(k, a, b);
  switch (k) {
    case ExprKind::Add: case ExprKind::Sub: {
      if (ra && rb) {
        return ramp(rw_binary(k, ra->base, rb->base), rw_binary(k, ra->stride, rb->stride), ra->lanes);
      }
      if (ra && bb) return ramp(rw_binary(k, ra->base, bb->value), ra->stride, ra->lanes);
      if (ba && rb) {
        Expr stride = k == ExprKind::Add ? rb->stride : rw_binary(ExprKind::Sub, make_zero(rb->stride.dtype()), rb->stride);
        return ramp(rw_binary(k, ba->value, rb->base), stride, rb->lanes);
      }
      return Expr();
    }
    case ExprKind::Mul: {
      if (ra && bb) {
        return ramp(rw_binary(k, ra->base, bb->value), rw_binary(k, ra->stride, bb->value), ra->lanes);
      }
      if (ba && rb) {
        return ramp(rw_binary(k, ba->value, rb->base), rw_binary(k, ba->value, rb->stride), rb->lanes);
      }
      return Expr();
    }
    case ExprKind::FloorDiv: case ExprKind::FloorMod: {
      // ramp(base, s, n) by a positive constant c.
      if (!ra || !bb) return Expr();
      const IntImmNode* c = as_int_imm(bb->value);
      const IntImmNode* s = as_int_imm(ra->stride);
      if (!c || c->value <= 0) return Expr();
      const DataType t = ra->base.dtype();
      const int n = ra->lanes;
      if (s && s->value % c->value == 0) {
        // Every lane steps by a whole multiple of c: the quotient is a ramp, the rest constant.
        if (k == ExprKind::FloorMod) return broadcast(rw_floormod(ra->base, bb->value), n);
        Expr q = rw_floordiv(ra->base, bb->value);
        int64_t qs = s->value / c->value;
        return qs == 0 ? broadcast(q, n) : ramp(q, make_int(t, qs), n);
      }
      // All lanes in one period of c (first and last lane have the same quotient; lanes in
      // between do too since the ramp is monotone).
      Expr q0 = rw_floordiv(ra->base, bb->value);
      Expr last = rw_linear(ExprKind::Add, ra->base,
                            rw_linear(ExprKind::Mul, ra->stride, make_int(t, n - 1)));
      Expr q1 = rw_floordiv(last, bb->value);
      if (!structural_equal(q0, q1)) return Expr();
      if (k == ExprKind::FloorDiv) return broadcast(q0, n);
      return ramp(rw_floormod(ra->base, bb->value), ra->stride, n);
    }
    default: return Expr();
  }
}

Expr Rewriter::rw_vector_compare(ExprKind k, const Expr& a, const Expr& b) {
  // Decided when every lane agrees: the lane-wise difference is a ramp or broadcast whose
  // bound covers all lanes (a vectorized split guard ramp(io*8, 1, 8) < broadcast(64)).
  if (!(a.as<RampNode>() || a.as<BroadcastNode>()) || !(b.as<RampNode>() || b.as<BroadcastNode>())) {
    return Expr();
  }
  Expr d = rw_vector(ExprKind::Sub, a, b);
  if (!d.defined() || !(d.as<RampNode>() || d.as<BroadcastNode>())) return Expr();
  IntBound db = bound(d);
  std::optional<bool> v;
  switch (k) {
    case ExprKind::LT: if (db.max_value < 0) v = true; else if (db.min_value >= 0) v = false; break;
    case ExprKind::LE: if (db.max_value <= 0) v = true; else if (db.min_value > 0) v = false; break;
    case ExprKind::GT: if (db.min_value > 0) v = true; else if (db.max_value <= 0) v = false; break;
    case ExprKind::GE: if (db.min_value >= 0) v = true; else if (db.max_value < 0) v = false; break;
    case ExprKind::EQ: if (db.min_value > 0 || db.max_value < 0) v = false; break;
    case ExprKind::NE: if (db.min_value > 0 || db.max_value < 0) v = true; break;
    default: break;
  }
  if (!v) return Expr();
  return make_const(DataType::boolean(a.dtype().lanes), *v ? 1 : 0);
}

Expr Rewriter::rw_float(ExprKind k, const Expr& a, const Expr& b) {
  auto x = as_const_float(a), y = as_const_float(b);
  const DataType t = a.dtype();
  if (x && y) {
    switch (k) {
      case ExprKind::Add: return make_float(t, *x + *y);
      case ExprKind::Sub: return make_float(t, *x - *y);
      case ExprKind::Mul: return make_float(t, *x * *y);
      case ExprKind::Div:
        if (*y != 0) return make_float(t, *x / *y);
        break;
      case ExprKind::Min: return make_float(t, std::fmin(*x, *y));
      case ExprKind::Max: return make_float(t, std::fmax(*x, *y));
      default: break;
    }
  }
  // Identities that hold for every float (x*0 does not: NaN and infinities).
  if (k == ExprKind::Add && y && *y == 0) return a;
  if (k == ExprKind::Add && x && *x == 0) return b;
  if (k == ExprKind::Sub && y && *y == 0) return a;
  if (k == ExprKind::Mul && y && *y == 1) return a;
  if (k == ExprKind::Mul && x && *x == 1) return b;
  if (k == ExprKind::Div && y && *y == 1) return a;
  return make_binary(k, a, b);
}

Expr Rewriter::rw_cast(DataType t, const Expr& v) {
  if (v.dtype() == t) return v;
  if (!t.is_scalar()) return cast(t, v);
  if (const IntImmNode* c = as_int_imm(v)) {
    if (t.is_bool()) return make_const(t, c->value != 0 ? 1 : 0);
    if (t.is_floating()) return make_float(t, static_cast<double>(c->value));
    if (t.is_integer()) {
      // Wrap to the target width, as the conversion does at run time.
      uint64_t u = static_cast<uint64_t>(c->value);
      if (t.bits < 64) {
        u &= (uint64_t{1} << t.bits) - 1;
        if (t.is_int() && (u >> (t.bits - 1)) & 1) u |= ~((uint64_t{1} << t.bits) - 1);
      }
      return make_int(t, static_cast<int64_t>(u));
    }
  }
  if (const auto* f = v.as<FloatImmNode>()) {
    if (t.is_bool()) return make_const(t, f->value != 0 ? 1 : 0);
    if (t.is_floating()) {
      double d = t.bits == 32 ? static_cast<double>(static_cast<float>(f->value)) : f->value;
      return make_float(t, d);
    }
    // Float to integer truncates; out-of-range or NaN is undefined, so it is left alone.
    if (t.is_integer() && std::isfinite(f->value)) {
      IntBound tb = type_bound(t);
      double tr = std::trunc(f->value);
      if (tr >= static_cast<double>(tb.min_value) && tr <= static_cast<double>(tb.max_value) &&
          std::fabs(tr) < 9.2e18) {
        return make_int(t, static_cast<int64_t>(tr));
      }
    }
  }
  return cast(t, v);
}

}  // namespace kiln::ir::arith
