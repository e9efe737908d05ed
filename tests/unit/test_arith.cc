// Arithmetic analysis: constant bounds, symbolic intervals, can_prove.
#include <catch2/catch.hpp>

#include "ir/arith.h"
#include "kiln/ir/printer.h"
#include "kiln/support/error.h"

using namespace kiln::ir;
using arith::Analyzer;
using arith::IntBound;
using arith::IntervalSet;

namespace {

std::string str(const IntervalSet& s) {
  return "[" + (s.min.defined() ? to_string(s.min) : std::string("-inf")) + ", " +
         (s.max.defined() ? to_string(s.max) : std::string("+inf")) + "]";
}

std::pair<int64_t, int64_t> B(const Analyzer& a, const Expr& e) {
  IntBound b = a.const_int_bound(e);
  return {b.min_value, b.max_value};
}

using P = std::pair<int64_t, int64_t>;

}  // namespace

TEST_CASE("const_int_bound of constants, vars and + - *", "[arith]") {
  Analyzer a;
  Var x("x"), y("y");
  a.bind(x, Range(0, 8));    // [0, 7]
  a.bind(y, Range(-3, 5));   // [-3, 1]
  CHECK(B(a, Expr(5)) == P{5, 5});
  CHECK(B(a, x) == P{0, 7});
  CHECK(B(a, y) == P{-3, 1});
  CHECK(B(a, x + y) == P{-3, 8});
  CHECK(B(a, x - y) == P{-1, 10});
  CHECK(B(a, x * y) == P{-21, 7});
  CHECK(B(a, x * -2) == P{-14, 0});
  CHECK(B(a, x - x) == P{0, 0});  // through the simplified form
  // An unbound int32 variable spans its type.
  Var z("z");
  CHECK(B(a, z) == P{INT32_MIN, INT32_MAX});
  Var w("w", DataType::i64());
  CHECK(B(a, w) == P{IntBound::kNegInf, IntBound::kPosInf});
  CHECK(B(a, w + 1) == P{IntBound::kNegInf, IntBound::kPosInf});
}

TEST_CASE("const_int_bound of floordiv, floormod, min, max, select", "[arith]") {
  Analyzer a;
  Var x("x"), y("y"), n("n");
  a.bind(x, Range(0, 64));   // [0, 63]
  a.bind(y, Range(-9, 19));  // [-9, 9]
  a.bind(n, Range(1, 4));    // [1, 4]
  CHECK(B(a, floordiv(x, 8)) == P{0, 7});
  CHECK(B(a, floordiv(y, 4)) == P{-3, 2});
  CHECK(B(a, floordiv(y, -4)) == P{-3, 2});
  CHECK(B(a, floordiv(x, n)) == P{0, 63});
  CHECK(B(a, floormod(x, 8)) == P{0, 7});
  CHECK(B(a, floormod(y, 4)) == P{0, 3});
  CHECK(B(a, floormod(y, n)) == P{0, 3});
  CHECK(B(a, truncdiv(y, 4)) == P{-2, 2});
  CHECK(B(a, truncmod(y, 4)) == P{-3, 3});
  CHECK(B(a, min(x, y)) == P{-9, 9});
  CHECK(B(a, max(x, y)) == P{0, 63});
  CHECK(B(a, select(x < 4, y, x)) == P{-9, 63});
  // A divisor range that contains zero says nothing.
  CHECK(B(a, floordiv(x, y)) == P{INT32_MIN, INT32_MAX});
}

TEST_CASE("const_int_bound saturates instead of overflowing", "[arith]") {
  Analyzer a;
  Var x("x", DataType::i64());
  a.bind(x, Range(make_int(DataType::i64(), 0), make_int(DataType::i64(), int64_t{1} << 62)));
  IntBound b = a.const_int_bound(x * make_int(DataType::i64(), 8));
  CHECK(b.min_value == 0);
  CHECK(b.max_value == IntBound::kPosInf);
}

TEST_CASE("bind with a symbolic range and bind_value", "[arith]") {
  Analyzer a;
  Var io("io"), ii("ii"), t("t");
  a.bind(io, Range(0, 8));
  a.bind(ii, Range(io * 8, 8));  // [io*8, io*8 + 7] -> [0, 63]
  CHECK(B(a, ii) == P{0, 63});
  a.bind_value(t, io * 2 + 1);
  CHECK(B(a, t) == P{1, 15});
  // Rebinding replaces the range.
  a.bind(io, Range(2, 1));
  CHECK(B(a, io) == P{2, 2});
  CHECK_THROWS_AS(a.bind(io, Range(Expr(), 1)), kiln::Error);
}

TEST_CASE("can_prove through the bound of the difference", "[arith]") {
  Analyzer a;
  Var io("io"), ii("ii"), n("n");
  a.bind(io, Range(0, 8));
  a.bind(ii, Range(0, 8));
  CHECK(a.can_prove(io * 8 + ii < 64));
  CHECK_FALSE(a.can_prove(io * 8 + ii < 63));
  CHECK(a.can_prove(io * 8 + ii >= 0));
  CHECK(a.can_prove(n + 1 > n));           // n unknown, cancels
  CHECK_FALSE(a.can_prove(n > 0));
  CHECK(a.can_prove(io < 8 && ii < 8));
  CHECK(a.can_prove(io < 0 || ii < 8));
  CHECK(a.can_prove(eq(floordiv(io * 8 + ii, 8), io)));
  CHECK_THROWS_AS(a.can_prove(io + 1), kiln::Error);
}

TEST_CASE("eval_interval combines endpoint expressions", "[arith]") {
  Analyzer a;
  Var io("io"), ii("ii"), j("j"), n("n");
  VarMap<IntervalSet> dom;
  dom[ii.get()] = IntervalSet::from_range(Range(0, 8));
  CHECK(str(dom[ii.get()]) == "[0, 7]");
  CHECK(str(a.eval_interval(io * 8 + ii, dom)) == "[io*8, io*8 + 7]");
  CHECK(str(a.eval_interval(ii * -2 + 3, dom)) == "[-11, 3]");  // c < 0 swaps the ends
  CHECK(str(a.eval_interval(floordiv(io * 8 + ii, 4), dom)) == "[io*2, io*2 + 1]");
  CHECK(str(a.eval_interval(floordiv(ii, -2), dom)) == "[-4, 0]");
  CHECK(str(a.eval_interval(min(ii, n), dom)) == "[min(n, 0), min(n, 7)]");
  CHECK(str(a.eval_interval(max(ii, 3), dom)) == "[3, 7]");
  CHECK(str(a.eval_interval(ii - j, dom)) == "[j*-1, 7 - j]");
  // A variable not in dom is a symbol: a single point.
  IntervalSet p = a.eval_interval(io * 4, dom);
  CHECK(p.is_single_point());
  CHECK(str(p) == "[io*4, io*4]");
  // Symbolic interval endpoints.
  dom[j.get()] = IntervalSet{n, n * 2};
  CHECK(str(a.eval_interval(j * 3 + 1, dom)) == "[n*3 + 1, n*6 + 1]");
  // Unknown sign of a symbolic factor: unbounded.
  IntervalSet u = a.eval_interval(ii * n, dom);
  CHECK_FALSE(u.min.defined());
  CHECK_FALSE(u.max.defined());
  // floormod within one period stays exact, otherwise [0, c-1].
  CHECK(str(a.eval_interval(floormod(io * 8 + ii, 8), dom)) == "[0, 7]");
  CHECK(str(a.eval_interval(floormod(io * 16 + ii, 16), dom)) == "[0, 7]");
  CHECK(str(a.eval_interval(floormod(ii + 3, 8), dom)) == "[0, 7]");
  // A variable bound in the analyzer covers its range.
  Analyzer b;
  b.bind(io, Range(0, 4));
  CHECK(str(b.eval_interval(io * 8 + ii, dom)) == "[0, 31]");
}

TEST_CASE("IntervalSet helpers", "[arith]") {
  Var n("n");
  IntervalSet s = IntervalSet::from_range(Range(n, 4));
  CHECK(str(s) == "[n, n + 3]");
  Range r = s.to_range();
  CHECK(to_string(r.min) == "n");
  CHECK(to_string(r.extent) == "4");
  CHECK(IntervalSet::from_range(Range(n, 1)).is_single_point());
  CHECK_FALSE(IntervalSet::everything().is_bounded());
  CHECK_THROWS_AS(IntervalSet::everything().to_range(), kiln::Error);
}

TEST_CASE("const_int_bound: unsigned wrap-around and narrowing casts give the type's range", "[arith]") {
  Analyzer a;
  Var x("x", DataType::u32()), y("y", DataType::u32()), z("z", DataType::i64());
  a.bind(x, Range(make_int(DataType::u32(), 0), make_int(DataType::u32(), 10)));
  a.bind(y, Range(make_int(DataType::u32(), 0), make_int(DataType::u32(), 10)));
  a.bind(z, Range(make_int(DataType::i64(), 0), make_int(DataType::i64(), int64_t{1} << 40)));
  CHECK(B(a, x + y) == P{0, 18});
  CHECK(B(a, x - y) == P{0, UINT32_MAX});  // may wrap
  CHECK(B(a, cast(DataType::i32(), z)) == P{INT32_MIN, INT32_MAX});
  CHECK(B(a, cast(DataType::i32(), floormod(z, make_int(DataType::i64(), 100)))) == P{0, 99});
}

TEST_CASE("bind_value: the value is inlined where that makes the result smaller", "[arith]") {
  Analyzer a;
  Var io("io"), ii("ii"), t("t");
  a.bind(io, Range(0, 8));
  a.bind(ii, Range(0, 8));
  a.bind_value(t, io * 8 + ii);
  CHECK(to_string(a.simplify(floordiv(t, 8))) == "io");
  CHECK(to_string(a.simplify(floormod(t, 8))) == "ii");
  CHECK(to_string(a.simplify(t + 1)) == "t + 1");  // inlining would only grow it
  CHECK(a.can_prove(t < 64));
}
