// Arithmetic analysis and simplification of integer (index) expressions.
//
//  - Constant integer bounds: the range [min, max] an expression can take given the ranges of
//    its variables.
//  - Symbolic intervals (IntervalSet): the region an expression covers as its variables range
//    over symbolic intervals; bound inference in schedule lowering uses it.
//  - A rewriting simplifier: constant folding, canonical linear forms (sums of
//    coefficient * term, like terms merged, constants last), div/mod simplification under known
//    ranges (e.g. (x*8 + y) / 8 -> x when 0 <= y < 8), min/max and comparison simplification
//    when bounds decide them, select with a known condition.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>

#include "kiln/ir/expr.h"

namespace kiln::ir::arith {

// Inclusive constant bounds; kPosInf / kNegInf mean unbounded.
struct IntBound {
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  int64_t min_value = kNegInf;
  int64_t max_value = kPosInf;
  bool is_const() const { return min_value == max_value; }
};

// Inclusive symbolic interval [min, max]; an undefined end is unbounded on that side.
struct IntervalSet {
  Expr min, max;
  static IntervalSet everything() { return {}; }
  static IntervalSet single_point(const Expr& e) { return {e, e}; }
  // [r.min, r.min + r.extent - 1]
  static IntervalSet from_range(const Range& r);
  bool is_single_point() const { return min.defined() && max.defined() && min.same_as(max); }
  bool is_bounded() const { return min.defined() && max.defined(); }
  // Range [min, max + 1); requires is_bounded().
  Range to_range() const;
};

// Holds what is known about variables (their ranges) and answers questions under it.
class Analyzer {
 public:
  Analyzer();
  ~Analyzer();
  Analyzer(const Analyzer&);
  Analyzer& operator=(const Analyzer&);

  // v takes values in [r.min, r.min + r.extent). Rebinding replaces the old range.
  void bind(const Var& v, const Range& r);
  // v is known to equal `value` (a let binding); simplify substitutes it where it helps.
  void bind_value(const Var& v, const Expr& value);

  IntBound const_int_bound(const Expr& e) const;
  // True only if cond (bool) holds for every value of the bound variables.
  bool can_prove(const Expr& cond) const;
  Expr simplify(const Expr& e) const;
  // The symbolic interval e covers when each var in `dom` ranges over its interval (other
  // variables are treated as symbols, or as their bound ranges when they are bound here).
  IntervalSet eval_interval(const Expr& e, const VarMap<IntervalSet>& dom) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Convenience: simplify with no variable ranges known.
Expr simplify(const Expr& e);

}  // namespace kiln::ir::arith
