// GPU schedules run: the OpenCL text of the generic GPU schedule on the OpenCL device (PoCL on
// CPUs) against plain reference loops, and the CUDA text of the same schedules through NVRTC
// (cubins for sm_80 and sm_90: ptxas checks registers and shared memory).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "kiln/codegen/driver.h"
#include "kiln/schedule/templates/generic_gpu.h"
#include "kiln/te/ops/nn_norm.h"
#include "kiln/te/operation.h"
#include "test_gpu_util.h"

using namespace kiln;
using runtime::NDArray;

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -4.f, float hi = 4.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// The generic GPU schedule of `outs` over `args`, built for `target`.
codegen::GpuModule build_generic(const std::vector<te::Tensor>& args, const std::vector<te::Tensor>& outs,
                                 const Target& target, size_t threads_choice = 2) {
  schedule::Schedule s = schedule::create(outs);
  schedule::Config cfg = schedule::Config::with_choices({{"threads", threads_choice}});
  schedule::schedule_generic_gpu(s, outs, target, cfg);
  return codegen::build_gpu({codegen::lower_to_ir(s, args, "f")}, target);
}

#define REQUIRE_OPENCL(dev)                                  \
  std::string why_no_opencl;                                 \
  runtime::DeviceAPI* dev = test::opencl_device(&why_no_opencl); \
  if (!dev) {                                                \
    WARN("skipped: no OpenCL device: " << why_no_opencl);    \
    return;                                                  \
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
    auto av = random_floats(rows * cols, 1), bv = random_floats(cols, 2);
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
  auto xv = random_floats(rows * cols, 3, -10.f, 10.f);
  std::vector<NDArray> args = {NDArray::from_vector<float>({rows, cols}, runtime::dtype_f32(), xv),
                               NDArray::zeros({rows, cols}, runtime::dtype_f32())};
  test::run_on_device(*dev, m, args);
  const float* out = args[1].data<float>();
  for (int64_t i = 0; i < rows; ++i) {
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < cols; ++j) mx = std::max<double>(mx, xv[i * cols + j]);
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(xv[i * cols + j] - mx);
    for (int64_t j = 0; j < cols; ++j) {
      double want = std::exp(xv[i * cols + j] - mx) / sum;
      REQUIRE(std::abs(out[i * cols + j] - want) <= 1e-6 + 1e-5 * want);
    }
  }
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
