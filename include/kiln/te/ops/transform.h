// Injective compute definitions of the op library (part A): data movement where every output
// element is one input element (or a fill value). Shapes, axes and positions are static and
// normalized (no -1, no negative axes), as the relay ops hold them.
//
// Data-dependent indices (take, gather_elements, gather_nd, one_hot) count from the end when
// negative, as in ONNX, and are clamped into range: an out-of-range index reads a valid element
// instead of faulting (ONNX leaves the result undefined).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/te/operation.h"

namespace kiln::te::ops {

// x with another shape of the same element count (row-major order). Dimension groups that map
// onto each other directly (e.g. inserted or removed 1s) are indexed without div/mod.
Tensor reshape(const Tensor& x, const std::vector<int64_t>& newshape, const std::string& name = "reshape");

// out[i_0, ..., i_n] = x[j] with j[axes[d]] = i_d.
Tensor transpose(const Tensor& x, const std::vector<int64_t>& axes, const std::string& name = "transpose");

// The inputs joined along `axis` (equal dims elsewhere, one dtype).
Tensor concatenate(const std::vector<Tensor>& inputs, int64_t axis, const std::string& name = "concatenate");

// Consecutive pieces of `sizes` elements along `axis` (positive sizes adding up to the dim).
std::vector<Tensor> split(const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes,
                          const std::string& name = "split");

// out[i] = x[begin + i * stride] per axis (stride may be negative); the output shape follows.
Tensor strided_slice(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                     const std::vector<int64_t>& strides, const std::string& name = "strided_slice");

// x broadcast (numpy rules) to `shape`.
Tensor broadcast_to(const Tensor& x, const std::vector<int64_t>& shape, const std::string& name = "broadcast_to");

// x repeated reps[d] times along each axis.
Tensor tile(const Tensor& x, const std::vector<int64_t>& reps, const std::string& name = "tile");

enum class PadMode { Constant, Reflect, Edge, Wrap };
// x grown by before[d] / after[d] elements per axis (negative values crop). Constant fills with
// `value`; Reflect mirrors without repeating the edge (pads smaller than the dim); Edge repeats
// the edge; Wrap continues periodically.
Tensor pad_with(const Tensor& x, const std::vector<int64_t>& before, const std::vector<int64_t>& after, PadMode mode,
                double value = 0.0, const std::string& name = "pad");
// x grown by before[d] / after[d] (>= 0) elements per axis, filled with `value`, where x is read
// only where the index falls inside it (no clamped indices): a vectorized loop over the last
// dim becomes masked vector loads instead of gathers. The padded inputs of convolutions.
// `map`, when set, applies to every value read from x (`value`, the padding, must have its
// type): the plane of an integer conv's values less their zero point.
Tensor pad_masked(const Tensor& x, const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                  const ir::Expr& value, const std::string& name = "pad",
                  const std::function<ir::Expr(const ir::Expr&)>& map = nullptr);

// NCHW [N, C, H, W] -> [N, C/b^2, H*b, W*b]. DCR (crd false): depth is (row, col, channel);
// CRD: (channel, row, col).
Tensor depth_to_space(const Tensor& x, int64_t block, bool crd, const std::string& name = "depth_to_space");
// NCHW [N, C, H, W] -> [N, C*b^2, H/b, W/b], depth ordered (row, col, channel) as ONNX does.
Tensor space_to_depth(const Tensor& x, int64_t block, const std::string& name = "space_to_depth");

// Between NCHW (block 0) and blocked NCHW[x]c (block x: [N, C/x, H, W, x], channel c at
// [c / x, ..., c % x]), in either direction or from one block to another.
Tensor layout_transform(const Tensor& x, int64_t src_block, int64_t dst_block,
                        const std::string& name = "layout_transform");

// Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims, zeroes the rest.
Tensor trilu(const Tensor& x, bool upper, int64_t k, const std::string& name = "trilu");

// ONNX Gather: out = data[:axis] + indices.shape + data[axis+1:], picking along `axis`.
Tensor take(const Tensor& data, const Tensor& indices, int64_t axis, const std::string& name = "take");
// out[i] = data[i with i[axis] replaced by indices[i]]; out has the shape of indices.
Tensor gather_elements(const Tensor& data, const Tensor& indices, int64_t axis,
                       const std::string& name = "gather_elements");
// ONNX GatherND with batch_dims.
Tensor gather_nd(const Tensor& data, const Tensor& indices, int64_t batch_dims, const std::string& name = "gather_nd");
// A `depth`-long axis inserted at `axis`: values[1] where it equals the index, values[0] elsewhere.
Tensor one_hot(const Tensor& indices, const Tensor& values, int64_t depth, int64_t axis,
               const std::string& name = "one_hot");

// A tensor of `shape` filled with `value` (given as a constant expression of the element type).
Tensor full(const std::vector<int64_t>& shape, const ir::Expr& value, const std::string& name = "full");
// A copy of x (identity, dropout in inference).
Tensor copy(const Tensor& x, const std::string& name = "copy");

}  // namespace kiln::te::ops
