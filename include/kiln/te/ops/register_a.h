// Registration of the op library's part A: the te lowerings of every elementwise, broadcast,
// injective and reduction op of the relay registry (te/ops/lowering.h describes the slot).
//
// Relay scalars (shape []) are te tensors of shape {1}: te has no rank-0 tensors. A lowering
// returns tensors of exactly the te shape of its output type (te_shape), reshaping where the
// te computation naturally yields another arrangement of the same elements (e.g. Gather with a
// scalar index). Empty tensors (a dim of 0) cannot be lowered: kiln::Error naming the op.
#pragma once

#include <string>
#include <vector>

#include "kiln/relay/type.h"

namespace kiln::te::ops {

// Fills the lowering slot of every op listed by lowered_ops_a() (idempotent).
void register_lowerings_a();

// The relay ops part A lowers, sorted.
std::vector<std::string> lowered_ops_a();

// The te shape of a relay tensor type: its shape, or {1} for a scalar. kiln::Error for a tuple
// type or an empty tensor.
std::vector<int64_t> te_shape(const relay::Type& t);

}  // namespace kiln::te::ops
