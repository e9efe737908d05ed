// GPU schedule of a 2-d depthwise convolution (te::ops::depthwise_conv_nd: one input channel per
// group, NCHW). Knobs (schedule/config.h):
//
//   tile_h, tile_w   the block's tile of one output channel plane: tile_h 1 .. 32, tile_w 4 .. 64
//                    (powers of two)      default 8 x 32, smaller for a smaller plane
//   threads          threads per block: 32 .. the target's max_threads_per_block
//                    default half the tile (two outputs a thread), 32 .. 128
//                    (at most the tile: more threads would have nothing to compute)
//
// A block computes a tile_h x tile_w tile of one (image, channel) plane; the blocks of every
// plane and tile are one flat blockIdx.x (no 65535 limit of grid y for N x C). Its threads
// first copy the input tile with its halo (the padded input's rows and columns the tile's
// windows read; padding computed on the fly) into shared memory together (cooperative fetch),
// then each computes every threads-th output of the tile, the window summed in a register, and
// writes it through any elementwise tail fused after the conv (bias, relu). kiln::Error when
// the halo tile exceeds the target's static shared memory.
#pragma once

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// A GpuAnchorTemplate (generic_gpu.h): `conv` is what depthwise_conv_nd returned (a float16
// conv's rounding of its float32 sum included), `tiled` conv itself or the group's output of
// its shape.
void schedule_depthwise_gpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target,
                            Config& cfg);

}  // namespace kiln::schedule
