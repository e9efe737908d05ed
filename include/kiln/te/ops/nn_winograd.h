// The Winograd convolution F(2x2, 3x3) (Lavin & Gray, 2015): a 3x3 stride-1 conv2d computed
// per 2x2 output tile from a 4x4 input tile with 16 multiplies per input/output channel pair
// instead of 36, by transforming the input tile (V = Bt d B), the filter (U = G g Gt), taking
// 16 channel reductions M = sum_c U * V, and transforming back (Y = At M A). The transforms
// use only 0, +-1 and 1/2 (exact in float), so the rounding error stays that of the 16
// reductions over C plus a few additions: close to a direct convolution's.
//
// The filter transform reads only the weight: for a constant weight a graph compiler does it
// once, at compile time (lower/weight_packing.h). Stages of conv2d_winograd_packed:
//   <name>.pad           x zero-padded to 2*TH+2 rows by 2*TW+2 columns (TH, TW: tile counts)
//   <name>.wino_in       V [N, 16, C, TH, TW]: each tile's 16 transformed inputs
//   <name>.wino_gemm     M [N, 16, OC/co, TH, TW, co] = sum_c U[e, ob, c, :] * V[n, e, c, tile]
//   <name>.wino_out      Yt [N, OC/co, TH, 2, 2*TW, co]: the inverse transform, blocked
//   <name>               the result in NCHW: Yt[n, oc/co, oh/2, oh%2, ow, oc%co]
#pragma once

#include <cstdint>
#include <string>

#include "kiln/te/ops/nn_conv.h"

namespace kiln::te::ops {

inline constexpr const char* kWinogradInSuffix = ".wino_in";
inline constexpr const char* kWinogradGemmSuffix = ".wino_gemm";
inline constexpr const char* kWinogradOutSuffix = ".wino_out";

// The filter transform as a stage "<name>.wpack": w [OC, C, 3, 3] -> U [16, OC/co, C, co]
// (channels past OC are zero), for a weight that is not a compile-time constant.
Tensor winograd_weight_transform(const Tensor& w, int64_t co, const std::string& name = "conv2d");

// x [N, C, H, W] convolved by a transformed weight U [16, OC/co, C, co] (OC output channels,
// 3x3, stride 1, dilation 1, one group) -> [N, OC, OH, OW]; padded rows longer than
// row_multiple are widened to a multiple of it.
Tensor conv2d_winograd_packed(const Tensor& x, const Tensor& u, int64_t oc, const ConvNdAttrs& a, int64_t row_multiple,
                              const std::string& name = "conv2d");

// The same F(2x2, 3x3) exactly in integers, for int8 / uint8 data x int8 weights (an integer
// conv of a quantized model, te/ops/nn_int8.h's conv2d_int8 semantics: sum (x - zp) * w):
// the input transform's entries are 0 and +-1, the filter transform times 2 (2G) is integer,
// so U' = (2G) g (2G)t = 4U and M' = sum_c U' * V = 4M are exact, and Y = At M' A / 4 divides
// exactly. Every operand fits int16 (|V| <= 4 * 255 = 1020 from x - zp, |U'| <= 9 * 128 =
// 1152), each product in int32, and their sum over C channels while C <= kWinogradInt8MaxChannels.
// Stages as conv2d_winograd_packed's, in channel pairs for the int16 dot product (AVX2's
// vpmaddwd, int8_dot with group 2):
//   <name>.pad        x padded with the zero point
//   <name>.wino_in    V [N, 16, C/2, TH, TW, 2] int16 from x - zp (channel C, if odd, is 0)
//   <name>.wino_gemm  M' [N, 16, OC/L, TH, TW, L] int32 = sum U'[e, ob, cp, :, k] * V[n, e, cp, t, k]
//   <name>.wino_out   Yt [N, OC/L, TH, 2, 2*TW, L] int32 = (At M' A) / 4
//   <name>            [N, OC, OH, OW] int32
inline constexpr int64_t kWinogradInt8MaxChannels = 1800;  // 1800 * 2 * 1152 * 1020 / 2 < 2^31

// The integer filter transform as a stage "<name>.wpack": w [OC, C, 3, 3] int8 -> U' [16, OC/L,
// C/2, L, 2] int16 (zero past OC and C).
Tensor winograd_int8_weight_transform(const Tensor& w, int64_t lanes, const std::string& name = "conv_int8");

// x [N, C, H, W] int8/uint8 with zero point x_zero_point (x's dtype), U' as above for OC
// outputs (3x3, stride 1, dilation 1, one group) -> int32 [N, OC, OH, OW].
Tensor conv2d_winograd_int8_packed(const Tensor& x, const ir::Expr& x_zero_point, const Tensor& u, int64_t oc,
                                   const ConvNdAttrs& a, const std::string& name = "conv_int8");

}  // namespace kiln::te::ops
