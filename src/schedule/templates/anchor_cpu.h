// CPU schedules of fused groups with an anchor op (conv, dense, matmul, pool, softmax, a norm,
// ...: the group's OutElementwiseFusable or Opaque op), and the building blocks the templates
// share. Which template schedules a group is the lowering layer's strategy's choice
// (lower/strategy.h); every template reads the target's facts (lanes, registers, caches, cores)
// and declares its knobs through a Config, so the autotuner can explore them:
//
//   schedule::Config cfg;                     // defaults; or a tuning record's choices
//   schedule::Schedule s = schedule::schedule_anchor_cpu(outs, anchor, schedule_conv_cpu, target, cfg);
//
// What follows the anchor in the group must be elementwise, broadcast or injective (e.g. conv +
// bias_add + add + relu): those stages are inlined into the output, and when the group has one
// output with the anchor's shape the anchor is computed tile by tile in registers inside that
// output's loops (conv2d_cpu.h, dense_cpu.h). Stages feeding the anchor that are not the
// anchor's own (a fused injective producer) are inlined too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// A template for one anchor op: places the anchor's own stages (found by their name suffixes,
// "<name>.pad", "<name>.blocked", ...) with the tile loops on `tiled` (the anchor itself, or the
// group's single output of the anchor's shape, its elementwise tail inlined).
using AnchorTemplate = void (*)(Schedule& s, const te::Tensor& tiled, const te::Tensor& anchor, const Target& target,
                                Config& cfg);

// The schedule of a group with an anchor: `tmpl` for the anchor's stages, the rest inlined or
// given generic loops; a null `tmpl` gives schedule_generic_cpu.
Schedule schedule_anchor_cpu(const std::vector<te::Tensor>& outputs, const te::Tensor& anchor, AnchorTemplate tmpl,
                             const Target& target, Config& cfg);

// ---- building blocks ----------------------------------------------------------------------

// A schedule for any group: every non-output stage without a reduction is inlined; reductions
// and outputs are computed at the root, each with schedule_loops_cpu.
Schedule schedule_generic_cpu(const std::vector<te::Tensor>& outputs, const Target& target);

// Parallel outer loops (fused into one) and a vectorized innermost loop (split by
// vector_width(extent, lanes) when that is at least 4) for a root stage; a reduction stage
// keeps its reduce loops inside and vectorizes nothing.
void schedule_loops_cpu(Schedule& s, const te::Tensor& t, int64_t lanes);

// Inlines every compute stage reachable from `outputs` that has no reduction, is not an output
// and is not in `keep`.
void inline_injective(Schedule& s, const std::vector<te::Tensor>& outputs, const std::vector<te::Tensor>& keep);

// The input of t's op whose op name ends with `suffix` (a template finding the stages of its
// op: "<name>.pad", "<name>.blocked", ...); undefined when there is none.
te::Tensor input_with_suffix(const te::Tensor& t, const std::string& suffix);

// The largest divisor of n that is at most cap (at least 1).
int64_t largest_divisor(int64_t n, int64_t cap);
// The largest power of two dividing n that is at most cap (the target's lanes): vector widths.
// (LLVM legalizes odd widths such as <56 x float> poorly: splats become insert chains and spill.)
int64_t vector_width(int64_t n, int64_t cap);

// Vectorizes the stage's innermost root axis by vector_width(extent, lanes) lanes when that is
// at least 4. Returns whether it vectorized.
bool vectorize_innermost(Stage st, int64_t lanes);

// Splits the stage's root axes [0, count) off for parallelism: fuses them into one loop and
// marks it parallel; returns it (the single axis when count == 1).
ir::IterVar fuse_parallel(Stage st, const std::vector<ir::IterVar>& axes);

// Keeps the loops rolled: LLVM otherwise fully unrolls short reduction loops (a 3 x 3 window's
// ky and kx) around a register tile and keeps the unrolled steps' values live at once, past the
// register file.
void keep_rolled(Stage st, const std::vector<ir::IterVar>& loops);

// A pad or pack stage feeding a kernel, computed once at the root, parallel over its two outer
// axes; with lanes > 1, rows are vectorized (masked loads at a pad's borders). Nothing for an
// undefined tensor or a placeholder.
void compute_root_parallel(Schedule& s, const te::Tensor& t, int64_t lanes);

// A padded input: at the root (compute_root_parallel), or computed at `at` of `consumer`, for
// just the region that iteration reads (rows vectorized by `lanes` too).
void place_pad(Schedule& s, const te::Tensor& pad, Stage consumer, const ir::IterVar& at, bool at_root, int64_t lanes);

// Output rows per parallel task of a window op on blocked data [N, C/x, H, W, x] (blocked
// depthwise conv and pooling) whose padded input `pad` (undefined: none) each task makes for
// its rows: the most whole tiles of `ohr` rows whose padded input rows take at most an eighth
// of L2, leaving at least 4 tasks per core (more rows a task, fewer rows padded twice).
int64_t blocked_task_rows(const Target& target, const te::Tensor& out, const te::Tensor& pad, int64_t ohr);

// The loop nest of such a window op: `tiled` [N, C/x, OH, OW, x] in parallel tasks of `rows`
// output rows (a multiple of ohr), tiles of ohr rows x nv pixels (unrolled; the lanes
// vectorized); `core`, the window reduction (scope local), computed per tile with the window
// loops outside the tile's, all unrolled. Returns the task loop.
ir::IterVar schedule_blocked_window(Schedule& s, const te::Tensor& tiled, const te::Tensor& core, int64_t rows,
                                    int64_t ohr, int64_t nv);

}  // namespace kiln::schedule
