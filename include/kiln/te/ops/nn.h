// Compute definitions of common neural-network operators (the op library's first members).
// Each returns the output tensor; intermediate stages (padding, reductions) are separate
// tensors reachable through the output's op, so schedules can inline or place them.
#pragma once

#include <array>
#include <string>

#include "kiln/te/operation.h"

namespace kiln::te::ops {

// C[M, N] = sum_k A[M, K] * B[K, N].
Tensor matmul(const Tensor& a, const Tensor& b, const std::string& name = "matmul");

// x padded with `value` by pad_before / pad_after elements per dimension.
Tensor pad(const Tensor& x, const std::vector<int64_t>& pad_before, const std::vector<int64_t>& pad_after,
           double value = 0.0, const std::string& name = "pad");

// Like pad, but x is read only where the index falls inside it (no clamped indices): a
// vectorized loop over the last dim becomes masked vector loads instead of gathers.
Tensor pad_masked(const Tensor& x, const std::vector<int64_t>& pad_before, const std::vector<int64_t>& pad_after,
                  const ir::Expr& value, const std::string& name = "pad");

struct Conv2dAttrs {
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 4> pad{0, 0, 0, 0};  // top, left, bottom, right
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
};

// NCHW convolution: x [N, C, H, W], w [OC, C/groups, KH, KW] -> [N, OC, OH, OW]. Depthwise is
// groups == C == OC. The padded input is a stage of its own (named "<name>.pad") when any pad.
Tensor conv2d_nchw(const Tensor& x, const Tensor& w, const Conv2dAttrs& attrs, const std::string& name = "conv2d");

struct Pool2dAttrs {
  std::array<int64_t, 2> kernel{2, 2};
  std::array<int64_t, 2> stride{2, 2};
  std::array<int64_t, 4> pad{0, 0, 0, 0};  // top, left, bottom, right
  bool count_include_pad = false;          // average pooling only
};

// Max / average pooling over the last two axes of NCHW.
Tensor max_pool2d_nchw(const Tensor& x, const Pool2dAttrs& attrs, const std::string& name = "max_pool2d");
Tensor avg_pool2d_nchw(const Tensor& x, const Pool2dAttrs& attrs, const std::string& name = "avg_pool2d");

// Softmax along the last axis: exp(x - max) / sum(exp(x - max)).
Tensor softmax_last_axis(const Tensor& x, const std::string& name = "softmax");

// Sum of x along `axis` (removed from the shape).
Tensor reduce_sum(const Tensor& x, int axis, const std::string& name = "sum");

}  // namespace kiln::te::ops
