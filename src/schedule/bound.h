// Bound inference: which values each axis of each stage takes, and which region of its output
// each stage must compute (TVM's InferBound).
//
// Outputs are computed whole. Any other stage computes the union of what its consumers read,
// where a consumer's loops at or outside the stage's attach point are fixed (symbolic single
// points: the stage is recomputed for each of their iterations) and the loops inside it range
// over their extents. Leaf ranges flow up through split/fuse to root ranges, root ranges give
// the regions read, and a region flows back down to the stage's own leaves. Extents are made
// constant (by simplification, else by a constant upper bound), so every buffer has a static
// shape; loops that might leave a tensor's domain get guards at lowering.
#pragma once

#include <unordered_map>
#include <vector>

#include "kiln/ir/expr.h"
#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

struct Bounds {
  // The values every axis (root, split, fused) of every lowered stage takes: [min, min+extent),
  // extents constant. Leaves made by split/fuse start at 0; a root leaf may start elsewhere.
  std::unordered_map<const ir::IterVarNode*, ir::Range> ranges;
  // The loop variable of each leaf axis, ranging over [0, extent): the axis' own variable for
  // axes made by split/fuse, a fresh variable of the same name for root axes (whose variable
  // keeps meaning "the value", min included).
  std::unordered_map<const ir::IterVarNode*, ir::Var> loop_vars;
  // Region of its output(s) each lowered stage computes and stores, one Range per dimension
  // (the buffer of an intermediate stage has the extents as its shape).
  std::unordered_map<const StageNode*, std::vector<ir::Range>> regions;
};

// Bounds of every stage that is not inlined. Throws kiln::Error on an invalid attachment (to an
// inlined stage, or with a consumer outside the attach point's loop).
Bounds infer_bound(const Schedule& s);

}  // namespace kiln::schedule
