// GPU schedules run: the OpenCL text of the generic GPU schedule on the OpenCL device (PoCL on
// CPUs) against plain reference loops, and the CUDA text of the same schedules through NVRTC
// (cubins for sm_80 and sm_90: ptxas checks registers and shared memory).
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>

#include "kiln/pipeline.h"
#include "schedule/templates/generic_gpu.h"
#include "schedule/templates/matmul_gpu.h"
#include "kiln/te/ops/nn_conv.h"
#include "kiln/te/ops/nn_dense.h"
#include "kiln/te/ops/nn_norm.h"
#include "kiln/te/operation.h"
#include "testing/reference.h"
#include "test_gpu_util.h"

using namespace kiln;
using runtime::NDArray;

namespace {


// The generic GPU schedule of `outs` over `args`, built for `target`.
codegen::GpuModule build_generic(const std::vector<te::Tensor>& args, const std::vector<te::Tensor>& outs,
                                 const Target& target, size_t threads_choice = 2) {
  schedule::Schedule s = schedule::create(outs);
  schedule::Config cfg = schedule::Config::with_choices({{"threads", threads_choice}});
  schedule::schedule_generic_gpu(s, outs, target, cfg);
  return kiln::build_gpu({kiln::loop_ir(s, args, "f")}, target);
}


}  // namespace

TEST_CASE("opencl: generic gpu schedule of a broadcast add and relu", "[gpu][opencl]") {
  REQUIRE_OPENCL(dev);
  const int64_t rows = 37, cols = 129;
  te::Tensor a = te::placeholder({rows, cols}, ir::DataType::f32(), "A");
  te::Tensor b = te::placeholder({cols}, ir::DataType::f32(), "B");
  te::Tensor out = te::compute(
      {rows, cols}, [&](ir::Var i, ir::Var j) { return ir::max(a(i, j) + b(j), ir::make_zero(ir::DataType::f32())); },
      "out");
  for (size_t threads : {0, 4}) {  // 64 and 1024 threads per block
    codegen::GpuModule m = build_generic({a, b, out}, {out}, Target::parse("opencl"), threads);
    auto av = ref::random_floats(rows * cols, 1, -4.f, 4.f), bv = ref::random_floats(cols, 2, -4.f, 4.f);
    std::vector<NDArray> args = {NDArray::from_vector<float>({rows, cols}, runtime::dtype_f32(), av),
                                 NDArray::from_vector<float>({cols}, runtime::dtype_f32(), bv),
                                 NDArray::zeros({rows, cols}, runtime::dtype_f32())};
    test::run_on_device(*dev, m, args);
    const float* y = args[2].data<float>();
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) REQUIRE(y[i * cols + j] == std::max(av[i * cols + j] + bv[j], 0.f));
  }
}

TEST_CASE("opencl: generic gpu schedule of softmax (reductions in workspace kernels)", "[gpu][opencl]") {
  REQUIRE_OPENCL(dev);
  const int64_t rows = 5, cols = 1000;
  te::Tensor x = te::placeholder({rows, cols}, ir::DataType::f32(), "X");
  te::Tensor y = te::ops::softmax(x, 1);
  codegen::GpuModule m = build_generic({x, y}, {y}, Target::parse("opencl"));
  auto xv = ref::random_floats(rows * cols, 3, -10.f, 10.f);
  std::vector<NDArray> args = {NDArray::from_vector<float>({rows, cols}, runtime::dtype_f32(), xv),
                               NDArray::zeros({rows, cols}, runtime::dtype_f32())};
  test::run_on_device(*dev, m, args);
  const float* out = args[1].data<float>();
  const std::vector<float> want = ref::softmax_rows(xv, rows, cols);
  for (size_t i = 0; i < want.size(); ++i) REQUIRE(std::abs(out[i] - want[i]) <= 1e-6 + 1e-5 * want[i]);
}

TEST_CASE("cuda: the generic gpu schedules compile through nvrtc for sm_80 and sm_90", "[gpu][nvrtc]") {
  if (!codegen::cuda_codegen_available()) {
    WARN("skipped: kiln was built without the CUDA toolkit's NVRTC");
    return;
  }
  const Target t = Target::parse("cuda -arch=sm_90");
  te::Tensor x = te::placeholder({8, 300}, ir::DataType::f32(), "X");
  te::Tensor y = te::ops::softmax(x, 1);
  codegen::GpuModule m = build_generic({x, y}, {y}, t);
  REQUIRE(m.images.size() == 3);  // sm_80, sm_90 cubins, compute_90 PTX
  CHECK(m.images[0].sm == 80);
  CHECK(m.images[0].bytes.rfind("\x7f" "ELF", 0) == 0);
  CHECK(m.images[2].ptx);
  bool has_registers = false;
  for (const std::string& n : m.notes) has_registers |= n.find("registers") != std::string::npos;
  CHECK(has_registers);
}

namespace {

// out = relu(x . w^T + bias) over [m, k] x [n, k], with the matmul template at `choices`.
void check_dense_on_opencl(runtime::DeviceAPI& dev, int64_t m, int64_t n, int64_t k,
                           std::map<std::string, size_t> choices, bool epilogue) {
  te::Tensor x = te::placeholder({m, k}, ir::DataType::f32(), "X");
  te::Tensor w = te::placeholder({n, k}, ir::DataType::f32(), "W");
  te::Tensor bias = te::placeholder({n}, ir::DataType::f32(), "bias");
  te::Tensor prod = te::ops::dense_plain(x, w);
  te::Tensor out = epilogue ? te::compute({m, n}, [&](ir::Var i, ir::Var j) {
    return ir::max(prod(i, j) + bias(j), ir::make_zero(ir::DataType::f32()));
  }, "relu") : prod;
  schedule::Config cfg = schedule::Config::with_choices(choices);
  const Target t = Target::parse("opencl");
  schedule::Schedule s = schedule::schedule_anchor_gpu({out}, prod, schedule::schedule_matmul_gpu, t, cfg);
  codegen::GpuModule mod = kiln::build_gpu({kiln::loop_ir(s, {x, w, bias, out}, "dense")}, t);
  auto xv = ref::random_floats(m * k, 11, -4.f, 4.f), wv = ref::random_floats(n * k, 12, -4.f, 4.f);
  auto bv = ref::random_floats(n, 13, -4.f, 4.f);
  std::vector<NDArray> args = {NDArray::from_vector<float>({m, k}, runtime::dtype_f32(), xv),
                               NDArray::from_vector<float>({n, k}, runtime::dtype_f32(), wv),
                               NDArray::from_vector<float>({n}, runtime::dtype_f32(), bv),
                               NDArray::zeros({m, n}, runtime::dtype_f32())};
  test::run_on_device(dev, mod, args);
  const float* y = args[3].data<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t q = 0; q < k; ++q) acc += double(xv[i * k + q]) * wv[j * k + q];
      if (epilogue) acc = std::max(acc + bv[j], 0.0);
      INFO("dense " << m << "x" << n << "x" << k << " " << cfg.str() << " at (" << i << ", " << j << ")");
      REQUIRE(std::abs(y[i * n + j] - acc) <= 1e-4 * (1 + std::abs(acc)));
    }
}

}  // namespace

TEST_CASE("opencl: the matmul template over the corners of its knob space", "[gpu][opencl]") {
  REQUIRE_OPENCL(dev);
  // Candidate indices: threads_m/threads_n {1,2,4,8,16,32}, rows/cols_per_thread {1,2,4,8},
  // tile_k {1,2,4,8,16,32}.
  using C = std::map<std::string, size_t>;
  // Defaults (16 x 16 threads, 4 x 4 per thread, K slices of 16) on sizes no tile divides.
  check_dense_on_opencl(*dev, 70, 90, 45, C{}, true);
  check_dense_on_opencl(*dev, 70, 90, 45, C{{"threads_m", 0}, {"threads_n", 5}, {"rows_per_thread", 3},
                                              {"cols_per_thread", 0}, {"tile_k", 2}}, false);
  check_dense_on_opencl(*dev, 33, 65, 17, C{{"threads_m", 5}, {"threads_n", 0}, {"rows_per_thread", 0},
                                              {"cols_per_thread", 3}, {"tile_k", 5}}, true);
  check_dense_on_opencl(*dev, 64, 64, 64, C{{"threads_m", 3}, {"threads_n", 3}, {"rows_per_thread", 1},
                                              {"cols_per_thread", 1}, {"tile_k", 3}}, false);
  // A classifier's single row (tiny_cnn's: 10 classes from 32 features).
  check_dense_on_opencl(*dev, 1, 100, 64, C{}, true);
  check_dense_on_opencl(*dev, 1, 10, 32, C{}, true);
}

TEST_CASE("opencl: batch matmul with broadcast batch dims through the matmul template", "[gpu][opencl]") {
  REQUIRE_OPENCL(dev);
  const int64_t b = 3, m = 20, k = 24, n = 36;
  te::Tensor a = te::placeholder({b, m, k}, ir::DataType::f32(), "A");
  te::Tensor bb = te::placeholder({k, n}, ir::DataType::f32(), "B");  // shared by every batch
  te::Tensor c = te::ops::batch_matmul(a, bb);
  schedule::Config cfg;
  const Target t = Target::parse("opencl");
  schedule::Schedule s = schedule::schedule_anchor_gpu({c}, c, schedule::schedule_matmul_gpu, t, cfg);
  codegen::GpuModule mod = kiln::build_gpu({kiln::loop_ir(s, {a, bb, c}, "bmm")}, t);
  CHECK(mod.programs[0].launches[0].grid[2] == b);
  auto av = ref::random_floats(b * m * k, 21, -4.f, 4.f), bv = ref::random_floats(k * n, 22, -4.f, 4.f);
  std::vector<NDArray> args = {NDArray::from_vector<float>({b, m, k}, runtime::dtype_f32(), av),
                               NDArray::from_vector<float>({k, n}, runtime::dtype_f32(), bv),
                               NDArray::zeros({b, m, n}, runtime::dtype_f32())};
  test::run_on_device(*dev, mod, args);
  const float* y = args[2].data<float>();
  for (int64_t q = 0; q < b; ++q)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t r = 0; r < k; ++r) acc += double(av[(q * m + i) * k + r]) * bv[r * n + j];
        REQUIRE(std::abs(y[(q * m + i) * n + j] - acc) <= 1e-4 * (1 + std::abs(acc)));
      }
}

TEST_CASE("cuda: the matmul template's corners compile for sm_80 and sm_90 within their resources", "[gpu][nvrtc]") {
  if (!codegen::cuda_codegen_available()) {
    WARN("skipped: kiln was built without the CUDA toolkit's NVRTC");
    return;
  }
  const Target t = Target::parse("cuda -arch=sm_90");
  te::Tensor x = te::placeholder({512, 256}, ir::DataType::f32(), "X");
  te::Tensor w = te::placeholder({384, 256}, ir::DataType::f32(), "W");
  te::Tensor y = te::ops::dense_plain(x, w);
  // The largest corner: 32 x 32 threads of 8 x 8 outputs staging 32-deep slices (rows padded by
  // 4 floats for X, 1 for W), double-buffered on sm_90: 138 KiB, past the static 48 KiB, so
  // dynamic shared memory (227 KiB with the opt-in); on sm_75 (no cp.async, one buffer, 72 KiB)
  // over its 64 KiB and refused before NVRTC.
  for (size_t big : {0, 1}) {
    std::map<std::string, size_t> c = {{"threads_m", big ? 5u : 4u}, {"threads_n", big ? 5u : 4u},
                                       {"rows_per_thread", big ? 3u : 2u}, {"cols_per_thread", big ? 3u : 2u},
                                       {"tile_k", big ? 5u : 4u}};
    schedule::Config cfg = schedule::Config::with_choices(c);
    if (big) {
      schedule::Config on_sm75 = schedule::Config::with_choices(c);
      CHECK_THROWS_WITH(
          schedule::schedule_anchor_gpu({y}, y, schedule::schedule_matmul_gpu, Target::parse("cuda -arch=sm_75"), on_sm75),
          Catch::Contains("staging 73728 bytes exceeds the target's 1024 threads or 65536 shared bytes"));
      schedule::Schedule s = schedule::schedule_anchor_gpu({y}, y, schedule::schedule_matmul_gpu, t, cfg);
      codegen::GpuBuildOptions text_only;
      text_only.compile = false;
      codegen::GpuModule m = kiln::build_gpu({kiln::loop_ir(s, {x, w, y}, "dense")}, t, text_only);
      CHECK(m.programs[0].launches[0].dynamic_shared_bytes == (256 * 36 + 256 * 33) * 4 * 2);
      CHECK_THAT(m.source, Catch::Contains("extern __shared__ __align__(16) unsigned char kiln_shared[];"));
      continue;
    }
    schedule::Schedule s = schedule::schedule_anchor_gpu({y}, y, schedule::schedule_matmul_gpu, t, cfg);
    codegen::GpuModule m = kiln::build_gpu({kiln::loop_ir(s, {x, w, y}, "dense")}, t);
    REQUIRE(m.images.size() == 3);
    // Both halves of the double-buffered tile (the default on sm_90), 64 rows of 16 + 4 floats
    // (read down the columns: rows padded by 16 bytes).
    CHECK_THAT(m.source, Catch::Contains("__shared__ __align__(16) float X_shared[2560]") && Catch::Contains("__syncthreads();"));
  }
}

TEST_CASE("opencl: convolutions as implicit GEMM in shared-memory tiles, strided, dilated and padded", "[gpu][opencl]") {
  REQUIRE_OPENCL(dev);
  struct Case {
    int64_t c, h, w, oc, k, stride, pad, dilation;
    std::map<std::string, size_t> knobs;
  };
  const Case cases[] = {{3, 17, 19, 20, 3, 1, 1, 1, {}},
                        {16, 15, 15, 33, 3, 2, 1, 1, {{"threads_m", 2}, {"cols_per_thread", 2}, {"tile_k", 2}}},
                        {8, 12, 12, 12, 3, 1, 2, 2, {{"rows_per_thread", 0}, {"threads_n", 0}}},
                        {32, 7, 7, 40, 1, 1, 0, 1, {}}};
  const Target t = Target::parse("opencl");
  for (const Case& c : cases) {
    te::ops::ConvNdAttrs a;
    a.strides = {c.stride, c.stride};
    a.padding = {c.pad, c.pad, c.pad, c.pad};
    a.dilation = {c.dilation, c.dilation};
    te::Tensor x = te::placeholder({1, c.c, c.h, c.w}, ir::DataType::f32(), "X");
    te::Tensor w = te::placeholder({c.oc, c.c, c.k, c.k}, ir::DataType::f32(), "W");
    te::Tensor y = te::ops::conv2d_gemm(x, w, a);
    schedule::Config cfg = schedule::Config::with_choices(c.knobs);
    schedule::Schedule s = schedule::schedule_anchor_gpu({y}, y, schedule::schedule_conv_gemm_gpu, t, cfg);
    codegen::GpuModule m = kiln::build_gpu({kiln::loop_ir(s, {x, w, y}, "conv")}, t);
    const int64_t oh = y.shape()[2], ow = y.shape()[3];
    auto xv = ref::random_floats(c.c * c.h * c.w, 31, -4.f, 4.f);
    auto wv = ref::random_floats(c.oc * c.c * c.k * c.k, 32, -4.f, 4.f);
    std::vector<NDArray> args = {NDArray::from_vector<float>({1, c.c, c.h, c.w}, runtime::dtype_f32(), xv),
                                 NDArray::from_vector<float>({c.oc, c.c, c.k, c.k}, runtime::dtype_f32(), wv),
                                 NDArray::zeros({1, c.oc, oh, ow}, runtime::dtype_f32())};
    test::run_on_device(*dev, m, args);
    const float* out = args[2].data<float>();
    // The tolerance scales with the sum of the products' magnitudes: the same convolution of
    // |x| and |w|.
    ref::Conv2dShape shape{1, int(c.c), int(c.h), int(c.w), int(c.oc), int(c.k), int(c.k)};
    shape.stride = int(c.stride), shape.pad = int(c.pad), shape.dilation = int(c.dilation);
    auto magnitudes = [](std::vector<float> v) {
      for (float& e : v) e = std::abs(e);
      return v;
    };
    const std::vector<float> want = ref::conv2d_nchw(xv, wv, shape);
    const std::vector<float> mag = ref::conv2d_nchw(magnitudes(xv), magnitudes(wv), shape);
    REQUIRE(want.size() == size_t(c.oc * oh * ow));
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("conv c=" << c.c << " oc=" << c.oc << " stride " << c.stride << " pad " << c.pad << " dilation "
                     << c.dilation << " " << cfg.str() << " at element " << i);
      REQUIRE(std::abs(out[i] - want[i]) <= 1e-5 * (1 + mag[i]));
    }
  }
}
