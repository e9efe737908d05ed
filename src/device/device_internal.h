// What the two backends of the device layer share: their entry points, the resolution of
// driver symbols, and the checks and messages common to both.
#pragma once

#include <dlfcn.h>

#include <memory>
#include <string>
#include <vector>

#include "device_api.h"
#include "kiln/support/error.h"

namespace kiln::runtime::device {

std::unique_ptr<DeviceAPI> open_cuda(int ordinal);
std::unique_ptr<DeviceAPI> open_opencl(int ordinal);

// Points `fn` at the driver's function `name`. A driver without it is too old (or not a driver),
// which deserves its own message rather than a crash at the first call.
template <typename Fn>
void resolve(void* lib, const std::string& lib_name, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  KILN_USER_CHECK(fn != nullptr) << lib_name << " has no function " << name << ": not a driver, or one too old";
}

// "cubin sm_80, cubin sm_90, PTX sm_90": what a module carries, for the messages that refuse it.
std::string describe_images(const std::vector<DeviceImage>& images);

// A launch with an empty dimension is a caller's bug that both drivers would report obscurely.
void check_launch_dims(const std::string& kernel, const LaunchDims& dims);

// The caller's DLPack tensors (device_tensors.cc). Whether `t` is in host memory.
bool is_host(const DLTensor& t);
// Checks `t` against `dtype` and `shape` (rank `ndim`): compact, in host memory or on `device`
// in a buffer of `dev` that holds it. Throws kiln::Error "<what>: <what is wrong>"; returns its
// bytes.
size_t check_tensor(const std::string& what, const DLTensor& t, DLDataType dtype, const int64_t* shape, int ndim,
                    DLDevice device, DeviceAPI& dev);
// kiln_module_device_copy: `from` into `to`, each in host memory or on `device`, not both in host
// memory; finished when it returns.
void copy_tensor(const DLTensor& from, const DLTensor& to, DLDevice device, DeviceAPI& dev);

}  // namespace kiln::runtime::device
