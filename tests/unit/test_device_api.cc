// The device layer (src/device/device_api.h): OpenCL on PoCL here, CUDA where a GPU is lent,
// the messages that say why a device cannot be opened, and the choice of a CUDA image.
// These tests run within kiln_tests, a process that holds LLVM 16, as the compiler does: the
// OpenCL ones check that PoCL (and its own LLVM) works there (docs/gpu.md, "Toolkit facts").
#include <dlfcn.h>
#include <sys/single_threaded.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "device/device_api.h"
#include "kiln/support/error.h"

using Catch::Matchers::Contains;
using namespace kiln::runtime;

namespace {

// The OpenCL device, or null (with a warning saying why) on a machine without OpenCL.
std::unique_ptr<DeviceAPI> opencl_or_skip() {
  try {
    return open_device(DeviceKind::kOpenCL);
  } catch (const kiln::Error& e) {
    std::string why = e.what();
    if (why.find("libOpenCL.so.1 not found") == std::string::npos && why.find("no OpenCL platform") == std::string::npos)
      throw;
    WARN("skipped, no OpenCL here: " << why);
    return nullptr;
  }
}

// Every kernel reads buffer 0 and writes buffer 1 (and a trailing __local argument, see LaunchDims).
const char* kOpenCLSource = R"(
__kernel void add_one(__global const float* a, __global float* b) {
  size_t i = get_global_id(0);
  b[i] = a[i] + 1.0f;
}
// Reverses each 64-element tile within its work-group, through __local memory.
__kernel void reverse_tile(__global const float* a, __global float* b) {
  __local float tile[64];
  size_t l = get_local_id(0), base = get_group_id(0) * 64;
  tile[l] = a[base + l];
  barrier(CLK_LOCAL_MEM_FENCE);
  b[base + l] = tile[63 - l];
}
// The same with the tile in dynamic shared memory: the trailing __local argument.
__kernel void reverse_dynamic(__global const float* a, __global float* b, __local float* tile) {
  size_t l = get_local_id(0), n = get_local_size(0), base = get_group_id(0) * n;
  tile[l] = a[base + l];
  barrier(CLK_LOCAL_MEM_FENCE);
  b[base + l] = tile[n - 1 - l];
}
)";

// The same kernels in hand-written PTX (checked with ptxas for sm_80 and sm_90). PTX 8.0 (CUDA
// 12.0) so that any CUDA 12 driver JIT-compiles it. reverse_dynamic reverses blocks of 256
// through the top of 64 KiB of dynamic shared memory: it runs only if the layer opted the
// kernel in above 48 KiB.
const char* kPTX = R"(
.version 8.0
.target sm_80
.address_size 64
.extern .shared .align 16 .b8 dynamic_smem[];
.visible .entry add_one(.param .u64 a, .param .u64 b)
{
  .reg .b32 %r<5>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  mul.wide.s32 %rd3, %r4, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, 0f3F800000;
  add.s64 %rd5, %rd2, %rd3;
  st.global.f32 [%rd5], %f2;
  ret;
}
.visible .entry reverse_dynamic(.param .u64 a, .param .u64 b)
{
  .reg .b32 %r<10>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  mul.wide.s32 %rd3, %r4, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  mov.u32 %r5, dynamic_smem;
  shl.b32 %r6, %r3, 2;
  add.s32 %r7, %r5, %r6;
  st.shared.f32 [%r7+64512], %f1;
  bar.sync 0;
  sub.s32 %r8, %r2, %r3;
  shl.b32 %r8, %r8, 2;
  add.s32 %r9, %r5, %r8;
  ld.shared.f32 %f1, [%r9+64508];
  add.s64 %rd5, %rd2, %rd3;
  st.global.f32 [%rd5], %f1;
  ret;
}
)";

std::vector<float> iota_input(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.5f * static_cast<float>(i) - 7.0f;
  return v;
}

// Runs `kernel` on a copy of `input` (buffer 0) and returns what it wrote into buffer 1.
std::vector<float> run(DeviceAPI& dev, DeviceModule& module, const std::string& kernel, const LaunchDims& dims,
                       const std::vector<float>& input) {
  size_t bytes = input.size() * sizeof(float);
  void* a = dev.alloc(bytes);
  void* b = dev.alloc(bytes);
  dev.copy_to_device(a, input.data(), bytes);
  module.launch(kernel, dims, {a, b});
  dev.synchronize();
  std::vector<float> out(input.size());
  dev.copy_to_host(out.data(), b, bytes);
  dev.free(a);
  dev.free(b);
  return out;
}

LaunchDims dims_1d(uint32_t grid, uint32_t block, uint32_t dynamic_shared = 0) {
  LaunchDims dims;
  dims.grid[0] = grid;
  dims.block[0] = block;
  dims.dynamic_shared_bytes = dynamic_shared;
  return dims;
}

// The plain references.
std::vector<float> add_one_reference(const std::vector<float>& a) {
  std::vector<float> b(a.size());
  for (size_t i = 0; i < a.size(); ++i) b[i] = a[i] + 1.0f;
  return b;
}
std::vector<float> reverse_tiles_reference(const std::vector<float>& a, size_t tile) {
  std::vector<float> b(a.size());
  for (size_t base = 0; base < a.size(); base += tile)
    for (size_t l = 0; l < tile; ++l) b[base + l] = a[base + tile - 1 - l];
  return b;
}

DeviceImage opencl_image(const std::string& source) { return {DeviceImage::kOpenCLSource, 0, source}; }

// Sets (or, with null, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

// Whether libcuda.so.1 loads. It stays loaded, as open_device leaves a driver.
bool cuda_driver_present() { return dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) != nullptr; }

}  // namespace

TEST_CASE("device: OpenCL add_one matches a plain loop", "[device][opencl]") {
  auto dev = opencl_or_skip();
  if (!dev) return;
  INFO(dev->description());
  CHECK_THAT(dev->description(), Contains("OpenCL: "));
  CHECK(dev->sm() == 0);
  auto module = dev->load_module({opencl_image(kOpenCLSource)});
  std::vector<float> input = iota_input(256);
  CHECK(run(*dev, *module, "add_one", dims_1d(4, 64), input) == add_one_reference(input));
}

TEST_CASE("device: OpenCL __local tile with a barrier matches a plain loop", "[device][opencl]") {
  auto dev = opencl_or_skip();
  if (!dev) return;
  auto module = dev->load_module({opencl_image(kOpenCLSource)});
  std::vector<float> input = iota_input(256);
  CHECK(run(*dev, *module, "reverse_tile", dims_1d(4, 64), input) == reverse_tiles_reference(input, 64));
}

TEST_CASE("device: OpenCL dynamic shared memory is a trailing __local argument", "[device][opencl]") {
  auto dev = opencl_or_skip();
  if (!dev) return;
  auto module = dev->load_module({opencl_image(kOpenCLSource)});
  std::vector<float> input = iota_input(512);
  CHECK(run(*dev, *module, "reverse_dynamic", dims_1d(4, 128, 128 * sizeof(float)), input) ==
        reverse_tiles_reference(input, 128));
}

TEST_CASE("device: OpenCL copies between buffers", "[device][opencl]") {
  auto dev = opencl_or_skip();
  if (!dev) return;
  std::vector<float> input = iota_input(100), out(100);
  void* a = dev->alloc(400);
  void* b = dev->alloc(400);
  dev->copy_to_device(a, input.data(), 400);
  dev->copy_device_to_device(b, a, 400);
  dev->copy_to_host(out.data(), b, 400);
  CHECK(out == input);
  // Offsets into the device buffers (a DLPack tensor's byte_offset): b[0..9] = a[90..99], then
  // b[98..99] = input[0..1].
  dev->copy_device_to_device(b, a, 40, 0, 360);
  dev->copy_to_host(out.data(), b, 40);
  CHECK(std::vector<float>(out.begin(), out.begin() + 10) == std::vector<float>(input.begin() + 90, input.end()));
  dev->copy_to_device(b, input.data(), 8, 392);
  dev->copy_to_host(out.data(), b, 8, 392);
  CHECK(std::vector<float>(out.begin(), out.begin() + 2) == std::vector<float>(input.begin(), input.begin() + 2));
  dev->free(a);
  dev->free(b);
  dev->free(nullptr);
}

TEST_CASE("device: OpenCL tells a buffer of its context that is big enough from others", "[device][opencl]") {
  auto dev = opencl_or_skip();
  if (!dev) return;
  void* context = nullptr;
  void* queue = nullptr;
  dev->native_handles(&context, &queue);
  CHECK(context != nullptr);
  CHECK(queue != nullptr);
  void* a = dev->alloc(400);
  CHECK(dev->buffer_problem(a, 400).empty());
  CHECK(dev->buffer_problem(a, 404) == "its cl_mem holds 400 bytes, 404 needed");
  CHECK_THAT(dev->buffer_problem(nullptr, 4), Contains("its data is not a cl_mem"));
  // Each open_device makes a context of its own.
  auto other = open_device(DeviceKind::kOpenCL);
  void* b = other->alloc(400);
  CHECK_THAT(dev->buffer_problem(b, 400), Contains("belongs to another OpenCL context than the module's"));
  other->free(b);
  dev->free(a);
}

// In a process holding LLVM the OpenCL driver runs in a link-map namespace of its own, with a
// second libc whose threads the first one does not see; the dynamic loader, shared by both,
// allocates with the first libc's malloc when a driver thread calls dlopen. Unless the first
// libc knows the process is multi-threaded its malloc takes no lock, and the heap was corrupted
// (opencl.cc). Needs a fresh process (CTest runs each case in one).
TEST_CASE("device: OpenCL in a process holding LLVM leaves the process's libc multi-threaded", "[device][opencl]") {
  if (!dlopen("libLLVM-16.so.1", RTLD_NOW | RTLD_NOLOAD)) {
    WARN("skipped: this process holds no LLVM (OpenCL's loader is in the default namespace)");
    return;
  }
  if (!__libc_single_threaded) {
    WARN("skipped: this process already started threads");
    return;
  }
  auto dev = opencl_or_skip();
  if (!dev) return;
  CHECK(__libc_single_threaded == 0);
}

TEST_CASE("device: OpenCL build errors carry the build log", "[device][opencl]") {
  auto dev = opencl_or_skip();
  if (!dev) return;
  const char* broken = "__kernel void broken(__global float* a) { a[0] = undeclared_thing; }";
  try {
    dev->load_module({opencl_image(broken)});
    FAIL("the program built");
  } catch (const kiln::Error& e) {
    CHECK_THAT(e.what(), Contains("clBuildProgram failed with -11") && Contains("undeclared_thing"));
  }
}

TEST_CASE("device: OpenCL launch of a missing kernel names it", "[device][opencl]") {
  auto dev = opencl_or_skip();
  if (!dev) return;
  auto module = dev->load_module({opencl_image(kOpenCLSource)});
  void* a = dev->alloc(4);
  CHECK_THROWS_WITH(module->launch("no_such_kernel", dims_1d(1, 1), {a, a}),
                    Contains("clCreateKernel(\"no_such_kernel\")") && Contains("CL_INVALID_KERNEL_NAME"));
  CHECK_THROWS_WITH(module->launch("add_one", dims_1d(0, 1), {a, a}), Contains("empty dimension"));
  dev->free(a);
}

TEST_CASE("device: OpenCL refuses a module without OpenCL C", "[device][opencl]") {
  auto dev = opencl_or_skip();
  if (!dev) return;
  CHECK_THROWS_WITH(dev->load_module({{DeviceImage::kCubin, 80, "x"}, {DeviceImage::kPTX, 90, "x"}}),
                    Contains("it carries cubin sm_80, PTX sm_90"));
}

TEST_CASE("device: CUDA without a driver names libcuda.so.1", "[device]") {
  if (cuda_driver_present()) {
    WARN("skipped: this machine has a CUDA driver");
    return;
  }
  ScopedEnv env("KILN_CUDA_DRIVER", nullptr);
  CHECK_THROWS_WITH(open_device(DeviceKind::kCUDA), Contains("needs a CUDA driver: libcuda.so.1 not found"));
}

TEST_CASE("device: CUDA with the toolkit's stub library names error 34", "[device]") {
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (access(stub, R_OK) != 0) {
    WARN("skipped: no CUDA toolkit stub at " << stub);
    return;
  }
  ScopedEnv env("KILN_CUDA_DRIVER", stub);
  CHECK_THROWS_WITH(open_device(DeviceKind::kCUDA),
                    Contains("cuInit failed with 34 (CUDA_ERROR_STUB_LIBRARY: the toolkit's stub libcuda"));
  ScopedEnv missing("KILN_CUDA_DRIVER", "/no/such/libcuda.so");
  CHECK_THROWS_WITH(open_device(DeviceKind::kCUDA), Contains("/no/such/libcuda.so not found") &&
                                                        Contains("the file KILN_CUDA_DRIVER names"));
}

TEST_CASE("device: CUDA buffers, a PTX module and image choice on a GPU", "[device]") {
  if (!cuda_driver_present()) {
    WARN("skipped: no CUDA driver (libcuda.so.1) on this machine");
    return;
  }
  ScopedEnv env("KILN_CUDA_DRIVER", nullptr);
  auto dev = open_device(DeviceKind::kCUDA);
  INFO(dev->description());
  WARN("CUDA device: " << dev->description());
  CHECK(dev->sm() >= 80);
  std::vector<float> input = iota_input(1024), out(1024);
  void* a = dev->alloc(4096);
  void* b = dev->alloc(4096);
  dev->copy_to_device(a, input.data(), 4096);
  dev->copy_device_to_device(b, a, 4096);
  dev->copy_to_host(out.data(), b, 4096);
  CHECK(out == input);
  // Offsets (pointer arithmetic on CUDA), and the checks of a caller's buffer.
  dev->copy_device_to_device(b, a, 40, 0, 360);
  dev->copy_to_host(out.data(), b, 40);
  CHECK(std::vector<float>(out.begin(), out.begin() + 10) == std::vector<float>(input.begin() + 90, input.begin() + 100));
  dev->copy_to_device(b, input.data(), 8, 4088);
  dev->copy_to_host(out.data(), b, 8, 4088);
  CHECK(std::vector<float>(out.begin(), out.begin() + 2) == std::vector<float>(input.begin(), input.begin() + 2));
  CHECK(dev->buffer_problem(a, 4096).empty());
  CHECK(dev->buffer_problem(static_cast<char*>(a) + 96, 4000).empty());
  // The driver may round an allocation up: far past its end, never within it.
  CHECK_THAT(dev->buffer_problem(static_cast<char*>(a) + 96, 1 << 20), Contains("bytes from its data, 1048576 needed"));
  CHECK_THAT(dev->buffer_problem(input.data(), 4), Contains("its data is not CUDA device memory"));
  void* context = nullptr;
  void* queue = reinterpret_cast<void*>(0x1);
  dev->native_handles(&context, &queue);
  CHECK(context != nullptr);
  CHECK(queue == nullptr);
  dev->free(a);
  dev->free(b);

  auto module = dev->load_module({{DeviceImage::kPTX, 80, kPTX}});
  CHECK(run(*dev, *module, "add_one", dims_1d(4, 256), input) == add_one_reference(input));
  CHECK(run(*dev, *module, "reverse_dynamic", dims_1d(4, 256, 64 * 1024), input) ==
        reverse_tiles_reference(input, 256));
  void* c = dev->alloc(4);
  CHECK_THROWS_WITH(module->launch("no_such_kernel", dims_1d(1, 1), {c, c}),
                    Contains("cuModuleGetFunction(\"no_such_kernel\") failed with 500"));
  dev->free(c);

  // A cubin of another major version never runs; without PTX the module is refused.
  int other = dev->sm() / 10 == 8 ? 90 : 80;
  CHECK_THROWS_WITH(dev->load_module({{DeviceImage::kCubin, other, "not loaded"}}),
                    Contains("(sm_" + std::to_string(dev->sm()) + "): it carries cubin sm_" + std::to_string(other)));
}

TEST_CASE("device: select_cuda_image prefers the device's cubin, then PTX", "[device]") {
  using I = DeviceImage;
  std::vector<DeviceImage> images = {{I::kCubin, 80, ""}, {I::kCubin, 90, ""}, {I::kPTX, 90, ""}};
  CHECK(select_cuda_image(images, 90) == 1);
  CHECK(select_cuda_image(images, 80) == 0);
  // sm_80 machine code runs on sm_86 and sm_89 (same major version), never on sm_90.
  CHECK(select_cuda_image(images, 86) == 0);
  CHECK(select_cuda_image(images, 89) == 0);
  // Newer GPUs JIT-compile the PTX.
  CHECK(select_cuda_image(images, 100) == 2);
  CHECK(select_cuda_image(images, 120) == 2);
  // Too old for everything carried.
  CHECK(select_cuda_image(images, 75) == -1);
}

TEST_CASE("device: select_cuda_image without a fitting image", "[device]") {
  using I = DeviceImage;
  // A cubin for sm_80 only, on an sm_90 device: PTX if carried, else nothing.
  CHECK(select_cuda_image({{I::kCubin, 80, ""}}, 90) == -1);
  CHECK(select_cuda_image({{I::kCubin, 80, ""}, {I::kPTX, 80, ""}}, 90) == 1);
  // PTX newer than the device never runs; of several, the newest that fits.
  CHECK(select_cuda_image({{I::kPTX, 100, ""}}, 90) == -1);
  CHECK(select_cuda_image({{I::kPTX, 75, ""}, {I::kPTX, 90, ""}, {I::kPTX, 80, ""}}, 90) == 1);
  // OpenCL C is not a CUDA image.
  CHECK(select_cuda_image({{I::kOpenCLSource, 0, ""}}, 90) == -1);
  CHECK(select_cuda_image({}, 90) == -1);
}
