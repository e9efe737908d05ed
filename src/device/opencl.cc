// The OpenCL backend of the device layer: the ICD loader (libOpenCL.so.1) loaded at run time,
// the OpenCL 1.2 API (enough for every driver, PoCL 3.1 included). The few types and constants
// used are declared here, not taken from CL/cl.h, so that kiln builds without OpenCL headers.
#include <link.h>

#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "device_internal.h"

namespace kiln::runtime {
namespace device {
namespace {

using cl_int = int32_t;
using cl_uint = uint32_t;
using cl_bitfield = uint64_t;
using cl_platform_id = struct _cl_platform_id*;
using cl_device_id = struct _cl_device_id*;
using cl_context = struct _cl_context*;
using cl_command_queue = struct _cl_command_queue*;
using cl_mem = struct _cl_mem*;
using cl_program = struct _cl_program*;
using cl_kernel = struct _cl_kernel*;

constexpr cl_bitfield kDeviceTypeAll = 0xFFFFFFFF;
constexpr cl_bitfield kMemReadWrite = 1;
constexpr cl_uint kTrue = 1;
constexpr cl_uint kPlatformName = 0x0902;
constexpr cl_uint kDeviceName = 0x102B;
constexpr cl_uint kDeviceVersion = 0x102F;
constexpr cl_uint kProgramBuildLog = 0x1183;
constexpr cl_uint kMemSize = 0x1102;
constexpr cl_uint kMemContext = 0x1106;

// The functions used: return type, name, parameter types. Callbacks and events are never
// passed, so their pointer parameters are declared as void*.
#define KILN_OPENCL_FUNCTIONS(X)                                                                         \
  X(cl_int, clGetPlatformIDs, cl_uint, cl_platform_id*, cl_uint*)                                        \
  X(cl_int, clGetPlatformInfo, cl_platform_id, cl_uint, size_t, void*, size_t*)                          \
  X(cl_int, clGetDeviceIDs, cl_platform_id, cl_bitfield, cl_uint, cl_device_id*, cl_uint*)               \
  X(cl_int, clGetDeviceInfo, cl_device_id, cl_uint, size_t, void*, size_t*)                              \
  X(cl_context, clCreateContext, const intptr_t*, cl_uint, const cl_device_id*, void*, void*, cl_int*)   \
  X(cl_command_queue, clCreateCommandQueue, cl_context, cl_device_id, cl_bitfield, cl_int*)              \
  X(cl_mem, clCreateBuffer, cl_context, cl_bitfield, size_t, void*, cl_int*)                             \
  X(cl_int, clEnqueueWriteBuffer, cl_command_queue, cl_mem, cl_uint, size_t, size_t, const void*,        \
    cl_uint, const void*, void*)                                                                         \
  X(cl_int, clEnqueueReadBuffer, cl_command_queue, cl_mem, cl_uint, size_t, size_t, void*, cl_uint,      \
    const void*, void*)                                                                                  \
  X(cl_int, clEnqueueCopyBuffer, cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint,      \
    const void*, void*)                                                                                  \
  X(cl_program, clCreateProgramWithSource, cl_context, cl_uint, const char**, const size_t*, cl_int*)    \
  X(cl_int, clBuildProgram, cl_program, cl_uint, const cl_device_id*, const char*, void*, void*)         \
  X(cl_int, clGetProgramBuildInfo, cl_program, cl_device_id, cl_uint, size_t, void*, size_t*)            \
  X(cl_int, clGetMemObjectInfo, cl_mem, cl_uint, size_t, void*, size_t*)                                 \
  X(cl_kernel, clCreateKernel, cl_program, const char*, cl_int*)                                         \
  X(cl_int, clSetKernelArg, cl_kernel, cl_uint, size_t, const void*)                                     \
  X(cl_int, clEnqueueNDRangeKernel, cl_command_queue, cl_kernel, cl_uint, const size_t*, const size_t*,  \
    const size_t*, cl_uint, const void*, void*)                                                          \
  X(cl_int, clFinish, cl_command_queue)                                                                  \
  X(cl_int, clReleaseMemObject, cl_mem)                                                                  \
  X(cl_int, clReleaseKernel, cl_kernel)                                                                  \
  X(cl_int, clReleaseProgram, cl_program)                                                                \
  X(cl_int, clReleaseCommandQueue, cl_command_queue)                                                     \
  X(cl_int, clReleaseContext, cl_context)

// Names of the codes a driver commonly returns (OpenCL has no call that names them).
constexpr std::pair<cl_int, const char*> kErrorNames[] = {
    {-1, "CL_DEVICE_NOT_FOUND"},           {-2, "CL_DEVICE_NOT_AVAILABLE"},
    {-3, "CL_COMPILER_NOT_AVAILABLE"},     {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
    {-5, "CL_OUT_OF_RESOURCES"},           {-6, "CL_OUT_OF_HOST_MEMORY"},
    {-11, "CL_BUILD_PROGRAM_FAILURE"},     {-30, "CL_INVALID_VALUE"},
    {-33, "CL_INVALID_DEVICE"},            {-34, "CL_INVALID_CONTEXT"},
    {-36, "CL_INVALID_COMMAND_QUEUE"},     {-38, "CL_INVALID_MEM_OBJECT"},
    {-44, "CL_INVALID_PROGRAM"},           {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
    {-46, "CL_INVALID_KERNEL_NAME"},       {-48, "CL_INVALID_KERNEL"},
    {-49, "CL_INVALID_ARG_INDEX"},         {-50, "CL_INVALID_ARG_VALUE"},
    {-51, "CL_INVALID_ARG_SIZE"},          {-52, "CL_INVALID_KERNEL_ARGS"},
    {-54, "CL_INVALID_WORK_GROUP_SIZE"},   {-55, "CL_INVALID_WORK_ITEM_SIZE"},
    {-61, "CL_INVALID_BUFFER_SIZE"},       {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
};
const char* error_name(cl_int code) {
  for (const auto& [value, name] : kErrorNames)
    if (value == code) return name;
  return "unknown error";
}

void check(cl_int code, const std::string& call) {
  KILN_USER_CHECK(code == 0) << call << " failed with " << code << " (" << error_name(code) << ")";
}

// Whether the process holds an LLVM library (the compiler's), found among the loaded objects.
bool process_holds_llvm() {
  bool found = false;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* found) {
        bool llvm = info->dlpi_name && strstr(info->dlpi_name, "libLLVM");
        if (llvm) *static_cast<bool*>(found) = true;
        return llvm ? 1 : 0;
      },
      &found);
  return found;
}

// The ICD loader, loaded once per process and never unloaded (drivers keep threads).
// Where the process holds an LLVM, the loader goes into a link-map namespace of its own, so that
// the driver it loads (PoCL and its LLVM) cannot bind to the process's LLVM: PoCL crashed in the
// compiler's process without this (docs/gpu.md, "Toolkit facts"). Elsewhere (the runtime) a plain dlopen: in a
// namespace of its own, NVIDIA's OpenCL driver loads a second libcuda, and the CUDA backend's
// copy then crashed in cuMemAlloc (H200, driver 580). So a process that holds LLVM should not
// open both OpenCL and CUDA on a machine with NVIDIA's OpenCL driver.
void* opencl_library() {
  static std::mutex mutex;
  static void* lib = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (!lib) {
#ifdef LM_ID_NEWLM  // glibc
    const bool own_namespace = process_holds_llvm();
#ifdef KILN_SANITIZE_THREAD
    // TSan cannot follow a second namespace: the driver's threads start through that
    // namespace's libc, unseen by TSan, and the loader allocates their thread-local storage
    // through TSan's malloc, which crashed on a thread it did not know (PoCL's kernel-cache
    // thread, in __tls_get_addr). A clear refusal instead of that crash.
    if (own_namespace)
      KILN_THROW() << "an OpenCL device in a process that holds LLVM (the compiler's) is not available in a "
                      "ThreadSanitizer build: the driver goes into a link-map namespace of its own, whose threads "
                      "TSan cannot see (docs/reliability.md, \"Sanitizers\"); kiln-runner runs OpenCL modules there";
#endif
    // The dynamic loader is one for every namespace, and it allocates with the first
    // namespace's malloc. The driver's threads are created by the second namespace's libc, so
    // the first one still believes the process single-threaded and takes its malloc's lock-free
    // path: a driver thread's dlopen (PoCL loading a cached kernel) then raced the main thread's
    // allocations and corrupted the heap (`kiln run` of gpt2_tiny on PoCL aborted in 4 of 10
    // runs; never under valgrind, whose one malloc serves both). One thread started through
    // the first libc marks it multi-threaded for good.
    if (own_namespace) std::thread([] {}).join();
    lib = own_namespace ? dlmopen(LM_ID_NEWLM, "libOpenCL.so.1", RTLD_NOW)
                        : dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
#else
    lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
#endif
    if (!lib) {
      const char* why = dlerror();
      KILN_THROW() << "needs an OpenCL driver: libOpenCL.so.1 not found (" << (why ? why : "dlopen failed") << ")";
    }
  }
  return lib;
}

// The loaded API, the device, its context and its one in-order queue: shared by the DeviceAPI
// and its modules, so that a module may outlive the DeviceAPI.
struct OpenCL {
#define KILN_DECLARE(ret, name, ...) ret (*name)(__VA_ARGS__) = nullptr;
  KILN_OPENCL_FUNCTIONS(KILN_DECLARE)
#undef KILN_DECLARE
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;

  ~OpenCL() {
    if (queue) clReleaseCommandQueue(queue);
    if (context) clReleaseContext(context);
  }
};

#define KILN_CL(d, fn, ...) check((d).fn(__VA_ARGS__), #fn)

cl_mem mem(const void* buf) { return static_cast<cl_mem>(const_cast<void*>(buf)); }

class OpenCLModule final : public DeviceModule {
 public:
  OpenCLModule(std::shared_ptr<const OpenCL> cl, cl_program program) : cl_(std::move(cl)), program_(program) {}
  ~OpenCLModule() override {
    for (auto& [name, kernel] : kernels_) cl_->clReleaseKernel(kernel);
    cl_->clReleaseProgram(program_);
  }

  void launch(const std::string& name, const LaunchDims& dims, const std::vector<void*>& buffers) override {
    check_launch_dims(name, dims);
    // A kernel's arguments are state of the kernel object: one launch at a time sets them.
    std::lock_guard<std::mutex> lock(mutex_);
    cl_kernel kernel = this->kernel(name);
    const std::string where = "(\"" + name + "\")";
    cl_uint index = 0;
    for (void* buf : buffers) {
      cl_mem m = mem(buf);
      check(cl_->clSetKernelArg(kernel, index++, sizeof(cl_mem), &m), "clSetKernelArg" + where);
    }
    // Dynamic shared memory: the trailing __local argument (device_api.h, LaunchDims).
    if (dims.dynamic_shared_bytes > 0)
      check(cl_->clSetKernelArg(kernel, index, dims.dynamic_shared_bytes, nullptr), "clSetKernelArg" + where);
    size_t global[3], local[3];
    for (int i = 0; i < 3; ++i) {
      global[i] = size_t{dims.grid[i]} * dims.block[i];
      local[i] = dims.block[i];
    }
    check(cl_->clEnqueueNDRangeKernel(cl_->queue, kernel, 3, nullptr, global, local, 0, nullptr, nullptr),
          "clEnqueueNDRangeKernel" + where);
  }

 private:
  cl_kernel kernel(const std::string& name) {
    auto it = kernels_.find(name);
    if (it != kernels_.end()) return it->second;
    cl_int err = 0;
    cl_kernel kernel = cl_->clCreateKernel(program_, name.c_str(), &err);
    check(err, "clCreateKernel(\"" + name + "\")");
    return kernels_[name] = kernel;
  }

  std::shared_ptr<const OpenCL> cl_;
  cl_program program_;
  std::mutex mutex_;
  std::map<std::string, cl_kernel> kernels_;
};

class OpenCLDevice final : public DeviceAPI {
 public:
  OpenCLDevice(std::shared_ptr<const OpenCL> cl, std::string description)
      : cl_(std::move(cl)), description_(std::move(description)) {}

  std::string description() const override { return description_; }
  int sm() const override { return 0; }

  void* alloc(size_t bytes) override {
    cl_int err = 0;
    // Both drivers refuse 0 bytes; a tensor with no elements still needs a valid handle.
    cl_mem m = cl_->clCreateBuffer(cl_->context, kMemReadWrite, bytes ? bytes : 1, nullptr, &err);
    check(err, "clCreateBuffer(" + std::to_string(bytes) + " bytes)");
    return m;
  }
  void free(void* buf) override {
    if (buf) KILN_CL(*cl_, clReleaseMemObject, mem(buf));
  }
  // Zero-byte copies are skipped: OpenCL calls them invalid.
  void copy_to_device(void* dst, const void* src, size_t bytes, size_t dst_offset) override {
    if (bytes)
      KILN_CL(*cl_, clEnqueueWriteBuffer, cl_->queue, mem(dst), kTrue, dst_offset, bytes, src, 0, nullptr, nullptr);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes, size_t src_offset) override {
    if (bytes)
      KILN_CL(*cl_, clEnqueueReadBuffer, cl_->queue, mem(src), kTrue, src_offset, bytes, dst, 0, nullptr, nullptr);
  }
  void copy_device_to_device(void* dst, const void* src, size_t bytes, size_t dst_offset, size_t src_offset) override {
    if (bytes)
      KILN_CL(*cl_, clEnqueueCopyBuffer, cl_->queue, mem(src), mem(dst), src_offset, dst_offset, bytes, 0, nullptr,
              nullptr);
  }

  // A pointer that is no cl_mem at all cannot be told apart safely: the loader dereferences it.
  std::string buffer_problem(const void* buf, size_t bytes) override {
    cl_context context = nullptr;
    cl_int err = buf ? cl_->clGetMemObjectInfo(mem(buf), kMemContext, sizeof context, &context, nullptr) : -38;
    if (err != 0) return "its data is not a cl_mem (clGetMemObjectInfo: " + std::to_string(err) + ", " + error_name(err) + ")";
    if (context != cl_->context)
      return "its cl_mem belongs to another OpenCL context than the module's (allocate it with "
             "kiln_module_device_alloc, or in the context kiln_module_device_info gives)";
    size_t size = 0;
    KILN_CL(*cl_, clGetMemObjectInfo, mem(buf), kMemSize, sizeof size, &size, nullptr);
    if (size < bytes) return "its cl_mem holds " + std::to_string(size) + " bytes, " + std::to_string(bytes) + " needed";
    return "";
  }
  void native_handles(void** context, void** queue) const override {
    *context = cl_->context;
    *queue = cl_->queue;
  }

  std::unique_ptr<DeviceModule> load_module(const std::vector<DeviceImage>& images) override {
    const DeviceImage* source = nullptr;
    for (const DeviceImage& image : images)
      if (image.format == DeviceImage::kOpenCLSource) source = &image;
    KILN_USER_CHECK(source) << "no image of the module runs on " << description_ << ": it carries "
                            << describe_images(images);
    cl_int err = 0;
    const char* text = source->bytes.c_str();
    size_t length = source->bytes.size();
    cl_program program = cl_->clCreateProgramWithSource(cl_->context, 1, &text, &length, &err);
    check(err, "clCreateProgramWithSource");
    err = cl_->clBuildProgram(program, 1, &cl_->device, "", nullptr, nullptr);
    if (err != 0) {
      std::string log = build_log(program);
      cl_->clReleaseProgram(program);
      KILN_THROW() << "OpenCL C build failed on " << description_ << ": clBuildProgram failed with " << err << " ("
                   << error_name(err) << "), build log:\n"
                   << log;
    }
    return std::make_unique<OpenCLModule>(cl_, program);
  }

  void synchronize() override { KILN_CL(*cl_, clFinish, cl_->queue); }

 private:
  std::string build_log(cl_program program) const {
    size_t size = 0;
    if (cl_->clGetProgramBuildInfo(program, cl_->device, kProgramBuildLog, 0, nullptr, &size) != 0 || size == 0)
      return "(no log)";
    std::string log(size, '\0');
    cl_->clGetProgramBuildInfo(program, cl_->device, kProgramBuildLog, size, &log[0], nullptr);
    log.resize(strlen(log.c_str()));
    return log;
  }

  std::shared_ptr<const OpenCL> cl_;
  std::string description_;
};

// A string-valued clGet*Info query.
template <typename Fn, typename Object>
std::string info(Fn fn, Object object, cl_uint what) {
  char text[256] = {};
  return fn(object, what, sizeof(text) - 1, text, nullptr) == 0 ? text : "?";
}

}  // namespace

std::unique_ptr<DeviceAPI> open_opencl(int ordinal) {
  void* lib = opencl_library();
  auto cl = std::make_shared<OpenCL>();
#define KILN_RESOLVE(ret, name, ...) resolve(lib, "libOpenCL.so.1", #name, cl->name);
  KILN_OPENCL_FUNCTIONS(KILN_RESOLVE)
#undef KILN_RESOLVE
  // Devices are numbered across the platforms, in the loader's order.
  cl_uint platform_count = 0;
  cl_int err = cl->clGetPlatformIDs(0, nullptr, &platform_count);
  KILN_USER_CHECK((err == 0 || err == -1001) && platform_count > 0)
      << "no OpenCL platform: the loader found no driver (clGetPlatformIDs: " << err << ", " << error_name(err)
      << "; is an ICD such as pocl-opencl-icd installed?)";
  std::vector<cl_platform_id> platforms(platform_count);
  KILN_CL(*cl, clGetPlatformIDs, platform_count, platforms.data(), nullptr);
  cl_platform_id platform = nullptr;
  int seen = 0;
  for (cl_platform_id candidate : platforms) {
    cl_uint count = 0;
    if (cl->clGetDeviceIDs(candidate, kDeviceTypeAll, 0, nullptr, &count) != 0) continue;
    if (ordinal < seen + static_cast<int>(count)) {
      std::vector<cl_device_id> devices(count);
      KILN_CL(*cl, clGetDeviceIDs, candidate, kDeviceTypeAll, count, devices.data(), nullptr);
      cl->device = devices[ordinal - seen];
      platform = candidate;
      break;
    }
    seen += count;
  }
  KILN_USER_CHECK(platform) << "no OpenCL device " << ordinal << ": the platforms have " << seen << " device(s)";
  cl->context = cl->clCreateContext(nullptr, 1, &cl->device, nullptr, nullptr, &err);
  check(err, "clCreateContext");
  cl->queue = cl->clCreateCommandQueue(cl->context, cl->device, 0, &err);
  check(err, "clCreateCommandQueue");
  std::string description = "OpenCL: " + info(cl->clGetPlatformInfo, platform, kPlatformName) + ", " +
                            info(cl->clGetDeviceInfo, cl->device, kDeviceName) + " (" +
                            info(cl->clGetDeviceInfo, cl->device, kDeviceVersion) + ")";
  return std::make_unique<OpenCLDevice>(std::move(cl), description);
}

}  // namespace device
}  // namespace kiln::runtime
