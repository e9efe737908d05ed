// The op table of the lowering layer: the te compute definition (te/ops) of every graph op kiln
// implements, by op name. What a call of the op computes, independent of the target; how a
// group's anchor is computed on a target (a blocked conv, Winograd, packed weights) is the
// strategy's choice (lower/strategy.h), which may replace the table's lowering for that call.
//
//   const lower::OpLowering* f = lower::find_op_lowering(call->op_name());
//   std::vector<te::Tensor> outs = (*f)(argument_tensors, call->attrs, call->type);
//
// A lowering gets the te tensors of the call's arguments (the shapes and dtypes of the relay
// argument types; a relay scalar is a te tensor of shape [1]), the call's attributes and its
// inferred type, and returns one tensor per output (per tuple field), of exactly the te shape
// of that type. Errors name the op (and its graph node, when the attrs carry it); an attribute
// combination kiln does not implement is an UnsupportedError.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/relay/attrs.h"
#include "kiln/relay/type.h"
#include "kiln/te/tensor.h"

namespace kiln::lower {

using OpLowering = std::function<std::vector<te::Tensor>(const std::vector<te::Tensor>& inputs, const relay::Attrs& attrs,
                                                         const relay::Type& out_type)>;

// The lowering of graph op `op`; nullptr where kiln has none (an unsupported op).
const OpLowering* find_op_lowering(const std::string& op);

// Every op with a lowering, sorted.
std::vector<std::string> lowered_ops();

// The te shape of a relay tensor type: its shape, or {1} for a scalar. kiln::Error for a tuple
// type; UnsupportedError for an empty tensor (a dim of 0).
std::vector<int64_t> te_shape(const relay::Type& t);

}  // namespace kiln::lower
