// Well-formedness of the loop-level IR. Passes assume it and never re-check it; running verify()
// after a pass (the build driver can, tests do) turns a pass bug into an error that names the
// culprit instead of a wrong kernel.
#pragma once

#include "kiln/ir/stmt.h"

namespace kiln::ir {

// Throws kiln::InternalError naming the problem unless all of these hold:
//  - every Var used is defined and in scope at the use. Definitions: the params' data vars, loop
//    vars, let vars (LetStmt and Let), the data vars of allocated buffers (and Reduce axes).
//    A load or store uses its buffer's data var. AttrStmt nodes are references, not uses.
//  - every Var is defined once in the whole function (two loops sharing a loop var, two
//    allocations of one buffer, a let rebinding a var are errors).
//  - a load or store has as many indices as its buffer has dimensions, all integers.
//  - a load's dtype, and a store's value dtype, is the buffer's dtype with the lanes of the index.
//  - loop min and extent are scalar integers.
void verify(const PrimFunc& f);

}  // namespace kiln::ir
