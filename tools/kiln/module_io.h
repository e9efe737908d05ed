// What the run/check/bench commands share: a loaded model (over the C API, errors turned into
// kiln::Error) and conversions between TensorProto files, HostTensors and DLTensors.
#pragma once

#include <dlpack/dlpack.h>

#include <string>
#include <vector>

#include "kiln/relay/host_tensor.h"
#include "kiln/runtime/kiln_runtime.h"

namespace kiln::cli {

class LoadedModel {
 public:
  explicit LoadedModel(const std::string& path);
  ~LoadedModel();
  LoadedModel(const LoadedModel&) = delete;
  LoadedModel& operator=(const LoadedModel&) = delete;

  int num_inputs() const;
  int num_outputs() const;
  kiln_tensor_info input_info(int i) const;
  kiln_tensor_info output_info(int i) const;
  // A dynamic-batch module's batch range (kiln_module_batch_range); {0, 0} for fixed shapes.
  std::pair<int64_t, int64_t> batch_range() const;
  // Random inputs (random_tensor, seeds 1234 + i) for every input; `batch` > 0 gives a
  // dynamic-batch module `batch` samples (kiln::Error outside its range or for fixed shapes).
  std::vector<relay::HostTensor> random_inputs(int64_t batch) const;
  // Sets input `i` (or the input named `name`) from a host tensor; dtype and shape must match.
  void set_input(int i, const relay::HostTensor& value);
  void set_input(const std::string& name, const relay::HostTensor& value);
  void run();
  // A copy of output i.
  relay::HostTensor output(int i) const;

 private:
  kiln_module* mod_ = nullptr;
};

// A DLTensor view of a host tensor's bytes (valid while the tensor lives).
DLTensor view_of(const relay::HostTensor& t);
ir::DataType from_dl(DLDataType t);
DLDataType to_dl(ir::DataType t);
// A host tensor of the given info filled with seeded values in [-1, 1] (integers: small values).
relay::HostTensor random_tensor(const kiln_tensor_info& info, uint32_t seed);

}  // namespace kiln::cli
