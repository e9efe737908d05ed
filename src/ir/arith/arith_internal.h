// Private to src/ir/arith: the analyzer's state and the helpers its parts share.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/arith.h"
#include "kiln/ir/expr.h"
#include "kiln/support/error.h"

namespace kiln::ir::arith {

// What the analyzer knows about one variable.
struct VarInfo {
  Var var;                     // keeps the VarMap key alive
  std::optional<Range> range;  // from bind
  Expr value;                  // from bind_value; undefined when none
  IntBound bound;              // constant bound implied by range and value
};

// Analyzer::Impl derives from this so that helpers outside the class can name it
// (Analyzer::Impl itself is private).
struct AnalyzerState {
  VarMap<VarInfo> vars;
  const VarInfo* find(const VarNode* v) const {
    auto it = vars.find(v);
    return it == vars.end() ? nullptr : &it->second;
  }
};

// ---- saturating bound arithmetic (kPosInf / kNegInf are infinities) ---------------------------
constexpr int64_t kPosInf = IntBound::kPosInf;
constexpr int64_t kNegInf = IntBound::kNegInf;

inline bool is_inf(int64_t v) { return v == kPosInf || v == kNegInf; }
inline int64_t clamp_bound(__int128 v) {
  if (v >= static_cast<__int128>(kPosInf)) return kPosInf;
  if (v <= -static_cast<__int128>(kPosInf)) return kNegInf;
  return static_cast<int64_t>(v);
}
inline int64_t bound_neg(int64_t a) {
  if (a == kPosInf) return kNegInf;
  if (a == kNegInf) return kPosInf;
  return -a;
}
inline int64_t bound_add(int64_t a, int64_t b) {
  if (a == kPosInf || b == kPosInf) return kPosInf;
  if (a == kNegInf || b == kNegInf) return kNegInf;
  return clamp_bound(static_cast<__int128>(a) + b);
}
inline int64_t bound_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (is_inf(a) || is_inf(b)) return ((a > 0) == (b > 0)) ? kPosInf : kNegInf;
  return clamp_bound(static_cast<__int128>(a) * b);
}

// Floor division and modulo of plain integers (b != 0).
inline int64_t floordiv_int(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline int64_t floormod_int(int64_t a, int64_t b) { return a - floordiv_int(a, b) * b; }

// Bound of a value of type t when nothing else is known (the type's own range).
IntBound type_bound(DataType t);
IntBound intersect(const IntBound& a, const IntBound& b);

// Constant bound of e under `st`, with `local` (let-bound vars inside an expression) taking
// precedence. `local` may be null.
IntBound compute_bound(const AnalyzerState& st, const VarMap<IntBound>* local, const Expr& e);

// The rewriting simplifier (rewrite_simplify.cc).
Expr rewrite_simplify(const AnalyzerState& st, const Expr& e);

// Symbolic interval evaluation (interval.cc).
IntervalSet eval_interval_impl(const AnalyzerState& st, const Expr& e,
                               const VarMap<IntervalSet>& dom);

// A total, address-free order on expressions (kind, type, names, values, children); 0 when the
// two look the same (which includes distinct variables with one name). expr_order.cc.
int compare_expr(const Expr& a, const Expr& b);

// ---- linear forms: sum of coeff * term + constant over a scalar integer type (linear_form.cc)
struct LinearTerm {
  Expr term;  // never an IntImm, Add, Sub, or Mul by a constant
  int64_t coeff;
};

struct LinearForm {
  DataType dtype;
  std::vector<LinearTerm> terms;  // like terms merged, no zero coefficients
  int64_t constant = 0;
  bool overflow = false;  // a coefficient left int64: the form must not be used

  bool is_const() const { return terms.empty(); }
  // Adds scale * e, decomposing + - and multiplication by constants.
  void add(const Expr& e, int64_t scale);
  void add_term(const Expr& term, int64_t coeff);
  void add_const(int64_t c);
  void add_form(const LinearForm& other, int64_t scale);
  // Index of the term structurally equal to t, or -1.
  int find(const Expr& t) const;
};

LinearForm to_linear(const Expr& e);
// Builds the canonical expression: terms ordered (positive before negative coefficients,
// larger magnitude first, then compare_expr, then first appearance), constant last.
Expr from_linear(const LinearForm& f);
// gcd of |coefficients| (0 when there are no terms).
int64_t coeff_gcd(const LinearForm& f);

}  // namespace kiln::ir::arith
