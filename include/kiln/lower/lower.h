// The lowering layer: a fused graph's groups turned into scheduled te programs for a target,
// and the plan the runtime executes. It sits between the graph IR (relay) and te/schedule, and
// depends on them, never the reverse. kiln::compile (compiler.h) drives it:
//
//   PrepackedWeights packed = prepack_weights(&fused, target);      // constants packed once
//   for each group g (index i):
//     Strategy st = select_strategy(g, target);                    // strategy.h
//     GroupProgram p = group_to_te(g, st, &packed);
//     schedule::Schedule s = schedule_group(p, g, st, target, cfg);  // cfg: defaults or tuned
//     ir::PrimFunc k = codegen::lower_to_ir(s, p.args(), kernel_name(g, i));
//   GraphPlan plan = make_graph_plan(fused, memory, names, flops, target, &weights);
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

#include "kiln/ir/device_program.h"
#include "kiln/lower/strategy.h"
#include "kiln/relay/transforms.h"
#include "kiln/runtime/graph_plan.h"
#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::lower {

// A constant weight packed at compile time (Strategy::packing): which argument of the anchor
// call, and the packed constant that replaced the original among its group's inputs.
struct PrepackedWeight {
  size_t arg = 1;
  relay::Expr packed;
};
using PrepackedWeights = std::unordered_map<const relay::ExprNode*, PrepackedWeight>;  // call -> weight

// Packs every constant weight its group's strategy packs and that only its call reads,
// replacing it among its group's inputs (so plan_memory and the weights blob hold the packed
// bytes); group_to_te then lowers those calls with the packed form. A pure speed-up.
PrepackedWeights prepack_weights(relay::FusedModule* module, const Target& target,
                                 const StrategyOptions& options = StrategyOptions());

struct GroupProgram {
  std::vector<te::Tensor> inputs;   // placeholders, one per FusedGroup::inputs entry
  std::vector<te::Tensor> outputs;  // one per output field of the group's root
  // The te tensor of every member call (one per field for tuple-typed calls).
  std::vector<std::vector<te::Tensor>> member_outputs;
  std::vector<te::Tensor> args() const;  // inputs then outputs: the kernel's parameters
};

// The te program of a group: each member's lowering applied in post order on the tensors of its
// arguments (the op table's, op_lowering.h; the strategy's for the anchor, its packed form when
// `prepacked` holds the anchor's weight). Scalar constants become inlined compute stages.
// kiln::Error names the op (and its source node) when an op has no lowering or its lowering
// rejects the call.
GroupProgram group_to_te(const relay::FusedGroup& group, const Strategy& strategy,
                         const PrepackedWeights* prepacked = nullptr);

// The te tensor the group's anchor call lowered to (undefined for a group without an anchor).
te::Tensor anchor_tensor(const GroupProgram& program, const relay::FusedGroup& group);

// The group's schedule on `target` by its strategy's template, with the knobs `cfg` answers (a
// default Config: the template's defaults; a recording one fills the search space).
schedule::Schedule schedule_group(const GroupProgram& program, const relay::FusedGroup& group, const Strategy& strategy,
                                  const Target& target, schedule::Config& cfg);

// "fused_nn_conv2d_add_nn_relu_3": a valid C symbol naming the ops, unique by the group index.
std::string kernel_name(const relay::FusedGroup& group, int index);

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

// Where compile() takes each kernel's knobs from (TVM's ApplyHistoryBest): the template defaults
// when none is given, a tuning log (autotune/apply_log.h) otherwise.
class ScheduleChooser {
 public:
  virtual ~ScheduleChooser() = default;
  // True and *cfg set: build `group` (strategy `strategy`, weights packed as `prepacked` says)
  // with these knobs; false: the template's defaults.
  virtual bool config_for(const relay::FusedGroup& group, const Strategy& strategy, const PrepackedWeights& prepacked,
                          schedule::Config* cfg) = 0;
  // What the chooser did, for the user (compile notes).
  virtual std::vector<std::string> notes() const = 0;
};

}  // namespace kiln::lower
