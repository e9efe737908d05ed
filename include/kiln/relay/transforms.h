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
