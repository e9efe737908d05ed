// Constant weights packed at compile time into the layouts the target's kernels read (the
// pipeline's prepack_weights stage): the lowering layer's first step on a fused graph.
#pragma once

#include <unordered_map>

#include "kiln/lower/strategy.h"
#include "kiln/relay/transforms.h"
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

}  // namespace kiln::lower
