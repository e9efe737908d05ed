// CPU schedule of depthwise_conv_nd (te/ops/nn_conv.h): each (image, channel) plane is one
// parallel task; its padded input plane (split into stride phases for strided convs, so reads
// stay contiguous) is built right there (compute_at: still in cache when read). Tiles of `ohr`
// output rows x `nv` vectors of vw columns accumulate in registers (the reduction stage, scope
// "local"; every row and vector is an independent FMA chain), then are written through the
// inlined tail. Defaults come from the target (depthwise_defaults below); knobs:
//   vec_lanes      vw: 1 (scalars), a power of two from a quarter register to one register
//                  dividing W, or W's widest other divisor that fits a register
//                  [the widest power of two; the other divisor when the power of two fills
//                  less than half a register and the other is wider]
//   tile_ow        [W/vw/nv, nv] vectors per tile row      [the budget's divisor of W/vw]
//   tile_oh        [H/ohr, ohr] rows per tile              [ohr x nv <= the budget]
//                  (the budget: the FMA latency x issue rate, at least a quarter of the
//                  vector registers; ohr, nv <= `accumulators`, half the registers; twice
//                  these for scalars)
//   unroll_window  1: the kernel-window loops unrolled; 0: loops        [1]
//   tile_order     0: tiles row by row; 1: column strip by strip        [0]
//   pad_at         0: the padded plane built in its task; 1: all planes at the root; 2: the
//                  rows (columns) each outer tile reads, in that tile                  [0]
#pragma once

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// The template's default point for a W x H output plane on `target`.
struct DepthwiseDefaults {
  int64_t min_vector;        // narrowest vector width offered: a quarter register (at least 2)
  int64_t accumulators;      // the most a tile has: half the vector registers (at least the FMA
                             // latency x issue rate)
  int64_t vec_lanes;         // vw
  int64_t tile_ow, tile_oh;  // nv vectors x ohr rows: about the default budget of accumulators
};
DepthwiseDefaults depthwise_defaults(const Target& target, int64_t ow, int64_t oh);

// `conv` is what depthwise_conv_nd returned; `tiled` is conv itself or the group's output of
// the same shape.
void schedule_depthwise_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target, Config& cfg);

// depthwise_conv2d_nchwc (channel blocks in lanes): parallel over (image, channel block, row
// tiles); tiles of tile_oh rows x tile_ow pixels, one vector accumulator each, the window
// unrolled; the padded input made by each task for its rows (pad_at 0), at the root (1), or
// not at all: each tap loads under the bounds test (2).
void schedule_depthwise_nchwc_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target,
                                  Config& cfg);

}  // namespace kiln::schedule
