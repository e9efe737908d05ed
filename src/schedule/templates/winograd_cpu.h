// CPU schedule of the Winograd conv2d F(2x2, 3x3) (te/ops/nn_winograd.h).
//
// A parallel task is one row of 2x2 output tiles (all output channels; task_over 0): it transforms the
// input rows the tiles read (V, a local buffer), runs the 16 channel reductions M = U * V with
// the direct conv's register tiling (oc_blocks co-channel vectors of U x tile_tw tiles, a
// broadcast of V per tile), and then writes the output tile by tile of tile_ow columns through
// the inverse transform and the inlined elementwise tail (bias, residual add, relu). V and M
// of one row (16*C*TW and 16*OC*TW floats) stay in the core's L2; U (16*C*OC floats) is read
// by every task: when it is over 1 MiB (task_over 1), the input is transformed once at the root
// and a task is oc_blocks channel blocks for the whole image instead, reading only its part of U.
// winograd_applies limits U to 4 MiB: layer4's 16 MiB measured 1.47 ms against 0.95 direct.
//
// Knobs, defaults in brackets:
//   tile_tw    [TW/twr, twr]: tiles per register tile of the reduction (twr up to the register
//              file less two; also widths that overhang TW, the last tile guarded)
//                                 [the register model's, register_tile.h: see winograd_cpu.cc]
//   oc_blocks  1, 2 or 4 channel blocks per register tile (largest dividing) [register model]
//   tile_ow    [OW/owr, owr]: output columns per write-out tile (owr <= 16)
//                                          [8 when it divides OW, else largest divisor <= 14]
//   vec_out    1: vectorize the write-out over columns (owr 8 or 16)   [1 when owr is 8 or 16]
//   pad_at     0: the padded input at the root; 1: each task pads the rows it reads      [0]
//   task_over  0: a task per row of tiles; 1: per oc_blocks channel blocks   [1 when U > 1 MiB]
// Measured (2 threads, resnet18, in the model): layer1-3's 3x3 stride-1 convs 0.72-0.80 ms
// direct -> 0.48-0.53 (layer1, 2) and 0.67-0.69 (layer3); oc_blocks 4 was 6-20% slower.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// `conv` is what conv2d_winograd_packed returned; `tiled` is conv or the group's output of its
// shape with the elementwise tail.
void schedule_conv_winograd_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target, Config& cfg);

// What the float and the integer Winograd conv (int8_cpu.h) share.

// The stages of a Winograd conv (te/ops/nn_winograd.h) found from its result; kiln::Error
// naming `what` (the template) when conv is not one or `tiled` has another shape.
struct WinogradStages {
  te::Tensor out_transform, gemm, in_transform, pad;  // Yt, M, V, the padded input (or undefined)
};
WinogradStages winograd_stages(const te::Tensor& conv, const te::Tensor& tiled, const char* what);

// tile_tw's widths past the divisors of TW: 2..max_tw tiles whose last one overhangs TW.
std::vector<int64_t> overhanging_widths(int64_t tw, int64_t max_tw);
// The knob task_over, default 1 when the transformed filter U (u_bytes) is over 1 MiB.
bool define_task_over(Config& cfg, int64_t u_bytes);

// The write-out: the output `tiled` in tiles of owr columns of 2x2 tiles, through the inverse
// transform `yt` of each, computed just before it in registers (lanes of co channels); parallel
// over rows of tiles, or with by_channels over ocp blocks of co channels. Returns the task loop.
ir::IterVar schedule_winograd_write_out(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv,
                                        const te::Tensor& yt, int64_t co, int64_t ocp, int64_t owr, bool by_channels,
                                        bool vec_out);

// The 16 channel reductions M [N, 16, OC/co, TH, TW, co] as a register tile, like the direct
// convs': in registers per task, ocp blocks x twr tile columns, both unrolled. The template
// orders the loops, its channel loops between the outer and the inner ones.
struct WinogradGemmTile {
  Stage stage;
  ir::IterVar n, e, row, block_outer, column_outer, block_inner, column_inner, lane;
};
WinogradGemmTile tile_winograd_gemm(Schedule& s, const te::Tensor& m, Stage out, const ir::IterVar& task, int64_t ocp,
                                    int64_t twr);

}  // namespace kiln::schedule
