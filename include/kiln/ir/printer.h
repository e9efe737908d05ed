// Deterministic text form of the loop-level IR, so tests can assert on printed IR.
// Variables print by name; when two distinct variables share a name, the later ones get a
// numeric suffix (x, x_1, ...) in order of first appearance, so output never depends on
// addresses.
#pragma once

#include <ostream>
#include <string>

#include "kiln/ir/expr.h"
#include "kiln/ir/stmt.h"

namespace kiln::ir {

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);
std::string to_string(const PrimFunc& f);

std::ostream& operator<<(std::ostream& os, const Expr& e);
std::ostream& operator<<(std::ostream& os, const Stmt& s);
std::ostream& operator<<(std::ostream& os, const PrimFunc& f);

}  // namespace kiln::ir
