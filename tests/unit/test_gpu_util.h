// Running a GpuModule's programs on the OpenCL device (PoCL on CPUs) with host arrays: the
// numerical check of GPU schedules on machines without a GPU.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/codegen/gpu_build.h"
#include "kiln/runtime/device_api.h"
#include "kiln/runtime/ndarray.h"
#include "kiln/support/error.h"

namespace kiln::test {

// The OpenCL device, opened once; null (and `why` set) when this machine has none.
inline runtime::DeviceAPI* opencl_device(std::string* why) {
  static std::string error;
  static std::unique_ptr<runtime::DeviceAPI> dev = [] {
    try {
      return runtime::open_device(runtime::DeviceKind::kOpenCL);
    } catch (const Error& e) {
      error = e.what();
      return std::unique_ptr<runtime::DeviceAPI>();
    }
  }();
  if (why) *why = error;
  return dev.get();
}

// Runs program `index` of `m` (an opencl module) on `dev`: every argument copied in, the
// launches in order with device workspace buffers, every argument copied back.
inline void run_on_device(runtime::DeviceAPI& dev, const codegen::GpuModule& m, std::vector<runtime::NDArray>& args,
                          size_t index = 0) {
  const ir::DeviceProgram& p = m.programs.at(index);
  KILN_CHECK(args.size() == p.params.size()) << "run_on_device: " << args.size() << " arrays for "
                                             << p.params.size() << " parameters";
  runtime::DeviceImage image;
  image.format = runtime::DeviceImage::kOpenCLSource;
  image.bytes = m.source;
  std::unique_ptr<runtime::DeviceModule> mod = dev.load_module({image});
  std::vector<void*> bufs;
  std::vector<size_t> sizes;
  for (runtime::NDArray& a : args) {
    sizes.push_back(a.nbytes());
    bufs.push_back(dev.alloc(sizes.back()));
    dev.copy_to_device(bufs.back(), a.dltensor()->data, sizes.back());
  }
  for (const ir::Buffer& w : p.workspace) {
    int64_t n = w->dtype.bytes();
    for (const ir::Expr& d : w->shape) n *= *ir::as_const_int(d);
    bufs.push_back(dev.alloc(static_cast<size_t>(n)));
  }
  for (const ir::KernelLaunch& l : p.launches) {
    runtime::LaunchDims dims;
    for (int i = 0; i < 3; ++i) {
      dims.grid[i] = static_cast<uint32_t>(l.grid[i]);
      dims.block[i] = static_cast<uint32_t>(l.block[i]);
    }
    std::vector<void*> kargs;
    for (int a : l.args) kargs.push_back(bufs[a]);
    mod->launch(l.kernel, dims, kargs);
  }
  dev.synchronize();
  for (size_t i = 0; i < args.size(); ++i) dev.copy_to_host(args[i].dltensor()->data, bufs[i], sizes[i]);
  for (void* b : bufs) dev.free(b);
}

}  // namespace kiln::test
