// CPU schedules of the integer conv and dense (te/ops/nn_int8.h), tensorized onto the target's
// int8 dot-product instruction.
//
// The innermost two loops of the blocked reduction, L output lanes x G input channels, are
// one int8_dot (ir/expr.h; vpdpbusd, AVX2's vpmaddwd, NEON's sdot: codegen_dot.cc), through
// the tensor intrinsic int8_dot_intrin. Around it, as the float conv (conv2d_cpu.h): a register
// tile of owr output columns x oc_blocks blocks of L channels accumulates in registers (scope
// "local" at the tile), the channel and window loops outside the tile, the tile written out
// through the zero-point correction and whatever tail was inlined (requantization).
//
// Knobs, defaults in brackets:
//   tile_ow    [W/owr, owr] output columns per tile (conv), tile_m rows per tile (dense)
//              [the register model's choice among divisors: register_tile.h's where the
//              dot is one instruction; AVX2's int16 pairs, two instructions a product and
//              a temporary register, rank by accumulators per issued instruction]
//   oc_blocks  1, 2 or 4 blocks of L output channels per tile (largest dividing)   [model]
#pragma once

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/schedule/tensor_intrin.h"
#include "kiln/target/target.h"
#include "kiln/te/ops/nn_int8.h"

namespace kiln::schedule {

// The layout of the target's int8 dot product: vpdpbusd on 512-bit vectors 16 lanes of four
// uint8 channels, AVX-VNNI 8 lanes of four uint8, AVX2 8 lanes of two int16 (vpmaddwd: the data
// widened once where it is packed, not per product), NEON's sdot 4 lanes of four int8; without
// one, the vector width's int32 lanes of four uint8 (plain widening code).
te::ops::Int8Layout int8_layout(const Target& target);

// c[j] (+)= sum_k a[k] * b[j, k], j < L, k < G: a [G] of layout.data, b [L, G] of `weight`
// (int8; int16 for the integer Winograd conv's transformed filter), c int32.
TensorIntrin int8_dot_intrin(const te::ops::Int8Layout& layout, ir::DataType weight = ir::DataType::i8());

// `conv` is what conv2d_int8 returned, in NCHW or blocked NCHW[y]c (a pixel's y outputs then
// written as one vector); `tiled` the stage of its shape carrying the tile loops (conv itself or
// the group's output with the tail). As schedule_conv_cpu.
void schedule_conv2d_int8_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target,
                              Config& cfg);

// As above for dense_int8.
void schedule_dense_int8_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& dense, const Target& target,
                             Config& cfg);

// As above for conv2d_winograd_int8_packed (te/ops/nn_winograd.h; AVX2's int16 pairs): the 16
// channel reductions register-tiled (tile_tw tiles of a row x oc_blocks blocks) and tensorized
// onto int8_dot with an int16 weight; the input transform at the root or per task (task_over,
// as the float Winograd conv), the inverse transform per output tile (tile_ow).
void schedule_conv_winograd_int8_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv,
                                     const Target& target, Config& cfg);

}  // namespace kiln::schedule
