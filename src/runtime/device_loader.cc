// load_device_graph (module_loader.h): libkiln_device.so, found and loaded on demand, so a
// program that runs only CPU modules never needs it (nor any GPU driver). Small on purpose:
// it is part of the runtime's 100 KiB.
#include <dlfcn.h>

#include <cstdlib>

#include "kiln/runtime/module_loader.h"

namespace kiln::runtime {

DeviceGraph* load_device_graph(const GraphPlan& plan, const void* images, size_t images_size, const uint8_t* weights,
                               const std::string& path, void** library) {
  const std::string head =
      "cannot load module '" + path + "': it runs on " + (plan.device_type == kDLCUDA ? "CUDA" : "OpenCL") + ": ";
  // $KILN_DEVICE_LIBRARY; else beside the library (or program) this code is in, or in its
  // ../lib (a build tree's bin/ and lib/, an install prefix); else the library path.
  const char* env = std::getenv("KILN_DEVICE_LIBRARY");
  void* lib = nullptr;
  std::string dir = ".";
  if (env && *env) {
    lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
  } else {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&load_device_graph), &info) != 0 && info.dli_fname) {
      dir = info.dli_fname;
      dir = dir.find('/') == std::string::npos ? "." : dir.substr(0, dir.rfind('/'));
    }
    for (const char* rel : {"/libkiln_device.so", "/../lib/libkiln_device.so"})
      if (!lib) lib = dlopen((dir + rel).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libkiln_device.so", RTLD_NOW | RTLD_LOCAL);
  }
  if (!lib) {
    const char* err = dlerror();
    throw RuntimeError(ErrorKind::kIncompatible,
                       head + "the runtime's device layer libkiln_device.so was not found (" +
                           (env && *env ? std::string("KILN_DEVICE_LIBRARY=") + env : "looked in " + dir + ", " + dir +
                                                                                           "/../lib and the library path") +
                           (err ? std::string("; ") + err : "") + ")");
  }
  auto create = reinterpret_cast<kiln_device_graph_create_fn>(dlsym(lib, "kiln_device_graph_create"));
  char error[1024] = "libkiln_device.so has no kiln_device_graph_create";
  DeviceGraph* g = create ? create(&plan, images, images_size, weights, error, sizeof error) : nullptr;
  if (!g) {
    dlclose(lib);
    throw RuntimeError(ErrorKind::kIncompatible, head + error);
  }
  *library = lib;
  return g;
}

}  // namespace kiln::runtime
