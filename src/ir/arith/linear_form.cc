// Linear forms: an integer expression seen as sum(coeff_i * term_i) + constant. The simplifier
// rewrites + - and multiplication by constants through them, which merges like terms and gives
// every sum one canonical printed shape.
#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "arith_internal.h"
#include "kiln/ir/structural.h"

namespace kiln::ir::arith {

void LinearForm::add_const(int64_t c) {
  if (__builtin_add_overflow(constant, c, &constant)) overflow = true;
}

int LinearForm::find(const Expr& t) const {
  for (size_t i = 0; i < terms.size(); ++i) {
    if (structural_equal(terms[i].term, t)) return static_cast<int>(i);
  }
  return -1;
}

void LinearForm::add_term(const Expr& term, int64_t coeff) {
  if (coeff == 0) return;
  int i = find(term);
  if (i < 0) {
    terms.push_back({term, coeff});
    return;
  }
  int64_t& c = terms[i].coeff;
  if (__builtin_add_overflow(c, coeff, &c)) overflow = true;
  if (c == 0) terms.erase(terms.begin() + i);
}

void LinearForm::add_form(const LinearForm& other, int64_t scale) {
  if (other.overflow) overflow = true;
  for (const LinearTerm& t : other.terms) {
    int64_t c;
    if (__builtin_mul_overflow(t.coeff, scale, &c)) overflow = true;
    add_term(t.term, c);
  }
  int64_t c;
  if (__builtin_mul_overflow(other.constant, scale, &c)) overflow = true;
  add_const(c);
}

void LinearForm::add(const Expr& e, int64_t scale) {
  if (scale == 0) return;
  int64_t s2;
  switch (e.kind()) {
    case ExprKind::IntImm: {
      if (__builtin_mul_overflow(e.as<IntImmNode>()->value, scale, &s2)) overflow = true;
      add_const(s2);
      return;
    }
    case ExprKind::Add: {
      const auto* op = e.as<BinaryNode>();
      add(op->a, scale);
      add(op->b, scale);
      return;
    }
    case ExprKind::Sub: {
      const auto* op = e.as<BinaryNode>();
      add(op->a, scale);
      if (scale == kNegInf) overflow = true;
      add(op->b, -scale);
      return;
    }
    case ExprKind::Mul: {
      const auto* op = e.as<BinaryNode>();
      if (auto c = as_const_int(op->b); c && op->b.as<IntImmNode>()) {
        if (__builtin_mul_overflow(*c, scale, &s2)) overflow = true;
        add(op->a, s2);
        return;
      }
      if (auto c = as_const_int(op->a); c && op->a.as<IntImmNode>()) {
        if (__builtin_mul_overflow(*c, scale, &s2)) overflow = true;
        add(op->b, s2);
        return;
      }
      break;
    }
    default: break;
  }
  add_term(e, scale);
}

LinearForm to_linear(const Expr& e) {
  LinearForm f;
  f.dtype = e.dtype();
  f.add(e, 1);
  return f;
}

int64_t coeff_gcd(const LinearForm& f) {
  int64_t g = 0;
  for (const LinearTerm& t : f.terms) g = std::gcd(g, t.coeff < 0 ? -t.coeff : t.coeff);
  return g;
}

namespace {

Expr scaled(const Expr& t, int64_t c, DataType dt) {
  return c == 1 ? t : mul(t, make_int(dt, c));
}

}  // namespace

Expr from_linear(const LinearForm& f) {
  KILN_CHECK(!f.overflow) << "from_linear on an overflowed form";
  std::vector<LinearTerm> ts = f.terms;
  // Positive terms first so sums read "a + b - c"; larger coefficients first so flattened
  // row-major indices read i*64 + j*8 + k; then a structural order for determinism.
  std::stable_sort(ts.begin(), ts.end(), [](const LinearTerm& x, const LinearTerm& y) {
    bool px = x.coeff > 0, py = y.coeff > 0;
    if (px != py) return px;
    uint64_t ax = x.coeff < 0 ? 0 - static_cast<uint64_t>(x.coeff) : x.coeff;
    uint64_t ay = y.coeff < 0 ? 0 - static_cast<uint64_t>(y.coeff) : y.coeff;
    if (ax != ay) return ax > ay;
    return compare_expr(x.term, y.term) < 0;
  });
  const DataType dt = f.dtype;
  if (ts.empty()) return make_int(dt, f.constant);
  Expr acc;
  bool const_used = false;
  for (const LinearTerm& t : ts) {
    if (!acc.defined()) {
      if (t.coeff > 0) {
        acc = scaled(t.term, t.coeff, dt);
      } else if (f.constant > 0) {
        // All terms negative: "c - x" reads better than "x*-1 + c".
        acc = sub(make_int(dt, f.constant), scaled(t.term, -t.coeff, dt));
        const_used = true;
      } else {
        acc = scaled(t.term, t.coeff, dt);
      }
      continue;
    }
    if (t.coeff > 0) {
      acc = add(acc, scaled(t.term, t.coeff, dt));
    } else {
      acc = sub(acc, scaled(t.term, -t.coeff, dt));
    }
  }
  if (!const_used && f.constant != 0) {
    if (f.constant > 0 || f.constant == kNegInf) {
      acc = add(acc, make_int(dt, f.constant));
    } else {
      acc = sub(acc, make_int(dt, -f.constant));
    }
  }
  return acc;
}

}  // namespace kiln::ir::arith
