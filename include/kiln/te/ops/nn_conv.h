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
// whole blocks and the padded channels are never read back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/relay/host_tensor.h"
#include "kiln/te/operation.h"

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

// The output-channel block conv_nd uses for `oc` output channels per group (groups > 1) or in
// total: 16 lanes when it fits, else a divisor that wastes the fewest vector lanes.
int64_t conv_channel_block(int64_t oc_per_group, int64_t groups);

// x [N, C, S...], w [OC, C/groups, K...] -> [N, OC, O...]; oc_block 0 picks
// conv_channel_block. Depthwise-like convolutions (one input channel per group) should use
// depthwise_conv_nd instead (a block of output channels would span groups).
Tensor conv_nd(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, int64_t oc_block = 0,
               const std::string& name = "conv");

// conv_nd with its weight already packed ([OC/co, C/groups, K..., co], as pack_conv_weight
// makes it): no "<name>.wpack" stage; `oc` is the number of output channels.
Tensor conv_nd_packed(const Tensor& x, const Tensor& w_packed, int64_t oc, const ConvNdAttrs& a,
                      const std::string& name = "conv");

// The packed weight conv_nd's "<name>.wpack" stage computes, on the host, for a constant weight
// [OC, C/groups, K...] (blocks of conv_channel_block; padded channels are zero).
relay::HostTensor pack_conv_weight(const relay::HostTensor& w, int64_t groups);

// One input channel per group (groups == C): out[n, oc] reads input channel oc / (OC / C).
// Stages: <name>.pad (if padded), <name> (the reduction, in NC[D]HW).
Tensor depthwise_conv_nd(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, const std::string& name = "dwconv");

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

}  // namespace kiln::te::ops
