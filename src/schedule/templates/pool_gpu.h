// GPU schedule of windowed pooling (te/ops/nn_pool.h: max, avg and lp pools over 1 to 3
// spatial dims of NC[D]HW data). Knobs (schedule/config.h):
//
//   threads              threads per block: 64 .. the target's max_threads_per_block
//                        default 256 (fewer for a small output: a multiple of the warp)
//   outputs_per_thread   neighbouring outputs along the last spatial axis each thread
//                        computes: 1, 2, 4, 8 (at most that axis, rounded up to a power of two)
//                        default 1
//
// The padded input is inlined into the window reduction (a bounds test per tap instead of a
// padded copy in memory). Each thread reduces its outputs' windows in registers (the window
// loops outside, its outputs unrolled inside, so neighbouring windows share the loads of
// their overlap when the compiler keeps them) and writes them through the average's divide and
// any elementwise tail fused after the pool. The outputs are one flat index over (image,
// channel, rows, column groups), split into blocks of `threads`; a column group past the
// row's end is guarded.
#pragma once

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// A GpuAnchorTemplate (generic_gpu.h): `pool` is what a te::ops windowed pool returned,
// `tiled` pool itself or the group's output of its shape. kiln::Error when `pool` is neither a
// reduction nor reads one of its shape. (Global pooling would be one serial thread per plane
// here: the strategy gives it to the generic GPU schedule, which reduces across threads.)
void schedule_pool_gpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& pool, const Target& target,
                       Config& cfg);

}  // namespace kiln::schedule
