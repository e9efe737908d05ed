// The device layer: buffers, copies, modules and kernel launches on a GPU (the CUDA driver API)
// or on any OpenCL device (PoCL on the CPU in CI), behind one small interface.
//
// It lives in its own library, libkiln_device.so, and never links a driver: libcuda.so.1 and
// libOpenCL.so.1 are loaded with dlopen / dlmopen when a device is opened, so the runtime and
// every program built with kiln load and run on machines without a GPU or an OpenCL driver, and a
// missing driver is an error message at open_device, not a loader failure at start-up.
// (docs/gpu.md, "Artifact and runtime"; TVM's runtime links libcuda: kiln's does not.)
//
// Every failure is a kiln::Error naming the driver call, its numeric code and the code's name.
// Thread safety: a DeviceAPI and its modules may be used from several threads at once (each call
// makes the device's context current in the calling thread; a module serializes its launches).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/runtime/device_graph.h"
#include "kiln/runtime/graph_plan.h"

namespace kiln::runtime {

// Launches take LaunchDims (graph_plan.h). Dynamic shared memory: on CUDA,
// `dynamic_shared_bytes` of `extern __shared__` memory (above 48 KiB the layer opts the kernel in
// with cuFuncSetAttribute). OpenCL has no dynamic shared memory, so when it is above 0 the kernel
// receives one extra, trailing `__local` pointer argument of that many bytes, after its buffers.

// A module loaded on a device: a cubin or PTX image on CUDA, an OpenCL program built from
// source. It keeps its device open: it may outlive the DeviceAPI that loaded it.
class DeviceModule {
 public:
  virtual ~DeviceModule();
  // Launches kernel `name` with these buffer arguments (handles from DeviceAPI::alloc), in
  // order. Kernels take buffers only: shapes are static, so they are constants in the code.
  // Asynchronous: ordered after earlier launches and copies of the device; synchronize() waits.
  virtual void launch(const std::string& name, const LaunchDims& dims, const std::vector<void*>& buffers) = 0;
};

enum class DeviceKind { kCUDA, kOpenCL };

class DeviceAPI {
 public:
  virtual ~DeviceAPI();
  // "NVIDIA H100 80GB HBM3 (sm_90), driver 12.8" or
  // "OpenCL: Portable Computing Language, pthread-skylake-avx512 (OpenCL 3.0 PoCL ...)".
  virtual std::string description() const = 0;
  // The CUDA compute capability, major*10+minor (90 on H100); 0 on OpenCL.
  virtual int sm() const = 0;
  // A device buffer: an opaque handle (a CUdeviceptr on CUDA, a cl_mem on OpenCL), not an
  // address the host may touch. free(nullptr) does nothing.
  virtual void* alloc(size_t bytes) = 0;
  virtual void free(void* buf) = 0;
  // Copies between host memory and buffers, `*_offset` bytes into the device buffers (a DLPack
  // tensor's byte_offset: OpenCL buffers cannot be offset like pointers). The host-side copies
  // return when the host memory may be reused / read; device-to-device copies are ordered like
  // launches.
  virtual void copy_to_device(void* dst, const void* src, size_t bytes, size_t dst_offset = 0) = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t bytes, size_t src_offset = 0) = 0;
  virtual void copy_device_to_device(void* dst, const void* src, size_t bytes, size_t dst_offset = 0,
                                     size_t src_offset = 0) = 0;
  // Why `buf` cannot hold `bytes` bytes as a buffer of this device, or empty when it can: not a
  // buffer of this device (OpenCL: a cl_mem of another context), or a smaller one. For the
  // caller's DLPack tensors, whose mistakes would otherwise be a driver's error code at best.
  virtual std::string buffer_problem(const void* buf, size_t bytes) = 0;
  // The driver's handles, for programs that share the device with kiln: OpenCL's cl_context and
  // its one in-order cl_command_queue; CUDA's primary context (CUcontext) and a null queue (the
  // legacy default stream, which every launch and copy uses).
  virtual void native_handles(void** context, void** queue) const = 0;
  // Loads the image this device can run (CUDA: select_cuda_image; OpenCL: the OpenCL C source,
  // built for the device, the build log in the error when the build fails). Throws naming the
  // device and the images carried when none fits.
  virtual std::unique_ptr<DeviceModule> load_module(const std::vector<DeviceImage>& images) = 0;
  // Waits for every launch and copy issued so far.
  virtual void synchronize() = 0;
};

// Opens device `ordinal` of this kind (OpenCL: counting the devices of every platform in order).
// Throws kiln::Error saying why when impossible: "needs a CUDA driver: libcuda.so.1 not found
// (...)", "cuInit failed with 34 (CUDA_ERROR_STUB_LIBRARY: ...)", "needs an OpenCL driver:
// libOpenCL.so.1 not found (...)", "no OpenCL platform ...".
// The environment variable KILN_CUDA_DRIVER=<path> loads that file instead of libcuda.so.1: for
// unusual driver installs, and for tests (the toolkit's stub libcuda.so).
// In a process that holds an LLVM (the compiler's), OpenCL's loader goes into a link-map
// namespace of its own (dlmopen): PoCL brings its own LLVM, which crashed there otherwise. In
// that namespace NVIDIA's OpenCL driver loads a second libcuda, which broke the CUDA backend:
// such a process should not open both kinds on a machine with NVIDIA's OpenCL driver
// (src/device/opencl.cc says more).
std::unique_ptr<DeviceAPI> open_device(DeviceKind kind, int ordinal = 0);

// The CUDA image a device of compute capability `device_sm` runs, as an index into `images`, or
// -1 when none fits: a cubin of the same major version and the highest minor not above the
// device's (machine code runs within a major version: sm_80 code on sm_86, never on sm_90),
// else the newest PTX not newer than the device (the driver JIT-compiles it).
int select_cuda_image(const std::vector<DeviceImage>& images, int device_sm);

}  // namespace kiln::runtime
