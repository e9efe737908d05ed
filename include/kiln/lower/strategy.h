// Strategy: how a fused group becomes a kernel on a target (TVM's op strategy). For the group's
// anchor op it picks the algorithm and data layout (a blocked direct conv with the target's
// channel block, Winograd, packed dense panels) and how a constant weight is packed at compile
// time; for the group it picks the schedule template. One table keyed by target kind and op
// family (strategy.cc) holds these choices; schedules never guess an op from stage names.
//
//   lower::Strategy st = lower::select_strategy(group, target);
//   st.template_name                       // "conv_winograd": names the tuning task
//   GroupProgram p = group_to_te(group, st, &prepacked);  // group_to_te.h
//   schedule::Schedule s = st.schedule(p.outputs, anchor_tensor(p, group), target, cfg);
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/lower/op_lowering.h"
#include "kiln/relay/host_tensor.h"
#include "kiln/relay/transforms.h"
#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::lower {

struct StrategyOptions {
  // 3x3 stride-1 convs with a constant weight computed as Winograd F(2x2, 3x3) where the CPU
  // strategy's rule says it pays (te/ops/nn_winograd.h: fewer multiplies, slightly different
  // rounding); false: every conv direct.
  bool winograd = true;
};

// The schedule of a group: `outputs` are what its kernel writes, `anchor` the te tensor its
// anchor call lowered to (undefined for groups without one). Knobs come from `cfg`.
using ScheduleFn = std::function<schedule::Schedule(const std::vector<te::Tensor>& outputs, const te::Tensor& anchor,
                                                    const Target& target, schedule::Config& cfg)>;

// A constant weight of the anchor call, packed once at compile time into the layout its kernel
// reads (the packed constant replaces the weight among the group's inputs).
struct WeightPacking {
  size_t arg = 1;                                                  // the call's weight argument
  std::function<relay::HostTensor(const relay::HostTensor&)> pack;  // weight -> packed weight
  OpLowering lower_packed;  // the anchor call's lowering with argument `arg` already packed
};

struct Strategy {
  // The template family: conv, conv_winograd, conv_nchwc, depthwise, dense, matmul, pool,
  // global_pool, softmax, norm, generic (anchored groups), injective, reduction. Tuning tasks
  // are named by it, and tasks of one template share a cost model.
  std::string template_name;
  ScheduleFn schedule;
  // The anchor call's lowering on this target; empty: the op table's (op_lowering.h).
  OpLowering lower;
  std::optional<WeightPacking> packing;
};

// The strategy for `group` on `target`. kiln::Error for a target kind without a strategy table.
Strategy select_strategy(const relay::FusedGroup& group, const Target& target, const StrategyOptions& options = {});

// The graph-level layout choice for relay::alter_layout: whether the 2-d conv `call` (NCHW)
// stays in NCHW on `target` because its strategy there computes it better than the blocked
// NCHW[x]c conv does (on CPUs: Winograd). True for targets without blocked kernels.
bool conv_stays_nchw(const relay::CallNode& call, const Target& target, const StrategyOptions& options = {});

}  // namespace kiln::lower
