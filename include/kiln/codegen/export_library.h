// Packaging a compiled model: one shared library holding the kernels (built for the plan's
// target), the graph plan, the weights and metadata, which the runtime (kiln_runtime.h) loads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir/stmt.h"
#include "kiln/runtime/graph_plan.h"

namespace kiln::codegen {

// Checks the model (plan well formed, every node's kernel among `kernels`, weights matching the
// plan's size and checksum when it records them), builds the kernels for plan.target, and links
// them with the data into `path` (replaced atomically). kiln::Error names what was wrong: a bad
// destination, a malformed plan, a missing linker or a failed link.
void export_library(const runtime::GraphPlan& plan, const std::vector<ir::PrimFunc>& kernels,
                    const std::vector<uint8_t>& weights, const std::string& path);

}  // namespace kiln::codegen
