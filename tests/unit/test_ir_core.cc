// The IR core: constructors check types, operators fold constants, the printer is stable.
#include <catch2/catch.hpp>

#include "kiln/ir/functor.h"
#include "kiln/ir/printer.h"
#include "kiln/support/error.h"

using namespace kiln::ir;
using Catch::Matchers::Contains;

TEST_CASE("data types print and parse", "[ir]") {
  CHECK(DataType::f32().str() == "float32");
  CHECK(DataType::i8(16).str() == "int8x16");
  CHECK(DataType::boolean().str() == "bool");
  for (auto t : {DataType::f32(8), DataType::u8(), DataType::bf16(), DataType::i64(4), DataType::boolean(2)}) {
    CHECK(DataType::parse(t.str()) == t);
  }
  REQUIRE_THROWS_WITH(DataType::parse("float12"), Contains("float12"));
  REQUIRE_THROWS_WITH(DataType::parse("tensor"), Contains("unknown data type 'tensor'"));
}

TEST_CASE("operators build typed IR and fold integer constants", "[ir]") {
  Var i("i"), j("j");
  CHECK(to_string(i * 4 + j) == "i*4 + j");
  CHECK(to_string(i - (j + 1)) == "i - (j + 1)");
  CHECK(to_string((i + j) * 2) == "(i + j)*2");
  CHECK(to_string(i / 8) == "floordiv(i, 8)");
  CHECK(to_string(i % 8) == "floormod(i, 8)");
  CHECK(to_string(truncdiv(i, 8)) == "truncdiv(i, 8)");
  CHECK(to_string(Expr(3) * 4 + 1) == "13");
  CHECK(to_string(Expr(-7) / 2) == "-4");   // floor division
  CHECK(to_string(Expr(-7) % 2) == "1");    // floor modulo
  CHECK(to_string(truncdiv(-7, 2)) == "-3");
  CHECK(to_string(i < j && j <= 4) == "i < j && j <= 4");
  Var x("x", DataType::f32());
  Expr e = x * 0.5 + 1;  // literals adopt float32
  CHECK(e.dtype() == DataType::f32());
  CHECK(to_string(e) == "x*0.5f + 1f");
  CHECK(to_string(x / 2.0) == "x / 2f");
  CHECK(to_string(-x) == "0f - x");
  CHECK(to_string(-i) == "0 - i");
}

TEST_CASE("type errors name the operation and both types", "[ir]") {
  Var i("i"), x("x", DataType::f32());
  REQUIRE_THROWS_WITH(i + x, Contains("Add: operand types differ (int32 vs float32)"));
  REQUIRE_THROWS_WITH(floormod(x, x), Contains("FloorMod needs integer operands"));
  REQUIRE_THROWS_WITH(select(i, x, x), Contains("Select condition must be bool"));
  Buffer b = Buffer::make("B", DataType::f32(), {16});
  REQUIRE_THROWS_WITH(buffer_store(b, i, {0}), Contains("store to buffer 'B' (float32) of a int32 value"));
}

TEST_CASE("statements print with indentation and loop kinds", "[ir]") {
  Buffer a = Buffer::make("A", DataType::f32(), {64, 16});
  Buffer t = Buffer::make("T", DataType::f32(), {16}, "local");
  Var i("i"), j("j");
  Stmt body = for_loop(j, 0, 16, ForKind::Vectorized, buffer_store(t, buffer_load(a, {i, j}) * 2.0f, {j}));
  Stmt s = for_loop(i, 0, 64, ForKind::Parallel, allocate(t, seq({body, if_then_else(i < 3, evaluate(call_extern(DataType::i32(), "f", {i})))})));
  PrimFunc f{"k", {a}, s};
  CHECK(to_string(f) ==
        "func k(A: float32[64, 16]) {\n"
        "  parallel for (i, 0, 64) {\n"
        "    allocate T: float32[16], local\n"
        "    vectorized for (j, 0, 16) {\n"
        "      T[j] = A[i, j]*2f\n"
        "    }\n"
        "    if (i < 3) {\n"
        "      extern f(i)\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("printer disambiguates distinct variables with one name", "[ir]") {
  Var a("x"), b("x");
  CHECK(to_string(a + b) == "x + x_1");
  CHECK(to_string(b + a) == "x + x_1");
}

TEST_CASE("mutators share unchanged subtrees and substitute rebuilds", "[ir]") {
  Var i("i"), j("j");
  Expr e = i * 4 + j;
  CHECK(substitute(e, {{Var("other").get(), Expr(1)}}).same_as(e));
  VarMap<Expr> m{{i.get(), Expr(2)}};
  CHECK(to_string(substitute(e, m)) == "8 + j");
  CHECK(uses_var(e, [&](const VarNode* v) { return v == j.get(); }));
  CHECK_FALSE(uses_var(Expr(3) + 4, [](const VarNode*) { return true; }));
}

TEST_CASE("reductions check their reducer and axes", "[ir]") {
  auto f32 = DataType::f32();
  IterVar k = IterVar::make(Var("k"), Range(0, 16), IterKind::Reduce);
  IterVar d = IterVar::make(Var("d"), Range(0, 16), IterKind::DataPar);
  Var x("x", f32);
  Expr r = make_reduce(sum_reducer(f32), {x}, {k}, Expr(), 0);
  CHECK(to_string(r) == "reduce(x, y => x + y init 0f | x_1 | axis k(0, 16))");
  REQUIRE_THROWS_WITH(make_reduce(sum_reducer(f32), {x}, {d}, Expr(), 0), Contains("'d', which is not a reduce axis"));
  REQUIRE_THROWS_WITH(make_reduce(sum_reducer(DataType::i32()), {x}, {k}, Expr(), 0), Contains("reducer expects int32"));
}
