// kiln.Module's core: a compiled model loaded through the runtime's C API (kiln_runtime.h),
// fed from any DLPack producer (NumPy arrays, PyTorch tensors: the runtime copies them into its
// own memory, nothing else does), its outputs returned as NumPy arrays.
#pragma once

#include <nanobind/nanobind.h>

#include <mutex>
#include <string>
#include <vector>

#include "kiln/runtime/kiln_runtime.h"

namespace kiln::python {

namespace nb = nanobind;

class Module {
 public:
  // Loads the .so at `path`. `temporary`: a file of kiln.compile's own, removed (with its
  // directory) when the module goes. `notes`: what the compiler had to say about it.
  Module(std::string path, bool temporary, std::vector<std::string> notes = {});
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // (name, shape, dtype name) of each input or output, in the module's order.
  nb::list input_info() const;
  nb::list output_info() const;
  // Sets every input from (name, array) pairs, runs, and returns the outputs in order. Every
  // input must be given: the module would otherwise silently reuse the last run's.
  nb::list run(const std::vector<std::pair<std::string, nb::object>>& inputs);
  // Copies the module's .so to `path`.
  void save(const std::string& path) const;
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  std::string path_;
  bool temporary_;
  std::vector<std::string> notes_;
  kiln_module* mod_ = nullptr;
  // kiln_module_set_input/run/get_output use the module's one built-in context; runs release
  // the GIL, so two Python threads could otherwise interleave on it.
  std::mutex run_mutex_;
};

// kiln::Error carrying kiln_last_error() when `status` is not KILN_OK.
void check(kiln_status status);

}  // namespace kiln::python
