// Internals shared by the schedule/*.cc files (cache rewrites, bound inference, the loop nest).
// Private to src/schedule, so not installed: the API is schedule.h, bound.h and loop_nest.h.
#pragma once

#include <functional>
#include <unordered_map>
#include <vector>

#include "ir/arith.h"
#include "schedule/bound.h"
#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// Applies f to every body of c. A multi-slot reduction is rewritten once (sources, condition)
// and rebuilt per slot, over `new_reduce_axis` when given, so its slots stay one reduction.
std::vector<ir::Expr> rewrite_bodies(const te::ComputeOpNode& c, const std::function<ir::Expr(const ir::Expr&)>& f,
                                     const std::vector<ir::IterVar>* new_reduce_axis);

// The program as lowering sees it: inlined stages substituted into their readers.
struct Dataflow {
  std::vector<Stage> stages;  // compute stages that are not inlined, producers first
  // Bodies of each such stage (and of inlined ones) with inlined producers substituted.
  std::unordered_map<const StageNode*, std::vector<ir::Expr>> bodies;
  // Non-inlined compute stages reading each stage (placeholders included), in stage order.
  std::unordered_map<const StageNode*, std::vector<Stage>> consumers;
  // Stages attached at each leaf axis, in stage order.
  std::unordered_map<const ir::IterVarNode*, std::vector<Stage>> attached_at;
  // Annotations of every axis of every stage, by axis.
  std::unordered_map<const ir::IterVarNode*, const IterVarAttr*> attrs;
  const ScheduleNode* schedule = nullptr;

  // The stage producing tensor t, and its index among that stage's outputs.
  const Stage& stage_of(const te::Tensor& t) const;
  const te::ComputeOpNode& compute_of(const Stage& s) const { return *s->op.as<te::ComputeOpNode>(); }
};

// Substitutes inlined stages and validates attachments.
Dataflow inline_stages(const Schedule& s);

// The loops around an attached stage's code, innermost first: its attach axis, the parent's
// leaves outside it, then the parent's own attach path. Empty for a root stage.
std::vector<const ir::IterVarNode*> attach_path(const StageNode& s);

// Bound inference over a prepared dataflow (bound.cc).
Bounds infer_bound(const Dataflow& g);

// Root axes of a stage: data-parallel axes, then reduce axes.
std::vector<ir::IterVar> root_axes(const StageNode& s);

// Values of every axis of a stage given the values of its leaves (split: parent = min +
// outer * extent(inner) + inner; fuse: outer = min + fused / extent(inner), inner likewise).
void pass_up_index(const StageNode& s, const Bounds& b, std::unordered_map<const ir::IterVarNode*, ir::Expr>* values);

// Symbolic intervals of every axis of a stage given those of its leaves. A split whose loops
// run over all of their ranges covers all of its parent's; with `overhang`, also the overhang
// of a split that does not divide it (outer x inner past the parent's end, where the loops run
// under a guard): what the stage's producers must hold so that a tile of them stays whole (a
// tensor-core tile of a product padded past the real output, te::ops::ProductPad).
void pass_up_domain(const StageNode& s, const Bounds& b, const ir::arith::Analyzer& ana,
                    std::unordered_map<const ir::IterVarNode*, ir::arith::IntervalSet>* sets, bool overhang = false);

// An Analyzer that knows the range of every loop variable in `b`.
ir::arith::Analyzer loop_analyzer(const Bounds& b);

int64_t const_extent(const ir::Range& r);

// ---------------------------------------------------------------------------------------------
// Lowering state

// Where a tensor lives: its buffer, and the tensor index its element [0, 0, ...] holds (the
// realized region's minimum; zeros for function parameters).
struct Storage {
  ir::Buffer buffer;
  std::vector<ir::Expr> offset;
};

struct LowerContext {
  const Dataflow& g;
  const Bounds& b;
  ir::arith::Analyzer ana;  // ranges of every loop variable emitted so far
  std::unordered_map<const StageNode*, std::vector<Storage>> storage;  // per stage output

  LowerContext(const Dataflow& g_, const Bounds& b_) : g(g_), b(b_), ana(loop_analyzer(b_)) {}
  const Storage& storage_of(const te::Tensor& t) const;
  // e with the given variables substituted and every tensor read turned into a buffer load.
  ir::Expr to_buffers(const ir::Expr& e, const ir::VarMap<ir::Expr>& vmap) const;
};

// The loop nest of one stage, with the stages attached inside it (build_nest.cc).
ir::Stmt build_nest(LowerContext& ctx, const StageNode& s);
// The stage's allocation around (its nest; then `rest`), for a non-output stage.
ir::Stmt realize(LowerContext& ctx, const StageNode& s, ir::Stmt rest);

// The call replacing the loops from leaf `pos` inward of a tensorized stage; leaf_values holds
// the values of the leaves outside it (tensorize.cc). `update`: accumulate (the intrinsic's
// update function) rather than compute from scratch (its body).
ir::Stmt tensorize_nest(LowerContext& ctx, const StageNode& s, size_t pos, bool update,
                        const std::unordered_map<const ir::IterVarNode*, ir::Expr>& leaf_values);
// The intrinsic's initialization (TensorIntrin::init) of the outputs of the nest from leaf
// `pos` inward, the leaves outside it at leaf_values; undefined when the intrinsic has none.
ir::Stmt tensorize_init(LowerContext& ctx, const StageNode& s, size_t pos,
                        const std::unordered_map<const ir::IterVarNode*, ir::Expr>& leaf_values);

}  // namespace kiln::schedule
