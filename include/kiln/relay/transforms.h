// Graph-level passes: each a pure Module -> Module function in its own file under
// src/relay/transforms/, named after its verb.
#pragma once

#include "kiln/relay/module.h"

namespace kiln::relay {

// Re-derives the type of every node from its op's type relation, bottom-up, and returns the
// module with nodes whose stored type differed rebuilt (the same module, node for node, when all
// types were already right). Errors are kiln::Error naming the node, op and input shapes.
Module infer_types(const Module& m);

}  // namespace kiln::relay

namespace kiln::relay {

// Evaluates every call whose arguments are all constants and whose op the constant evaluator
// knows (evaluate.h), replacing it by its value: weight transposes, casts of constants, shape
// arithmetic. A call whose result would be much bigger than its inputs (a broadcast or fill of
// a scalar into a big tensor) stays a call, so weights do not balloon.
Module fold_constants(const Module& m);

// Local rewrites that remove work without changing any value: identity and dropout (inference)
// disappear, reshape chains collapse into one reshape, transpose pairs compose (and vanish when
// they cancel), casts/reshapes/broadcasts/slices that change nothing, x + 0 and x * 1 with a
// constant 0 or 1 that does not broadcast x, single-input concatenates, and get-items of tuples.
Module simplify(const Module& m);

// Merges calls with the same op, the same argument nodes and equal attributes, and constants
// with equal bytes, so each distinct computation appears once (bottom-up, so chains merge).
Module eliminate_common_subexpr(const Module& m);

// Folds inference batch normalization, and constant per-channel scales and shifts, into the
// preceding convolution's weights and bias when that convolution has constant weights and no
// other user; a batch norm that follows no such convolution becomes x * scale + shift with
// per-channel constants (broadcast ops that fuse with their neighbours).
Module fold_batch_norm(const Module& m);

}  // namespace kiln::relay
