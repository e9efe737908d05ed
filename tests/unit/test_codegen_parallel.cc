// LLVM backend: parallel loops on the thread pool, reductions into local allocations, heap
// allocations.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "kiln/runtime/kernel.h"
#include "test_codegen_util.h"

using namespace kiln;
using namespace kiln::ir;
using kiln::runtime::NDArray;
using kiln::test::array_for;
using kiln::test::flat_buffer;
using kiln::test::prim_func;

namespace {
struct RestoreThreads {
  int32_t saved = kiln_get_num_threads();
  ~RestoreThreads() { kiln_set_num_threads(saved); }
};

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

std::vector<float> ramp_floats(int n, float scale) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = std::sin(static_cast<float>(i) * 0.37f) * scale;
  return v;
}
}  // namespace

TEST_CASE("parallel loop writes every element at several thread counts", "[codegen]") {
  RestoreThreads restore;
  const int n = 1037, rows = 3;
  Buffer a = flat_buffer("A", DataType::f32(), n), c = flat_buffer("C", DataType::f32(), rows * n + 5);
  Var j("j"), i("i");
  // A serial outer loop whose variable the parallel body captures, and a parallel loop that
  // does not start at 0.
  Stmt body = seq({for_loop(j, 0, rows, ForKind::Serial,
                            for_loop(i, 0, n, ForKind::Parallel,
                                     buffer_store(c, buffer_load(a, {i}) * cast(DataType::f32(), j + 1) +
                                                         cast(DataType::f32(), i),
                                                  {j * n + i}))),
                   for_loop(i, rows * n, 5, ForKind::Parallel, buffer_store(c, cast(DataType::f32(), i), {i}))});
  for (const Target& target : test::inspected_targets()) {
    INFO(target.cpu);
    CHECK(test::contains(test::build({prim_func("par", {a, c}, body)}, target).llvm_ir(), "@kiln_parallel_for"));
  }
  auto m = test::build({prim_func("par", {a, c}, body)});
  auto av = ramp_floats(n, 3.f);
  for (int threads : {1, 2, 3, 7}) {
    kiln_set_num_threads(threads);
    NDArray C = NDArray::empty({rows * n + 5}, runtime::dtype_f32());
    for (int k = 0; k < rows * n + 5; ++k) C.data<float>()[k] = std::numeric_limits<float>::quiet_NaN();
    test::run(m, "par", {array_for(a, av), C});
    CAPTURE(threads);
    // a*b+c may be fused into one FMA (the `contract` flag): compare within 1e-6 relative.
    for (int r = 0; r < rows; ++r)
      for (int k = 0; k < n; ++k) {
        float want = av[k] * float(r + 1) + float(k);
        REQUIRE(std::fabs(C.data<float>()[r * n + k] - want) <= 1e-6f * std::fabs(want));
      }
    for (int k = rows * n; k < rows * n + 5; ++k) REQUIRE(C.data<float>()[k] == float(k));
  }
}

TEST_CASE("parallel loop nested in a parallel loop runs serially inside", "[codegen]") {
  RestoreThreads restore;
  kiln_set_num_threads(3);
  const int rows = 9, cols = 50;
  Buffer c = flat_buffer("C", DataType::i32(), rows * cols);
  Var r("r"), k("k");
  Stmt body = for_loop(r, 0, rows, ForKind::Parallel,
                       for_loop(k, 0, cols, ForKind::Parallel, buffer_store(c, r * 1000 + k, {r * cols + k})));
  // One fork/join site: the inner loop is a plain loop inside the outlined body.
  for (const Target& target : test::inspected_targets()) {
    INFO(target.cpu);
    CHECK(count(test::build({prim_func("nested", {c}, body)}, target).llvm_ir(), "call i32 @kiln_parallel_for") == 1);
  }
  auto m = test::build({prim_func("nested", {c}, body)});
  NDArray C = NDArray::zeros({rows * cols}, runtime::dtype_i32());
  test::run(m, "nested", {C});
  for (int x = 0; x < rows; ++x)
    for (int y = 0; y < cols; ++y) REQUIRE(C.data<int32_t>()[x * cols + y] == x * 1000 + y);
}

TEST_CASE("reduction into a local allocation lives in registers", "[codegen]") {
  // C[i, 0:16] = sum_k A[i, k] * B[k, 0:16]: a 16-lane accumulator in a "local" buffer, the
  // shape of a GEMM micro-kernel.
  const int m_rows = 24, kdim = 37, lanes = 16;
  Buffer a = flat_buffer("A", DataType::f32(), m_rows * kdim), b = flat_buffer("B", DataType::f32(), kdim * lanes);
  Buffer c = flat_buffer("C", DataType::f32(), m_rows * lanes);
  Buffer acc = flat_buffer("acc", DataType::f32(), lanes, "local");
  Var i("i"), k("k");
  Expr all = ramp(0, 1, lanes);
  auto make = [&](ForKind outer) {
    Stmt reduce = for_loop(k, 0, kdim, ForKind::Serial,
                           buffer_store(acc,
                                        buffer_load(acc, {all}) + broadcast(buffer_load(a, {i * kdim + k}), lanes) *
                                                                      buffer_load(b, {ramp(k * lanes, 1, lanes)}),
                                        {all}));
    Stmt per_row = allocate(acc, seq({buffer_store(acc, broadcast(Expr(0.f), lanes), {all}), reduce,
                                      buffer_store(c, buffer_load(acc, {all}), {ramp(i * lanes, 1, lanes)})}));
    return for_loop(i, 0, m_rows, outer, per_row);
  };
  auto serial = test::build({prim_func("gemv_serial", {a, b, c}, make(ForKind::Serial))});
  auto parallel = test::build({prim_func("gemv_parallel", {a, b, c}, make(ForKind::Parallel))});
  // SROA promoted the accumulator: no stack memory left in the optimized kernel.
  for (const Target& target : test::inspected_targets()) {
    INFO(target.cpu);
    CHECK_FALSE(test::contains(test::build({prim_func("gemv_serial", {a, b, c}, make(ForKind::Serial))}, target).llvm_ir(),
                               "alloca"));
  }

  auto av = ramp_floats(m_rows * kdim, 1.f), bv = ramp_floats(kdim * lanes, 2.f);
  for (auto* mod : {&serial, &parallel}) {
    std::string name = mod->function_names()[0];
    NDArray C = NDArray::zeros({m_rows * lanes}, runtime::dtype_f32());
    test::run(*mod, name, {array_for(a, av), array_for(b, bv), C});
    for (int r = 0; r < m_rows; ++r)
      for (int l = 0; l < lanes; ++l) {
        double want = 0;
        for (int q = 0; q < kdim; ++q) want += double(av[r * kdim + q]) * bv[q * lanes + l];
        // Float accumulation (possibly fused into FMAs) vs a double reference: 37 terms of
        // magnitude <= 2 stay within 1e-5 absolute.
        REQUIRE(std::fabs(C.data<float>()[r * lanes + l] - want) <= 1e-5);
      }
  }
}

TEST_CASE("large allocations go to the heap, also inside parallel bodies", "[codegen]") {
  RestoreThreads restore;
  kiln_set_num_threads(2);
  const int n = 20000;  // 80 KB: over the stack limit for a "global" allocation
  Buffer a = flat_buffer("A", DataType::f32(), n), c = flat_buffer("C", DataType::f32(), 2 * n);
  Buffer t = flat_buffer("T", DataType::f32(), n);
  Var i("i"), j("j"), r("r");
  // C[0:n] = reverse(2*A) through T; then per parallel task, C[n + r*100 + j] via its own T.
  Stmt first = allocate(t, seq({for_loop(i, 0, n, ForKind::Serial, buffer_store(t, buffer_load(a, {i}) * 2.f, {i})),
                                for_loop(i, 0, n, ForKind::Serial, buffer_store(c, buffer_load(t, {n - 1 - i}), {i}))}));
  Stmt second = for_loop(
      r, 0, n / 100, ForKind::Parallel,
      allocate(t, seq({for_loop(j, 0, 100, ForKind::Serial, buffer_store(t, buffer_load(a, {r * 100 + j}) + 1.f, {j})),
                       for_loop(j, 0, 100, ForKind::Serial, buffer_store(c, buffer_load(t, {99 - j}), {n + r * 100 + j}))})));
  for (const Target& target : test::inspected_targets()) {
    INFO(target.cpu);
    const std::string ir = test::build({prim_func("heap", {a, c}, seq({first, second}))}, target).llvm_ir();
    CHECK(test::contains(ir, "@posix_memalign"));
    CHECK(test::contains(ir, "@free"));
  }
  auto m = test::build({prim_func("heap", {a, c}, seq({first, second}))});
  auto av = ramp_floats(n, 5.f);
  NDArray C = NDArray::zeros({2 * n}, runtime::dtype_f32());
  test::run(m, "heap", {array_for(a, av), C});
  for (int k = 0; k < n; ++k) REQUIRE(C.data<float>()[k] == av[n - 1 - k] * 2.f);
  for (int k = 0; k < n; ++k) {
    int row = k / 100, col = k % 100;
    REQUIRE(C.data<float>()[n + k] == av[row * 100 + 99 - col] + 1.f);
  }
}

TEST_CASE("a parallel body captures let-bound scalars and vectors", "[codegen]") {
  RestoreThreads restore;
  kiln_set_num_threads(2);
  const int n = 40, lanes = 16;
  Buffer a = flat_buffer("A", DataType::f32(), lanes), c = flat_buffer("C", DataType::f32(), n * lanes);
  Var scale("scale", DataType::f32()), row("row", DataType::f32(lanes)), i("i");
  Stmt body = let_stmt(
      scale, buffer_load(a, {Expr(3)}) * 2.f,
      let_stmt(row, buffer_load(a, {ramp(0, 1, lanes)}) * broadcast(scale, lanes),
               for_loop(i, 0, n, ForKind::Parallel,
                        buffer_store(c, row + broadcast(cast(DataType::f32(), i), lanes), {ramp(i * lanes, 1, lanes)}))));
  auto m = test::build({prim_func("captures", {a, c}, body)});
  std::vector<float> av(lanes);
  for (int l = 0; l < lanes; ++l) av[l] = 0.5f * l - 1.f;
  NDArray C = NDArray::zeros({n * lanes}, runtime::dtype_f32());
  test::run(m, "captures", {array_for(a, av), C});
  float s = av[3] * 2.f;
  for (int r = 0; r < n; ++r)
    for (int l = 0; l < lanes; ++l) REQUIRE(C.data<float>()[r * lanes + l] == av[l] * s + float(r));
}
