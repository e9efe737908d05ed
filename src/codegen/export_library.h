// Packaging a compiled model (the pipeline's export_library stage): one shared library holding the
// kernels' machine code (or device images), the graph plan, the weights and metadata, which the
// runtime (kiln_runtime.h) loads. Nothing is compiled here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/codegen/build.h"
#include "kiln/codegen/gpu_build.h"
#include "kiln/ir/stmt.h"
#include "kiln/runtime/graph_plan.h"

namespace kiln::codegen {

// Checks the model (plan well formed and made for the kernels' target, every node's kernel among
// `kernels`, weights matching the plan's size and checksum when it records them), and links
// the kernels' object code with the data into `path` (replaced atomically). kiln::Error names
// what was wrong: a bad destination, a malformed plan, a missing linker or a failed link.
void export_library(const runtime::GraphPlan& plan, const Module& kernels, const std::vector<uint8_t>& weights,
                    const std::string& path);

// The same for a GPU module (plan.device_type kDLCUDA or kDLOpenCL, one node per launch): a
// library of data only, for this machine's architecture (the runtime that loads it runs on the
// host), carrying `device`'s images (CUDA: cubins and PTX; OpenCL: the source) under the
// device module format (runtime/module_format.h).
void export_device_library(const runtime::GraphPlan& plan, const GpuModule& device, const std::vector<uint8_t>& weights,
                           const std::string& path);

}  // namespace kiln::codegen
