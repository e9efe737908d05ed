// The CUDA backend of the device layer: the driver API (libcuda.so.1), loaded with dlopen.
// The few types, constants and signatures used are declared here, not taken from cuda.h, so that
// kiln builds and runs without the toolkit; they are the driver's stable ABI. Sizes and counts
// are the versioned entry points (cuMemAlloc_v2, ...): the unversioned symbols are the 32-bit
// era ABI that cuda.h's macros rename away.
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

#include "device_internal.h"

namespace kiln::runtime {
namespace device {
namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;

constexpr int kAttrComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_*
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr int kFuncAttrMaxDynamicSharedBytes = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
constexpr int kJitErrorLogBuffer = 5;              // CU_JIT_ERROR_LOG_BUFFER
constexpr int kJitErrorLogBufferBytes = 6;         // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
constexpr CUresult kErrorStubLibrary = 34;         // CUDA_ERROR_STUB_LIBRARY
// Without an opt-in, a kernel may use at most 48 KiB of dynamic shared memory.
constexpr uint32_t kDefaultMaxDynamicShared = 48 * 1024;

// The driver functions used: name, then parameter types (all return CUresult).
#define KILN_CUDA_FUNCTIONS(X)                                                                  \
  X(cuInit, unsigned)                                                                           \
  X(cuGetErrorName, CUresult, const char**)                                                     \
  X(cuDriverGetVersion, int*)                                                                   \
  X(cuDeviceGetCount, int*)                                                                     \
  X(cuDeviceGet, CUdevice*, int)                                                                \
  X(cuDeviceGetName, char*, int, CUdevice)                                                      \
  X(cuDeviceGetAttribute, int*, int, CUdevice)                                                  \
  X(cuDevicePrimaryCtxRetain, CUcontext*, CUdevice)                                             \
  X(cuDevicePrimaryCtxRelease_v2, CUdevice)                                                     \
  X(cuCtxSetCurrent, CUcontext)                                                                 \
  X(cuCtxSynchronize, void)                                                                     \
  X(cuMemAlloc_v2, CUdeviceptr*, size_t)                                                        \
  X(cuMemFree_v2, CUdeviceptr)                                                                  \
  X(cuMemcpyHtoD_v2, CUdeviceptr, const void*, size_t)                                          \
  X(cuMemcpyDtoH_v2, void*, CUdeviceptr, size_t)                                                \
  X(cuMemcpyDtoD_v2, CUdeviceptr, CUdeviceptr, size_t)                                          \
  X(cuMemGetAddressRange_v2, CUdeviceptr*, size_t*, CUdeviceptr)                                \
  X(cuModuleLoadDataEx, CUmodule*, const void*, unsigned, int*, void**)                         \
  X(cuModuleUnload, CUmodule)                                                                   \
  X(cuModuleGetFunction, CUfunction*, CUmodule, const char*)                                    \
  X(cuFuncSetAttribute, CUfunction, int, int)                                                   \
  X(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, \
    CUstream, void**, void**)

// The codes worth a sentence (docs/gpu.md, "Artifact and runtime"), with their names: the stub library cannot name its own.
struct KnownError {
  CUresult code;
  const char* name;
  const char* sentence;
};
constexpr KnownError kKnownErrors[] = {
    {34, "CUDA_ERROR_STUB_LIBRARY", "the toolkit's stub libcuda, not a driver"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA GPU is visible to this process"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "the image is not for this GPU"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "PTX newer than the driver: update the driver"},
};

// The loaded driver, the device and its primary context: shared by the DeviceAPI and its
// modules, so that a module may outlive the DeviceAPI. The library is never unloaded: the driver
// keeps threads and process-wide state, and no CUDA program unloads it.
struct CudaDriver {
  std::string path;
#define KILN_DECLARE(name, ...) CUresult (*name)(__VA_ARGS__) = nullptr;
  KILN_CUDA_FUNCTIONS(KILN_DECLARE)
#undef KILN_DECLARE
  CUdevice device = 0;
  CUcontext context = nullptr;

  ~CudaDriver() {
    if (context) cuDevicePrimaryCtxRelease_v2(device);
  }

  // "cuMemAlloc_v2 failed with 2 (CUDA_ERROR_OUT_OF_MEMORY)".
  std::string error_text(CUresult result, const std::string& call) const {
    const char* name = nullptr;
    if (cuGetErrorName(result, &name) != 0) name = nullptr;
    const char* sentence = nullptr;
    for (const KnownError& known : kKnownErrors)
      if (known.code == result) {
        if (!name) name = known.name;
        sentence = known.sentence;
      }
    std::ostringstream os;
    os << call << " failed with " << result << " (" << (name ? name : "unknown error");
    if (sentence) os << ": " << sentence;
    os << ")";
    return os.str();
  }
  void check(CUresult result, const std::string& call) const {
    if (result != 0) KILN_THROW() << error_text(result, call);
  }

  // The primary context is current per thread; the runtime calls from many threads, and making
  // it current is a thread-local store in the driver.
  void bind() const { check(cuCtxSetCurrent(context), "cuCtxSetCurrent"); }
};

#define KILN_CU(d, fn, ...) (d).check((d).fn(__VA_ARGS__), #fn)

CUdeviceptr device_ptr(const void* buf) { return reinterpret_cast<CUdeviceptr>(buf); }

class CudaModule final : public DeviceModule {
 public:
  CudaModule(std::shared_ptr<const CudaDriver> driver, CUmodule module) : d_(std::move(driver)), module_(module) {}
  ~CudaModule() override {
    if (d_->cuCtxSetCurrent(d_->context) == 0) d_->cuModuleUnload(module_);
  }

  void launch(const std::string& name, const LaunchDims& dims, const std::vector<void*>& buffers) override {
    check_launch_dims(name, dims);
    d_->bind();
    CUfunction function = kernel(name, dims.dynamic_shared_bytes);
    // cuLaunchKernel takes a pointer to each argument's value, here each CUdeviceptr.
    std::vector<CUdeviceptr> pointers(buffers.size());
    std::vector<void*> args(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      pointers[i] = device_ptr(buffers[i]);
      args[i] = &pointers[i];
    }
    d_->check(d_->cuLaunchKernel(function, dims.grid[0], dims.grid[1], dims.grid[2], dims.block[0], dims.block[1],
                                 dims.block[2], dims.dynamic_shared_bytes, nullptr, args.data(), nullptr),
              "cuLaunchKernel(\"" + name + "\")");
  }

 private:
  struct Kernel {
    CUfunction function = nullptr;
    uint32_t max_dynamic_shared = kDefaultMaxDynamicShared;  // what the kernel is opted in to
  };

  // The kernel, looked up once, and opted in to `dynamic_shared` bytes when above the default.
  CUfunction kernel(const std::string& name, uint32_t dynamic_shared) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = kernels_.find(name);
    if (it == kernels_.end()) {
      Kernel k;
      d_->check(d_->cuModuleGetFunction(&k.function, module_, name.c_str()), "cuModuleGetFunction(\"" + name + "\")");
      it = kernels_.emplace(name, k).first;
    }
    Kernel& k = it->second;
    if (dynamic_shared > k.max_dynamic_shared) {
      d_->check(d_->cuFuncSetAttribute(k.function, kFuncAttrMaxDynamicSharedBytes, static_cast<int>(dynamic_shared)),
                "cuFuncSetAttribute(\"" + name + "\", MAX_DYNAMIC_SHARED_SIZE_BYTES, " +
                    std::to_string(dynamic_shared) + ")");
      k.max_dynamic_shared = dynamic_shared;
    }
    return k.function;
  }

  std::shared_ptr<const CudaDriver> d_;
  CUmodule module_;
  std::mutex mutex_;
  std::map<std::string, Kernel> kernels_;
};

class CudaDevice final : public DeviceAPI {
 public:
  CudaDevice(std::shared_ptr<const CudaDriver> driver, std::string name, int sm, int driver_version)
      : d_(std::move(driver)), name_(std::move(name)), sm_(sm), driver_version_(driver_version) {}

  std::string description() const override {
    // cuDriverGetVersion answers 1000*major + 10*minor.
    return name_ + " (sm_" + std::to_string(sm_) + "), driver " + std::to_string(driver_version_ / 1000) + "." +
           std::to_string(driver_version_ % 1000 / 10);
  }
  int sm() const override { return sm_; }

  void* alloc(size_t bytes) override {
    d_->bind();
    CUdeviceptr ptr = 0;
    // Both drivers refuse 0 bytes; a tensor with no elements still needs a valid handle.
    KILN_CU(*d_, cuMemAlloc_v2, &ptr, bytes ? bytes : 1);
    return reinterpret_cast<void*>(ptr);
  }
  void free(void* buf) override {
    if (!buf) return;
    d_->bind();
    KILN_CU(*d_, cuMemFree_v2, device_ptr(buf));
  }
  void copy_to_device(void* dst, const void* src, size_t bytes, size_t dst_offset) override {
    d_->bind();
    KILN_CU(*d_, cuMemcpyHtoD_v2, device_ptr(dst) + dst_offset, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes, size_t src_offset) override {
    d_->bind();
    KILN_CU(*d_, cuMemcpyDtoH_v2, dst, device_ptr(src) + src_offset, bytes);
  }
  void copy_device_to_device(void* dst, const void* src, size_t bytes, size_t dst_offset, size_t src_offset) override {
    d_->bind();
    KILN_CU(*d_, cuMemcpyDtoD_v2, device_ptr(dst) + dst_offset, device_ptr(src) + src_offset, bytes);
  }

  // The allocation around the pointer (any context's, with unified addressing) must hold the bytes.
  std::string buffer_problem(const void* buf, size_t bytes) override {
    d_->bind();
    CUdeviceptr base = 0;
    size_t size = 0;
    if (CUresult result = d_->cuMemGetAddressRange_v2(&base, &size, device_ptr(buf)))
      return "its data is not CUDA device memory (" + d_->error_text(result, "cuMemGetAddressRange_v2") + ")";
    size_t left = base + size - device_ptr(buf);
    if (left < bytes)
      return "its allocation holds " + std::to_string(left) + " bytes from its data, " + std::to_string(bytes) + " needed";
    return "";
  }
  void native_handles(void** context, void** queue) const override {
    *context = d_->context;
    *queue = nullptr;
  }

  std::unique_ptr<DeviceModule> load_module(const std::vector<DeviceImage>& images) override {
    int index = select_cuda_image(images, sm_);
    KILN_USER_CHECK(index >= 0) << "no image of the module runs on " << name_ << " (sm_" << sm_
                                << "): it carries " << describe_images(images);
    const DeviceImage& image = images[index];
    d_->bind();
    // The JIT's error log says what is wrong with PTX the driver refuses.
    std::string log(8192, '\0');
    int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferBytes};
    void* values[] = {&log[0], reinterpret_cast<void*>(log.size())};
    CUmodule module = nullptr;
    CUresult result = d_->cuModuleLoadDataEx(&module, image.bytes.c_str(), 2, options, values);
    if (result != 0) {
      log.resize(log.find('\0'));
      KILN_THROW() << d_->error_text(result, std::string("cuModuleLoadDataEx(") +
                                                 (image.format == DeviceImage::kCubin ? "cubin" : "PTX") + " sm_" +
                                                 std::to_string(image.sm) + " on " + name_ + ")")
                   << (log.empty() ? "" : "; JIT log:\n" + log);
    }
    return std::make_unique<CudaModule>(d_, module);
  }

  void synchronize() override {
    d_->bind();
    KILN_CU(*d_, cuCtxSynchronize);
  }

 private:
  std::shared_ptr<const CudaDriver> d_;
  std::string name_;
  int sm_, driver_version_;
};

}  // namespace

std::unique_ptr<DeviceAPI> open_cuda(int ordinal) {
  auto d = std::make_shared<CudaDriver>();
  const char* env = std::getenv("KILN_CUDA_DRIVER");
  d->path = env && *env ? env : "libcuda.so.1";
  void* lib = dlopen(d->path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    KILN_THROW() << "needs a CUDA driver: " << d->path << " not found (" << (why ? why : "dlopen failed") << ")"
                 << (env && *env ? ", the file KILN_CUDA_DRIVER names" : "");
  }
  // A library that is not a driver (the toolkit's stub) is unloaded again: its soname is
  // libcuda.so.1, so while loaded it would answer every later dlopen("libcuda.so.1"). A real
  // driver stays loaded even when cuInit fails, as CudaDriver says.
  try {
#define KILN_RESOLVE(name, ...) resolve(lib, d->path, #name, d->name);
    KILN_CUDA_FUNCTIONS(KILN_RESOLVE)
#undef KILN_RESOLVE
  } catch (const kiln::Error&) {
    dlclose(lib);
    throw;
  }
  if (CUresult result = d->cuInit(0)) {
    std::string text = d->error_text(result, "cuInit");
    if (result == kErrorStubLibrary) dlclose(lib);
    KILN_THROW() << text;
  }
  int count = 0;
  KILN_CU(*d, cuDeviceGetCount, &count);
  KILN_USER_CHECK(ordinal < count) << "CUDA device " << ordinal << " requested, " << count << " present";
  KILN_CU(*d, cuDeviceGet, &d->device, ordinal);
  char name[256] = {};
  KILN_CU(*d, cuDeviceGetName, name, sizeof(name) - 1, d->device);
  int major = 0, minor = 0, version = 0;
  KILN_CU(*d, cuDeviceGetAttribute, &major, kAttrComputeCapabilityMajor, d->device);
  KILN_CU(*d, cuDeviceGetAttribute, &minor, kAttrComputeCapabilityMinor, d->device);
  KILN_CU(*d, cuDriverGetVersion, &version);
  KILN_CU(*d, cuDevicePrimaryCtxRetain, &d->context, d->device);
  return std::make_unique<CudaDevice>(std::move(d), name, major * 10 + minor, version);
}

}  // namespace device

int select_cuda_image(const std::vector<DeviceImage>& images, int device_sm) {
  int cubin = -1, ptx = -1;
  for (int i = 0; i < static_cast<int>(images.size()); ++i) {
    const DeviceImage& image = images[i];
    if (image.sm > device_sm) continue;
    if (image.format == DeviceImage::kCubin && image.sm / 10 == device_sm / 10 &&
        (cubin < 0 || image.sm > images[cubin].sm))
      cubin = i;
    if (image.format == DeviceImage::kPTX && (ptx < 0 || image.sm > images[ptx].sm)) ptx = i;
  }
  return cubin >= 0 ? cubin : ptx;
}

}  // namespace kiln::runtime
