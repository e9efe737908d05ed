// Private helpers of the part-A lowerings (register_a*.cc).
#pragma once

#include <string>
#include <vector>

#include "kiln/relay/attrs.h"
#include "kiln/relay/type.h"
#include "kiln/te/ops/lowering.h"
#include "kiln/te/ops/register_a.h"

namespace kiln::te::ops::detail_a {

// Registers `f` as the lowering of `op`, wrapped so that: the input count is checked, errors
// name the op (and its node, when the attrs carry it), and every output comes back with exactly
// the te shape of its output type (reshaped where only the arrangement of 1s differs).
void set_lowering(const std::string& op, FLower f);

// The element type of a tensor output type (KILN_CHECK that it is one).
ir::DataType out_dtype(const relay::Type& t);

// True for a te tensor that stands for a relay scalar (shape {1}) where an op's per-axis
// attribute has no entries: the op is then the identity.
bool scalar_with_empty_axes(const Tensor& x, size_t attr_entries);

void register_elemwise_a();
void register_transform_a();
void register_reduce_a();

}  // namespace kiln::te::ops::detail_a
