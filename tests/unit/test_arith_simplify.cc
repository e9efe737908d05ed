// The rewriting simplifier: one section per rule, before -> after as printed text, with
// negative cases where a rule must not fire.
#include <catch2/catch.hpp>

#include "ir/arith.h"
#include "kiln/ir/printer.h"

using namespace kiln::ir;
using arith::Analyzer;

namespace {
std::string S(const Expr& e) { return to_string(arith::simplify(e)); }
std::string S(const Analyzer& a, const Expr& e) { return to_string(a.simplify(e)); }
}  // namespace

TEST_CASE("simplify: constant folding and basic identities", "[arith][simplify]") {
  Var x("x"), y("y");
  CHECK(S(Expr(3) + Expr(4) * Expr(5)) == "23");
  CHECK(S(x + 0) == "x");
  CHECK(S(0 + x) == "x");
  CHECK(S(x * 1) == "x");
  CHECK(S(x * 0) == "0");
  CHECK(S(x - x) == "0");
  CHECK(S(x - 0) == "x");
  CHECK(S(floordiv(x, 1)) == "x");
  CHECK(S(floormod(x, 1)) == "0");
  CHECK(S(truncdiv(x, 1)) == "x");
  CHECK(S(truncmod(x, 1)) == "0");
  CHECK(S(floordiv(Expr(-7), Expr(2))) == "-4");
  CHECK(S(floormod(Expr(-7), Expr(2))) == "1");
  CHECK(S(truncdiv(Expr(-7), Expr(2))) == "-3");
  CHECK(S(truncmod(Expr(-7), Expr(2))) == "-1");
  // Division by a constant zero is left for the program to fault on.
  CHECK(S(floordiv(x, 0)) == "floordiv(x, 0)");
}

TEST_CASE("simplify: canonical linear forms", "[arith][simplify]") {
  Var x("x"), y("y"), i("i"), j("j"), k("k");
  CHECK(S(x + y - x) == "y");
  CHECK(S((x + 3) * 2 - x) == "x + 6");
  CHECK(S(x * 2 + y * 3 + x * 4 - 5) == "x*6 + y*3 - 5");
  // Larger coefficients first: row-major flattened indices read naturally.
  CHECK(S(k + j * 8 + i * 64) == "i*64 + j*8 + k");
  // Positive terms first, then negative ones, constant last.
  CHECK(S(0 - y + x + 1) == "x - y + 1");
  CHECK(S(5 - x) == "5 - x");
  CHECK(S(0 - x - 5) == "x*-1 - 5");
  // Order does not depend on the input order.
  CHECK(S(y + x) == S(x + y));
  CHECK(S(y + x) == "x + y");
  // Products of non-constants: constant factors move out, factors ordered.
  CHECK(S((x * 2) * (y * 3)) == "x*y*6");
  CHECK(S(y * x - x * y) == "0");
}

TEST_CASE("simplify: floordiv/floormod with divisible terms", "[arith][simplify]") {
  Analyzer a;
  Var x("x"), y("y"), z("z");
  a.bind(y, Range(0, 8));
  SECTION("floordiv(x*c1 + y, c2) with c2 | c1 and 0 <= y < c2") {
    CHECK(S(a, floordiv(x * 8 + y, 8)) == "x");
    CHECK(S(a, floordiv(x * 16 + y, 8)) == "x*2");
    CHECK(S(a, floordiv(x * 16 + y + 8, 8)) == "x*2 + 1");
  }
  SECTION("floormod(x*c1 + y, c2) -> y") {
    CHECK(S(a, floormod(x * 8 + y, 8)) == "y");
    CHECK(S(a, floormod(x * 16 + y, 8)) == "y");
    CHECK(S(a, floormod(x * 8 + y + 8, 8)) == "y");
  }
  SECTION("negative: the remainder's range spans two periods") {
    Analyzer b;
    b.bind(z, Range(0, 9));  // z in [0, 8]
    CHECK(S(b, floordiv(x * 8 + z, 8)) == "x + floordiv(z, 8)");
    CHECK(S(b, floormod(x * 8 + z, 8)) == "floormod(z, 8)");
    CHECK(S(floordiv(x * 8 + z, 8)) == "x + floordiv(z, 8)");  // no range at all
  }
  SECTION("negative: coefficient not a multiple of the divisor") {
    CHECK(S(a, floordiv(x * 4 + y, 8)) == "floordiv(x*4 + y, 8)");
    CHECK(S(a, floormod(x * 4 + y, 8)) == "floormod(x*4 + y, 8)");
  }
  SECTION("common factor of dividend and divisor") {
    CHECK(S(floordiv(x * 4 + 2, 8)) == "floordiv(x*2 + 1, 4)");
    CHECK(S(floormod(x * 4 + 2, 8)) == "floormod(x*2 + 1, 4)*2");
    CHECK(S(floordiv(x * 6, 3)) == "x*2");
  }
  SECTION("floormod reduces coefficients and the constant") {
    CHECK(S(floormod(x * 9 + 10, 8)) == "floormod(x + 2, 8)");
    CHECK(S(floormod(x - 1, 8)) == "floormod(x + 7, 8)");
  }
}

TEST_CASE("simplify: nested and range-decided div/mod", "[arith][simplify]") {
  Analyzer a;
  Var x("x"), y("y");
  a.bind(y, Range(0, 8));
  CHECK(S(floordiv(floordiv(x, 4), 8)) == "floordiv(x, 32)");
  CHECK(S(floormod(floormod(x, 16), 8)) == "floormod(x, 8)");
  CHECK(S(floormod(floormod(x, 8), 16)) == "floormod(x, 8)");  // inner already in [0, 8)
  CHECK(S(floormod(floormod(x, 12), 8)) == "floormod(floormod(x, 12), 8)");  // 8 does not divide 12
  CHECK(S(a, floormod(floormod(y, 8), 16)) == "y");
  CHECK(S(a, floordiv(y, 8)) == "0");
  CHECK(S(a, floormod(y, 8)) == "y");
  CHECK(S(a, floordiv(y, 9)) == "0");
  CHECK(S(a, floordiv(y + 8, 8)) == "1");
  CHECK(S(a, floormod(y + 8, 8)) == "y");
  CHECK(S(a, floordiv(y, 4)) == "floordiv(y, 4)");  // negative: y/4 is 0 or 1
  CHECK(S(a, floordiv(y - 8, 8)) == "-1");
}

TEST_CASE("simplify: fused loop index recovery", "[arith][simplify]") {
  Var f("f"), i("i"), j("j");
  CHECK(S(floordiv(f, 8) * 8 + floormod(f, 8)) == "f");
  CHECK(S(floormod(f, 8) + floordiv(f, 8) * 8) == "f");
  CHECK(S((floordiv(f, 8) * 8 + floormod(f, 8)) * 2 + 1) == "f*2 + 1");
  CHECK(S(floordiv(i * 4 + j, 16) * 16 + floormod(i * 4 + j, 16)) == "i*4 + j");
  CHECK(S(f - floordiv(f, 8) * 8) == "floormod(f, 8)");
  // The floormod already rewritten (64 = 8 mod 56): a flat index unflattened over a 56-wide row.
  CHECK(S(floordiv(i * 64 + j, 56) * 56 + floormod(i * 64 + j, 56)) == "i*64 + j");
  // Negative: coefficients that do not match.
  CHECK(S(floordiv(f, 8) * 4 + floormod(f, 8)) == "floordiv(f, 8)*4 + floormod(f, 8)");
}

TEST_CASE("simplify: truncdiv/truncmod become floor forms for non-negative operands", "[arith][simplify]") {
  Analyzer a;
  Var x("x"), y("y");
  a.bind(x, Range(0, 100));
  CHECK(S(a, truncdiv(x, 8)) == "floordiv(x, 8)");
  CHECK(S(a, truncmod(x, 8)) == "floormod(x, 8)");
  CHECK(S(a, truncdiv(x * 8 + 3, 8)) == "x");
  CHECK(S(truncdiv(y, 8)) == "truncdiv(y, 8)");  // y may be negative
  CHECK(S(truncmod(y, 8)) == "truncmod(y, 8)");
}

TEST_CASE("simplify: min/max", "[arith][simplify]") {
  Analyzer a;
  Var x("x"), y("y"), n("n");
  a.bind(x, Range(0, 8));
  a.bind(y, Range(8, 8));
  CHECK(S(min(Expr(3), Expr(5))) == "3");
  CHECK(S(max(Expr(3), Expr(5))) == "5");
  CHECK(S(a, min(x, y)) == "x");
  CHECK(S(a, max(x, y)) == "y");
  CHECK(S(min(n, n + 1)) == "n");
  CHECK(S(max(n, n + 1)) == "n + 1");
  CHECK(S(min(n, n)) == "n");
  CHECK(S(a, min(x, 10)) == "x");
  CHECK(S(min(5, n)) == "min(n, 5)");              // constant last
  CHECK(S(min(min(n, 8), 4)) == "min(n, 4)");
  CHECK(S(max(max(n, 2), 4)) == "max(n, 4)");
  CHECK(S(a, min(x, 4)) == "min(x, 4)");           // negative: undecided
  CHECK(S(min(n, y)) == "min(n, y)");
}

TEST_CASE("simplify: comparisons decided by bounds, normal form otherwise", "[arith][simplify]") {
  Analyzer a;
  Var io("io"), ii("ii"), n("n"), m("m");
  a.bind(io, Range(0, 8));
  a.bind(ii, Range(0, 8));
  CHECK(S(a, io * 8 + ii < 64) == "true");
  CHECK(S(a, io * 8 + ii >= 64) == "false");
  CHECK(S(a, io * 8 + ii < 60) == "io*8 + ii < 60");
  CHECK(S(n + 1 > n) == "true");
  CHECK(S(eq(n, n)) == "true");
  CHECK(S(ne(n, n + 1)) == "true");
  CHECK(S(n + 2 <= m + 5) == "n <= m + 3");
  CHECK(S(n > m) == "m < n");
  CHECK(S(0 <= n) == "0 <= n");
  CHECK(S(n * 8 < 64) == "n < 8");
  CHECK(S(n * 2 < 7) == "n < 4");
  CHECK(S(n * 2 <= 7) == "n <= 3");
  CHECK(S(eq(n * 2, 7)) == "false");
  CHECK(S(eq(n * 2, 8)) == "n == 4");
  CHECK(S(Expr(3) < Expr(4)) == "true");
}

TEST_CASE("simplify: select, logic, not, cast, let", "[arith][simplify]") {
  Var x("x"), y("y"), b("b", DataType::boolean());
  Var f("f", DataType::f32());
  SECTION("select with a constant condition or equal branches") {
    CHECK(S(select(x < x + 1, x, y)) == "x");
    CHECK(S(select(x > x, x, y)) == "y");
    CHECK(S(select(b, x + 1, 1 + x)) == "x + 1");
    CHECK(S(select(b, x, y)) == "select(b, x, y)");
  }
  SECTION("and / or / not with constants") {
    Expr t = make_const(DataType::boolean(), 1), fl = make_const(DataType::boolean(), 0);
    CHECK(S(logical_and(b, t)) == "b");
    CHECK(S(logical_and(b, fl)) == "false");
    CHECK(S(logical_or(b, t)) == "true");
    CHECK(S(logical_or(fl, b)) == "b");
    CHECK(S(logical_and(b, b)) == "b");
    CHECK(S(logical_not(logical_not(b))) == "b");
    CHECK(S(logical_not(x < y)) == "y <= x");
    CHECK(S(logical_not(f < f * 2.0f)) == "!(f < f*2f)");  // floats: NaN forbids the flip
  }
  SECTION("cast of constants") {
    CHECK(S(cast(DataType::f32(), x * 0 + 3)) == "3f");
    CHECK(S(cast(DataType::i8(), x * 0 + 300)) == "int8(44)");
    CHECK(S(cast(DataType::i32(), f * 0.0f + 2.75f)) == "int32(f*0f + 2.75f)");  // x*0 kept for floats
    CHECK(S(cast(DataType::i32(), make_float(DataType::f32(), 1.5) + 1.25f)) == "2");
    CHECK(S(cast(DataType::boolean(), x - x + 2)) == "true");
  }
  SECTION("let inlining of trivial values") {
    Var t("t");
    CHECK(S(let(t, Expr(4), t * x + t)) == "x*4 + 4");
    CHECK(S(let(t, y, t + t)) == "y*2");
    CHECK(S(let(t, x * y, x)) == "x");  // dead binding
    CHECK(S(let(t, x * y, t + 1)) == "(let t = x*y in t + 1)");
  }
  SECTION("floats fold constants and keep unsafe identities") {
    CHECK(S(f + 0.0f) == "f");
    CHECK(S(f * 1.0f) == "f");
    CHECK(S(f * 0.0f) == "f*0f");
    CHECK(S(make_float(DataType::f32(), 1.5) * 2.0f) == "3f");
  }
}

TEST_CASE("simplify: vector expressions keep their lanes", "[arith][simplify]") {
  Var x("x"), y("y");
  Analyzer a;
  a.bind(y, Range(0, 4));
  Expr r = ramp(x, 1, 4);
  CHECK(S(r + broadcast(Expr(2), 4)) == "ramp(x + 2, 1, 4)");
  CHECK(S(r + ramp(y, 2, 4)) == "ramp(x + y, 3, 4)");
  CHECK(S(r * broadcast(Expr(3), 4)) == "ramp(x*3, 3, 4)");
  CHECK(S(broadcast(x, 4) + broadcast(x, 4)) == "broadcast(x*2, 4)");
  CHECK(S(ramp(x + 0, x - x, 4)) == "broadcast(x, 4)");
  CHECK(S(a, floordiv(ramp(y * 8, 1, 8), broadcast(Expr(8), 8))) == "broadcast(y, 8)");
  CHECK(S(a, floormod(ramp(y * 8, 1, 8), broadcast(Expr(8), 8))) == "ramp(0, 1, 8)");
  CHECK(S(floordiv(ramp(x, 16, 4), broadcast(Expr(8), 4))) == "ramp(floordiv(x, 8), 2, 4)");
  CHECK(S(floormod(ramp(x, 16, 4), broadcast(Expr(8), 4))) == "broadcast(floormod(x, 8), 4)");
  CHECK(S(floordiv(ramp(x, 1, 4), broadcast(Expr(8), 4))) == "floordiv(ramp(x, 1, 4), broadcast(8, 4))");
  Expr s = arith::simplify(r + broadcast(Expr(2), 4));
  CHECK(s.dtype() == DataType::i32(4));
  Expr c = arith::simplify(r < broadcast(Expr(100), 4));
  CHECK(c.dtype() == DataType::boolean(4));
}

TEST_CASE("simplify: equality keeps its terms on the left", "[arith][simplify]") {
  Var x("x"), y("y");
  CHECK(S(eq(x * -4, y)) == "x*4 + y == 0");
  CHECK(S(eq(0 - x, 3)) == "x == -3");
  CHECK(S(ne(3 - x, y)) == "x + y != 3");
  CHECK(S(floordiv(x, -1)) == "x*-1");
}

TEST_CASE("simplify: output never depends on addresses", "[arith][simplify]") {
  // The same expression built from variables allocated in different orders (so at different
  // addresses) prints the same; distinct variables sharing a name keep first-appearance order.
  auto build = [](bool reverse) {
    std::vector<Var> vs;
    const char* names[] = {"c", "a", "d", "b"};
    if (reverse) {
      for (int i = 3; i >= 0; --i) vs.insert(vs.begin(), Var(names[i]));
    } else {
      for (const char* n : names) vs.emplace_back(n);
    }
    return to_string(arith::simplify(vs[0] + vs[1] * 2 + vs[2] + vs[3] * 2 + vs[0] + 1));
  };
  CHECK(build(false) == "a*2 + b*2 + c*2 + d + 1");  // coefficient, then name
  CHECK(build(true) == build(false));
  std::vector<std::shared_ptr<Var>> keep;  // make later allocations land elsewhere
  for (int i = 0; i < 100; ++i) keep.push_back(std::make_shared<Var>("pad"));
  CHECK(build(false) == build(true));
  Var x1("x"), x2("x");
  CHECK(S(x2 + x1 + x2) == "x*2 + x_1");
  CHECK(S(x1 + x2) == "x + x_1");
}

TEST_CASE("simplify: vector comparisons decided for every lane", "[arith][simplify]") {
  Analyzer a;
  Var io("io");
  a.bind(io, Range(0, 8));
  Expr guard = ramp(io * 8, 1, 8) < broadcast(Expr(64), 8);
  CHECK(S(a, guard) == "broadcast(true, 8)");
  CHECK(S(a, ramp(io * 8, 1, 8) >= broadcast(Expr(64), 8)) == "broadcast(false, 8)");
  CHECK(S(ramp(io * 8, 1, 8) < broadcast(io * 8 + 8, 8)) == "broadcast(true, 8)");
  // Negative: the last lane may fail.
  CHECK(S(a, ramp(io * 8, 1, 8) < broadcast(Expr(60), 8)) ==
        "ramp(io*8, 1, 8) < broadcast(60, 8)");
  CHECK(a.simplify(guard).dtype() == DataType::boolean(8));
}

TEST_CASE("simplify: reduction axes are bound inside the reduction", "[arith][simplify]") {
  Var k("k"), x("n");
  Buffer B = Buffer::make("B", DataType::i32(), {64});
  IterVar kv = IterVar::make(k, Range(0, 4), IterKind::Reduce);
  Expr r = make_reduce(sum_reducer(DataType::i32()), {buffer_load(B, {x * 4 + floormod(k, 4)}) + floordiv(k, 4)},
                       {kv}, make_const(DataType::boolean(), 1), 0);
  std::string s = S(r);
  INFO(s);
  CHECK(s == "reduce(x, y => x + y init 0 | B[n*4 + k] | axis k(0, 4))");
  CHECK(s.find("floordiv") == std::string::npos);
  CHECK(s.find("floormod") == std::string::npos);
  // Outside the reduction k is unknown again.
  CHECK(S(floordiv(k, 4)) == "floordiv(k, 4)");
}
