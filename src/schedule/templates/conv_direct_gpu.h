// GPU schedule of a 2-d convolution computed directly on NCHW (te::ops::conv_nd_plain), for the
// convs the implicit GEMM (matmul_gpu.h) does not take: grouped ones that are not depthwise
// (ResNeXt, RegNet, ShuffleNet) and float16 / bfloat16 ones. Knobs (schedule/config.h):
//
//   tile_oc   the block's output channels, inside one group: the powers of two up to 64 that
//             divide a group's channels (any, for one group)          default up to 16
//   tile_h,   the block's output rows and columns: 1 .. 32 (powers of two)
//   tile_w    default: the output's width up to 16, and rows for about 1024 outputs a block
//             (at most the output's height); then rows, columns (to 8) and channels (to 4)
//             halve while the grid has fewer than two blocks per multiprocessor
//   tile_rc   the slice of the group's input channels staged in shared memory per step:
//             1 .. 32 (powers of two)     default 8 (fewer for fewer channels; then slices
//             and tiles shrink while the staged tiles take more than half the shared memory)
//   threads   threads per block: 32 .. the target's max_threads_per_block; default an eighth
//             of the tile's outputs, 64 .. 256 (at most the tile: more would have nothing to do)
//
// A block (blockIdx.x over images, groups and tiles) computes tile_oc x tile_h x tile_w
// outputs. For each slice of tile_rc input channels its threads together copy the input tile
// with its halo (the padded input's rows and columns the tile's windows read, strides and
// dilation included; padding computed on the fly) and the weights of the slice into shared
// memory (cooperative fetch), then each thread accumulates its register block of channels x
// rows x columns from there. The threads are split between channels (threadIdx.y) and pixels
// (threadIdx.x) so that a thread's register block has about as many channels as pixels: every
// shared value it loads is used that many times. An elementwise tail fused after the conv
// (bias, relu, a residual add) is computed from the registers. kiln::Error when the staged
// tiles exceed the target's shared memory.
#pragma once

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// A GpuAnchorTemplate (generic_gpu.h): `conv` is what conv_nd_plain returned for a 2-d conv (a
// float16 conv's rounding of its float32 sum included), `tiled` conv itself or the group's
// output of its shape.
void schedule_conv_direct_gpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target,
                              Config& cfg);

}  // namespace kiln::schedule
