// Convolutions of the op library over 1 to 3 spatial dims (NC[D]HW data, OI[D]HW weights),
// their transposes (weights IO[D]HW) and depthwise convolution.
//
// conv_nd computes through a channel-blocked core so that CPU schedules can keep a block of
// output channels in one vector register (schedule/templates/conv2d_cpu.h):
//
//   <name>.pad      x zero-padded on the spatial dims (only when some pad is non-zero)
//   <name>.wpack    w repacked [OC/co, C/groups, K..., co]; reads only the weight, so a
//                   graph compiler may precompute it when the weight is a constant
//   <name>.blocked  the convolution in blocked layout [N, OC/co, O..., co] (the reduction)
//   <name>          the result in NC[D]HW: blocked[n, oc/co, o..., oc%co]
//
// When OC is not a multiple of co (groups == 1 only), the packed weight is zero-padded to
// whole blocks and the padded channels are never read back. The block co and the padded row
// width come from the target (ConvLayout; lower/strategy.h picks them: co is one vector
// register's lanes). lower/weight_packing.h packs a constant weight at compile time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/te/operation.h"
#include "kiln/te/ops/nn_dense.h"

namespace kiln::te::ops {

// Window of a convolution over d spatial dims: strides (d), padding (2d: all begins, then all
// ends), dilation (d), groups.
struct ConvNdAttrs {
  std::vector<int64_t> strides, padding, dilation;
  int64_t groups = 1;
  std::vector<int64_t> output_padding;  // conv_transpose only (d)
  size_t dims() const { return strides.size(); }
};

// Stage-name suffixes of conv_nd (the CPU templates find the stages by them).
inline constexpr const char* kPadSuffix = ".pad";
inline constexpr const char* kPackSuffix = ".wpack";
inline constexpr const char* kBlockedSuffix = ".blocked";

// The blocked layout of conv_nd's core and its padded input.
struct ConvLayout {
  int64_t oc_block = 1;      // co: output channels per block (conv_channel_block)
  int64_t row_multiple = 1;  // a padded row longer than this is widened to a multiple of it
};

// The output-channel block for `oc` output channels per group (groups > 1) or in total
// (groups 1): with groups 1 the power of two >= oc up to `lanes` (channels past oc are zero
// padding), with groups the largest divisor of the group's channels up to `lanes`.
int64_t conv_channel_block(int64_t oc_per_group, int64_t groups, int64_t lanes);

// x [N, C, S...], w [OC, C/groups, K...] -> [N, OC, O...]. Depthwise-like convolutions (one
// input channel per group) should use depthwise_conv_nd instead (a block of output channels
// would span groups).
Tensor conv_nd(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, const ConvLayout& layout,
               const std::string& name = "conv");

// conv_nd as one plain reduction in NC[D]HW over the padded input (<name>.pad, when padded):
// what GPU schedules tile themselves, with no channel blocks.
Tensor conv_nd_plain(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, const std::string& name = "conv");

// A 2-d convolution of one group as a matrix product over the im2col view (implicit GEMM): the
// batch_matmul (nn_dense.h) <name>.gemm[n, oh, oc, ow] = sum_q <name>.wmat[oc, q] *
// <name>.im2col[n, oh, q, ow], q running over (input channel, ky, kx), and <name>[n, oc, oh, ow]
// its transpose. Both views are index arithmetic over the padded input (<name>.pad) and the
// weight, materialized only where a schedule caches them (GPU shared-memory tiles,
// schedule/templates/matmul_gpu.h). float16 / bfloat16 sums run in float32 (<name>.gemm.acc);
// with `pad` (tensor-core tiles), OC, OW and q are padded as batch_matmul pads M, N and K.
Tensor conv2d_gemm(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, const std::string& name = "conv2d",
                   const ProductPad& pad = {});

// conv_nd with its weight already packed ([OC/co, C/groups, K..., co], lower/weight_packing.h):
// no "<name>.wpack" stage; `oc` is the number of output channels, co the packed block.
Tensor conv_nd_packed(const Tensor& x, const Tensor& w_packed, int64_t oc, const ConvNdAttrs& a,
                      int64_t row_multiple, const std::string& name = "conv");

// One input channel per group (groups == C): out[n, oc] reads input channel oc / (OC / C).
// Stages: <name>.pad (if padded; rows widened to a multiple of row_multiple), <name> (the
// reduction, in NC[D]HW).
Tensor depthwise_conv_nd(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, int64_t row_multiple,
                         const std::string& name = "dwconv");
// depthwise_conv_nd with each value read from x passed through `map` as the padded plane is
// made (null: as it is; the padding is a zero of `acc`, map's result type), the products and
// sums in `acc` and the result cast to `out` (then the reduction is "<name>.acc"): the integer
// depthwise conv (nn_int8.h) sums x - zero point this way.
Tensor depthwise_conv_nd_mapped(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, int64_t row_multiple,
                                const std::string& name, const std::function<ir::Expr(const ir::Expr&)>& map,
                                ir::DataType acc, ir::DataType out);

// x [N, C, S...], w [C, OC/groups, K...] -> [N, OC, O...] with O = (S-1)*s + d*(K-1) + 1
// - pad_begin - pad_end + output_padding. Stages: <name>.dilated (x with stride-1 zeros
// between elements and the border the kernel needs), <name> (a direct convolution of that with
// the flipped kernel).
Tensor conv_transpose_nd(const Tensor& x, const Tensor& w, const ConvNdAttrs& a,
                         const std::string& name = "conv_transpose");

// The blocked-layout convolution a graph compiler's alter_layout pass can switch CPU convs to
// (TVM's NCHW[x]c): x [N, C/ci, H, W, ci], w [OC/co, C/ci, KH, KW, ci, co] -> [N, OC/co, OH,
// OW, co], groups 1. Weights in this layout need no repacking per call (fold the relayout of a
// constant weight at compile time: reshape [OC/co, co, C/ci, ci, KH, KW] + transpose
// (0, 2, 4, 5, 3, 1)). Stages: <name>.pad (when padded), <name> (the reduction).
Tensor conv2d_nchwc(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, const std::string& name = "conv2d_nchwc");

// Depthwise convolution (one channel per group, multiplier 1) in the blocked layout: x [N, C/b,
// H, W, b], w [C/b, KH, KW, b] -> [N, C/b, OH, OW, b]. The channels of a block are a vector's
// lanes, so strided windows need no gathers. Stages: <name>.pad (when padded), <name>.
Tensor depthwise_conv2d_nchwc(const Tensor& x, const Tensor& w, const ConvNdAttrs& a,
                              const std::string& name = "dwconv2d_nchwc");
// depthwise_conv2d_nchwc over a mapped plane, as depthwise_conv_nd_mapped (always a
// "<name>.pad" stage then).
Tensor depthwise_conv2d_nchwc_mapped(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, const std::string& name,
                                     const std::function<ir::Expr(const ir::Expr&)>& map, ir::DataType acc,
                                     ir::DataType out);

}  // namespace kiln::te::ops
