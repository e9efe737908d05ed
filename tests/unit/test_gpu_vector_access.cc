// Vector IR in GPU kernels (codegen_c.h): a vectorized loop's contiguous access of a parameter
// whose first element is provably a multiple of the lanes prints as one vector access (CUDA
// float4 through a reinterpret_cast, OpenCL vload4 / vstore4); an unaligned, strided or masked
// one prints lane by lane. Each kernel compiles through NVRTC (sm_80, sm_90) and runs on PoCL
// against a plain loop.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <vector>

#include "kiln/pipeline.h"
#include "kiln/te/operation.h"
#include "test_gpu_util.h"

using namespace kiln;
using Catch::Matchers::Contains;
using runtime::NDArray;

namespace {

const ir::DataType f32 = ir::DataType::f32();

// y[i] = body(i) over n elements: `lanes` neighbours per thread in a vectorized loop, 16
// threads a block.
ir::PrimFunc vector_kernel(const std::string& name, const std::vector<te::Tensor>& inputs, int64_t n, int lanes,
                           const std::function<ir::Expr(ir::Var)>& body) {
  te::Tensor y = te::compute({n}, [&](ir::Var i) { return body(i); }, "Y");
  schedule::Schedule s = schedule::create({y});
  auto [o, v] = s[y].split(s[y].op_axis(0), lanes);
  auto [bo, to] = s[y].split(o, 16);
  s[y].bind(bo, "blockIdx.x");
  s[y].bind(to, "threadIdx.x");
  s[y].vectorize(v);
  std::vector<te::Tensor> args = inputs;
  args.push_back(y);
  return kiln::loop_ir(s, args, name);
}

std::string cuda_text(const ir::PrimFunc& f) {
  const Target t = Target::parse("cuda -arch=sm_90");
  codegen::GpuModule m = kiln::build_gpu({f}, t);
  if (codegen::cuda_codegen_available()) CHECK(m.images.size() == 3);  // sm_80, sm_90 cubins and PTX
  return m.source;
}

// Runs f on the OpenCL device with float arrays `in` and returns its float output of n elements.
std::vector<float> run_opencl(runtime::DeviceAPI& dev, const ir::PrimFunc& f, const std::vector<std::vector<float>>& in,
                              int64_t n, std::string* source) {
  codegen::GpuModule m = kiln::build_gpu({f}, Target::parse("opencl"));
  *source = m.source;
  std::vector<NDArray> args;
  for (const auto& v : in)
    args.push_back(NDArray::from_vector<float>({static_cast<int64_t>(v.size())}, runtime::dtype_f32(), v));
  args.push_back(NDArray::from_vector<float>({n}, runtime::dtype_f32(), std::vector<float>(n, -1.f)));
  test::run_on_device(dev, m, args);
  const float* y = args.back().data<float>();
  return std::vector<float>(y, y + n);
}

std::vector<float> iota(int64_t n, float step) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = 0.5f + step * static_cast<float>(i);
  return v;
}

}  // namespace

TEST_CASE("gpu vector accesses: aligned contiguous loads and stores are one vector access", "[gpu][gpu_vector][opencl]") {
  const int64_t n = 256;
  te::Tensor a = te::placeholder({n}, f32, "A"), b = te::placeholder({n}, f32, "B");
  for (int lanes : {4, 8}) {  // 8 float lanes: two float4 accesses each
    INFO(lanes << " lanes");
    ir::PrimFunc f = vector_kernel("add", {a, b}, n, lanes, [&](ir::Var i) { return a(i) * b(i) + a(i); });
    const std::string cuda = cuda_text(f);
    CHECK_THAT(cuda, Contains("const float4 A_v = *reinterpret_cast<const float4*>(A + ") &&
                         Contains("const float4 B_v = *reinterpret_cast<const float4*>(B + ") &&
                         Contains("*reinterpret_cast<float4*>(Y + ") && Contains("= make_float4(") &&
                         Contains("A_v.w") && !Contains("A["));
    REQUIRE_OPENCL(dev);
    std::string cl;
    const auto av = iota(n, 0.25f), bv = iota(n, -0.5f);
    const std::vector<float> y = run_opencl(*dev, f, {av, bv}, n, &cl);
    CHECK_THAT(cl, Contains("const float4 A_v = vload4(0, A + ") && Contains("vstore4(((float4)(") &&
                       Contains(", 0, Y + ") && !Contains("A["));
    for (int64_t i = 0; i < n; ++i) REQUIRE(y[i] == av[i] * bv[i] + av[i]);
  }
}

TEST_CASE("gpu vector accesses: unaligned, strided and masked ones print lane by lane", "[gpu][gpu_vector][opencl]") {
  const int64_t n = 128;
  te::Tensor a = te::placeholder({2 * n + 1}, f32, "A");
  struct Case {
    const char* name;
    std::function<ir::Expr(ir::Var)> body;
    std::function<float(const std::vector<float>&, int64_t)> want;
    int64_t n;
  };
  const std::vector<Case> cases = {
      // A[i + 1]: its first element is no multiple of 4, so A is read lane by lane; Y is aligned.
      {"shifted", [&](ir::Var i) { return a(i + 1); },
       [](const std::vector<float>& x, int64_t i) { return x[i + 1]; }, n},
      // A[2 i]: stride 2.
      {"strided", [&](ir::Var i) { return a(i * 2); },
       [](const std::vector<float>& x, int64_t i) { return x[2 * i]; }, n},
      // 126 elements in runs of 4: the last run's guard depends on the lane, a masked store.
      {"masked", [&](ir::Var i) { return a(i) * 3.f; },
       [](const std::vector<float>& x, int64_t i) { return x[i] * 3.f; }, n - 2},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    ir::PrimFunc f = vector_kernel(c.name, {a}, c.n, 4, c.body);
    const std::string cuda = cuda_text(f);
    CHECK_THAT(cuda, !Contains("float4 A_v") && Contains("A["));
    if (std::string(c.name) == "masked")
      CHECK_THAT(cuda, !Contains("reinterpret_cast<float4*>(Y"));
    else
      CHECK_THAT(cuda, Contains("*reinterpret_cast<float4*>(Y + "));
    std::string why;
    runtime::DeviceAPI* dev = test::opencl_device(&why);
    if (!dev) continue;
    std::string cl;
    const auto av = iota(2 * n + 1, 0.75f);
    const std::vector<float> y = run_opencl(*dev, f, {av}, c.n, &cl);
    CHECK_THAT(cl, !Contains("vload4") && Contains("A["));
    for (int64_t i = 0; i < c.n; ++i) REQUIRE(y[i] == c.want(av, i));
  }
}

TEST_CASE("gpu vector accesses: float16 lanes are ushort4 bits converted lane by lane", "[gpu][gpu_vector][opencl]") {
  const int64_t n = 128;
  const ir::DataType f16 = ir::DataType::f16();
  te::Tensor h = te::placeholder({n}, f16, "H");
  ir::PrimFunc f = vector_kernel("twice", {h}, n, 8, [&](ir::Var i) { return h(i) + h(i); });
  CHECK_THAT(cuda_text(f), Contains("const ushort4 H_v = *reinterpret_cast<const ushort4*>(H + ") &&
                               Contains("kiln_f16_to_f32(H_v.x)") && Contains("= make_ushort4(kiln_f32_to_f16("));
  // CUDA converts with the hardware's cvt, and a stored sum converts once (the conversion
  // rounds; no kiln_round_f16 before it).
  CHECK_THAT(cuda_text(f), Contains("asm(\"cvt.rn.f16.f32 %0, %1;\"") && Contains("asm(\"cvt.f32.f16 %0, %1;\"") &&
                               !Contains("kiln_f32_to_f16(kiln_round_f16("));
  REQUIRE_OPENCL(dev);
  codegen::GpuModule m = kiln::build_gpu({f}, Target::parse("opencl"));
  CHECK_THAT(m.source, Contains("const ushort4 H_v = vload4(0, H + ") && Contains("vstore4(((ushort4)("));
  // 1, 1.5, -1, 0 doubled: 2, 3, -2, 0 (exact in float16).
  const std::vector<uint16_t> in = {0x3C00, 0x3E00, 0xBC00, 0x0000}, out = {0x4000, 0x4200, 0xC000, 0x0000};
  std::vector<uint16_t> hv(n);
  for (int64_t i = 0; i < n; ++i) hv[i] = in[i % 4];
  std::vector<NDArray> args = {NDArray::from_vector<uint16_t>({n}, runtime::dtype_f16(), hv),
                               NDArray::zeros({n}, runtime::dtype_f16())};
  test::run_on_device(*dev, m, args);
  const uint16_t* y = args[1].data<uint16_t>();
  for (int64_t i = 0; i < n; ++i) REQUIRE(y[i] == out[i % 4]);
}
