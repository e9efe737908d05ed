// float16 / bfloat16 products on tensor cores (matmul_tensorcore_gpu.h): the default schedule of
// a float16 GEMM on CUDA sm_80 and sm_90 is mma.sync (NVRTC's PTX holds it, ptxas assembles it,
// no spills), with cp.async copies; sm_75 and OpenCL default to the plain tiles; and the same
// tensor-core schedule printed as OpenCL C (the mma's reference loops) runs on PoCL against a
// double-precision reference: dense, matmul and batch matmul, sizes no tile divides, race-checked.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "kiln/pipeline.h"
#include "kiln/compiler.h"
#include "kiln/codegen/gpu_build.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/transforms.h"
#include "kiln/relay/op.h"
#include "schedule/templates/generic_gpu.h"
#include "schedule/templates/matmul_gpu.h"
#include "kiln/te/ops/nn_dense.h"
#include "testing/reference.h"
#include "test_gpu_util.h"
#include "test_half_util.h"

using namespace kiln;
using Catch::Matchers::Contains;
using runtime::NDArray;

namespace {

enum class Kind { kDense, kMatmul, kBatchMatmul };

// A product as the GPU strategy lowers it for tensor cores (padded to whole 16 x 8 x 16 tiles),
// scheduled by the matmul template: C [batch.., m, n] from A [batch.., m, k] and B [n, k]
// (dense) or [batch.., k, n].
struct Gemm {
  Kind kind;
  ir::DataType in;
  int64_t batch, m, n, k;
  te::Tensor a, b, c;
  Gemm(Kind kd, ir::DataType t, int64_t bt, int64_t mm, int64_t nn, int64_t kk)
      : kind(kd), in(t), batch(bt), m(mm), n(nn), k(kk) {
    const te::ops::ProductPad tiles{16, 8, 16};
    std::vector<int64_t> lead = kind == Kind::kBatchMatmul ? std::vector<int64_t>{batch} : std::vector<int64_t>{};
    auto shape = [&](int64_t r, int64_t q) {
      std::vector<int64_t> s = lead;
      s.push_back(r);
      s.push_back(q);
      return s;
    };
    a = te::placeholder(shape(m, k), in, "A");
    if (kind == Kind::kDense) {
      b = te::placeholder({n, k}, in, "B");
      c = te::ops::dense_plain(a, b, false, "dense", tiles);
    } else {
      b = te::placeholder(shape(k, n), in, "B");
      c = te::ops::batch_matmul(a, b, 1, "matmul", tiles);
    }
  }
  // The float32 sum the template tiles (c casts it, and slices its padding off).
  te::Tensor sum() const { return c.op().input_tensors()[0]; }
  ir::PrimFunc lower(const Target& t, const std::map<std::string, size_t>& choices, std::string* config = nullptr) const {
    schedule::Config cfg = schedule::Config::with_choices(choices);
    schedule::Schedule s = schedule::schedule_anchor_gpu({c}, sum(), schedule::schedule_matmul_gpu, t, cfg);
    if (config) *config = cfg.str();
    return kiln::loop_ir(s, {a, b, c}, "gemm");
  }
  std::string name() const {
    const char* kinds[] = {"dense", "matmul", "batch matmul"};
    return std::string(kinds[int(kind)]) + " " + in.str() + " " + (kind == Kind::kBatchMatmul ? std::to_string(batch) + "x" : "") +
           std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  }
};

// Runs `g` built for OpenCL on PoCL; returns the elements outside the tolerance: half an ulp of
// the output type (the products and their float32 sums are exact for these inputs, the result
// is rounded once to the 16-bit type).
int64_t wrong_on_pocl(runtime::DeviceAPI& dev, const Gemm& g, const codegen::GpuModule& mod, test::RaceReport* races) {
  const int64_t bt = g.kind == Kind::kBatchMatmul ? g.batch : 1;
  const std::vector<float> av = test::sixty_fourths(bt * g.m * g.k, 21), bv = test::sixty_fourths((g.kind == Kind::kDense ? 1 : bt) * g.n * g.k, 22);
  const std::vector<uint16_t> ab = test::to_bits(av, g.in), bb = test::to_bits(bv, g.in);
  const DLDataType dt = g.in.is_bfloat() ? runtime::dtype_bf16() : runtime::dtype_f16();
  std::vector<NDArray> args = {NDArray::from_vector<uint16_t>(g.a.shape(), dt, ab),
                               NDArray::from_vector<uint16_t>(g.b.shape(), dt, bb), NDArray::zeros(g.c.shape(), dt)};
  test::run_on_device(dev, mod, args, 0, races);
  const uint16_t* out = args[2].data<uint16_t>();
  const double half_ulp = test::half_ulp(g.in);
  int64_t wrong = 0;
  for (int64_t p = 0; p < bt; ++p)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double want = 0;
        for (int64_t q = 0; q < g.k; ++q) {
          const double x = av[(p * g.m + i) * g.k + q];
          const double y = g.kind == Kind::kDense ? bv[j * g.k + q] : bv[(p * g.k + q) * g.n + j];
          want += x * y;
        }
        const double got = test::from_bits(out[(p * g.m + i) * g.n + j], g.in);
        wrong += !(std::abs(got - want) <= half_ulp * std::abs(want) + 1e-7);
      }
  return wrong;
}

}  // namespace

TEST_CASE("tensor cores: the default float16 and bfloat16 GEMMs on sm_80 and sm_90 are mma.sync", "[gpu][cuda][mma]") {
  for (const char* spec : {"cuda -arch=sm_80", "cuda -arch=sm_90"}) {
    const Target t = Target::parse(spec);
    for (const Gemm& g : {Gemm(Kind::kDense, ir::DataType::f16(), 1, 512, 512, 512),
                          Gemm(Kind::kMatmul, ir::DataType::bf16(), 1, 200, 136, 72),
                          Gemm(Kind::kBatchMatmul, ir::DataType::f16(), 3, 64, 64, 64)}) {
      INFO(spec << ": " << g.name());
      std::string config;
      const ir::PrimFunc f = g.lower(t, {}, &config);
      CHECK_THAT(config, Contains("tensor_core=1") && Contains("double_buffer=1"));
      codegen::GpuBuildOptions text_only;
      text_only.compile = false;
      const std::string source = kiln::build_gpu({f}, t, text_only).source;
      const std::string mma = std::string("mma.sync.aligned.m16n8k16.row.col.f32.") + (g.in.is_bfloat() ? "bf16.bf16" : "f16.f16") + ".f32";
      // The default 2 x 2 warps of 2 x 4 tiles, K slices of 32: 16 mma per warp and slice.
      CHECK(test::occurrences(source, mma) == 16);
      CHECK(test::occurrences(source, "cp.async.cg.shared.global [%0], [%1], 16") >= 2);
      // Their operands by ldmatrix: A's 16 x 16 tiles as x4, B's 16 x 8 as x2 (.trans where B is
      // K x N). Each fragment once a K step (2 of A, 4 of B; 2 steps a slice) where the warps'
      // tiles are whole, else one each per mma (each sits in its own guard).
      const bool guarded = g.m % 64 || g.n % 64;
      const char* const b_load = g.kind == Kind::kDense ? "m8n8.x2.shared.b16" : "m8n8.x2.trans.shared.b16";
      CHECK(test::occurrences(source, "ldmatrix.sync.aligned.m8n8.x4.shared.b16") == (guarded ? 16 : 2 * 2));
      CHECK(test::occurrences(source, std::string("ldmatrix.sync.aligned.") + b_load) == (guarded ? 16 : 2 * 4));
      CHECK(test::occurrences(source, "not ldmatrix") == 0);
      if (!codegen::cuda_codegen_available()) {
        WARN("skipped the NVRTC half: kiln was built without the CUDA toolkit's NVRTC");
        continue;
      }
      const codegen::GpuModule mod = test::build_own_sm({f}, t);
      const std::string ptx = mod.images[1].bytes;
      // NVRTC may unroll the K loop of a short K (the 72 and 64 here; 72 ends in a half slice).
      const int64_t mmas = static_cast<int64_t>(test::occurrences(ptx, mma));
      CHECK((mmas >= 16 && mmas % 8 == 0));
      CHECK(test::occurrences(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16") == (guarded ? mmas : mmas / 4));
      CHECK(test::occurrences(ptx, "cp.async.cg.shared.global") >= 2);
      CHECK(test::occurrences(ptx, "cp.async.wait_group") >= 2);
      CHECK(mod.max_spill_bytes == 0);
      INFO(mod.notes[0]);
    }
  }
}

TEST_CASE("tensor cores: 128 x 128 tiles in dynamic shared memory, and 3-buffer pipelines", "[gpu][cuda][mma]") {
  const Gemm g(Kind::kDense, ir::DataType::f16(), 1, 512, 512, 512);
  for (const char* spec : {"cuda -arch=sm_80", "cuda -arch=sm_90"}) {
    const Target t = Target::parse(spec);
    // 2 x 2 warps of 4 x 8 tiles, K slices of 32 in 3 buffers: the operand tiles (rows padded
    // by 8 elements) and the float32 staging tile (rows of 512 bytes padded by 8 floats) each
    // pass the 48 KiB a block declares statically. The staging tile, written after the K loop,
    // takes the operands' bytes (ir::plan_shared_storage): the block needs the larger of the two.
    std::string config;
    const ir::PrimFunc f =
        g.lower(t, {{"warps_m", 1}, {"mma_m", 2}, {"warps_n", 1}, {"mma_n", 3}, {"pipeline_stages", 1}}, &config);
    INFO(spec << ": " << config);
    const int64_t operands = (128 * (32 + 8) + 128 * (32 + 8)) * 2 * 3, staging = 128 * (128 + 8) * 4;
    codegen::GpuBuildOptions text_only;
    text_only.compile = false;
    const codegen::GpuModule text = kiln::build_gpu({f}, t, text_only);
    CHECK(text.programs[0].launches[0].dynamic_shared_bytes == std::max(operands, staging));
    CHECK_THAT(text.source, Contains("extern __shared__ __align__(16) unsigned char kiln_shared[];"));
    CHECK(test::occurrences(text.source, "__shared__") == 1);
    // Its sibling of 64 x 64 tiles stays static.
    const ir::PrimFunc small = g.lower(t, {}, nullptr);
    CHECK(kiln::build_gpu({small}, t, text_only).programs[0].launches[0].dynamic_shared_bytes == 0);
    if (!codegen::cuda_codegen_available()) {
      WARN("skipped the NVRTC half: kiln was built without the CUDA toolkit's NVRTC");
      continue;
    }
    const codegen::GpuModule mod = test::build_own_sm({f}, t);
    const std::string ptx = mod.images[1].bytes;
    // Each iteration leaves the group of the slice after next in flight.
    CHECK(test::occurrences(ptx, "cp.async.wait_group 1") >= 2);
    CHECK(test::occurrences(ptx, "cp.async.wait_group 0") == 0);
    CHECK(mod.max_spill_bytes == 0);
    CHECK_THAT(mod.notes[0], Contains("+ " + std::to_string(std::max(operands, staging)) + " dynamic"));
  }
  // Past the opt-in limit: sm_80's 163 KiB.
  CHECK_THROWS_WITH(g.lower(Target::parse("cuda -arch=sm_80"), {{"warps_m", 2}, {"mma_m", 2}, {"warps_n", 2}, {"mma_n", 3}}),
                    Contains("exceeds the target's 1024 threads or 166912 shared bytes"));
}

TEST_CASE("tensor cores: sm_75 and OpenCL default to the plain tiles", "[gpu][mma]") {
  const Gemm g(Kind::kDense, ir::DataType::f16(), 1, 128, 128, 128);
  for (const char* spec : {"cuda -arch=sm_75", "opencl"}) {
    INFO(spec);
    std::string config;
    const ir::PrimFunc f = g.lower(Target::parse(spec), {}, &config);
    CHECK_THAT(config, Contains("tensor_core=0"));
    CHECK(test::occurrences(ir::to_string(f), "mma_sync") == 0);
  }
  // Asked to, OpenCL prints the mma's reference loops (the test below); sm_75 has no mma.sync.
  CHECK_THROWS_WITH(g.lower(Target::parse("cuda -arch=sm_75"), {{"tensor_core", 1}}),
                    Contains("tensor_core=1, but target 'cuda -arch=sm_75") && Contains("has no mma.sync m16n8k16"));
}

TEST_CASE("tensor cores: the schedule's OpenCL twin on PoCL against a double-precision reference", "[gpu][opencl][mma]") {
  REQUIRE_OPENCL(dev);
  const Target t = Target::parse("opencl");
  const std::map<std::string, size_t> on = {{"tensor_core", 1}};
  // Sizes no tile divides (padded to 16 x 8 x 16, blocks overhanging the padding), one K slice
  // and several, both operand layouts, both 16-bit types, a batch.
  const std::vector<Gemm> gemms = {Gemm(Kind::kDense, ir::DataType::f16(), 1, 70, 90, 45),
                                   Gemm(Kind::kDense, ir::DataType::bf16(), 1, 128, 64, 96),
                                   Gemm(Kind::kMatmul, ir::DataType::f16(), 1, 33, 40, 20),
                                   Gemm(Kind::kBatchMatmul, ir::DataType::bf16(), 2, 20, 36, 24)};
  for (const Gemm& g : gemms) {
    for (bool race_check : {false, true}) {
      INFO(g.name() << (race_check ? " race-checked" : ""));
      std::string config;
      const ir::PrimFunc f = g.lower(t, on, &config);
      INFO(config);
      REQUIRE(test::occurrences(ir::to_string(f), "mma_sync") > 0);
      codegen::GpuBuildOptions opt;
      opt.race_check = race_check;
      const codegen::GpuModule mod = kiln::build_gpu({f}, t, opt);
      test::RaceReport races;
      CHECK(wrong_on_pocl(*dev, g, mod, race_check ? &races : nullptr) == 0);
      CHECK(races.count == 0);
      CHECK(races.first == "");
    }
  }
  // Other corners of the knobs: one warp of one tile, K slices of 64, no double buffering; 3
  // buffers over 5 K slices of 16, 4 over 3 of 32 (the prologue fills all three).
  const Gemm g(Kind::kDense, ir::DataType::f16(), 1, 48, 40, 80);
  for (const auto& choices : std::vector<std::map<std::string, size_t>>{
           {{"tensor_core", 1}, {"warps_m", 0}, {"warps_n", 0}, {"mma_m", 0}, {"mma_n", 0}},
           {{"tensor_core", 1}, {"mma_k", 2}, {"double_buffer", 0}, {"warps_m", 2}, {"mma_m", 0}, {"mma_n", 2}},
           {{"tensor_core", 1}, {"double_buffer", 1}, {"mma_k", 0}, {"pipeline_stages", 1}},
           {{"tensor_core", 1}, {"double_buffer", 1}, {"mma_k", 1}, {"pipeline_stages", 2}}}) {
    std::string config;
    const ir::PrimFunc f = g.lower(t, choices, &config);
    INFO(config);
    CHECK(wrong_on_pocl(*dev, g, kiln::build_gpu({f}, t), nullptr) == 0);
    if (!choices.count("pipeline_stages")) continue;
    // The pipelines race-checked too: a buffer refilled before every thread read it would show.
    codegen::GpuBuildOptions opt;
    opt.race_check = true;
    test::RaceReport races;
    CHECK(wrong_on_pocl(*dev, g, kiln::build_gpu({f}, t, opt), &races) == 0);
    CHECK(races.count == 0);
    CHECK_THAT(ir::to_string(f), Contains("double_buffer_scope = " + std::to_string(choices.at("pipeline_stages") + 2)));
  }
}

TEST_CASE("tensor cores: a model's float16 dense and matmul compile to mma.sync on sm_80", "[gpu][cuda][mma]") {
  if (!codegen::cuda_codegen_available()) {
    WARN("skipped: kiln was built without the CUDA toolkit's NVRTC");
    return;
  }
  // The strategy pads the products to whole tiles (70 x 48 x 60 -> 80 x 48 x 64) and the
  // default schedule puts them on tensor cores.
  using namespace relay;
  const DataType f16 = DataType::f16();
  Expr x = make_var("x", tensor_type(f16, {70, 60})), w = make_var("w", tensor_type(f16, {48, 60}));
  Expr b = make_var("b", tensor_type(f16, {60, 40}));
  Module m = Module::make({x, w, b}, {make_call("nn.dense", {x, w}), make_call("nn.matmul", {x, b})}, {"y", "z"});
  CompileOptions options;
  options.target = Target::parse("cuda -arch=sm_80");
  CompiledModel c = compile(m, options);
  REQUIRE(c.device.has_value());
  CHECK(test::occurrences(c.device->source, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") > 0);
  CHECK(test::occurrences(c.device->source, "cp.async") > 0);
  std::string ptx;
  for (const codegen::GpuImage& im : c.device->images)
    if (im.ptx) ptx = im.bytes;
  CHECK(test::occurrences(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") > 0);
}

TEST_CASE("tensor cores: the default block is the largest whose grid fills the multiprocessors", "[gpu][mma]") {
  const Target t = Target::parse("cuda -arch=sm_90");
  REQUIRE(t.gpu.multiprocessors == 132);
  struct Case {
    int64_t n;
    std::vector<std::string> knobs;
  };
  // 4096: 512 blocks of 128 x 256. 2048: 128 of those, too few; 256 of 128 x 128. 512: 16 of
  // those; 64 x 64 blocks with K slices of 32. Three stages each.
  for (const Case& c :
       {Case{4096, {"warps_m=2", "mma_m=4", "warps_n=4", "mma_n=8", "mma_k=64", "pipeline_stages=3"}},
        Case{2048, {"warps_m=4", "mma_m=2", "warps_n=2", "mma_n=8", "mma_k=64", "pipeline_stages=3"}},
        Case{512, {"warps_m=2", "mma_m=2", "warps_n=2", "mma_n=4", "mma_k=32", "pipeline_stages=3"}}}) {
    const Gemm g(Kind::kDense, ir::DataType::f16(), 1, c.n, c.n, c.n);
    std::string config;
    g.lower(t, {}, &config);
    INFO(c.n << ": " << config);
    for (const std::string& knob : c.knobs) CHECK_THAT(config, Contains(knob));
  }
}

TEST_CASE("wgmma: sm_90a's float16 GEMMs as warpgroup mma from core matrices, and ptxas takes them", "[gpu][cuda][mma]") {
  const Target t = Target::parse("cuda -arch=sm_90a");
  const std::map<std::string, size_t> on = {{"warpgroup_mma", 1}};
  CHECK(t.gpu.wgmma());
  CHECK(t.str().rfind("cuda -arch=sm_90a", 0) == 0);
  CHECK(t.cuda_image_sms() == std::vector<int>{90});
  CHECK_FALSE(Target::parse("cuda -arch=sm_90").gpu.wgmma());
  // 4096 x 4096: two warpgroups of 64 x 256, 4 wgmma a K slice of 64; the dense's B is K-major
  // (N x K), the matmul's N-major (K x N); bfloat16 alike. 192 x 72: one warpgroup (192 is not
  // whole blocks of 128), N 72 (the largest power of two dividing it, 8).
  for (const Gemm& g : {Gemm(Kind::kDense, ir::DataType::f16(), 1, 4096, 4096, 4096),
                        Gemm(Kind::kMatmul, ir::DataType::bf16(), 1, 4096, 4096, 4096),
                        Gemm(Kind::kMatmul, ir::DataType::f16(), 1, 192, 72, 48)}) {
    INFO(g.name());
    std::string config;
    g.lower(t, {}, &config);
    CHECK_THAT(config, Contains("warpgroup_mma=1"));  // the default where M is whole warpgroups
    const ir::PrimFunc f = g.lower(t, on, &config);
    CHECK_THAT(config, Contains("warpgroup_mma=1"));
    codegen::GpuBuildOptions text_only;
    text_only.compile = false;
    const std::string source = kiln::build_gpu({f}, t, text_only).source;
    const bool big = g.m == 4096;
    const std::string wgmma = std::string("wgmma.mma_async.sync.aligned.m64n") + (big ? "256" : "8") + "k16.f32." +
                              (g.in.is_bfloat() ? "bf16.bf16" : "f16.f16");
    CHECK(test::occurrences(source, wgmma) == (big ? 4 : 1));
    // K slices of 64 (128 bytes): A's tile, and the dense's K-major B, in wgmma's 128-byte
    // swizzle (layout type 1, 8-row groups 1024 bytes apart), 1024-byte aligned; the matmul's
    // N-major B too, in 4 panels of 64 columns (leading offset 64 rows x 128 bytes from one to
    // the next). Slices of 16 and 72 columns (192 x 72 x 48): core matrices (type 0).
    const int k_major = !big ? 0 : g.kind == Kind::kDense ? 2 : 1;
    CHECK(test::occurrences(source, ", 16, 1024, 1))") == 4 * k_major);
    CHECK(test::occurrences(source, ", 8192, 1024, 1))") == (big && g.kind == Kind::kMatmul ? 4 : 0));
    CHECK(test::occurrences(source, "__align__(1024)") == (big ? 1 : 0));
    std::map<std::string, size_t> plain = on;
    plain["wgmma_swizzle"] = 0;
    const std::string unswizzled = kiln::build_gpu({g.lower(t, plain)}, t, text_only).source;
    CHECK(test::occurrences(unswizzled, ", 1))") == 0);
    CHECK(test::occurrences(unswizzled, "__align__(1024)") == 0);
    // B's descriptor names it N-major for the matmul (the last immediate).
    CHECK(test::occurrences(source, g.kind == Kind::kMatmul ? ", p, 1, 1, 0, 1;" : ", p, 1, 1, 0, 0;") > 0);
    CHECK(test::occurrences(source, "wgmma.fence.sync.aligned;") == 1);
    // Each K slice's run left in flight (4 buffers by default): it waits for the run before it,
    // and after the K loop one wait for the last.
    CHECK(test::occurrences(source, "wgmma.wait_group.sync.aligned 1;") == 1);
    CHECK(test::occurrences(source, "wgmma.wait_group.sync.aligned 0;") == 1);
    CHECK(source.find("wgmma.wait_group.sync.aligned 1;") < source.find("wgmma.wait_group.sync.aligned 0;"));
    // Waited for in its own slice: no run in flight, the same one wait.
    std::map<std::string, size_t> each = on;
    each["wgmma_in_flight"] = 0;
    const std::string waited = kiln::build_gpu({g.lower(t, each)}, t, text_only).source;
    CHECK(test::occurrences(waited, "wgmma.wait_group.sync.aligned 1;") == 0);
    CHECK(test::occurrences(waited, "wgmma.wait_group.sync.aligned 0;") == 1);
    // Every barrier after this thread's shared-memory writes orders them for the async proxy.
    CHECK(test::occurrences(source, "fence.proxy.async.shared::cta;") == test::occurrences(source, "__syncthreads();"));
    CHECK(test::occurrences(source, "ldmatrix") == 0);
    if (!codegen::cuda_codegen_available()) {
      WARN("skipped the NVRTC half: kiln was built without the CUDA toolkit's NVRTC");
      continue;
    }
    const codegen::GpuModule mod = kiln::build_gpu({f}, t);
    REQUIRE(mod.images.size() == 1);  // the sm_90a cubin alone
    CHECK(mod.images[0].sm == 90);
    CHECK_FALSE(mod.images[0].ptx);
    CHECK(mod.max_spill_bytes == 0);
    INFO(mod.notes[0]);
  }
}

TEST_CASE("wgmma: the schedule's OpenCL twin on PoCL (core matrices, reference loops) against a double-precision reference",
          "[gpu][opencl][mma]") {
  REQUIRE_OPENCL(dev);
  const Target t = Target::parse("opencl");
  const std::map<std::string, size_t> on = {{"tensor_core", 1}, {"warpgroup_mma", 1}, {"wgmma_n", 1}};
  // One warpgroup and two, N-major and K-major B, K slices of 16, 32 and 64 over one or more;
  // the pipelines of 3 buffers as a run left in flight needs them (one tile ahead) and as the
  // run waited for in its slice (two ahead); slices of 64 (128 bytes) with K-major tiles
  // swizzled and in core matrices, N-major B swizzled in panels of 64 columns where N allows
  // (wgmma_n up to 128 here: two panels in one slice, one panel over two slices; OpenCL's 48
  // KiB hold no more); race-checked.
  struct Choice {
    size_t in_flight, swizzle;
    bool race_check;
  };
  for (const Gemm& g : {Gemm(Kind::kDense, ir::DataType::f16(), 1, 128, 64, 64),
                        Gemm(Kind::kMatmul, ir::DataType::bf16(), 1, 64, 40, 48),
                        Gemm(Kind::kMatmul, ir::DataType::f16(), 1, 128, 32, 160),
                        Gemm(Kind::kDense, ir::DataType::f16(), 1, 64, 48, 192),
                        Gemm(Kind::kMatmul, ir::DataType::bf16(), 1, 64, 24, 128),
                        Gemm(Kind::kMatmul, ir::DataType::f16(), 1, 64, 128, 64),
                        Gemm(Kind::kMatmul, ir::DataType::f16(), 1, 64, 64, 128)}) {
    for (const Choice& c : {Choice{1, 1, false}, Choice{1, 1, true}, Choice{0, 1, true}, Choice{1, 0, true}}) {
      INFO(g.name() << ", wgmma_in_flight " << c.in_flight << ", wgmma_swizzle " << c.swizzle
                    << (c.race_check ? ", race-checked" : ""));
      const size_t in_flight = c.in_flight;
      const bool race_check = c.race_check;
      // Double-buffered in 3 buffers (OpenCL's default is neither): knob indices.
      std::map<std::string, size_t> choices = on;
      choices["double_buffer"] = 1;
      choices["pipeline_stages"] = 1;
      choices["wgmma_in_flight"] = in_flight;
      choices["wgmma_swizzle"] = c.swizzle;
      std::string config;
      const ir::PrimFunc f = g.lower(t, choices, &config);
      INFO(config);
      REQUIRE(test::occurrences(ir::to_string(f), "wgmma") > 0);
      // K = 64 is one slice: nothing to pipeline, nothing left in flight.
      const std::string injected = ir::to_string(ir::inject_double_buffer(f));  // as build_gpu runs it
      CHECK((test::occurrences(injected, ir::kWgmmaDrain) > 0) == (g.k != 64 && in_flight));
      // Swizzled: A and a dense's K-major B where a slice is 64 deep, a matmul's N-major B
      // where its tile (N's largest power of two up to 128) is whole panels of 64 columns.
      const int64_t bk = g.k % 64 == 0 ? 64 : g.k % 32 == 0 ? 32 : 16;
      const bool k_major_b = g.kind == Kind::kDense;
      const int64_t swizzled_tiles =
          !c.swizzle ? 0 : (bk == 64 ? 1 : 0) + ((k_major_b ? bk == 64 : g.n % 64 == 0) ? 1 : 0);
      CHECK(test::occurrences(injected, "swizzle_128b") == swizzled_tiles);
      codegen::GpuBuildOptions opt;
      opt.race_check = race_check;
      test::RaceReport races;
      CHECK(wrong_on_pocl(*dev, g, kiln::build_gpu({f}, t, opt), race_check ? &races : nullptr) == 0);
      CHECK(races.count == 0);
    }
  }
  // M not whole warpgroups: refused, naming it.
  const Gemm odd(Kind::kDense, ir::DataType::f16(), 1, 80, 64, 64);
  CHECK_THROWS_WITH(odd.lower(t, on), Contains("M = 80 is not whole warpgroups of 64 rows"));
  // sm_90 has no such knob: the schedule stays mma.sync.
  std::string config;
  Gemm(Kind::kDense, ir::DataType::f16(), 1, 128, 64, 64).lower(Target::parse("cuda -arch=sm_90"), on, &config);
  CHECK_THAT(config, !Contains("warpgroup_mma"));
}
