// min/max, comparisons and boolean logic. Integer comparisons are decided from the constant
// bound of (a - b) taken through its linear form, so x + 1 > x holds whatever x is, and
// undecided ones are put in a normal form: terms with positive coefficients on the left,
// the rest and the constant on the right, common factor divided out (io*8 < 64 -> io < 8).
#include "kiln/ir/structural.h"
#include "rewriter.h"

namespace kiln::ir::arith {

namespace {

Expr bool_const(bool v) { return make_const(DataType::boolean(), v ? 1 : 0); }

bool fold_compare(ExprKind k, double a, double b) {
  switch (k) {
    case ExprKind::EQ: return a == b;
    case ExprKind::NE: return a != b;
    case ExprKind::LT: return a < b;
    case ExprKind::LE: return a <= b;
    case ExprKind::GT: return a > b;
    default: return a >= b;
  }
}

bool fold_compare_int(ExprKind k, int64_t a, int64_t b) {
  switch (k) {
    case ExprKind::EQ: return a == b;
    case ExprKind::NE: return a != b;
    case ExprKind::LT: return a < b;
    case ExprKind::LE: return a <= b;
    case ExprKind::GT: return a > b;
    default: return a >= b;
  }
}

}  // namespace

Expr Rewriter::rw_min_max(ExprKind k, const Expr& a, const Expr& b) {
  const bool is_min = k == ExprKind::Min;
  const IntImmNode* ca = as_int_imm(a);
  const IntImmNode* cb = as_int_imm(b);
  if (ca && cb) {
    return make_int(a.dtype(), is_min ? std::min(ca->value, cb->value) : std::max(ca->value, cb->value));
  }
  if (structural_equal(a, b)) return a;
  // Decided by the bound of the difference: min(x, y) -> x when x <= y.
  LinearForm d;
  d.dtype = a.dtype();
  d.add(a, 1);
  d.add(b, -1);
  if (!d.overflow) {
    IntBound db = bound(d);
    if (db.max_value <= 0) return is_min ? a : b;
    if (db.min_value >= 0) return is_min ? b : a;
  }
  // Constant last, and nested constants combined: min(min(x, 8), 4) -> min(x, 4).
  Expr x = cb ? a : b;
  const IntImmNode* c = cb ? cb : ca;
  if (c) {
    const auto* inner = x.as<BinaryNode>();
    const IntImmNode* c2 = inner && inner->kind == k ? as_int_imm(inner->b) : nullptr;
    if (c2) {
      int64_t v = is_min ? std::min(c->value, c2->value) : std::max(c->value, c2->value);
      return rw_min_max(k, inner->a, make_int(a.dtype(), v));
    }
    return make_binary(k, x, make_int(a.dtype(), c->value));
  }
  return make_binary(k, a, b);
}

Expr Rewriter::rw_compare(ExprKind k, const Expr& a, const Expr& b) {
  const DataType t = a.dtype();
  if (auto x = as_const_float(a), y = as_const_float(b); x && y && t.is_floating()) {
    return bool_const(fold_compare(k, *x, *y));
  }
  const IntImmNode* ca = as_int_imm(a);
  const IntImmNode* cb = as_int_imm(b);
  if (ca && cb) return bool_const(fold_compare_int(k, ca->value, cb->value));
  if (!is_index_type(t)) return make_binary(k, a, b);
  // a > b is b < a; a >= b is b <= a: only LT, LE, EQ, NE remain.
  Expr lhs = a, rhs = b;
  if (k == ExprKind::GT || k == ExprKind::GE) {
    std::swap(lhs, rhs);
    k = k == ExprKind::GT ? ExprKind::LT : ExprKind::LE;
  }
  LinearForm d;  // the comparison is d OP 0
  d.dtype = t;
  d.add(lhs, 1);
  d.add(rhs, -1);
  if (d.overflow) return make_binary(k, lhs, rhs);
  IntBound db = bound(d);
  switch (k) {
    case ExprKind::LT:
      if (db.max_value < 0) return bool_const(true);
      if (db.min_value >= 0) return bool_const(false);
      break;
    case ExprKind::LE:
      if (db.max_value <= 0) return bool_const(true);
      if (db.min_value > 0) return bool_const(false);
      break;
    case ExprKind::EQ:
      if (db.min_value == 0 && db.max_value == 0) return bool_const(true);
      if (db.min_value > 0 || db.max_value < 0) return bool_const(false);
      break;
    default:  // NE
      if (db.min_value == 0 && db.max_value == 0) return bool_const(false);
      if (db.min_value > 0 || db.max_value < 0) return bool_const(true);
      break;
  }
  if (d.terms.empty()) return make_binary(k, lhs, rhs);  // unreachable: constants decide
  // Divide out the common factor g of the terms: X*g + c OP 0.
  const int64_t g = coeff_gcd(d);
  int64_t c = d.constant;
  if (g > 1) {
    if (k == ExprKind::LT) {
      c = floordiv_int(c, g);  // X*g < -c  <=>  X < ceil(-c/g)  <=>  X + floor(c/g) < 0
    } else if (k == ExprKind::LE) {
      c = -floordiv_int(-c, g);  // X*g <= -c  <=>  X <= floor(-c/g)  <=>  X + ceil(c/g) <= 0
    } else {
      if (c % g != 0) return bool_const(k == ExprKind::NE);
      c /= g;
    }
  }
  LinearForm pos, neg;
  pos.dtype = neg.dtype = t;
  for (const LinearTerm& term : d.terms) {
    if (term.coeff > 0) {
      pos.add_term(term.term, term.coeff / g);
    } else {
      neg.add_term(term.term, -term.coeff / g);
    }
  }
  if (pos.terms.empty()) {
    // Equality is symmetric: keep the terms on the left (x + y == 3 rather than -3 == ...).
    if (k == ExprKind::EQ || k == ExprKind::NE) return make_binary(k, from_linear(neg), make_int(t, c));
    return make_binary(k, make_int(t, c), from_linear(neg));
  }
  neg.add_const(-c);
  if (neg.overflow) return make_binary(k, lhs, rhs);
  return make_binary(k, from_linear(pos), from_linear(neg));
}

Expr Rewriter::rw_logic(ExprKind k, const Expr& a, const Expr& b) {
  const bool is_and = k == ExprKind::And;
  auto ca = as_const_int(a), cb = as_const_int(b);
  // and: false absorbs, true is neutral; or: the other way round.
  if (ca) return (*ca != 0) == is_and ? b : a;
  if (cb) return (*cb != 0) == is_and ? a : b;
  if (structural_equal(a, b)) return a;
  return make_binary(k, a, b);
}

Expr Rewriter::rw_not(const Expr& a) {
  if (auto c = as_const_int(a)) return make_const(a.dtype(), *c ? 0 : 1);
  if (const auto* n = a.as<NotNode>()) return n->a;
  const auto* cmp = a.as<BinaryNode>();
  // Only integer comparisons flip: with a NaN both a < b and a >= b are false.
  if (cmp && is_comparison(cmp->kind) && cmp->a.dtype().is_integer() && a.dtype().is_scalar()) {
    ExprKind inv;
    switch (cmp->kind) {
      case ExprKind::EQ: inv = ExprKind::NE; break;
      case ExprKind::NE: inv = ExprKind::EQ; break;
      case ExprKind::LT: inv = ExprKind::GE; break;
      case ExprKind::LE: inv = ExprKind::GT; break;
      case ExprKind::GT: inv = ExprKind::LE; break;
      default: inv = ExprKind::LT; break;
    }
    return rw_compare(inv, cmp->a, cmp->b);
  }
  return logical_not(a);
}

}  // namespace kiln::ir::arith
