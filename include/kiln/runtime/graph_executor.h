// The graph executor: runs a loaded module's plan (module_loader.h). The C API
// (kiln_runtime.h) is a thin shell over this class; C++ programs (the CLI, tests) use it directly.
//
//   auto exec = GraphExecutor::load("model.so");
//   exec.set_input("data", *input.dltensor());     // copies; checks dtype and shape
//   exec.run();
//   NDArray y = exec.get_output(0);                // a copy; output_view(0) does not copy
//
// Memory: the planned storages are allocated once, page-aligned in one arena, when the executor is made;
// constants are read in place from the weights inside the loaded library. Nothing is allocated
// per run. One executor runs one inference at a time (not thread-safe); several executors may
// share a LoadedModule and run concurrently from different threads, each with its own memory
// (the C API's kiln_context is one). The kernels use the
// runtime's thread pool (kiln_set_num_threads).
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/runtime/module_loader.h"
#include "kiln/runtime/ndarray.h"

namespace kiln::runtime {

struct TensorInfo {
  std::string name;
  DLDataType dtype{kDLFloat, 32, 1};
  std::vector<int64_t> shape;
};

class GraphExecutor {
 public:
  // Throws RuntimeError (module_loader.h) on any refusal.
  static GraphExecutor load(const std::string& path);
  explicit GraphExecutor(std::shared_ptr<const LoadedModule> module);
  GraphExecutor(GraphExecutor&&) noexcept;
  GraphExecutor& operator=(GraphExecutor&&) noexcept;
  ~GraphExecutor();

  const LoadedModule& module() const;
  // The loaded module, for another executor of it (one per concurrent inference).
  std::shared_ptr<const LoadedModule> shared_module() const;

  int num_inputs() const;
  int num_outputs() const;
  // Throws RuntimeError(kInvalidArgument) on an index out of range.
  const TensorInfo& input_info(int index) const;
  const TensorInfo& output_info(int index) const;
  // The index of input `name`; throws RuntimeError(kInvalidArgument) naming it and the inputs
  // there are.
  int input_index(const std::string& name) const;
  int output_index(const std::string& name) const;

  // Copies `value` (CPU memory, any strides; or, for a device module, a compact tensor on its
  // device: copied device to device, device_graph.h) into the input. Throws RuntimeError
  // (kInvalidArgument) naming the input if its dtype, shape or device is wrong.
  void set_input(int index, const DLTensor& value);
  void set_input(const std::string& name, const DLTensor& value);
  // Runs every node in order. Throws RuntimeError: kState if an input was never set, kKernel
  // naming the node if a kernel returns non-zero.
  void run();
  // A view of output `index` in the executor's memory: valid until the next set_input or run,
  // or until the executor goes; its shape points into the executor. Never written by the caller.
  DLTensor output_view(int index) const;
  // Copies output `index` into `out` (CPU memory, the output's dtype and shape, any strides; or,
  // for a device module, a compact tensor on its device).
  void get_output(int index, DLTensor& out) const;
  NDArray get_output(int index) const;

  // Per-node profile, like TVM's debug executor: while profiling is on, run() reads a steady
  // clock around every node call (only then: the off path costs one branch per run) and keeps
  // each call's seconds. Turning it on clears what was kept.
  struct NodeProfile {
    std::string kernel;            // the kernel's symbol
    std::string label;             // what it computes ("conv2d+add+relu")
    std::vector<double> seconds;   // one sample per profiled run
  };
  void set_profiling(bool on);
  // One entry per plan node, in plan order.
  const std::vector<NodeProfile>& profile() const;
  // The profile as a table, one line per node, slowest first: median ms, share of the sum of
  // medians, samples, kernel, label; then the total. Empty when nothing was profiled.
  std::string profile_table() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::runtime
