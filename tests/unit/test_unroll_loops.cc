// unroll_loops: printed IR before/after.
#include <catch2/catch.hpp>

#include "kiln/ir/printer.h"
#include "kiln/ir/transforms.h"

using namespace kiln::ir;

TEST_CASE("unroll: a constant-extent loop becomes one copy per iteration", "[unroll]") {
  Buffer a = Buffer::make("A", DataType::f32(), {4});
  Buffer b = Buffer::make("B", DataType::f32(), {4});
  Var k("k");
  Stmt s = for_loop(k, 0, 4, ForKind::Unrolled, buffer_store(b, buffer_load(a, {k}) + 1.0f, {k}));
  CHECK(to_string(s) ==
        "unrolled for (k, 0, 4) {\n"
        "  B[k] = A[k] + 1f\n"
        "}\n");
  CHECK(to_string(unroll_loops(s)) ==
        "B[0] = A[0] + 1f\n"
        "B[1] = A[1] + 1f\n"
        "B[2] = A[2] + 1f\n"
        "B[3] = A[3] + 1f\n");
}

TEST_CASE("unroll: the loop var takes min + k for a constant or symbolic min", "[unroll]") {
  Buffer b = Buffer::make("B", DataType::i32(), {16});
  Var i("i"), k("k");
  Stmt constant_min = for_loop(k, 5, 3, ForKind::Unrolled, buffer_store(b, k * 2, {k}));
  CHECK(to_string(unroll_loops(constant_min)) ==
        "B[5] = 10\n"
        "B[6] = 12\n"
        "B[7] = 14\n");
  Stmt symbolic_min = for_loop(i, 0, 4, ForKind::Serial,
                               for_loop(k, i * 4, 2, ForKind::Unrolled, buffer_store(b, k, {k})));
  CHECK(to_string(unroll_loops(symbolic_min)) ==
        "for (i, 0, 4) {\n"
        "  B[i*4] = i*4\n"
        "  B[i*4 + 1] = i*4 + 1\n"
        "}\n");
}

TEST_CASE("unroll: nested unrolled loops unroll fully", "[unroll]") {
  Buffer b = Buffer::make("B", DataType::i32(), {4});
  Var i("i"), k("k");
  Stmt s = for_loop(i, 0, 2, ForKind::Unrolled,
                    for_loop(k, 0, 2, ForKind::Unrolled, buffer_store(b, i * 10 + k, {i * 2 + k})));
  CHECK(to_string(unroll_loops(s)) ==
        "B[0] = 0\n"
        "B[1] = 1\n"
        "B[2] = 10\n"
        "B[3] = 11\n");
}

TEST_CASE("unroll: other loop kinds stay, with unrolled loops inside them unrolled", "[unroll]") {
  Buffer b = Buffer::make("B", DataType::f32(), {8, 2});
  Var i("i"), k("k");
  Stmt s = for_loop(i, 0, 8, ForKind::Parallel,
                    for_loop(k, 0, 2, ForKind::Unrolled, buffer_store(b, 0.0f, {i, k})));
  CHECK(to_string(unroll_loops(s)) ==
        "parallel for (i, 0, 8) {\n"
        "  B[i, 0] = 0f\n"
        "  B[i, 1] = 0f\n"
        "}\n");
  Stmt serial = for_loop(k, 0, 2, ForKind::Serial, buffer_store(b, 0.0f, {0, k}));
  CHECK(unroll_loops(serial).same_as(serial));
}

TEST_CASE("unroll: a loop of non-constant extent stays, as a serial loop", "[unroll]") {
  Buffer b = Buffer::make("B", DataType::i32(), {8});
  Var i("i"), k("k");
  Stmt s = for_loop(i, 0, 4, ForKind::Serial, for_loop(k, 0, i + 1, ForKind::Unrolled, buffer_store(b, k, {i + k})));
  CHECK(to_string(unroll_loops(s)) ==
        "for (i, 0, 4) {\n"
        "  for (k, 0, i + 1) {\n"
        "    B[i + k] = k\n"
        "  }\n"
        "}\n");
}

TEST_CASE("unroll: each copy defines its own loops, lets and allocations", "[unroll]") {
  Buffer a = Buffer::make("A", DataType::f32(), {2, 4});
  Buffer t = Buffer::make("T", DataType::f32(), {4}, "local");
  Var k("k"), j("j"), x("x", DataType::f32());
  Stmt inner = for_loop(j, 0, 4, ForKind::Serial,
                        let_stmt(x, buffer_load(a, {k, j}), buffer_store(t, x * x, {j})));
  Stmt s = for_loop(k, 0, 2, ForKind::Unrolled, allocate(t, seq({inner, buffer_store(a, buffer_load(t, {3}), {k, 0})})));
  // Distinct variables that share a name print with a suffix: the second copy's are fresh.
  CHECK(to_string(unroll_loops(s)) ==
        "allocate T: float32[4], local\n"
        "for (j, 0, 4) {\n"
        "  let x = A[0, j]\n"
        "  T[j] = x*x\n"
        "}\n"
        "A[0, 0] = T[3]\n"
        "allocate T_1: float32[4], local\n"
        "for (j_1, 0, 4) {\n"
        "  let x_1 = A[1, j_1]\n"
        "  T_1[j_1] = x_1*x_1\n"
        "}\n"
        "A[1, 0] = T_1[3]\n");
}

TEST_CASE("unroll: an unrolled loop of extent 0 leaves a no-op", "[unroll]") {
  Buffer b = Buffer::make("B", DataType::i32(), {4});
  Var k("k");
  PrimFunc f{"nothing", {b}, for_loop(k, 0, 0, ForKind::Unrolled, buffer_store(b, k, {k}))};
  CHECK(to_string(unroll_loops(f)) ==
        "func nothing(B: int32[4]) {\n"
        "  0\n"
        "}\n");
}
