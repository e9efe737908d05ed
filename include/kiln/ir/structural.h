// Structural equality and hashing of IR trees. Variables are compared by identity unless
// map_free_vars is set, in which case two trees that differ only in a consistent renaming of
// their variables (and of the buffers they define) are equal.
#pragma once

#include <cstddef>

#include "kiln/ir/expr.h"
#include "kiln/ir/stmt.h"

namespace kiln::ir {

bool structural_equal(const Expr& a, const Expr& b, bool map_free_vars = false);
bool structural_equal(const Stmt& a, const Stmt& b, bool map_free_vars = false);
// Hash consistent with structural_equal(a, b, /*map_free_vars=*/true): variables hash by
// order of first appearance, not identity.
size_t structural_hash(const Expr& e);
size_t structural_hash(const Stmt& s);

}  // namespace kiln::ir
