// CPU schedule of conv_nd (te/ops/nn_conv.h): a register-blocked direct convolution.
//
// The output is tiled into (output-channel block x run of output columns) tiles; each tile is
// accumulated in vector registers by the blocked stage (scope "local", computed at the tile):
// for every input channel and kernel tap, one vector load of packed weights (co output
// channels) and one broadcast input value per output column feed co-wide FMAs. The tile is
// then written out through the unpacking stage and whatever elementwise tail was inlined into
// the tiled stage (bias, residual add, relu): a fused conv + bias + add + relu is one pass.
// The packed weight and the padded input are computed once per call at the root, in parallel.
//
// Knobs (schedule/config.h), defaults in brackets. A tile holds ohr x owr x oc_blocks vector
// accumulators; past about 28 they spill (slow but still correct).
//   tile_ow      [W/owr, owr]: output columns per tile (owr up to the register file; on NCHW
//                output, also vectorizable widths that overhang a row W they do not divide)
//                [the target's register model, register_tile.h; see conv2d_cpu.cc]
//   tile_oh      [H/ohr, ohr]: output rows per tile (ohr up to 4)  [1 unless rows raise the model's]
//   oc_blocks    1, 2 or 4 channel blocks per tile (largest dividing)   [register model]
//   reduce_order 0: input channels outside the kernel window; 1: inside it    [0]
//   unroll_kw    1: unroll the innermost kernel-window loop                   [0]
//   rows_outer   (2-d) 1: parallel tasks take rows outside channel blocks [1 when the weights fit L2/2]
//   tile_ic      [C/ci, ci] (2-d): C/ci > 1 makes a task one channel block's whole output
//                plane, accumulated in a local buffer chunk by chunk of ci input channels (rows
//                and columns tiled inside each chunk): every weight chunk feeds all rows at once
//                                  [ci 32 on planes <= 28x28 with long reductions, else C]
//   vec_out      1: vectorize the tile's write-out over columns; 0: unrolled scalars
//                                                                     [1 when owr is 8 or 16]
// Defaults measured on resnet18's shapes (1 thread, CPU time): each alternative tried
// (oc_blocks 4, reduce_order 1, unroll_kw 1, tile_oh 2 or 4 with narrower columns) was as fast
// or slower.
#pragma once

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// `conv` is what conv_nd returned; `tiled` is the stage carrying the tile loops: conv itself, or
// the group's output of conv's shape with the elementwise tail (already inlined or left to
// inline: this inlines conv's unpacking stage). Other stages are left alone.
void schedule_conv_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target, Config& cfg);

// The same register tiling for conv2d_nchwc (blocked layout in and out): the lanes of the output
// block are already innermost, so the write-out is contiguous. `tiled` is conv itself or the
// group's output of its shape. Knobs: tile_ow, tile_oh, oc_blocks, reduce_order (channel blocks
// outside or inside the window; the lanes of a channel block stay innermost), unroll_kw, pad_at
// (0: the padded input made at the root; 1: none, each load under the bounds test: bench_ops,
// 2 threads, Zen 4, resnet18's 3x3 s2 convs 4-11% faster, its 7x7 stem 1.7x slower).
void schedule_conv_nchwc_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target,
                             Config& cfg);

// Whether a tile's write-out (channels in lanes -> `columns` columns in lanes) is vectorized by
// default: a power of two of columns from half a register of `lanes` to a whole one (shared with
// the Winograd template).
bool vectorized_write_out(int64_t columns, int64_t lanes);

// Input channels per partial sum of a register tile whose sums run over cg channels x taps
// kernel taps (each chunk summed from zero, then added: less rounding error), or 0 for one
// running sum. Shared by the templates whose reductions run over channels (conv, Winograd).
int64_t sum_chunk_channels(int64_t cg, int64_t taps);

}  // namespace kiln::schedule
