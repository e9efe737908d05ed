// CPU schedule of depthwise_conv_nd (te/ops/nn_conv.h): each (image, channel) plane is one
// parallel task; its padded input plane (split into stride phases for strided convs, so reads
// stay contiguous) is built right there (compute_at: still in cache when read). Tiles of `ohr`
// output rows x `nv` vectors of vw columns (vw: see vec_lanes) accumulate in registers (the reduction stage, scope "local"; every row and vector
// is an independent FMA chain), then are written through the inlined tail.
//   vec_lanes  vw: 1 (scalars), a power of two 4..16 dividing W, or W's largest other divisor
//              in 5..16                 [the widest power of two; the other divisor if that is < 8]
//   tile_ow    [W/vw/nv, nv] vectors per tile row             [divisor of W/vw, <= 8 (16 scalars)]
//   tile_oh    [H/ohr, ohr] rows per tile                     [divisor of H, ohr x nv <= 8 (16)]
//   unroll_window  1: the kernel-window loops unrolled; 0: loops   [1]
#pragma once

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// `conv` is what depthwise_conv_nd returned; `tiled` is conv itself or the group's output of
// the same shape.
void schedule_depthwise_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target, Config& cfg);

}  // namespace kiln::schedule
