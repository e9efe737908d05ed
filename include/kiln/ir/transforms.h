// Passes over the loop-level IR, one per file in src/ir/transforms/ (DESIGN.md). Each is a
// pure function PrimFunc -> PrimFunc (or Stmt -> Stmt). The build driver (codegen/build.h)
// runs them in this order after lowering:
//   flatten_storage -> simplify -> vectorize_loops -> unroll_loops -> simplify
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/stmt.h"

namespace kiln::ir {

// Rewrites every multi-dimensional BufferLoad/BufferStore into a one-dimensional access on a
// flattened buffer (row-major), and every Allocate to allocate the flat extent. The flattened
// buffer shares the original's data var. PrimFunc params keep their logical shapes: they are the
// kernel's signature.
PrimFunc flatten_storage(const PrimFunc& f);

// Simplifies every expression with the loop ranges and let bindings in scope; drops loops
// of extent 0, replaces loops of extent 1 by their body, folds ifs with a provable condition.
Stmt simplify(const Stmt& s);
PrimFunc simplify(const PrimFunc& f);

// Turns each ForKind::Vectorized loop of constant extent into vector IR: the loop var becomes a
// Ramp, loads/stores of contiguous or strided indices become vector accesses, scalars are
// broadcast. A loop it cannot vectorize (a nested loop inside, a condition on the lane) is
// turned into a serial loop, and the pass says so in `notes` if given.
Stmt vectorize_loops(const Stmt& s, std::vector<std::string>* notes = nullptr);
PrimFunc vectorize_loops(const PrimFunc& f, std::vector<std::string>* notes = nullptr);

// Replaces each ForKind::Unrolled loop of constant extent by copies of its body.
Stmt unroll_loops(const Stmt& s);
PrimFunc unroll_loops(const PrimFunc& f);

}  // namespace kiln::ir
