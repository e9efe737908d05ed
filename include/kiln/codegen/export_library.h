// Packaging a compiled model: one shared library holding the kernels (built for the plan's
// target), the graph plan, the weights and metadata, which the runtime (kiln_runtime.h) loads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/codegen/gpu_build.h"
#include "kiln/ir/stmt.h"
#include "kiln/runtime/graph_plan.h"

namespace kiln::codegen {

// Checks the model (plan well formed, every node's kernel among `kernels`, weights matching the
// plan's size and checksum when it records them), builds the kernels for plan.target, and links
// them with the data into `path` (replaced atomically). kiln::Error names what was wrong: a bad
// destination, a malformed plan, a missing linker or a failed link.
void export_library(const runtime::GraphPlan& plan, const std::vector<ir::PrimFunc>& kernels,
                    const std::vector<uint8_t>& weights, const std::string& path);

// The same for a GPU module (plan.device_type kDLCUDA or kDLOpenCL, one node per launch): a
// library of data only, for this machine's architecture (the runtime that loads it runs on the
// host), carrying `device`'s images (CUDA: cubins and PTX; OpenCL: the source) under the
// device module format (runtime/module_format.h).
void export_device_library(const runtime::GraphPlan& plan, const GpuModule& device, const std::vector<uint8_t>& weights,
                           const std::string& path);

}  // namespace kiln::codegen
