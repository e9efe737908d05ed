// Lowering a fused graph: each group to a te program, a schedule and one loop-level kernel, and
// the whole to the runtime::GraphPlan the graph executor runs (kiln::compile drives these).
//
//   FusedModule f = fuse_ops(m);
//   MemoryPlan mem = plan_memory(f);
//   for each group g:  GroupProgram p = group_to_te(g);  Schedule s = schedule_group(p, g, cfg);
//                      PrimFunc k = codegen::lower_to_ir(s, p.args(), kernel_name(g, i));
//   GraphPlan plan = make_graph_plan(f, mem, names, target, &weights);
//
// A kernel's parameters are the group's inputs (FusedGroup::inputs order) then its outputs (one
// per field of a tuple-typed root); the plan node of the group lists the same entries.
// Tensors of rank 0 are te tensors of shape [1] (te has no rank-0 tensors); their entries keep
// shape [] in the plan (same bytes).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/codegen/driver.h"
#include "kiln/relay/transforms.h"
#include "kiln/runtime/graph_plan.h"
#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/te/ops/lowering.h"

namespace kiln::relay {

// Constant weights packed at compile time into the layout their kernels read (te::ops::
// weight_prepack, te/ops/register_b.h): conv and dense calls -> which argument, and the packed
// constant that replaced the original among the group's inputs.
struct PrepackedWeight {
  size_t arg = 1;
  Expr packed;
  te::ops::FLower lower;  // the call's lowering that reads the packed form
};
using PrepackedWeights = std::unordered_map<const ExprNode*, PrepackedWeight>;  // call -> weight

// Packs every constant weight the op library can take prepacked and that only its call reads,
// replacing it among its group's inputs (so plan_memory and the weights blob hold the packed
// bytes); group_to_te then lowers those calls with the prepacked lowering. A pure speed-up.
PrepackedWeights prepack_weights(FusedModule* module, bool winograd = true);

struct GroupProgram {
  std::vector<te::Tensor> inputs;   // placeholders, one per FusedGroup::inputs entry
  std::vector<te::Tensor> outputs;  // one per output field of the group's root
  // The te tensor of every member call (one per field for tuple-typed calls).
  std::vector<std::vector<te::Tensor>> member_outputs;
  std::vector<te::Tensor> args() const;  // inputs then outputs: the kernel's parameters
};

// The te program of a group: each member's lowering (te/ops/lowering.h) applied in post order on
// the tensors of its arguments. Scalar constants become inlined compute stages. kiln::Error names
// the op (and its source node) when an op has no lowering or its lowering rejects the call.
GroupProgram group_to_te(const FusedGroup& group, const PrepackedWeights* prepacked = nullptr);

// The CPU schedule of a group: the op library's template for its kind (anchor_cpu.h for groups
// with an out-elementwise-fusable or opaque op, reduction_cpu.h, injective_cpu.h), with the knobs
// `cfg` answers (a default Config: the default schedule; a recording one fills the search space).
schedule::Schedule schedule_group(const GroupProgram& program, const FusedGroup& group, schedule::Config& cfg);

// The te tensor the group's anchor call lowered to.
te::Tensor anchor_tensor(const GroupProgram& program, const FusedGroup& group);
// The template family schedule_group uses: anchor_template_name's ("conv", "dense", "depthwise",
// ..., "generic") for anchored groups, else "reduction" or "injective". Names tuning tasks.
const char* group_template_name(const GroupProgram& program, const FusedGroup& group);

// "fused_nn_conv2d_add_nn_relu_3": a valid C symbol naming the ops, unique by the group index.
std::string kernel_name(const FusedGroup& group, int index);

// The te program, schedule and lowered kernel of one group; `cfg` picks the schedule's knobs
// (null: the template's defaults).
ir::PrimFunc lower_group(const FusedGroup& group, const std::string& name,
                         const codegen::PipelineOptions& options = codegen::PipelineOptions(),
                         const PrepackedWeights* prepacked = nullptr, schedule::Config* cfg = nullptr);

// The plan the runtime executes: entries from `memory` (constants packed into `weights` at
// 64-byte aligned offsets), one node per group calling `kernel_names[i]`, inputs and outputs by
// the module's names, the kiln version, `target`, and the weights' size and FNV-1a checksum.
runtime::GraphPlan make_graph_plan(const FusedModule& module, const MemoryPlan& memory,
                                   const std::vector<std::string>& kernel_names, const std::string& target,
                                   std::vector<uint8_t>* weights);

// Registers the ops alter_layout introduces and, where the op library has not, their te
// lowerings (a plain direct conv over blocked data). compile() calls it.
void register_layout_lowerings();

// The DLPack type of a graph dtype (bool: {kDLUInt, 1, 1}, one byte per element).
DLDataType to_dlpack(DataType dtype);

}  // namespace kiln::relay
