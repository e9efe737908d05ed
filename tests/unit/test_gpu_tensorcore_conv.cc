// float16 / bfloat16 2-d convolutions on tensor cores: te::ops::conv2d_gemm padded to whole
// 16 x 8 x 16 tiles (OC, OW, C KH KW) and scheduled by the conv template's tensor-core form
// (matmul_tensorcore_gpu.h with the output's rows at axis 1). The OpenCL twin (the mma's
// reference loops) runs on PoCL against a double-precision reference, with a fused bias + relu;
// the CUDA text for sm_80 and sm_90 holds mma.sync and cp.async and ptxas assembles it, and the
// knob tensor_core turns it off; the GPU strategy takes float16 / bfloat16 convs of one group
// there on sm_80 and newer only.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "kiln/pipeline.h"
#include "kiln/codegen/gpu_build.h"
#include "kiln/compiler.h"
#include "kiln/ir/printer.h"
#include "kiln/lower/strategy.h"
#include "kiln/relay/op.h"
#include "schedule/templates/generic_gpu.h"
#include "schedule/templates/matmul_gpu.h"
#include "kiln/te/ops/nn_conv.h"
#include "testing/reference.h"
#include "test_gpu_util.h"
#include "test_half_util.h"

using namespace kiln;
using Catch::Matchers::Contains;
using runtime::NDArray;

namespace {

// A conv as the GPU strategy lowers it for tensor cores, optionally followed by bias + relu (the
// epilogue the template computes from the block's float32 tile).
struct Conv {
  ir::DataType in;
  ref::Conv2dShape shape;
  bool bias_relu;
  te::Tensor x, w, b, conv, y;
  Conv(ir::DataType t, ref::Conv2dShape s, bool epilogue) : in(t), shape(s), bias_relu(epilogue) {
    te::ops::ConvNdAttrs a;
    a.strides = {s.stride, s.stride};
    a.padding = {s.pad, s.pad, s.pad, s.pad};
    a.dilation = {1, 1};
    x = te::placeholder({s.n, s.c, s.h, s.w}, in, "X");
    w = te::placeholder({s.oc, s.c, s.kh, s.kw}, in, "W");
    conv = te::ops::conv2d_gemm(x, w, a, "conv2d", te::ops::ProductPad{16, 8, 16});
    y = conv;
    if (bias_relu) {
      b = te::placeholder({s.oc}, in, "bias");
      y = te::compute(conv.shape(), [&](const std::vector<ir::Var>& v) {
        return ir::max(conv(std::vector<ir::Expr>(v.begin(), v.end())) + b(v[1]), ir::make_zero(in));
      }, "relu");
    }
  }
  std::vector<te::Tensor> args() const { return bias_relu ? std::vector<te::Tensor>{x, w, b, y} : std::vector<te::Tensor>{x, w, y}; }
  ir::PrimFunc lower(const Target& t, const std::map<std::string, size_t>& choices, std::string* config = nullptr) const {
    schedule::Config cfg = schedule::Config::with_choices(choices);
    schedule::Schedule s = schedule::schedule_anchor_gpu({y}, conv, schedule::schedule_conv_gemm_gpu, t, cfg);
    if (config) *config = cfg.str();
    return kiln::loop_ir(s, args(), "conv");
  }
  std::string name() const {
    return in.str() + " " + std::to_string(shape.n) + "x" + std::to_string(shape.c) + "x" + std::to_string(shape.h) + "x" +
           std::to_string(shape.w) + " -> " + std::to_string(shape.oc) + ", " + std::to_string(shape.kh) + "x" +
           std::to_string(shape.kw) + " stride " + std::to_string(shape.stride) + " pad " + std::to_string(shape.pad) +
           (bias_relu ? " + bias + relu" : "");
  }
};

ref::Conv2dShape conv_shape(int n, int c, int hw, int oc, int k, int stride, int pad) {
  ref::Conv2dShape s{n, c, hw, hw, oc, k, k};
  s.stride = stride;
  s.pad = pad;
  return s;
}

// Runs `cv` built for OpenCL on PoCL; returns the outputs outside the tolerance. The inputs are
// multiples of 1/64 in [-2, 2] (test_half_util.h), so every product and float32 sum is exact
// (at most 288 terms here): a result may be off only by its roundings to the 16-bit type, half
// an ulp each: the conv's sum, and with the epilogue the biased sum too (relu is exact).
int64_t wrong_on_pocl(runtime::DeviceAPI& dev, const Conv& cv, const codegen::GpuModule& mod, test::RaceReport* races) {
  const ref::Conv2dShape& s = cv.shape;
  const std::vector<float> xv = test::sixty_fourths(size_t(s.n) * s.c * s.h * s.w, 41);
  const std::vector<float> wv = test::sixty_fourths(size_t(s.oc) * s.c * s.kh * s.kw, 42);
  const std::vector<float> bv = test::sixty_fourths(s.oc, 43);
  const DLDataType dt = cv.in.is_bfloat() ? runtime::dtype_bf16() : runtime::dtype_f16();
  std::vector<NDArray> args = {NDArray::from_vector<uint16_t>(cv.x.shape(), dt, test::to_bits(xv, cv.in)),
                               NDArray::from_vector<uint16_t>(cv.w.shape(), dt, test::to_bits(wv, cv.in))};
  if (cv.bias_relu) args.push_back(NDArray::from_vector<uint16_t>({s.oc}, dt, test::to_bits(bv, cv.in)));
  args.push_back(NDArray::zeros(cv.y.shape(), dt));
  test::run_on_device(dev, mod, args, 0, races);
  const uint16_t* out = args.back().data<uint16_t>();
  const std::vector<float> sums = ref::conv2d_nchw(xv, wv, s);  // exact: see above
  const double half_ulp = test::half_ulp(cv.in);
  const size_t plane = size_t(s.out_h()) * s.out_w();
  int64_t wrong = 0;
  for (size_t e = 0; e < sums.size(); ++e) {
    const double sum = sums[e], biased = cv.bias_relu ? sum + bv[e / plane % s.oc] : sum;
    const double want = cv.bias_relu ? std::max(biased, 0.0) : sum;
    const double tol = half_ulp * (std::abs(sum) + (cv.bias_relu ? std::abs(biased) : 0.0)) + 1e-7;
    const double got = test::from_bits(out[e], cv.in);
    if (!(std::abs(got - want) <= tol)) {
      if (wrong == 0) UNSCOPED_INFO("first wrong output " << e << ": got " << got << ", want " << want);
      ++wrong;
    }
  }
  return wrong;
}

// The shapes the tests run: resnet's (3x3 stride 1 and 2, 1x1 downsampling, the 7x7 stride-2
// stem with C = 3), output rows of 14, 8 and 7 (one tile short of 8) pixels, output channels
// 24, 40 and 8 (none a multiple of 16; 8 less than one tile), a batch of 2.
std::vector<Conv> test_convs() {
  const ir::DataType f16 = ir::DataType::f16(), bf16 = ir::DataType::bf16();
  return {Conv(f16, conv_shape(1, 16, 14, 32, 3, 1, 1), true),   // 3x3 pad 1: OW 14
          Conv(f16, conv_shape(2, 8, 15, 24, 3, 2, 1), false),   // stride 2, a batch of 2: OW 8, OC 24
          Conv(bf16, conv_shape(1, 32, 7, 40, 1, 1, 0), true),   // 1x1: OW 7, OC 40
          Conv(f16, conv_shape(1, 3, 32, 64, 7, 2, 3), true),    // resnet's stem: 7x7 stride 2, C 3
          Conv(f16, conv_shape(1, 4, 5, 8, 3, 1, 1), true)};     // OC 8 and OW 5: less than a tile
}

}  // namespace

TEST_CASE("tensor-core convs: the OpenCL twin on PoCL against a double-precision reference",
          "[gpu][opencl][mma][conv]") {
  REQUIRE_OPENCL(dev);
  const Target t = Target::parse("opencl");
  const std::vector<Conv> convs = test_convs();
  for (size_t i = 0; i < convs.size(); ++i) {
    const Conv& cv = convs[i];
    for (bool race_check : {false, i == 0}) {
      INFO(cv.name() << (race_check ? " race-checked" : ""));
      std::string config;
      const ir::PrimFunc f = cv.lower(t, {{"tensor_core", 1}}, &config);
      INFO(config);
      REQUIRE(test::occurrences(ir::to_string(f), "mma_sync") > 0);
      codegen::GpuBuildOptions opt;
      opt.race_check = race_check;
      const codegen::GpuModule mod = kiln::build_gpu({f}, t, opt);
      test::RaceReport races;
      CHECK(wrong_on_pocl(*dev, cv, mod, race_check ? &races : nullptr) == 0);
      CHECK(races.count == 0);
      if (!race_check) break;
    }
  }
  // Other corners of the knobs: one warp of one tile, K slices of 64 without double buffering;
  // and the plain tiles of the padded product (tensor_core=0).
  const Conv& cv = convs[0];
  for (const auto& choices : std::vector<std::map<std::string, size_t>>{
           {{"tensor_core", 1}, {"warps_m", 0}, {"warps_n", 0}, {"mma_m", 0}, {"mma_n", 0}},
           {{"tensor_core", 1}, {"mma_k", 2}, {"double_buffer", 0}, {"warps_m", 2}, {"mma_m", 0}},
           {{"tensor_core", 0}}}) {
    std::string config;
    const ir::PrimFunc f = cv.lower(t, choices, &config);
    INFO(cv.name() << ": " << config);
    CHECK((test::occurrences(ir::to_string(f), "mma_sync") > 0) == (choices.at("tensor_core") == 1));
    CHECK(wrong_on_pocl(*dev, cv, kiln::build_gpu({f}, t), nullptr) == 0);
  }
}

TEST_CASE("tensor-core convs: the default schedule on sm_80 and sm_90 is mma.sync with cp.async", "[gpu][cuda][mma][conv]") {
  const std::vector<Conv> convs = test_convs();
  for (const char* spec : {"cuda -arch=sm_80", "cuda -arch=sm_90"}) {
    const Target t = Target::parse(spec);
    for (const Conv& cv : convs) {
      INFO(spec << ": " << cv.name());
      std::string config;
      const ir::PrimFunc f = cv.lower(t, {}, &config);
      INFO(config);
      CHECK_THAT(config, Contains("tensor_core=1") && Contains("double_buffer=1"));
      const std::string mma = std::string("mma.sync.aligned.m16n8k16.row.col.f32.") +
                              (cv.in.is_bfloat() ? "bf16.bf16" : "f16.f16") + ".f32";
      codegen::GpuBuildOptions text_only;
      text_only.compile = false;
      const std::string source = kiln::build_gpu({f}, t, text_only).source;
      CHECK(test::occurrences(source, mma) > 0);
      // cp.async copies the weight matrix's tiles where there are several K slices to
      // double-buffer and its rows are whole 16-byte vectors (C KH KW a multiple of 8); the
      // im2col tiles gather (their rows start anywhere), with plain loads.
      const int64_t q = int64_t(cv.shape.c) * cv.shape.kh * cv.shape.kw;
      const bool async = q > 32 && q % 8 == 0;
      CHECK((test::occurrences(source, "cp.async") > 0) == async);
      if (!codegen::cuda_codegen_available()) {
        WARN("skipped the NVRTC half: kiln was built without the CUDA toolkit's NVRTC");
        continue;
      }
      const codegen::GpuModule mod = test::build_own_sm({f}, t);
      const std::string ptx = mod.images[1].bytes;
      CHECK(test::occurrences(ptx, mma) > 0);
      CHECK((test::occurrences(ptx, "cp.async") > 0) == async);
      // ptxas's registers, shared memory and spills. The im2col tiles' gathers cost index
      // arithmetic: ptxas spilled 4 bytes in the 3x3 conv's kernel for sm_80 (none for sm_90);
      // more than a few bytes would be a regression.
      INFO(mod.notes.at(0));
      CHECK(mod.max_spill_bytes <= 8);
    }
    // The knob turns it off: the plain tiles of the padded product.
    const ir::PrimFunc plain = convs[0].lower(t, {{"tensor_core", 0}});
    CHECK(test::occurrences(ir::to_string(plain), "mma_sync") == 0);
  }
}

TEST_CASE("tensor-core convs: the GPU strategy takes float16 convs to mma.sync on sm_80 and newer only",
          "[gpu][cuda][mma][conv]") {
  using namespace relay;
  auto conv_group = [](DataType t, int64_t groups) {
    Expr x = make_var("x", tensor_type(t, {1, 24, 7, 7}));
    Expr w = make_var("w", tensor_type(t, {24, 24 / groups, 3, 3}));
    Attrs attrs = Attrs().set_ints("strides", {1, 1}).set_ints("padding", {1, 1, 1, 1}).set_ints("dilation", {1, 1})
                      .set_int("groups", groups);
    FusedGroup g;
    g.calls = {make_call("nn.conv2d", {x, w}, attrs)};
    g.root = g.anchor = g.calls[0];
    g.pattern = OpPattern::OutElementwiseFusable;
    g.inputs = {x, w};
    return g;
  };
  auto template_of = [](const FusedGroup& g, const char* spec) {
    return lower::select_strategy(g, Target::parse(spec)).template_name;
  };
  for (DataType half : {DataType::f16(), DataType::bf16()}) {
    INFO(half.str());
    CHECK(template_of(conv_group(half, 1), "cuda -arch=sm_80") == "gpu_conv_gemm");
    CHECK(template_of(conv_group(half, 1), "cuda -arch=sm_90") == "gpu_conv_gemm");
    // No mma.sync there: the direct conv, as before; depthwise and grouped convs are no GEMM.
    CHECK(template_of(conv_group(half, 1), "cuda -arch=sm_75") == "gpu_conv_direct");
    CHECK(template_of(conv_group(half, 1), "opencl") == "gpu_conv_direct");
    CHECK(template_of(conv_group(half, 24), "cuda -arch=sm_80") == "gpu_depthwise");
    CHECK(template_of(conv_group(half, 2), "cuda -arch=sm_80") == "gpu_conv_direct");
  }
  CHECK(template_of(conv_group(DataType::f32(), 1), "opencl") == "gpu_conv_gemm");
  if (!codegen::cuda_codegen_available()) {
    WARN("skipped the compile: kiln was built without the CUDA toolkit's NVRTC");
    return;
  }
  // Through compile(): a 3x3 conv of 7x7 pixels with bias and relu fused, padded 24 -> 32
  // channels and columns 7 -> 8.
  const DataType f16 = DataType::f16();
  Expr x = make_var("x", tensor_type(f16, {1, 24, 7, 7})), w = make_var("w", tensor_type(f16, {24, 24, 3, 3}));
  Expr bias = make_var("b", tensor_type(f16, {24}));
  Attrs attrs = Attrs().set_ints("strides", {1, 1}).set_ints("padding", {1, 1, 1, 1}).set_ints("dilation", {1, 1})
                    .set_int("groups", 1);
  Expr conv = make_call("nn.conv2d", {x, w}, attrs);
  Expr y = make_call("nn.relu", {make_call("nn.bias_add", {conv, bias}, Attrs().set_int("axis", 1))});
  CompileOptions options;
  options.target = Target::parse("cuda -arch=sm_80");
  CompiledModel c = compile(Module::make({x, w, bias}, {y}, {"y"}), options);
  REQUIRE(c.device.has_value());
  CHECK(test::occurrences(c.device->source, "__global__") == 1);
  CHECK(test::occurrences(c.device->source, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") > 0);
  std::string ptx;
  for (const codegen::GpuImage& im : c.device->images)
    if (im.ptx) ptx = im.bytes;
  CHECK(test::occurrences(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") > 0);
  CHECK(test::occurrences(ptx, "cp.async") > 0);
}
