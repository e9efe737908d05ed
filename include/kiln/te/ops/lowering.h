// Lowering of graph ops to te: the callable every relay op's lowering slot holds
// (relay/op.h, OpDef::lower), registered by the op library.
//
//   const relay::OpDef& op = relay::get_op("nn.conv2d");
//   auto lower = std::any_cast<te::ops::FLower>(op.lower);
//   std::vector<te::Tensor> outs = lower(inputs, call->attrs, call->checked_type);
//
// A lowering gets the te tensors of the call's arguments (same shapes/dtypes as the relay
// argument types), the call's attributes and its inferred output type, and returns the output
// tensor(s) (one per tuple field for tuple-typed ops). It must produce exactly that type, and
// throw kiln::Error naming the op for an attribute/type combination it does not support.
#pragma once

#include <functional>
#include <vector>

#include "kiln/relay/attrs.h"
#include "kiln/relay/type.h"
#include "kiln/te/tensor.h"

namespace kiln::te::ops {

using FLower = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs, const relay::Attrs& attrs,
                                                 const relay::Type& out_type)>;

// Fills the lowering slot of every op the library implements (idempotent, call before use).
void register_lowerings();

}  // namespace kiln::te::ops
