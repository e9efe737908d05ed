// Integer convolution and dense of quantized models: int8 or uint8 data x int8 weights, summed
// exactly in int32, as ONNX's ConvInteger / MatMulInteger define them:
//
//   out[n, oc, y, x] = sum (x[n, c, y', x'] - x_zero_point) * w[oc, c, ky, kx]   (conv2d_int8)
//   out[..., m, n]   = sum_k (x[..., m, k] - x_zero_point) * w[n, k]             (dense_int8)
//
// They compute in the layouts the int8_dot intrinsic reads (ir/expr.h: G products per int32
// lane, G the layout's group of channels), so a CPU schedule can tensorize the innermost (lane,
// G channels) loops onto vpdpbusd, AVX2's vpmaddwd or NEON's sdot (schedule/templates/int8_cpu.h):
//
//   <name>.pack     the data as Int8Layout::data (uint8 for vpdpbusd's unsigned operand:
//                   x + 128 from int8; int8 for sdot: x - 128 from uint8; int16 for vpmaddwd,
//                   either unshifted) in blocks of G channels [N, C/G, H', W', G] (conv: padded
//                   with the zero point) or [..., M, K/G, G] (dense); channels past C hold the
//                   zero point
//   <name>.wpack    w as [OC/L, C/G, KY, KX, L, G] (conv) or [N/L, K/G, L, G] (dense): for one
//                   block of L outputs and G channels, G*L contiguous bytes; zero-padded; it
//                   reads only the weight (precomputed for a constant one)
//   <name>.wsum     sum of each output's weights [OC/L * L]: the zero point's share,
//                   subtracted once per output instead of once per product
//   <name>.blocked  sum pack * wpack in [N, OC/L, OY, OX, L] (conv) or [..., M, N/L, L]
//   <name>          blocked - shifted zero point * wsum, in NCHW / [..., M, N]
//
// Weights must be int8 with a zero point of 0 (symmetric, as ONNX Runtime's quantizer makes
// them); asymmetric weights stay on the float path (the graph pass that picks these ops says so).
#pragma once

#include <cstdint>
#include <string>

#include "kiln/ir/dtype.h"
#include "kiln/ir/expr.h"
#include "kiln/te/ops/nn_conv.h"
#include "kiln/te/operation.h"

namespace kiln::te::ops {

inline constexpr const char* kInt8PackSuffix = ".pack";
inline constexpr const char* kInt8WeightSumSuffix = ".wsum";

// Picked from the target's dot-product instruction by schedule/templates/int8_cpu.h.
struct Int8Layout {
  int64_t lanes = 16;                     // L: int32 outputs of one int8_dot
  ir::DataType data = ir::DataType::u8();  // what int8_dot's `a` operand is: uint8, int8 or int16
  int64_t group = 4;                      // G: channels per int32 lane, 4 (8-bit data) or 2 (int16)
};

// Where an integer conv's data comes from and its result goes: NCHW (0), or relay's blocked
// NCHW[b]c layout ([N, C/b, H, W, b], b > 0) that alter_layout picks on CPUs (an output block of
// L writes each int8_dot's lanes as they are, one contiguous vector per pixel).
struct Int8ConvIO {
  int64_t in_block = 0;
  int64_t out_block = 0;
};

// x [N, C, H, W] int8/uint8, w [OC, C, KY, KX] int8 (groups 1), x_zero_point of x's dtype
// (a constant or a load of a scalar tensor) -> int32 [N, OC, OY, OX]. `weight_sums`, when
// defined, is int32 [OC]: each output's sum of weights, precomputed for a constant weight (the
// graph pass computes it); undefined, the stage <name>.wsum computes it from the packed weight.
// With `io`'s blocks, x is [N, C/b, H, W, b] and the result [N, OC/b', OY, OX, b'].
Tensor conv2d_int8(const Tensor& x, const Tensor& w, const ir::Expr& x_zero_point, const ConvNdAttrs& a,
                   const Int8Layout& layout, const std::string& name = "conv_int8",
                   const Tensor& weight_sums = Tensor(), const Int8ConvIO& io = {});
// conv2d_int8 with w already packed [OC/L, C/G, KY, KX, L, G] (lower/weight_packing.h);
// `oc` output channels.
Tensor conv2d_int8_packed(const Tensor& x, const Tensor& w_packed, int64_t oc, const ir::Expr& x_zero_point,
                          const ConvNdAttrs& a, const Int8Layout& layout, const std::string& name,
                          const Tensor& weight_sums, const Int8ConvIO& io = {});

// The depthwise integer conv (groups == C, one input channel per group): x [N, C, H, W]
// int8/uint8, w [C*m, 1, KY, KX] int8, or those values as float32 (packed at compile time) ->
// int32 [N, C*m, OY, OX] = sum (x - x_zero_point) * w; blocked, x [N, C/b, H, W, b] and w
// [C/b, KY, KX, b] -> [N, C/b, OY, OX, b]. No dot-product instruction fits one channel's window,
// so it is depthwise_conv_nd's (depthwise_conv2d_nchwc's) reduction, and their CPU schedules,
// over a plane of x - x_zero_point (<name>.pad, the padding 0): in float32 when every partial sum
// is an integer below 2^24 (taps * 255 * 128 < 2^24: up to 514 taps), so the sums are exact and
// the products are FMAs; in int32 for larger windows. <name>.acc is the sum, <name> its int32
// value. `row_multiple` widens NCHW planes' rows.
Tensor depthwise_conv2d_int8(const Tensor& x, const Tensor& w, const ir::Expr& x_zero_point, const ConvNdAttrs& a,
                             int64_t row_multiple, const std::string& name = "dwconv_int8");

// x [..., M, K] int8/uint8, w [N, K] int8 -> int32 [..., M, N]; weight_sums as above, [N].
Tensor dense_int8(const Tensor& x, const Tensor& w, const ir::Expr& x_zero_point, const Int8Layout& layout,
                  const std::string& name = "dense_int8", const Tensor& weight_sums = Tensor());
// dense_int8 with w already packed [N/L, K/G, L, G]; `n` outputs.
Tensor dense_int8_packed(const Tensor& x, const Tensor& w_packed, int64_t n, const ir::Expr& x_zero_point,
                         const Int8Layout& layout, const std::string& name, const Tensor& weight_sums);

// A weight [O, C, K...] (conv [OC, C, KY, KX], dense [N, K]) packed [O/L, C/G, K..., L, G] as a
// te stage (<name>.wpack), zero-padded; lower/weight_packing.h's pack_int8_weight packs a
// constant one the same way at compile time.
Tensor pack_int8_weight(const Tensor& w, int64_t lanes, int64_t group, const std::string& name);

}  // namespace kiln::te::ops
