// A fused group's te program (the pipeline's group_to_te stage): each member's lowering applied
// on its arguments' tensors.
//
// A kernel's parameters are the group's inputs (FusedGroup::inputs order) then its outputs (one
// per field of a tuple-typed root); the plan node of the group lists the same entries.
// Tensors of rank 0 are te tensors of shape [1] (te has no rank-0 tensors); their entries keep
// shape [] in the plan (same bytes).
#pragma once

#include <vector>

#include "kiln/lower/prepack_weights.h"
#include "kiln/lower/strategy.h"
#include "kiln/relay/transforms.h"
#include "kiln/te/tensor.h"

namespace kiln::lower {

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

}  // namespace kiln::lower
