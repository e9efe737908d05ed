// Asynchronous copies (cp.async, CUDA sm_80+) of double-buffered shared tiles: the exact IR of
// ir::inject_double_buffer's asynchronous form (scalar, vector and zero-filling copies, and
// the copies it leaves plain), its CUDA text, the matmul template's default fp32 GEMM through
// NVRTC for sm_80 and sm_90 (the PTX holds cp.async, commit and wait; ptxas assembled the
// cubins), sm_75 keeping plain copies, and the same asynchronous IR printed as OpenCL C (plain
// stores in the asynchronous order) on PoCL against a double-precision reference, race-checked.
#include <catch2/catch.hpp>

#include <array>
#include <functional>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "kiln/pipeline.h"
#include "kiln/codegen/gpu_build.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/transforms.h"
#include "schedule/templates/generic_gpu.h"
#include "schedule/templates/matmul_gpu.h"
#include "kiln/te/ops/nn_conv.h"
#include "kiln/te/ops/nn_dense.h"
#include "testing/reference.h"
#include "test_codegen_util.h"
#include "test_gpu_util.h"

using namespace kiln;
using Catch::Matchers::Contains;
using runtime::NDArray;

namespace {

// Y[tx] = sum_k of a tile of X staged in the shared S by 4 threads, K = 3 tiles, each copy
// `copy(k, tx)` (a store into S): what lowering makes of a cache_read at the reduce loop.
ir::PrimFunc tiled_sum(ir::DataType t, int64_t tile, const std::function<ir::Stmt(ir::Buffer, ir::Buffer, ir::Var, ir::Var)>& copy) {
  using namespace ir;
  Buffer x = test::flat_buffer("X", t, 3 * tile), y = test::flat_buffer("Y", t, 4);
  Buffer s = test::flat_buffer("S", t, tile, "shared");
  Var tx("tx"), k("k");
  Stmt load = attr_stmt(kDoubleBufferScope, s->data, Expr(1), copy(x, s, k, tx));
  Stmt use = buffer_store(y, buffer_load(y, {tx}) + buffer_load(s, {Expr(3) - tx}), {tx});
  Stmt loop = for_loop(k, 0, 3, ForKind::Serial, allocate(s, seq({load, use})));
  return test::prim_func("tiled_sum", {x, y}, for_loop(tx, 0, 4, ForKind::ThreadBinding, loop, "threadIdx.x"));
}

ir::Stmt scalar_copy(ir::Buffer x, ir::Buffer s, ir::Var k, ir::Var tx) {
  return ir::buffer_store(s, ir::buffer_load(x, {k * 4 + tx}), {tx});
}

codegen::GpuModule cuda_text(const ir::PrimFunc& f, const std::string& target = "cuda -arch=sm_80") {
  codegen::GpuBuildOptions text_only;
  text_only.compile = false;
  return kiln::build_gpu({f}, Target::parse(target), text_only);
}

// The matmul template's dense at its defaults for `t` (and `choices`).
ir::PrimFunc dense_ir(int64_t m, int64_t n, int64_t k, const Target& t, const std::map<std::string, size_t>& choices = {}) {
  te::Tensor x = te::placeholder({m, k}, ir::DataType::f32(), "X");
  te::Tensor w = te::placeholder({n, k}, ir::DataType::f32(), "W");
  te::Tensor y = te::ops::dense_plain(x, w);
  schedule::Config cfg = schedule::Config::with_choices(choices);
  schedule::Schedule s = schedule::schedule_anchor_gpu({y}, y, schedule::schedule_matmul_gpu, t, cfg);
  return kiln::loop_ir(s, {x, w, y}, "dense");
}

// Elements of the m x n product `out` farther from a double-precision sum over k than 1e-5 of
// (1 + the sum of the products' magnitudes); B is [n, k] (a dense weight) or, with b_kn, [k, n].
int64_t product_errors(const float* out, const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                       int64_t n, int64_t k, bool b_kn) {
  int64_t wrong = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0, mag = 0;
      for (int64_t q = 0; q < k; ++q) {
        const double p = double(a[i * k + q]) * (b_kn ? b[q * n + j] : b[j * k + q]);
        acc += p;
        mag += std::abs(p);
      }
      wrong += !(std::abs(out[i * n + j] - acc) <= 1e-5 * (1 + mag));
    }
  return wrong;
}

// C = A B with B [K, N] (a matmul's layout: both tiles' rows run along a tensor's rows).
ir::PrimFunc matmul_ir(int64_t m, int64_t n, int64_t k, const Target& t, const std::map<std::string, size_t>& choices = {}) {
  te::Tensor a = te::placeholder({m, k}, ir::DataType::f32(), "A");
  te::Tensor b = te::placeholder({k, n}, ir::DataType::f32(), "B");
  te::Tensor c = te::ops::batch_matmul(a, b);
  schedule::Config cfg = schedule::Config::with_choices(choices);
  schedule::Schedule s = schedule::schedule_anchor_gpu({c}, c, schedule::schedule_matmul_gpu, t, cfg);
  return kiln::loop_ir(s, {a, b, c}, "matmul");
}

// The value the matmul template's default schedule of a 128^3 dense takes for `knob` on `t`.
int64_t default_knob(const Target& t, const std::string& knob) {
  te::Tensor x = te::placeholder({128, 128}, ir::DataType::f32(), "X");
  te::Tensor w = te::placeholder({128, 128}, ir::DataType::f32(), "W");
  te::Tensor y = te::ops::dense_plain(x, w);
  schedule::Config cfg;
  schedule::schedule_anchor_gpu({y}, y, schedule::schedule_matmul_gpu, t, cfg);
  return cfg.answers().at(knob).at(0);
}

// The conv template (implicit GEMM) of a 3x3 conv padded by 1: its im2col tile copies select
// the padding's zeros.
struct PaddedConv {
  te::Tensor x = te::placeholder({1, 8, 9, 11}, ir::DataType::f32(), "X");
  te::Tensor w = te::placeholder({12, 8, 3, 3}, ir::DataType::f32(), "W");
  te::Tensor y;
  ref::Conv2dShape shape{1, 8, 9, 11, 12, 3, 3};
  ir::PrimFunc f;
  explicit PaddedConv(const Target& t) {
    te::ops::ConvNdAttrs a;
    a.strides = {1, 1};
    a.padding = {1, 1, 1, 1};
    a.dilation = {1, 1};
    shape.pad = 1;
    y = te::ops::conv2d_gemm(x, w, a);
    schedule::Config cfg = schedule::Config::with_choices({{"double_buffer", 1}});
    schedule::Schedule s = schedule::schedule_anchor_gpu({y}, y, schedule::schedule_conv_gemm_gpu, t, cfg);
    f = kiln::loop_ir(s, {x, w, y}, "conv");
  }
};

}  // namespace

TEST_CASE("inject_double_buffer: the asynchronous form on a tiled sum", "[ir][gpu]") {
  ir::PrimFunc before = tiled_sum(ir::DataType::f32(), 4, scalar_copy);
  // The copies are 4-byte cp.async; the next tile's go first in the body, committed in the guard;
  // the body waits for them before its closing barrier, as the prologue does before its own.
  ir::PrimFunc after = ir::inject_double_buffer(before, true);
  CHECK(ir::to_string(after) == R"(func tiled_sum(X: float32[12], Y: float32[4]) {
  thread_binding("threadIdx.x") for (tx, 0, 4) {
    allocate S: float32[8], shared
    // attr [S] async_copy = 4
    S[tx] = X[tx]
    kiln_async_commit()
    kiln_async_wait(0)
    kiln_barrier()
    for (k, 0, 3) {
      // attr [k] double_buffer_write = 1
      if (k + 1 < 3) {
        // attr [S] async_copy = 4
        S[floormod(k + 1, 2)*4 + tx] = X[k*4 + tx + 4]
        kiln_async_commit()
      }
      Y[tx] = Y[tx] + S[3 - tx + floormod(k, 2)*4]
      kiln_async_wait(0)
      kiln_barrier()
    }
  }
}
)");
  // insert_thread_sync adds no barrier: the next tile's writes go to the other half.
  const ir::KernelLaunch launch = test::launch_of("tiled_sum", 4);
  CHECK(ir::to_string(ir::insert_thread_sync(ir::hoist_device_allocations(after), launch)) ==
        ir::to_string(ir::hoist_device_allocations(after)));
  // Without async copies (OpenCL, older sms) the plain form.
  CHECK(ir::to_string(ir::inject_double_buffer(before, false)) ==
        ir::to_string(ir::inject_double_buffer(before)));
  CHECK(test::occurrences(ir::to_string(ir::inject_double_buffer(before)), "async") == 0);
}

TEST_CASE("inject_double_buffer: vector and zero-filling async copies, and copies left plain", "[ir][gpu]") {
  using namespace ir;
  const DataType f32 = DataType::f32();
  // Each thread copies 4 neighbouring floats, the tiles past tile 1 of X zero-filled: one
  // 16-byte copy whose source bytes are 0 or 16 (the prologue's condition folds away).
  auto vector_zfill = [&](Buffer x, Buffer s, Var k, Var tx) {
    Expr value = select(broadcast(k < 2, 4), buffer_load(x, {ramp(k * 16 + tx * 4, 1, 4)}), broadcast(Expr(0.0f), 4));
    return buffer_store(s, value, {ramp(tx * 4, 1, 4)});
  };
  PrimFunc after = inject_double_buffer(tiled_sum(f32, 16, vector_zfill), true);
  CHECK(to_string(after) == R"(func tiled_sum(X: float32[48], Y: float32[4]) {
  thread_binding("threadIdx.x") for (tx, 0, 4) {
    allocate S: float32[32], shared
    // attr [S] async_copy = 16
    S[ramp(tx*4, 1, 4)] = X[ramp(tx*4, 1, 4)]
    kiln_async_commit()
    kiln_async_wait(0)
    kiln_barrier()
    for (k, 0, 3) {
      // attr [k] double_buffer_write = 1
      if (k + 1 < 3) {
        // attr [S] async_copy = 16
        S[ramp(floormod(k + 1, 2)*16 + tx*4, 1, 4)] = select(broadcast(k < 1, 4), X[ramp(k*16 + tx*4 + 16, 1, 4)], broadcast(0f, 4))
        kiln_async_commit()
      }
      Y[tx] = Y[tx] + S[3 - tx + floormod(k, 2)*16]
      kiln_async_wait(0)
      kiln_barrier()
    }
  }
}
)");
  // CUDA: one 16-byte cp.async (cg) per thread; where the select fails, 0 source bytes from a
  // clamped address.
  const std::string cuda = cuda_text(after).source;
  CHECK_THAT(cuda, Contains("__shared__ __align__(16) float S[32];"));
  CHECK_THAT(cuda, Contains("asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" :: "
                            "\"r\"((unsigned)__cvta_generic_to_shared(S + (tx * 4))), "
                            "\"l\"(__cvta_generic_to_global(X + (tx * 4))) : \"memory\");"));
  CHECK_THAT(cuda, Contains("const bool copy_ok = (k < 1);"));
  CHECK_THAT(cuda, Contains("asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: "
                            "\"r\"((unsigned)__cvta_generic_to_shared(S + ((kiln_floormod_int32((k + 1), 2) * 16) + (tx * 4)))), "
                            "\"l\"(__cvta_generic_to_global(X + (copy_ok ? (((k * 16) + (tx * 4)) + 16) : 0))), "
                            "\"r\"((copy_ok ? 16 : 0)) : \"memory\");"));
  CHECK(test::occurrences(cuda, "cp.async.commit_group;") == 2);
  CHECK(test::occurrences(cuda, "cp.async.wait_group 0;") == 2);
  // The OpenCL text of the same IR: plain stores (the select), no commit or wait.
  codegen::GpuBuildOptions no_compile;
  const std::string ocl = kiln::build_gpu({after}, Target::parse("opencl"), no_compile).source;
  CHECK(test::occurrences(ocl, "async") == 0);
  CHECK_THAT(ocl, Contains("__local float S[32];"));

  // Left plain: a copy starting off a 4-float boundary (X[k*16 + tx*4 + 1 ...]), a 2-byte one
  // (cp.async copies 4, 8 or 16 bytes), a copy that computes. With no copy asynchronous the
  // loop keeps the plain form.
  auto misaligned = [&](Buffer x, Buffer s, Var k, Var tx) {
    return buffer_store(s, buffer_load(x, {ramp(k * 16 + tx * 4 + 1, 1, 4)}), {ramp(tx * 4, 1, 4)});
  };
  auto computed = [&](Buffer x, Buffer s, Var k, Var tx) {
    return buffer_store(s, buffer_load(x, {k * 4 + tx}) * 2.0f, {tx});
  };
  for (const auto& [what, f] : std::vector<std::pair<std::string, PrimFunc>>{
           {"misaligned", tiled_sum(f32, 16, misaligned)},
           {"float16", tiled_sum(DataType::f16(), 4, scalar_copy)},
           {"computed", tiled_sum(f32, 4, computed)}}) {
    INFO(what);
    CHECK(to_string(inject_double_buffer(f, true)) == to_string(inject_double_buffer(f, false)));
  }
}

TEST_CASE("async copies: the default fp32 GEMM for sm_80 and sm_90 issues cp.async", "[gpu][cuda]") {
  for (const char* spec : {"cuda -arch=sm_80", "cuda -arch=sm_90"}) {
    INFO(spec);
    const Target t = Target::parse(spec);
    // Both tiles double-buffered by default. X's rows of 256 are whole 16-byte vectors: one
    // cp.async.cg of 16 bytes a copy; W's tile rows are padded by one float (its reads down the
    // columns), so its copies are 4-byte cp.async. The 70 x 90 x 45 GEMM copies X element by
    // element too (rows of 45) and guards the copies of the ragged edges (a tile element past
    // the matrix is not copied, and the compute skips it).
    for (const auto& [m, n, k] : std::vector<std::array<int64_t, 3>>{{256, 256, 256}, {70, 90, 45}}) {
      INFO(m << "x" << n << "x" << k);
      ir::PrimFunc f = dense_ir(m, n, k, t);
      const std::string text = cuda_text(f, spec).source;
      const int vector_copies = k % 4 == 0 ? 2 : 0;  // prologue and next
      CHECK(test::occurrences(text, "cp.async.cg.shared.global [%0], [%1], 16;") == vector_copies);
      CHECK(test::occurrences(text, "cp.async.ca.shared.global [%0], [%1], 4;") == 4 - vector_copies);
      CHECK(test::occurrences(text, "cp.async.commit_group;") == 2);
      CHECK(test::occurrences(text, "cp.async.wait_group 0;") == 2);
      CHECK(test::occurrences(text, "__syncthreads();") == 2);
      if (!codegen::cuda_codegen_available()) {
        WARN("skipped the NVRTC half: kiln was built without the CUDA toolkit's NVRTC");
        continue;
      }
      const codegen::GpuModule mod = test::build_own_sm({f}, t);
      const std::string ptx = mod.images[1].bytes;
      CHECK_THAT(ptx, Contains(".target sm_" + std::to_string(t.gpu.sm)));
      // All of it reaches the PTX; NVVM may unroll the K loop once more (the unrolled K slice
      // inside made it do so), repeating the loop's copies, commit, wait and barrier.
      CHECK(test::occurrences(ptx, "cp.async.ca.shared.global") >= 4 - vector_copies);
      CHECK(test::occurrences(ptx, "cp.async.cg.shared.global") >= vector_copies);
      CHECK(test::occurrences(ptx, "cp.async.commit_group;") >= 2);
      CHECK(test::occurrences(ptx, "cp.async.wait_group 0;") >= 2);
      CHECK(test::occurrences(ptx, "bar.sync") >= 2);
    }
  }
}

TEST_CASE("async copies: the padded conv's im2col tile zero-fills through cp.async", "[gpu][cuda]") {
  const Target t = Target::parse("cuda -arch=sm_80");
  PaddedConv conv(t);
  const std::string text = cuda_text(conv.f).source;
  // The weight tile: plain 4-byte copies; the im2col tile: 4-byte copies reading 0 bytes in the
  // padding.
  CHECK(test::occurrences(text, "cp.async.ca.shared.global [%0], [%1], 4;") == 2);
  CHECK(test::occurrences(text, "cp.async.ca.shared.global [%0], [%1], 4, %2;") == 2);
  CHECK_THAT(text, Contains("\"r\"((copy_ok ? 4 : 0))"));
  if (!codegen::cuda_codegen_available()) return;
  codegen::GpuModule mod = kiln::build_gpu({conv.f}, t);
  CHECK(test::occurrences(mod.images.back().bytes, "cp.async.ca.shared.global") == 4);
}

TEST_CASE("async copies: sm_75 and OpenCL keep plain copies", "[gpu][cuda]") {
  // The default does not double-buffer there; asked to, the tiles are doubled with plain copies.
  for (const char* spec : {"cuda -arch=sm_75", "opencl"}) {
    INFO(spec);
    const Target t = Target::parse(spec);
    CHECK(default_knob(t, "double_buffer") == 0);
    codegen::GpuBuildOptions text_only;
    text_only.compile = false;
    const std::string text = kiln::build_gpu({dense_ir(128, 128, 128, t, {{"double_buffer", 1}})}, t, text_only).source;
    CHECK_THAT(text, Contains("X_shared[640]"));  // 16 rows of 16 + 4 floats (pad_rows), twice
    CHECK(test::occurrences(text, "cp.async") == 0);
  }
  CHECK(default_knob(Target::parse("cuda -arch=sm_80"), "double_buffer") == 1);
  CHECK(default_knob(Target::parse("cuda -arch=sm_90"), "double_buffer") == 1);
  if (!codegen::cuda_codegen_available()) return;
  // sm_75's images (sm_75, sm_80 and sm_90 cubins) have no cp.async, and ptxas takes them.
  const Target t75 = Target::parse("cuda -arch=sm_75");
  codegen::GpuModule mod = kiln::build_gpu({dense_ir(128, 128, 128, t75, {{"double_buffer", 1}})}, t75);
  REQUIRE(mod.images.size() == 4);
  CHECK(test::occurrences(mod.images.back().bytes, "cp.async") == 0);
}

TEST_CASE("async copies: the asynchronous form's OpenCL twin on PoCL, race-checked", "[gpu][opencl]") {
  REQUIRE_OPENCL(dev);
  const Target t = Target::parse("opencl");
  // The async form made here (an OpenCL build would make the plain one) and printed as OpenCL C:
  // plain stores in the asynchronous order, so PoCL checks its indexing and barriers.
  auto async_form = [](const ir::PrimFunc& f) { return ir::inject_double_buffer(f, true); };
  for (const auto& [m, n, k] : std::vector<std::array<int64_t, 3>>{{70, 90, 45}, {64, 64, 64}, {33, 65, 17}}) {
    for (bool race_check : {false, true}) {
      INFO("dense " << m << "x" << n << "x" << k << (race_check ? " race-checked" : ""));
      ir::PrimFunc f = async_form(dense_ir(m, n, k, t, {{"double_buffer", 1}}));
      // X's rows of 64 are copied 16 bytes a copy (vector_fetch), the others' element by element.
      const int vector_copies = k % 4 == 0 ? 2 : 0;
      REQUIRE(test::occurrences(ir::to_string(f), "async_copy = 16") == vector_copies);
      REQUIRE(test::occurrences(ir::to_string(f), "async_copy = 4") == 4 - vector_copies);
      codegen::GpuBuildOptions opt;
      opt.race_check = race_check;
      codegen::GpuModule mod = kiln::build_gpu({f}, t, opt);
      auto xv = ref::random_floats(m * k, 11, -4.f, 4.f), wv = ref::random_floats(n * k, 12, -4.f, 4.f);
      std::vector<NDArray> args = {NDArray::from_vector<float>({m, k}, runtime::dtype_f32(), xv),
                                   NDArray::from_vector<float>({n, k}, runtime::dtype_f32(), wv),
                                   NDArray::zeros({m, n}, runtime::dtype_f32())};
      test::RaceReport races;
      test::run_on_device(*dev, mod, args, 0, race_check ? &races : nullptr);
      CHECK(races.count == 0);
      CHECK(races.first == "");
      CHECK(product_errors(args[2].data<float>(), xv, wv, m, n, k, /*b_kn=*/false) == 0);
    }
  }
  // A K x N B: both tiles copied 16 bytes a copy, the blocks at the ends of 100 x 100 ragged
  // (whole vectors past the end not copied, and not used).
  for (bool race_check : {false, true}) {
    INFO("matmul 100x100x100" << (race_check ? " race-checked" : ""));
    const int64_t m = 100, n = 100, k = 100;
    ir::PrimFunc f = async_form(matmul_ir(m, n, k, t, {{"double_buffer", 1}}));
    REQUIRE(test::occurrences(ir::to_string(f), "async_copy = 16") == 4);
    codegen::GpuBuildOptions opt;
    opt.race_check = race_check;
    codegen::GpuModule mod = kiln::build_gpu({f}, t, opt);
    auto av = ref::random_floats(m * k, 13, -4.f, 4.f), bv = ref::random_floats(k * n, 14, -4.f, 4.f);
    std::vector<NDArray> args = {NDArray::from_vector<float>({m, k}, runtime::dtype_f32(), av),
                                 NDArray::from_vector<float>({k, n}, runtime::dtype_f32(), bv),
                                 NDArray::zeros({m, n}, runtime::dtype_f32())};
    test::RaceReport races;
    test::run_on_device(*dev, mod, args, 0, race_check ? &races : nullptr);
    CHECK(races.count == 0);
    CHECK(product_errors(args[2].data<float>(), av, bv, m, n, k, /*b_kn=*/true) == 0);
  }
  // The padded conv: its zero-filling copies as selects.
  PaddedConv conv(t);
  ir::PrimFunc f = async_form(conv.f);
  REQUIRE(test::occurrences(ir::to_string(f), "async_copy = 4") == 4);
  codegen::GpuBuildOptions opt;
  opt.race_check = true;
  codegen::GpuModule mod = kiln::build_gpu({f}, t, opt);
  auto xv = ref::random_floats(8 * 9 * 11, 31, -4.f, 4.f), wv = ref::random_floats(12 * 8 * 9, 32, -4.f, 4.f);
  std::vector<NDArray> args = {NDArray::from_vector<float>({1, 8, 9, 11}, runtime::dtype_f32(), xv),
                               NDArray::from_vector<float>({12, 8, 3, 3}, runtime::dtype_f32(), wv),
                               NDArray::zeros({1, 12, 9, 11}, runtime::dtype_f32())};
  test::RaceReport races;
  test::run_on_device(*dev, mod, args, 0, &races);
  CHECK(races.count == 0);
  const std::vector<float> want = ref::conv2d_nchw(xv, wv, conv.shape);
  const float* out = args[2].data<float>();
  int64_t wrong = 0;
  for (size_t i = 0; i < want.size(); ++i) wrong += !(std::abs(out[i] - want[i]) <= 1e-4 * (1 + std::abs(want[i])));
  CHECK(wrong == 0);
}
