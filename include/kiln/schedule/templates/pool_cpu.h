// CPU schedule of the op library's pooling (te/ops/nn_pool.h): one parallel task per
// (image, channel) plane, which pads its input plane (compute_at), reduces its windows and
// writes the plane through the average's divide and any inlined tail. Global pooling reduces
// each plane inside the task; read in partial blocks (te::ops::GlobalPartial, the CPU
// strategy's lanes x chains), the block's accumulators stay in registers (chains unrolled,
// lanes one vector) and fold at the end. Output rows are vectorized over columns when the
// stride is 1.
//   vec_ow     1: vectorize output columns (stride-1 windows only)   [1]
#pragma once

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// `pool` is what a te::ops pool returned; `tiled` is pool itself or the group's output of the
// same shape.
void schedule_pool_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& pool, const Target& target, Config& cfg);

}  // namespace kiln::schedule
