// A small reference evaluator for graph ops on constant host tensors.
//
// The ONNX importer uses it to fold shape-like subgraphs (Shape -> Gather -> Unsqueeze -> Concat
// -> Reshape) while importing, so that every shape is static; fold_constants can use it for
// weights. It covers the elementwise, broadcast, injective and simple reduction ops; integer
// math is exact in int64, float math runs in double and rounds to the result dtype.
#pragma once

#include <optional>
#include <vector>

#include "kiln/relay/expr.h"

namespace kiln::relay {

// Whether evaluate_call can compute calls of this op.
bool can_evaluate(const OpDef& op);

// The value of `call` given the values of its tensor arguments, in order; std::nullopt when the
// op is not one the evaluator knows. The call must be typed with a TensorType (not a tuple).
std::optional<HostTensor> evaluate_call(const CallNode& call, const std::vector<HostTensor>& args);

}  // namespace kiln::relay
