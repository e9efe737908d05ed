// The plan the runtime executes (the pipeline's graph_plan and device_launches stages): entries,
// one node per kernel (or kernel launch), inputs, outputs and the weights blob.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir/device_program.h"
#include "kiln/relay/transforms.h"
#include "kiln/runtime/graph_plan.h"
#include "kiln/target/target.h"

namespace kiln::lower {

// The plan the runtime executes: entries from `memory` (constants packed into `weights` at
// 64-byte aligned offsets), one node per group calling `kernel_names[i]`, inputs and outputs by
// the module's names, the kiln version, `target` (its full spec), and the weights' size and
// FNV-1a checksum. Each node's cost: `flops[i]` (te::count_flops of group i's program) and the
// bytes of its arguments, each read or written once.
runtime::GraphPlan make_graph_plan(const relay::FusedModule& module, const relay::MemoryPlan& memory,
                                   const std::vector<std::string>& kernel_names, const std::vector<double>& flops,
                                   const Target& target, std::vector<uint8_t>* weights);

// The DLPack type of a graph dtype (bool: {kDLUInt, 1, 1}, one byte per element).
DLDataType to_dlpack(relay::DataType dtype);

// A GPU module's plan: each node (one fused group, its kernel split into launches by
// ir::split_host_device; programs[i] belongs to nodes[i]) becomes one node per launch, with its
// grid and block; each workspace buffer becomes an entry in a storage of its own. Sets the
// plan's device type (kDLCUDA or kDLOpenCL).
void add_device_launches(runtime::GraphPlan* plan, const std::vector<ir::DeviceProgram>& programs, int32_t device_type);

}  // namespace kiln::lower
