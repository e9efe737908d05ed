// CPU schedule of the op library's pooling (te/ops/nn_pool.h): one parallel task per
// (image, channel) plane, which pads its input plane (compute_at), reduces its windows and
// writes the plane through the average's divide and any inlined tail. Global pooling reduces
// each plane inside the task; read in partial blocks (te::ops::GlobalPartial, the CPU
// strategy's lanes x chains), the block's accumulators stay in registers (chains unrolled,
// lanes one vector) and fold at the end.
//   vec_ow         1: vectorize output columns: the widest power of two dividing W, or W's
//                  widest other divisor when that fills less than half a register   [1]
//   unroll_window  1: the window loops unrolled around the vector        [1]
#pragma once

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// `pool` is what a te::ops pool returned; `tiled` is pool itself or the group's output of the
// same shape.
void schedule_pool_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& pool, const Target& target, Config& cfg);

// A 2-d max/avg pool of blocked data [N, C/x, H, W, x] (te PoolNdAttrs::blocked): parallel over
// (image, channel block, rows of a task); tiles of tile_ow pixels, one vector of the block's
// channels each, the window unrolled; each task pads the rows it reads.
//   tile_ow    [W/nv, nv]                       [twice the FMA latency x issue rate's divisor]
//   task_rows  [H/r, r] output rows per task    [blocked_task_rows]
void schedule_pool_nchwc_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& pool, const Target& target,
                             Config& cfg);

}  // namespace kiln::schedule
