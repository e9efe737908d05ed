// Default CPU schedules of fused groups anchored by an nn op of the op library
// (te/ops/nn_*.h, lowered through te/ops/register_b.h), and the building blocks they share.
//
// How the graph compiler calls it, for one fused group:
//
//   std::vector<te::Tensor> outs = ...;      // the group's outputs: what the kernel writes
//   te::Tensor anchor = lowered(anchor_call); // the tensor the anchor op's FLower returned
//   schedule::Config cfg;                     // defaults; or a tuning record's choices
//   schedule::Schedule s = schedule::schedule_anchor_cpu(outs, anchor, cfg);
//   ir::PrimFunc f = codegen::lower_to_ir(s, inputs_then_outputs, name);
//
// In kiln's lowering (relay/lower_graph.h) that is, in schedule_group: the anchor's te tensor is
// p.member_outputs[i][0] for the i with group.calls[i] == group.anchor; call this when
// anchor_template_name(tensor) is not "generic", else keep the generic schedule. For constant
// conv/dense weights, lower the anchor with te::ops::weight_prepack (te/ops/register_b.h) so
// the kernel does not repack them per call (nn.conv2d_NCHWc weights are packed by alter_layout).
//
// The anchor is the group's OutElementwiseFusable or Opaque op (conv, conv2d_NCHWc, dense,
// matmul, pool, softmax, a normalization, ...). What follows it in the group must be elementwise, broadcast or
// injective (e.g. conv + bias_add + add + relu): those stages are inlined into the output, and
// when the group has one output with the anchor's shape the anchor is computed tile by tile in
// registers inside that output's loops (conv2d_cpu.h, dense_cpu.h). Stages feeding the anchor
// that are not the anchor's own (a fused injective producer) are inlined too. Anchors this file
// has no template for, and groups without one of its ops, get schedule_generic_cpu.
//
// Every template declares its knobs through `cfg` (schedule/config.h), so the autotuner can
// explore them; a Config with no choices gives the defaults described in each template header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

Schedule schedule_anchor_cpu(const std::vector<te::Tensor>& outputs, const te::Tensor& anchor, Config& cfg);

// The template family schedule_anchor_cpu picks for an anchor ("conv", "conv_winograd", "conv_nchwc",
// "depthwise", "dense", "matmul", "pool", "global_pool", "softmax", "norm", "generic"), e.g. to
// name tuning tasks.
const char* anchor_template_name(const te::Tensor& anchor);

// ---- building blocks ----------------------------------------------------------------------

// A schedule for any group: every non-output stage without a reduction is inlined; reductions
// and outputs are computed at the root, each with schedule_loops_cpu.
Schedule schedule_generic_cpu(const std::vector<te::Tensor>& outputs);

// Parallel outer loops (fused into one) and a vectorized innermost loop (split by
// vector_width(extent, lanes) when that is at least 4) for a root stage; a reduction stage
// keeps its reduce loops inside and vectorizes nothing.
void schedule_loops_cpu(Schedule& s, const te::Tensor& t, int64_t lanes = 16);

// Inlines every compute stage reachable from `outputs` that has no reduction, is not an output
// and is not in `keep`.
void inline_injective(Schedule& s, const std::vector<te::Tensor>& outputs, const std::vector<te::Tensor>& keep);

// The input of t's op whose op name ends with `suffix` (a template finding the stages of its
// op: "<name>.pad", "<name>.blocked", ...); undefined when there is none.
te::Tensor input_with_suffix(const te::Tensor& t, const std::string& suffix);

// The largest divisor of n that is at most cap (at least 1).
int64_t largest_divisor(int64_t n, int64_t cap);
// The largest power of two dividing n that is at most cap: vector widths. (LLVM legalizes odd
// widths such as <56 x float> poorly: splats become insert chains and spill.)
int64_t vector_width(int64_t n, int64_t cap = 16);

// Vectorizes the stage's innermost root axis by vector_width(extent, lanes) lanes when that is
// at least 4. Returns whether it vectorized.
bool vectorize_innermost(Stage st, int64_t lanes = 16);

// Splits the stage's root axes [0, count) off for parallelism: fuses them into one loop and
// marks it parallel; returns it (the single axis when count == 1).
ir::IterVar fuse_parallel(Stage st, const std::vector<ir::IterVar>& axes);

// A pad or pack stage feeding a kernel, computed once at the root, parallel over its two outer
// axes; with `vectorize`, rows are vectorized (masked loads at a pad's borders). Nothing for an
// undefined tensor or a placeholder.
void compute_root_parallel(Schedule& s, const te::Tensor& t, bool vectorize);

// A padded input: at the root (compute_root_parallel), or computed at `at` of `consumer`, for
// just the region that iteration reads (rows vectorized too).
void place_pad(Schedule& s, const te::Tensor& pad, Stage consumer, const ir::IterVar& at, bool at_root);

}  // namespace kiln::schedule
