// ldmatrix: one warp-wide load of 8 x 8 tiles of 16-bit elements from shared memory into the
// lanes' registers in the layout of the mma operands (PTX ISA, "Warp-level matrix load
// instruction: ldmatrix"). The CUDA printer uses it for the operands of ir::kMmaSync when it can
// prove that ldmatrix hands every lane exactly the elements the mma's per-lane loads name.
//
// ldmatrix.sync.aligned.m8n8.x{N}[.trans].shared.b16 loads N tiles; lane 8 t + r provides the
// address of row r of tile t (each row 8 contiguous elements, 16-byte aligned). Lane l receives
// in its register t two elements of tile t: without .trans those at (row l / 4, columns
// 2 (l % 4) and 2 (l % 4) + 1), with .trans those at (rows 2 (l % 4) and 2 (l % 4) + 1,
// column l / 4), the first in the low half.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/arith.h"
#include "kiln/ir/expr.h"

namespace kiln::codegen {

struct LdmatrixLoad {
  int tiles = 0;       // N: 2 or 4, one register each
  bool trans = false;  // .trans
  ir::Expr row;        // the flat element index of the row the lane provides, a function of the lane
};

// `elements`: the flat indices of the 16-bit elements a lane puts in its registers, two per
// register (the low half first), functions of `lane` (0..31), all in one shared buffer whose
// start is 16-byte aligned. The ldmatrix that loads exactly those into every lane, or nullopt
// with the reason in `why`. `analyzer` knows the variables around (it proves the rows aligned).
std::optional<LdmatrixLoad> ldmatrix_load(const std::vector<ir::Expr>& elements, const ir::Var& lane,
                                          const ir::arith::Analyzer& analyzer, std::string* why);

}  // namespace kiln::codegen
