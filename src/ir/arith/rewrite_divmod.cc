// Division and modulo rules. All identities used are exact for floor semantics:
//   floordiv(q*c + r, c) = q + floordiv(r, c)         floormod(q*c + r, c) = floormod(r, c)
//   floordiv(g*a, g*b)   = floordiv(a, b)  (g > 0)     floormod(g*a, g*b)  = g*floormod(a, b)
//   floordiv(floordiv(x, a), b) = floordiv(x, a*b)     floormod(floormod(x, a), b) = floormod(x, b)
//   (a, b > 0)                                          (b divides a)
// and the range-dependent ones fold floordiv(r, c) to k and floormod(r, c) to r - k*c when the
// bound of r lies inside one period [k*c, (k+1)*c).
#include <numeric>

#include "rewriter.h"

namespace kiln::ir::arith {

namespace {

// The quotient k when every value of b lies in [k*c, (k+1)*c).
std::optional<int64_t> same_period(const IntBound& b, int64_t c) {
  if (is_inf(b.min_value) || is_inf(b.max_value)) return std::nullopt;
  int64_t lo = floordiv_int(b.min_value, c), hi = floordiv_int(b.max_value, c);
  if (lo != hi) return std::nullopt;
  return lo;
}

// Divides every coefficient and the constant of f by g (which divides them all).
LinearForm divide_form(const LinearForm& f, int64_t g) {
  LinearForm r;
  r.dtype = f.dtype;
  for (const LinearTerm& t : f.terms) r.add_term(t.term, t.coeff / g);
  r.constant = f.constant / g;
  return r;
}

int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

bool single_coeff1(const LinearForm& f, ExprKind k) {
  return f.terms.size() == 1 && f.constant == 0 && f.terms[0].coeff == 1 &&
         f.terms[0].term.kind() == k;
}

}  // namespace

Expr Rewriter::rw_floordiv(const Expr& a, const Expr& b) {
  const DataType t = a.dtype();
  const IntImmNode* cb = as_int_imm(b);
  if (cb && cb->value != 0) {
    const int64_t c = cb->value;
    if (const IntImmNode* ca = as_int_imm(a)) return make_int(t, floordiv_int(ca->value, c));
    if (c == 1) return a;
    if (c == -1) return rw_linear(ExprKind::Mul, a, make_int(t, -1));
  }
  if (!cb || cb->value <= 0) {
    // Non-constant divisor: only the range rule (0 <= a < b) applies.
    IntBound bb = bound(b), ba = bound(a);
    if (bb.min_value > 0 && ba.min_value >= 0 && ba.max_value < bb.min_value) return make_int(t, 0);
    return floordiv(a, b);
  }
  const int64_t c = cb->value;
  LinearForm f = to_linear(a);
  if (f.overflow) return floordiv(a, b);
  // Split a = q*c + r: terms whose coefficient c divides move to the quotient; the constant
  // moves only when c divides it too (floordiv(x + 9, 8) stays as it reads).
  LinearForm q, r;
  q.dtype = r.dtype = t;
  for (const LinearTerm& term : f.terms) {
    if (term.coeff % c == 0) {
      q.add_term(term.term, term.coeff / c);
    } else {
      r.add_term(term.term, term.coeff);
    }
  }
  if (f.constant % c == 0) {
    q.add_const(f.constant / c);
  } else {
    r.add_const(f.constant);
  }
  if (auto k = same_period(bound(r), c)) {
    q.add_const(*k);
    return canonical(q);
  }
  // floordiv(g*r', g*c') = floordiv(r', c')
  int64_t g = std::gcd(std::gcd(coeff_gcd(r), abs64(r.constant)), c);
  LinearForm rr = g > 1 ? divide_form(r, g) : r;
  int64_t cc = c / g;
  Expr inner;
  const auto* nested = single_coeff1(rr, ExprKind::FloorDiv) ? rr.terms[0].term.as<BinaryNode>() : nullptr;
  const IntImmNode* c2 = nested ? as_int_imm(nested->b) : nullptr;
  int64_t prod;
  if (c2 && c2->value > 0 && !__builtin_mul_overflow(c2->value, cc, &prod)) {
    inner = rw_floordiv(nested->a, make_int(t, prod));
  } else {
    inner = floordiv(from_linear(rr), make_int(t, cc));
  }
  if (q.terms.empty() && q.constant == 0) return inner;
  q.add(inner, 1);
  Expr res = canonical(q);
  return res.defined() ? res : floordiv(a, b);
}

Expr Rewriter::rw_floormod(const Expr& a, const Expr& b) {
  const DataType t = a.dtype();
  const IntImmNode* cb = as_int_imm(b);
  if (cb && cb->value != 0) {
    const int64_t c = cb->value;
    if (const IntImmNode* ca = as_int_imm(a)) return make_int(t, floormod_int(ca->value, c));
    if (c == 1 || c == -1) return make_int(t, 0);
  }
  if (!cb || cb->value <= 0) {
    IntBound bb = bound(b), ba = bound(a);
    if (bb.min_value > 0 && ba.min_value >= 0 && ba.max_value < bb.min_value) return a;
    return floormod(a, b);
  }
  const int64_t c = cb->value;
  LinearForm f = to_linear(a);
  if (f.overflow) return floormod(a, b);
  // Multiples of c vanish: coefficients reduce modulo c, the constant into [0, c).
  LinearForm r;
  r.dtype = t;
  for (const LinearTerm& term : f.terms) r.add_term(term.term, term.coeff % c);
  r.add_const(floormod_int(f.constant, c));
  if (auto k = same_period(bound(r), c)) {
    r.add_const(-*k * c);
    return canonical(r);
  }
  // floormod(g*r', g*c') = g * floormod(r', c')
  int64_t g = std::gcd(std::gcd(coeff_gcd(r), abs64(r.constant)), c);
  LinearForm rr = g > 1 ? divide_form(r, g) : r;
  int64_t cc = c / g;
  Expr inner;
  const auto* nested = single_coeff1(rr, ExprKind::FloorMod) ? rr.terms[0].term.as<BinaryNode>() : nullptr;
  const IntImmNode* c2 = nested ? as_int_imm(nested->b) : nullptr;
  if (c2 && c2->value > 0 && c2->value % cc == 0) {
    inner = rw_floormod(nested->a, make_int(t, cc));
  } else {
    inner = floormod(from_linear(rr), make_int(t, cc));
  }
  if (g == 1) return inner;
  LinearForm out;
  out.dtype = t;
  out.add(inner, g);
  Expr res = canonical(out);
  return res.defined() ? res : floormod(a, b);
}

Expr Rewriter::rw_truncdiv(const Expr& a, const Expr& b) {
  const IntImmNode* ca = as_int_imm(a);
  const IntImmNode* cb = as_int_imm(b);
  if (cb && cb->value != 0) {
    if (ca) {
      if (cb->value == -1 && ca->value == kNegInf) return truncdiv(a, b);  // would trap
      return make_int(a.dtype(), ca->value / cb->value);
    }
    if (cb->value == 1) return a;
  }
  // C division agrees with floor division when dividend >= 0 and divisor > 0.
  if (bound(b).min_value > 0 && bound(a).min_value >= 0) return rw_floordiv(a, b);
  return truncdiv(a, b);
}

Expr Rewriter::rw_truncmod(const Expr& a, const Expr& b) {
  const IntImmNode* ca = as_int_imm(a);
  const IntImmNode* cb = as_int_imm(b);
  if (cb && cb->value != 0) {
    if (ca) {
      if (cb->value == -1) return make_int(a.dtype(), 0);
      return make_int(a.dtype(), ca->value % cb->value);
    }
    if (cb->value == 1 || cb->value == -1) return make_int(a.dtype(), 0);
  }
  if (bound(b).min_value > 0 && bound(a).min_value >= 0) return rw_floormod(a, b);
  return truncmod(a, b);
}

}  // namespace kiln::ir::arith
