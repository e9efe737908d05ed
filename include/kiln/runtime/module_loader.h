// Loading a compiled model library (.so written by kiln::export_library; layout in
// runtime/module_format.h) and validating it before anything runs: it is a kiln module, of a
// compatible format and kiln version, built for a CPU this machine is (architecture and
// features), its weights match their checksum, its plan is well formed and every kernel the
// plan calls is there. Each refusal is a RuntimeError whose message names what is wrong.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/runtime/device_graph.h"
#include "kiln/runtime/graph_plan.h"
#include "kiln/runtime/kernel.h"
#include "kiln/support/error.h"

namespace kiln::runtime {

// What went wrong, so that the C API (kiln_runtime.h) can return a distinct status for each; the
// values are the C API's status codes.
enum class ErrorKind {
  kInvalidArgument = 1,  // a null pointer, an unknown input name, a wrong shape or dtype, ...
  kFile = 2,             // the file is missing or unreadable
  kInvalidModule = 3,    // not a kiln module, or a corrupt one (checksum, plan, missing kernel)
  kIncompatible = 4,     // another format or kiln version, or a CPU this machine is not
  kKernel = 5,           // a kernel failed while running
  kState = 6,            // called at the wrong time (run before every input was set)
  kOutOfMemory = 7,
};

class RuntimeError : public kiln::Error {
 public:
  RuntimeError(ErrorKind kind, const std::string& message) : kiln::Error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// A loaded, validated module. The weights stay inside the mapped library (read-only, shared
// between processes); the library is unloaded when the last reference goes.
class LoadedModule {
 public:
  // Throws RuntimeError (kFile, kInvalidModule or kIncompatible).
  static std::shared_ptr<const LoadedModule> load(const std::string& path);
  ~LoadedModule();
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;

  const std::string& path() const { return path_; }
  const GraphPlan& plan() const { return plan_; }
  const std::string& kiln_version() const { return version_; }  // of the compiler that wrote it
  const std::string& target() const { return target_; }
  const uint8_t* weights() const { return weights_; }
  // The kernel of plan().nodes[node] (CPU modules).
  kiln_kernel_fn node_kernel(size_t node) const { return node_kernels_[node]; }
  // Device modules: the plan loaded on its device (device opened, images loaded, constants
  // uploaded, by libkiln_device.so); null for CPU modules.
  const DeviceGraph* device_graph() const { return device_graph_.get(); }

 private:
  LoadedModule() = default;
  std::string path_, version_, target_;
  void* handle_ = nullptr;
  GraphPlan plan_;
  const uint8_t* weights_ = nullptr;
  std::vector<kiln_kernel_fn> node_kernels_;
  std::unique_ptr<DeviceGraph> device_graph_;
  void* device_library_ = nullptr;  // libkiln_device.so, closed after device_graph_ goes
};

// Loads libkiln_device.so (KILN_DEVICE_LIBRARY, else beside the runtime library or program, or
// in its ../lib, else the library path) and makes the device graph of a device module.
// Throws RuntimeError(kIncompatible) saying why: the library is missing, no driver, no image
// for this GPU. *library receives the dlopen handle, to be closed after the graph is deleted.
DeviceGraph* load_device_graph(const GraphPlan& plan, const void* images, size_t images_size, const uint8_t* weights,
                               const std::string& path, void** library);

// What a module carries besides its kernels (runtime/module_format.h), as the loader finds it.
struct ModuleData {
  bool device = false;  // KILN_MODULE_MAGIC_DEVICE: a cuda or opencl target, no CPU check
  std::string version, target;
  const void* plan = nullptr;
  uint64_t plan_size = 0;
  const uint8_t* weights = nullptr;
  uint64_t weights_size = 0, weights_checksum = 0;
};

// Checks a module's data, cheapest and most telling first: kiln version, target against this
// CPU, the plan's encoding, plan and metadata agreeing, the weights' alignment and checksum,
// then plan_problem. Returns the decoded plan; throws RuntimeError (kIncompatible or
// kInvalidModule) naming `path` and what is wrong. LoadedModule::load calls it with what it
// finds in the library; fuzz/module_data.cc calls it with fuzzed bytes.
GraphPlan validate_module_data(const ModuleData& data, const std::string& path);

// Why a plan cannot run (an entry outside its storage, a misaligned offset, a node argument or
// graph input that names no entry, ...), or empty if it is well formed. `weights_bytes` is the
// size of the blob its constants live in.
std::string plan_problem(const GraphPlan& plan, int64_t weights_bytes);

// True when a module written by kiln `module_version` may be run by this runtime: same major
// and minor version (0.x releases break the format freely).
bool version_compatible(const std::string& module_version);

}  // namespace kiln::runtime
