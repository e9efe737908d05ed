// NVRTC compilation of CUDA C modules (src/codegen/source/nvrtc_compile.h): cubins and PTX,
// ptxas's resource report, and the errors of the front end and of ptxas. The compiling tests
// are skipped (with a warning) when kiln was built without the CUDA toolkit; the report parser
// runs everywhere.
#include <catch2/catch.hpp>

#include "../../src/codegen/source/nvrtc_compile.h"
#include "kiln/support/error.h"

using namespace kiln::codegen::source;

namespace {

bool skipped_without_nvrtc() {
  if (nvrtc_available()) return false;
  WARN("skipped: kiln was built without NVRTC (no CUDA toolkit found)");
  return true;
}

const KernelResources* find_kernel(const std::vector<KernelResources>& rs, const std::string& name) {
  for (const KernelResources& r : rs)
    if (r.kernel == name) return &r;
  return nullptr;
}

bool is_elf(const std::string& bytes) { return bytes.size() > 4 && bytes.compare(0, 4, "\x7f" "ELF") == 0; }

const char* kAddKernel = R"(
extern "C" __global__ void __launch_bounds__(256) add_one(float* __restrict__ out, const float* __restrict__ in, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) out[i] = in[i] + 1.0f;
}
)";

// A real report of NVRTC 13.0 for sm_80 (-arch=sm_80 --ptxas-options=-v): a module-level
// __constant__ array, a kernel spilling under __launch_bounds__(1024), one without spills, one
// with a local array, then a kernel calling a non-inlined device function.
const char* kReport = R"(ptxas info    : 0 bytes gmem, 256 bytes cmem[3]
ptxas info    : Compiling entry function 'pressure' for 'sm_80'
ptxas info    : Function properties for pressure
ptxas         .     1056 bytes stack frame, 1040 bytes spill stores, 1796 bytes spill loads
ptxas info    : Used 64 registers, used 0 barriers, 1056 bytes cumulative stack size, 360 bytes cmem[0]
ptxas info    : Compile time = 209.307 ms
ptxas info    : Compiling entry function 'usec' for 'sm_80'
ptxas info    : Function properties for usec
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 0.983 ms
ptxas info    : Compiling entry function 'spill' for 'sm_80'
ptxas info    : Function properties for spill
ptxas         .     1024 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 47 registers, used 0 barriers, 1024 bytes cumulative stack size, 368 bytes cmem[0]
ptxas info    : Compile time = 74.667 ms
ptxas info    : Compiling entry function 'calls' for 'sm_80'
ptxas info    : Function properties for calls
ptxas         .     128 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 128 bytes cumulative stack size, 512 bytes smem, 360 bytes cmem[0]
ptxas info    : Compile time = 5.288 ms
ptxas info    : Function properties for _Z6helperPKfi
ptxas         .     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
)";

}  // namespace

TEST_CASE("parse_ptxas_report reads NVRTC 13's report exactly", "[nvrtc]") {
  std::vector<KernelResources> rs = parse_ptxas_report(kReport);
  REQUIRE(rs.size() == 4);  // the entries only: not the device function _Z6helperPKfi
  CHECK(rs[0].kernel == "pressure");
  CHECK(rs[0].sm == 80);
  CHECK(rs[0].registers == 64);
  CHECK(rs[0].barriers == 0);
  CHECK(rs[0].stack_bytes == 1056);
  CHECK(rs[0].spill_stores_bytes == 1040);
  CHECK(rs[0].spill_loads_bytes == 1796);
  CHECK(rs[0].shared_bytes == 0);
  CHECK(rs[0].constant_bytes == 360);
  CHECK(rs[1].kernel == "usec");
  CHECK(rs[1].registers == 8);
  CHECK(rs[1].stack_bytes == 0);
  CHECK(rs[1].spill_stores_bytes == 0);
  CHECK(rs[2].kernel == "spill");
  CHECK(rs[2].registers == 47);
  CHECK(rs[2].stack_bytes == 1024);
  CHECK(rs[2].spill_loads_bytes == 0);
  CHECK(rs[2].constant_bytes == 368);
  CHECK(rs[3].kernel == "calls");
  CHECK(rs[3].registers == 32);
  CHECK(rs[3].barriers == 1);
  CHECK(rs[3].stack_bytes == 128);
  CHECK(rs[3].shared_bytes == 512);
}

TEST_CASE("parse_ptxas_report reads nvcc's and older ptxas's lines", "[nvrtc]") {
  // nvcc -Xptxas -v prints the properties without NVRTC's "ptxas ." prefix; older ptxas
  // versions print no barriers and sum several constant banks on the kernel's line.
  std::vector<KernelResources> rs = parse_ptxas_report(
      "ptxas info    : Compiling entry function 'k' for 'sm_75'\n"
      "ptxas info    : Function properties for k\n"
      "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 32 registers, 384 bytes smem, 368 bytes cmem[0], 8 bytes cmem[2]\n");
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].sm == 75);
  CHECK(rs[0].registers == 32);
  CHECK(rs[0].stack_bytes == 8);
  CHECK(rs[0].spill_stores_bytes == 4);
  CHECK(rs[0].spill_loads_bytes == 12);
  CHECK(rs[0].shared_bytes == 384);
  CHECK(rs[0].constant_bytes == 376);
  CHECK(parse_ptxas_report("").empty());
  CHECK(parse_ptxas_report("ptxas info    : 0 bytes gmem\nnot a report line\n").empty());
}

TEST_CASE("compile_cuda gives a cubin per sm and the PTX of the highest", "[nvrtc]") {
  if (skipped_without_nvrtc()) return;
  NvrtcResult r = compile_cuda(kAddKernel, {90, 80});
  REQUIRE(r.images.size() == 3);
  CHECK(r.images[0].sm == 80);
  CHECK_FALSE(r.images[0].ptx);
  CHECK(is_elf(r.images[0].bytes));
  CHECK(r.images[1].sm == 90);
  CHECK_FALSE(r.images[1].ptx);
  CHECK(is_elf(r.images[1].bytes));
  CHECK(r.images[0].bytes != r.images[1].bytes);
  const CudaImage& ptx = r.images[2];
  CHECK(ptx.ptx);
  CHECK(ptx.sm == 90);
  CHECK(ptx.bytes.find(".version") != std::string::npos);
  CHECK(ptx.bytes.find(".target sm_90") != std::string::npos);
  CHECK(ptx.bytes.find(".entry add_one(") != std::string::npos);  // extern "C": not mangled
  CHECK(ptx.bytes.back() == '\0');  // ready for cuModuleLoadData
  const KernelResources* k = find_kernel(r.resources, "add_one");
  REQUIRE(k != nullptr);
  CHECK(k->sm == 90);
  CHECK(k->registers > 0);
  CHECK(k->spill_stores_bytes == 0);
  CHECK(r.log.find("for 'sm_80'") != std::string::npos);
  CHECK(r.seconds > 0);
}

TEST_CASE("compile_cuda reports shared memory and spills", "[nvrtc]") {
  if (skipped_without_nvrtc()) return;
  // 1024 threads leave 64 registers a thread: 64 live values and the products spill, and a local
  // array indexed at run time lives on the stack.
  NvrtcResult r = compile_cuda(R"(
extern "C" __global__ void __launch_bounds__(1024) pressure(float* a) {
  float r[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) r[i] = a[i * 1024 + threadIdx.x];
  float acc = 0.0f;
#pragma unroll
  for (int i = 0; i < 64; ++i)
#pragma unroll
    for (int j = 0; j < 64; ++j) acc += r[i] * r[j];
  a[threadIdx.x] = acc;
}
extern "C" __global__ void __launch_bounds__(1024) local_array(float* a, const int* idx) {
  float loc[256];
  for (int i = 0; i < 256; ++i) loc[i] = a[i * 1024 + threadIdx.x];
  float acc = 0.0f;
  for (int i = 0; i < 256; ++i) acc += loc[idx[i]];
  a[threadIdx.x] = acc;
}
extern "C" __global__ void __launch_bounds__(128) tile(float* a) {
  __shared__ float s[2][128];
  s[0][threadIdx.x] = a[threadIdx.x];
  s[1][threadIdx.x] = a[threadIdx.x + 128];
  __syncthreads();
  a[threadIdx.x] = s[0][127 - threadIdx.x] + s[1][threadIdx.x ^ 1];
}
)",
                               {80});
  const KernelResources* p = find_kernel(r.resources, "pressure");
  REQUIRE(p != nullptr);
  CHECK(p->registers <= 64);
  CHECK(p->spill_stores_bytes > 0);
  CHECK(p->spill_loads_bytes > 0);
  const KernelResources* l = find_kernel(r.resources, "local_array");
  REQUIRE(l != nullptr);
  CHECK(l->stack_bytes >= 1024);
  const KernelResources* t = find_kernel(r.resources, "tile");
  REQUIRE(t != nullptr);
  CHECK(t->shared_bytes == 1024);
  CHECK(t->barriers == 1);
}

TEST_CASE("compile_cuda refuses 64 KiB of static shared memory with ptxas's message", "[nvrtc]") {
  if (skipped_without_nvrtc()) return;
  // The front end accepts it; ptxas (inside NVRTC) rejects it: 48 KiB is the static limit.
  const char* source = R"(
extern "C" __global__ void too_big(float* a) {
  __shared__ float s[16384];
  s[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  a[threadIdx.x] = s[16383 - threadIdx.x];
}
)";
  try {
    compile_cuda(source, {80, 90});
    FAIL("compile_cuda accepted 64 KiB of static shared memory");
  } catch (const kiln::Error& e) {
    std::string what = e.what();
    INFO(what);
    CHECK(what.find("too much shared data") != std::string::npos);
    CHECK(what.find("0x10000 bytes, 0xc000 max") != std::string::npos);
    CHECK(what.find("too_big") != std::string::npos);
    CHECK(what.find("sm_80") != std::string::npos);
  }
}

TEST_CASE("compile_cuda reports a syntax error with NVRTC's log", "[nvrtc]") {
  if (skipped_without_nvrtc()) return;
  try {
    compile_cuda(R"(extern "C" __global__ void broken(float* a) { a[0] = no_such_value + 1.0f; })", {80, 90});
    FAIL("compile_cuda accepted an undefined identifier");
  } catch (const kiln::Error& e) {
    std::string what = e.what();
    INFO(what);
    CHECK(what.find("no_such_value") != std::string::npos);
    CHECK(what.find("is undefined") != std::string::npos);
    CHECK(what.find("sm_80") != std::string::npos);
  }
}

TEST_CASE("compile_cuda refuses unsupported and missing sms", "[nvrtc]") {
  if (skipped_without_nvrtc()) return;
  CHECK_THROWS_WITH(compile_cuda(kAddKernel, {70}),
                    Catch::Contains("sm_70 is not supported by NVRTC") && Catch::Contains("sm_80"));
  CHECK_THROWS_WITH(compile_cuda(kAddKernel, {}), Catch::Contains("no sm to compile for"));
}

TEST_CASE("compile_cuda includes the toolkit's headers only when asked", "[nvrtc]") {
  if (skipped_without_nvrtc()) return;
  const char* source = R"(#include <cuda_fp16.h>
extern "C" __global__ void half_one(__half* a) { a[threadIdx.x] = __float2half(1.0f); }
)";
  CHECK(compile_cuda(source, {80}, /*needs_headers=*/true).images.size() == 2);
  CHECK_THROWS_WITH(compile_cuda(source, {80}), Catch::Contains("cuda_fp16.h"));
}

TEST_CASE("compile_cuda without NVRTC says so", "[nvrtc]") {
  if (nvrtc_available()) {
    CHECK_FALSE(nvrtc_version().empty());
    return;
  }
  CHECK_THROWS_WITH(compile_cuda(kAddKernel, {80}), Catch::Contains("CUDA code generation needs the CUDA toolkit's NVRTC;") &&
                                                        Catch::Contains("this kiln was built without it"));
}
