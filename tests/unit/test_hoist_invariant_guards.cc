// ir::hoist_invariant_guards: exact before/after IR of a register-tile nest under a K-tail test
// (the shape that hung PoCL's compiler, docs/gpu.md, "Pipeline"), and what it leaves alone.
#include <catch2/catch.hpp>

#include "kiln/ir/printer.h"
#include "kiln/ir/transforms.h"
#include "test_codegen_util.h"

using namespace kiln;

TEST_CASE("hoist_invariant_guards: a K-tail test leaves the register-tile nest, once", "[ir][gpu]") {
  using namespace ir;
  const DataType t = DataType::f32();
  Buffer x = test::flat_buffer("X", t, 64), y = test::flat_buffer("Y", t, 16);
  Var k("k"), i("i"), j("j");
  // for k: for i: for j: if (j < 3 && k < 2 && k < 2) Y[i*4+j] += X[k*16 + i*4 + j]
  Expr cond = logical_and(logical_and(j < 3, k < 2), k < 2);
  Stmt update = buffer_store(y, buffer_load(y, {i * 4 + j}) + buffer_load(x, {k * 16 + i * 4 + j}), {i * 4 + j});
  Stmt nest = for_loop(i, 0, 4, ForKind::Serial, for_loop(j, 0, 4, ForKind::Serial, if_then_else(cond, update)));
  PrimFunc f = test::prim_func("tile", {x, y}, for_loop(k, 0, 4, ForKind::Serial, nest));
  // The test on k rises out of j and i (not out of k, which it reads), said once; j's stays.
  CHECK(to_string(hoist_invariant_guards(f)) == R"(func tile(X: float32[64], Y: float32[16]) {
  for (k, 0, 4) {
    if (k < 2) {
      for (i, 0, 4) {
        for (j, 0, 4) {
          if (j < 3) {
            Y[i*4 + j] = Y[i*4 + j] + X[k*16 + i*4 + j]
          }
        }
      }
    }
  }
}
)");
  // Left alone: a guard with an else, a test that loads, and a thread loop.
  Stmt with_else = for_loop(j, 0, 4, ForKind::Serial, if_then_else(k < 2, update, update));
  Stmt loads = for_loop(j, 0, 4, ForKind::Serial, if_then_else(buffer_load(x, {k}) < Expr(1.0f), update));
  Stmt threads = for_loop(j, 0, 4, ForKind::ThreadBinding, if_then_else(k < 2, update), "threadIdx.x");
  for (const Stmt& s : {with_else, loads, threads}) {
    PrimFunc g = test::prim_func("g", {x, y}, for_loop(k, 0, 4, ForKind::Serial, for_loop(i, 0, 4, ForKind::Serial, s)));
    CHECK(to_string(hoist_invariant_guards(g)) == to_string(g));
  }
}
