// Private helpers of the op table (op_table.cc) and the files that fill it, one per op family:
// ops_elemwise.cc, ops_transform.cc, ops_reduce.cc, ops_nn.cc, ops_integer.cc, ops_quantize.cc.
#pragma once

#include <string>
#include <vector>

#include "kiln/lower/op_lowering.h"
#include "kiln/relay/attrs.h"
#include "kiln/relay/type.h"
#include "kiln/te/ops/nn_conv.h"
#include "kiln/te/ops/nn_int8.h"

namespace kiln::lower::detail {

// The files' lowerings are written in terms of the op library.
using namespace kiln::te::ops;  // NOLINT(google-build-using-namespace)
using te::Tensor;

// Adds `f` as the lowering of `op`, wrapped so that: the input count is checked against the op's
// registry entry, errors name the op (and its node, when the attrs carry it), and every output
// comes back with exactly the te shape of its output type (reshaped where only the arrangement
// of 1s differs).
void set_lowering(const std::string& op, OpLowering f);

// The element type of a tensor output type (KILN_CHECK that it is one).
ir::DataType out_dtype(const relay::Type& t);

// True for a te tensor that stands for a relay scalar (shape {1}) where an op's per-axis
// attribute has no entries: the op is then the identity.
bool scalar_with_empty_axes(const Tensor& x, size_t attr_entries);

// The window of a conv op's call (strides, padding, dilation, groups; output_padding for a
// transposed one).
ConvNdAttrs conv_attrs(const relay::Attrs& a, bool transpose);

// "NCHW" -> 0, "NCHW8c" -> 8 (relay's alter_layout convention).
int64_t layout_block(const std::string& s);

// An integer conv's blocks: NCHW (0) for nn.conv2d_integer, its data_layout and out_layout
// for alter_layout's nn.conv2d_integer_NCHWc.
Int8ConvIO integer_conv_io(const std::string& op, const relay::Attrs& a);

// A depthwise weight [C, 1, KY, KX] as [C/b, KY, KX, b] (the blocked depthwise conv's).
Tensor block_depthwise_weight(const Tensor& w, int64_t b, const std::string& name);

void add_elemwise_lowerings();
void add_transform_lowerings();
void add_reduce_lowerings();
void add_nn_lowerings();
void add_integer_lowerings();
void add_quantize_lowerings();

// The value of a te tensor standing for a relay scalar (its only element).
ir::Expr scalar_value(const Tensor& t);

}  // namespace kiln::lower::detail
