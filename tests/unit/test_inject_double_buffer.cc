// ir::inject_double_buffer and Stage::double_buffer: exact before/after IR of a hand-built
// kernel (doubled allocation, prologue, halves k % 2 and (k + 1) % 2, the guard, barriers), the
// barriers insert_thread_sync keeps and adds, refusals, and the matmul GPU template with its
// shared A/B tiles double-buffered on the OpenCL device (PoCL) against a double-precision
// reference, in the race-checking build, and through NVRTC for sm_80 and sm_90. Stage::pad_rows
// on the same tiles: the allocation's rows, the numbers on PoCL, the refusal.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "kiln/pipeline.h"
#include "kiln/codegen/gpu_build.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/transforms.h"
#include "kiln/schedule/loop_nest.h"
#include "schedule/templates/generic_gpu.h"
#include "schedule/templates/matmul_gpu.h"
#include "kiln/te/ops/nn_dense.h"
#include "kiln/te/operation.h"
#include "testing/reference.h"
#include "test_codegen_util.h"
#include "test_gpu_util.h"

using namespace kiln;
using Catch::Matchers::Contains;
using runtime::NDArray;

namespace {

// Y[tx] = sum_k X[k * 4 + 3 - tx] over 4 threads and K = 3 tiles, each tile staged in the
// shared S by the threads together: what lowering makes of a cache_read at the reduce loop.
struct TiledSum {
  ir::Buffer x, y, s;
  ir::Var tx{"tx"}, k{"k"};
  ir::PrimFunc f;

  // `buffers`: the marker's value (Stage::double_buffer(buffers); 1 as 2).
  explicit TiledSum(bool marked, int buffers = 1) {
    using namespace ir;
    const DataType t = DataType::f32();
    x = test::flat_buffer("X", t, 12);
    y = test::flat_buffer("Y", t, 4);
    s = test::flat_buffer("S", t, 4, "shared");
    Stmt load = buffer_store(s, buffer_load(x, {k * 4 + tx}), {tx});
    if (marked) load = attr_stmt(kDoubleBufferScope, s->data, Expr(buffers), load);
    Stmt use = buffer_store(y, buffer_load(y, {tx}) + buffer_load(s, {Expr(3) - tx}), {tx});
    Stmt loop = for_loop(k, 0, 3, ForKind::Serial, allocate(s, seq({load, use})));
    f = test::prim_func("tiled_sum", {x, y}, for_loop(tx, 0, 4, ForKind::ThreadBinding, loop, "threadIdx.x"));
  }
};

// The matmul template's dense at `choices`, its shared tiles double-buffered when `db` (with
// `buffers` buffers), their rows padded by `pad` elements.
ir::PrimFunc dense_ir(int64_t m, int64_t n, int64_t k, bool db, const Target& t,
                      const std::map<std::string, size_t>& choices = {}, int64_t pad = 0, int buffers = 2) {
  te::Tensor x = te::placeholder({m, k}, ir::DataType::f32(), "X");
  te::Tensor w = te::placeholder({n, k}, ir::DataType::f32(), "W");
  te::Tensor y = te::ops::dense_plain(x, w);
  schedule::Config cfg = schedule::Config::with_choices(choices);
  schedule::Schedule s = schedule::schedule_anchor_gpu({y}, y, schedule::schedule_matmul_gpu, t, cfg);
  int marked = 0;
  for (schedule::Stage st : s.stages()) {
    if (st->scope != "shared") continue;
    if (pad) st.pad_rows(pad);
    if (db) {
      st.double_buffer(buffers);
      ++marked;
    }
  }
  REQUIRE(marked == (db ? 2 : 0));
  return kiln::loop_ir(s, {x, w, y}, "dense");
}

// Outputs of the m x n dense x . w^T (k deep) off a double-precision reference by more than
// 1e-4 of 1 + |reference|.
int64_t dense_errors(const float* out, const std::vector<float>& xv, const std::vector<float>& wv, int64_t m,
                     int64_t n, int64_t k) {
  int64_t wrong = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t q = 0; q < k; ++q) acc += double(xv[i * k + q]) * wv[j * k + q];
      wrong += !(std::abs(out[i * n + j] - acc) <= 1e-4 * (1 + std::abs(acc)));
    }
  return wrong;
}

}  // namespace

TEST_CASE("inject_double_buffer: before and after on a tiled sum", "[ir][gpu]") {
  TiledSum before(true);
  CHECK(ir::to_string(before.f) == R"(func tiled_sum(X: float32[12], Y: float32[4]) {
  thread_binding("threadIdx.x") for (tx, 0, 4) {
    for (k, 0, 3) {
      allocate S: float32[4], shared
      // attr [S] double_buffer_scope = 1
      S[tx] = X[k*4 + tx]
      Y[tx] = Y[tx] + S[3 - tx]
    }
  }
}
)");
  // Two halves outside the loop; the prologue fills half 0; each iteration reads half k % 2,
  // fills half (k + 1) % 2 for the next under a guard on k alone, and closes with the barrier.
  ir::PrimFunc after = ir::inject_double_buffer(before.f);
  CHECK(ir::to_string(after) == R"(func tiled_sum(X: float32[12], Y: float32[4]) {
  thread_binding("threadIdx.x") for (tx, 0, 4) {
    allocate S: float32[8], shared
    S[tx] = X[tx]
    kiln_barrier()
    for (k, 0, 3) {
      Y[tx] = Y[tx] + S[3 - tx + floormod(k, 2)*4]
      // attr [k] double_buffer_write = 1
      if (k + 1 < 3) {
        S[floormod(k + 1, 2)*4 + tx] = X[k*4 + tx + 4]
      }
      kiln_barrier()
    }
  }
}
)");
  // insert_thread_sync keeps both barriers and adds none: the marked writes go to the half no
  // thread reads in that iteration (without the mark it put one between the read of half k % 2
  // and the write of half (k + 1) % 2, one per iteration more than needed).
  const ir::KernelLaunch launch = test::launch_of("tiled_sum", 4);
  CHECK(ir::to_string(ir::insert_thread_sync(ir::hoist_device_allocations(after), launch)) ==
        R"(func tiled_sum(X: float32[12], Y: float32[4]) {
  allocate S: float32[8], shared
  thread_binding("threadIdx.x") for (tx, 0, 4) {
    S[tx] = X[tx]
    kiln_barrier()
    for (k, 0, 3) {
      Y[tx] = Y[tx] + S[3 - tx + floormod(k, 2)*4]
      // attr [k] double_buffer_write = 1
      if (k + 1 < 3) {
        S[floormod(k + 1, 2)*4 + tx] = X[k*4 + tx + 4]
      }
      kiln_barrier()
    }
  }
}
)");
}

TEST_CASE("inject_double_buffer: three buffers, plain and asynchronous", "[ir][gpu]") {
  TiledSum before(true, 3);
  // Tile t lives in buffer t % 3: the prologue fills tiles 0 and 1, iteration k reads buffer
  // k % 3 and fills tile k + 2 into buffer (k + 2) % 3, which iteration k - 1 read before its
  // closing barrier.
  CHECK(ir::to_string(ir::inject_double_buffer(before.f)) == R"(func tiled_sum(X: float32[12], Y: float32[4]) {
  thread_binding("threadIdx.x") for (tx, 0, 4) {
    allocate S: float32[12], shared
    S[tx] = X[tx]
    S[tx + 4] = X[tx + 4]
    kiln_barrier()
    for (k, 0, 3) {
      Y[tx] = Y[tx] + S[3 - tx + floormod(k, 3)*4]
      // attr [k] double_buffer_write = 1
      if (k + 2 < 3) {
        S[floormod(k + 2, 3)*4 + tx] = X[k*4 + tx + 8]
      }
      kiln_barrier()
    }
  }
}
)");
  // Asynchronous: a group per prologue tile and one per iteration, committed outside the guard
  // (empty past the end), so that waiting until one is pending completes tile k + 1's.
  CHECK(ir::to_string(ir::inject_double_buffer(before.f, true)) == R"(func tiled_sum(X: float32[12], Y: float32[4]) {
  thread_binding("threadIdx.x") for (tx, 0, 4) {
    allocate S: float32[12], shared
    // attr [S] async_copy = 4
    S[tx] = X[tx]
    kiln_async_commit()
    // attr [S] async_copy = 4
    S[tx + 4] = X[tx + 4]
    kiln_async_commit()
    kiln_async_wait(1)
    kiln_barrier()
    for (k, 0, 3) {
      // attr [k] double_buffer_write = 1
      if (k + 2 < 3) {
        // attr [S] async_copy = 4
        S[floormod(k + 2, 3)*4 + tx] = X[k*4 + tx + 8]
      }
      kiln_async_commit()
      Y[tx] = Y[tx] + S[3 - tx + floormod(k, 3)*4]
      kiln_async_wait(1)
      kiln_barrier()
    }
  }
}
)");
}

// The tiled sum with its use as a consumer left in flight: a wgmma region whose call's last
// operand (in_flight) is 1 (its other operands do not matter to the pass).
ir::PrimFunc with_wgmma_in_flight(const TiledSum& sum) {
  struct Wrap : ir::StmtMutator {
    ir::Stmt visit_buffer_store(const ir::BufferStoreNode* op, const ir::Stmt& self) override {
      if (op->buffer->name != "Y") return self;
      std::vector<ir::Expr> operands(ir::kWgmmaOperands, ir::Expr(0));
      operands.back() = ir::Expr(1);
      return ir::attr_stmt(ir::kWgmma, op->buffer->data, ir::make_intrinsic(ir::DataType::i32(), ir::kWgmmaCall, operands),
                           self);
    }
  } wrap;
  ir::PrimFunc f = sum.f;
  f.body = wrap.mutate_stmt(f.body);
  return f;
}

TEST_CASE("inject_double_buffer: a wgmma left in flight reads its buffer past the barrier, so tiles load one later",
          "[ir][gpu]") {
  // Four buffers, two tiles ahead (not three): iteration k fills buffer (k + 2) % 4, which the
  // runs of k - 2 read, and each thread waited for those before k - 1's barrier (its run of
  // k - 1 waits for its run of k - 2). The wait leaves one group pending; after the loop
  // kiln_wgmma_drain waits for the last runs.
  const std::string after = ir::to_string(ir::inject_double_buffer(with_wgmma_in_flight(TiledSum(true, 4)), true));
  CHECK(after == R"(func tiled_sum(X: float32[12], Y: float32[4]) {
  thread_binding("threadIdx.x") for (tx, 0, 4) {
    allocate S: float32[16], shared
    // attr [S] async_copy = 4
    S[tx] = X[tx]
    kiln_async_commit()
    // attr [S] async_copy = 4
    S[tx + 4] = X[tx + 4]
    kiln_async_commit()
    kiln_async_wait(1)
    kiln_barrier()
    for (k, 0, 3) {
      // attr [k] double_buffer_write = 1
      if (k + 2 < 3) {
        // attr [S] async_copy = 4
        S[floormod(k + 2, 4)*4 + tx] = X[k*4 + tx + 8]
      }
      kiln_async_commit()
      // attr [Y] wgmma = kiln_wgmma_m64nNk16(0, 0, 0, 0, 0, 0, 0, 1)
      Y[tx] = Y[tx] + S[3 - tx + floormod(k, 4)*4]
      kiln_async_wait(1)
      kiln_barrier()
    }
    kiln_wgmma_drain()
  }
}
)");
  // Three buffers: one tile ahead, waited to 0, the buffer of k + 1 the one k - 2 read.
  const std::string three = ir::to_string(ir::inject_double_buffer(with_wgmma_in_flight(TiledSum(true, 3)), true));
  CHECK_THAT(three, Contains("if (k + 1 < 3) {\n        // attr [S] async_copy = 4\n        S[floormod(k + 1, 3)*4 + tx]"));
  CHECK_THAT(three, Contains("kiln_async_wait(0)\n      kiln_barrier()\n    }\n    kiln_wgmma_drain()"));
  // Two buffers leave none free for the run in flight.
  CHECK_THROWS_WITH(ir::inject_double_buffer(with_wgmma_in_flight(TiledSum(true, 2)), true),
                    Contains("loop 'k' leaves its wgmma in flight, which needs 3 or more buffers, not 2"));
}

TEST_CASE("double_buffer: buffers past the opt-in shared memory are refused by build_gpu, naming the kernel", "[ir][gpu]") {
  // 120 KiB of shared tile passes the verifier's 227 KiB on sm_90, and its two halves do not.
  using namespace ir;
  const DataType t = DataType::f32();
  const int64_t n = 30 * 1024;
  Buffer x = test::flat_buffer("X", t, 4 * n), y = test::flat_buffer("Y", t, n), sh = test::flat_buffer("S", t, n, "shared");
  Var tx("tx"), k("k");
  Stmt load = attr_stmt(kDoubleBufferScope, sh->data, Expr(2), buffer_store(sh, buffer_load(x, {k * n + tx}), {tx}));
  Stmt use = buffer_store(y, buffer_load(y, {tx}) + buffer_load(sh, {tx}), {tx});
  Stmt loop = for_loop(k, 0, 4, ForKind::Serial, allocate(sh, seq({load, use})));
  PrimFunc f = test::prim_func("big", {x, y}, for_loop(tx, 0, 32, ForKind::ThreadBinding, loop, "threadIdx.x"));
  codegen::GpuBuildOptions text_only;
  text_only.compile = false;
  CHECK_THROWS_WITH(kiln::build_gpu({f}, Target::parse("cuda -arch=sm_90"), text_only),
                    Contains("kernel 'big': 245760 bytes of shared memory per block, more than the 232448 target "
                             "'cuda -arch=sm_90") &&
                        Contains("' allows with the opt-in"));
}

TEST_CASE("inject_double_buffer: nothing marked, nothing changes", "[ir][gpu]") {
  TiledSum plain(false);
  CHECK(ir::to_string(ir::inject_double_buffer(plain.f)) == ir::to_string(plain.f));
}

TEST_CASE("inject_double_buffer: refusals", "[ir][gpu]") {
  // Stage::double_buffer on a stage that is not in shared memory.
  te::Tensor x = te::placeholder({8, 8}, ir::DataType::f32(), "X");
  te::Tensor w = te::placeholder({8, 8}, ir::DataType::f32(), "W");
  te::Tensor y = te::ops::dense_plain(x, w);
  schedule::Schedule s = schedule::create({y});
  te::Tensor xl = s.cache_read(x, "local", {y});
  CHECK_THROWS_WITH(s[xl].double_buffer(), Contains("double_buffer: stage 'X.local' has scope 'local'"));
  CHECK_THROWS_WITH(s[y].double_buffer(), Contains("stage 'dense' has scope 'global'"));
  schedule::Schedule s2 = schedule::create({y});
  te::Tensor xs = s2.cache_read(x, "shared", {y});
  CHECK_THROWS_WITH(s2[xs].double_buffer(1), Contains("stage 'X.shared': buffers=1, not 2 to 8"));
  CHECK_THROWS_WITH(s2[xs].double_buffer(9), Contains("buffers=9, not 2 to 8"));

  // Two tiles of one loop with different numbers of buffers.
  {
    using namespace ir;
    const DataType t = DataType::f32();
    Buffer x2 = test::flat_buffer("X", t, 12), y2 = test::flat_buffer("Y", t, 4);
    Buffer s1 = test::flat_buffer("S1", t, 4, "shared"), s2 = test::flat_buffer("S2", t, 4, "shared");
    Var tx("tx"), k("k");
    auto fill = [&](const Buffer& b, int buffers) {
      return attr_stmt(kDoubleBufferScope, b->data, Expr(buffers), buffer_store(b, buffer_load(x2, {k * 4 + tx}), {tx}));
    };
    Stmt use = buffer_store(y2, buffer_load(s1, {tx}) + buffer_load(s2, {tx}), {tx});
    Stmt loop = for_loop(k, 0, 3, ForKind::Serial, allocate(s1, allocate(s2, seq({fill(s1, 2), fill(s2, 3), use}))));
    PrimFunc f = test::prim_func("k", {x2, y2}, for_loop(tx, 0, 4, ForKind::ThreadBinding, loop, "threadIdx.x"));
    CHECK_THROWS_WITH(inject_double_buffer(f), Contains("shared buffers of loop 'k' have 2 and 3 buffers"));
  }

  // A marked producer outside any serial loop.
  using namespace ir;
  Buffer src = test::flat_buffer("X", DataType::f32(), 4), sh = test::flat_buffer("S", DataType::f32(), 4, "shared");
  Var tx("tx");
  Stmt load = attr_stmt(kDoubleBufferScope, sh->data, Expr(1), buffer_store(sh, buffer_load(src, {tx}), {tx}));
  PrimFunc f = test::prim_func("k", {src}, for_loop(tx, 0, 4, ForKind::ThreadBinding, allocate(sh, load), "threadIdx.x"));
  CHECK_THROWS_WITH(inject_double_buffer(f), Contains("shared buffer 'S' is not produced at the top of a serial loop"));
}

TEST_CASE("inject_double_buffer: refusals of loops it cannot double-buffer", "[ir][gpu]") {
  using namespace ir;
  const DataType t = DataType::f32();
  Buffer x = test::flat_buffer("X", t, 12), y = test::flat_buffer("Y", t, 4), sh = test::flat_buffer("S", t, 4, "shared");
  Var tx("tx"), k("k");
  auto marked = [&](const Expr& value) { return attr_stmt(kDoubleBufferScope, sh->data, Expr(1), buffer_store(sh, value, {tx})); };
  const Stmt use = buffer_store(y, buffer_load(y, {tx}) + buffer_load(sh, {Expr(3) - tx}), {tx});
  auto kernel = [&](const Stmt& in_threads) {
    return test::prim_func("k", {x, y}, for_loop(tx, 0, 4, ForKind::ThreadBinding, in_threads, "threadIdx.x"));
  };
  // The tile allocated outside the loop: nowhere to put its second half.
  const Stmt outside = allocate(sh, for_loop(k, 0, 3, ForKind::Serial, seq({marked(buffer_load(x, {k * 4 + tx})), use})));
  CHECK_THROWS_WITH(inject_double_buffer(kernel(outside)),
                    Contains("shared buffer 'S' is not allocated inside loop 'k'"));
  // The loop under a branch on the thread index: its barriers would not be reached by all.
  const Stmt loop = for_loop(k, 0, 3, ForKind::Serial, allocate(sh, seq({marked(buffer_load(x, {k * 4 + tx})), use})));
  CHECK_THROWS_WITH(inject_double_buffer(kernel(if_then_else(tx < 2, loop))),
                    Contains("under a branch not every thread of the block takes"));
  // A producer reading what the rest of the loop writes cannot run an iteration early.
  const Stmt reads_y = for_loop(k, 0, 3, ForKind::Serial, allocate(sh, seq({marked(buffer_load(y, {tx})), use})));
  CHECK_THROWS_WITH(inject_double_buffer(kernel(reads_y)),
                    Contains("the producer of 'S' reads 'Y', which loop 'k' writes"));
}

TEST_CASE("double_buffer: the matmul template on the OpenCL device, race-checked", "[gpu][opencl]") {
  REQUIRE_OPENCL(dev);
  const Target t = Target::parse("opencl");
  // The default knobs on sizes no tile divides, and small tiles with several K slices; three
  // buffers over 4 slices and over 2 (the prologue fills both, the loop none).
  const std::vector<std::array<int64_t, 4>> cases = {{70, 90, 45, 2}, {64, 64, 64, 2}, {33, 65, 17, 2},
                                                     {64, 64, 64, 3}, {33, 65, 17, 3}};
  for (const auto& [m, n, k, buffers] : cases) {
    for (bool race_check : {false, true}) {
      INFO("dense " << m << "x" << n << "x" << k << ", " << buffers << " buffers" << (race_check ? " race-checked" : ""));
      codegen::GpuBuildOptions opt;
      opt.race_check = race_check;
      codegen::GpuModule mod = kiln::build_gpu({dense_ir(m, n, k, true, t, {}, 0, static_cast<int>(buffers))}, t, opt);
      auto xv = ref::random_floats(m * k, 11, -4.f, 4.f), wv = ref::random_floats(n * k, 12, -4.f, 4.f);
      std::vector<NDArray> args = {NDArray::from_vector<float>({m, k}, runtime::dtype_f32(), xv),
                                   NDArray::from_vector<float>({n, k}, runtime::dtype_f32(), wv),
                                   NDArray::zeros({m, n}, runtime::dtype_f32())};
      test::RaceReport races;
      test::run_on_device(*dev, mod, args, 0, race_check ? &races : nullptr);
      CHECK(races.count == 0);
      CHECK(races.first == "");
      CHECK(dense_errors(args[2].data<float>(), xv, wv, m, n, k) == 0);
    }
  }
}

TEST_CASE("pad_rows: padded shared tiles, double-buffered, on the OpenCL device", "[gpu][opencl]") {
  const Target t = Target::parse("opencl");
  // The default knobs stage 16 x 16 floats of each operand: rows of 16 + pad, two halves (the
  // template's own pad of 1 replaced).
  for (int64_t pad : {3, 8}) {
    INFO("pad " << pad);
    codegen::GpuBuildOptions text_only;
    text_only.compile = false;
    const int64_t m = 70, n = 90, k = 45;
    ir::PrimFunc f = dense_ir(m, n, k, true, t, {}, pad);
    const std::string size = "[" + std::to_string(2 * 16 * (16 + pad)) + "]";
    const std::string source = kiln::build_gpu({f}, t, text_only).source;
    CHECK_THAT(source, Contains("X_shared" + size));
    CHECK_THAT(source, Contains("W_shared" + size));
    REQUIRE_OPENCL(dev);
    codegen::GpuModule mod = kiln::build_gpu({f}, t);
    auto xv = ref::random_floats(m * k, 21, -4.f, 4.f), wv = ref::random_floats(n * k, 22, -4.f, 4.f);
    std::vector<NDArray> args = {NDArray::from_vector<float>({m, k}, runtime::dtype_f32(), xv),
                                 NDArray::from_vector<float>({n, k}, runtime::dtype_f32(), wv),
                                 NDArray::zeros({m, n}, runtime::dtype_f32())};
    test::run_on_device(*dev, mod, args, 0, nullptr);
    CHECK(dense_errors(args[2].data<float>(), xv, wv, m, n, k) == 0);
  }
}

TEST_CASE("pad_rows: refusals", "[schedule]") {
  te::Tensor x = te::placeholder({8, 8}, ir::DataType::f32(), "X");
  te::Tensor y = te::compute({8, 8}, [&](ir::Var i, ir::Var j) { return x(i, j); }, "Y");
  schedule::Schedule s = schedule::create({y});
  CHECK_THROWS_WITH(s[y].pad_rows(4), Contains("pad_rows: stage 'Y' has scope 'global'"));
  te::Tensor cached = s.cache_read(x, "shared", {y});
  CHECK_THROWS_WITH(s[cached].pad_rows(-1), Contains("-1 elements of padding"));
}

TEST_CASE("core_matrix_layout: refusals", "[schedule]") {
  te::Tensor x = te::placeholder({8, 8}, ir::DataType::f16(), "X");
  te::Tensor y = te::compute({8, 8}, [&](ir::Var i, ir::Var j) { return x(i, j); }, "Y");
  schedule::Schedule s = schedule::create({y});
  CHECK_THROWS_WITH(s[y].core_matrix_layout(), Contains("core_matrix_layout: stage 'Y' has scope 'global'"));
  te::Tensor cached = s.cache_read(x, "shared", {y});
  s[cached].core_matrix_layout();
  s[cached].pad_rows(8);
  CHECK_THROWS_WITH(schedule::loop_nest(s, {x, y}, "f"), Contains("core_matrix_layout: stage 'X.shared' also pads its rows"));
}

TEST_CASE("swizzle_128b_layout: refusals", "[schedule]") {
  // Rows of 8 float16 are 16 bytes, not the 128 the swizzle permutes.
  te::Tensor x = te::placeholder({8, 8}, ir::DataType::f16(), "X");
  te::Tensor y = te::compute({8, 8}, [&](ir::Var i, ir::Var j) { return x(i, j); }, "Y");
  schedule::Schedule s = schedule::create({y});
  CHECK_THROWS_WITH(s[y].swizzle_128b_layout(), Contains("swizzle_128b_layout: stage 'Y' has scope 'global'"));
  te::Tensor cached = s.cache_read(x, "shared", {y});
  s[cached].swizzle_128b_layout();
  CHECK_THROWS_WITH(schedule::loop_nest(s, {x, y}, "f"),
                    Contains("swizzle_128b_layout: stage 'X.shared' is not rows of whole 128-byte panels, a multiple of 8 of them"));
  // Padded rows are refused as for core matrices.
  te::Tensor w = te::placeholder({8, 64}, ir::DataType::f16(), "W");
  te::Tensor z = te::compute({8, 64}, [&](ir::Var i, ir::Var j) { return w(i, j); }, "Z");
  schedule::Schedule t = schedule::create({z});
  te::Tensor wc = t.cache_read(w, "shared", {z});
  t[wc].swizzle_128b_layout();
  t[wc].pad_rows(8);
  CHECK_THROWS_WITH(schedule::loop_nest(t, {w, z}, "g"), Contains("swizzle_128b_layout: stage 'W.shared' also pads its rows"));
  // Unpadded, 8 rows of 64 float16 lower.
  t[wc].pad_rows(0);
  CHECK_NOTHROW(schedule::loop_nest(t, {w, z}, "g"));
}

TEST_CASE("double_buffer: the matmul template's CUDA text through NVRTC", "[gpu][cuda]") {
  const Target t = Target::parse("cuda");
  ir::PrimFunc f = dense_ir(128, 128, 128, true, t);
  codegen::GpuBuildOptions text_only;
  text_only.compile = false;
  codegen::GpuModule text = kiln::build_gpu({f}, t, text_only);
  // Doubled tiles (the default knobs stage 16 x 16 floats of each operand, both read down their
  // columns: X's rows padded by 16 bytes, the weight's by one float).
  CHECK_THAT(text.source, Contains("X_shared[640]"));
  CHECK_THAT(text.source, Contains("W_shared[544]"));
  // One barrier after the prologue and one closing each K step: the next tiles' writes go to the
  // other halves, so insert_thread_sync adds none between the compute and them.
  CHECK(test::occurrences(text.source, "__syncthreads()") == 2);
  if (!codegen::cuda_codegen_available()) {
    WARN("skipped the NVRTC half: kiln was built without the CUDA toolkit's NVRTC");
    return;
  }
  codegen::GpuModule m = kiln::build_gpu({f}, t);
  REQUIRE(m.images.size() == 3);  // sm_80 and sm_90 cubins, compute_90 PTX
  CHECK(m.images[0].sm == 80);
  CHECK(m.images[1].sm == 90);
}
