// ldmatrix_load (ldmatrix.h): which ldmatrix, if any, loads a lane's fragment registers.
//
// Every lane's element is checked by substituting the lane (0..31) into its index: the elements'
// distances from the first tile's first row must be the constants the instruction's layout puts
// there, so that what ldmatrix hands each lane is exactly what its own loads would read.
#include "ldmatrix.h"

#include <array>

#include "kiln/ir/functor.h"

namespace kiln::codegen {

std::optional<LdmatrixLoad> ldmatrix_load(const std::vector<ir::Expr>& elements, const ir::Var& lane,
                                          const ir::arith::Analyzer& analyzer, std::string* why) {
  auto fail = [&](const std::string& reason) -> std::optional<LdmatrixLoad> {
    if (why) *why = reason;
    return std::nullopt;
  };
  const int tiles = static_cast<int>(elements.size() / 2);
  if (elements.size() % 2 || (tiles != 2 && tiles != 4)) return fail("ldmatrix loads 2 or 4 registers of two elements");
  for (const ir::Expr& e : elements)
    if (e.dtype().is_vector()) return fail("an element's index is a vector");
  const ir::DataType index_type = elements[0].dtype();
  auto index_at = [&](int i, int l) {
    return ir::substitute(elements[i], ir::VarMap<ir::Expr>{{lane.get(), ir::make_int(lane.dtype(), l)}});
  };
  // Where register t's element h of lane l sits in tile t (the instruction's layout).
  const bool trans = [&] {
    const auto pair = ir::as_const_int(analyzer.simplify(index_at(1, 0) - index_at(0, 0)));
    return !pair || *pair != 1;
  }();
  auto row_of = [trans](int l, int h) { return trans ? 2 * (l % 4) + h : l / 4; };
  auto col_of = [trans](int l, int h) { return trans ? l / 4 : 2 * (l % 4) + h; };

  // Each element's distance from the first element of tile 0 (lane 0's element 0 in both
  // layouts: row 0, column 0).
  const ir::Expr base = index_at(0, 0);
  std::array<std::array<int64_t, 32>, 8> offset{};
  for (int i = 0; i < 2 * tiles; ++i)
    for (int l = 0; l < 32; ++l) {
      const auto d = ir::as_const_int(analyzer.simplify(index_at(i, l) - base));
      if (!d) return fail("element " + std::to_string(i) + " of lane " + std::to_string(l) + " is not a constant distance from lane 0's first");
      offset[i][l] = *d;
    }
  // Row r of tile t starts at its column-0 element, which lane (r * 4 or r / 2) holds.
  auto row_start = [&](int t, int r) {
    return trans ? offset[2 * t + r % 2][r / 2] : offset[2 * t][4 * r];
  };
  for (int t = 0; t < tiles; ++t)
    for (int l = 0; l < 32; ++l)
      for (int h = 0; h < 2; ++h)
        if (offset[2 * t + h][l] != row_start(t, row_of(l, h)) + col_of(l, h))
          return fail("register " + std::to_string(t) + " of lane " + std::to_string(l) + " is not in ldmatrix's layout " +
                      (trans ? "(.trans)" : "") + ": its element " + std::to_string(h) + " is not row " +
                      std::to_string(row_of(l, h)) + ", column " + std::to_string(col_of(l, h)) + " of its tile");
  // The rows a lane provides, in closed form: lane p gives row p % 8 of tile p / 8.
  const int64_t row_step = row_start(0, 1), tile1 = row_start(1, 0), tile2 = tiles == 4 ? row_start(2, 0) : 0;
  for (int t = 0; t < tiles; ++t)
    for (int r = 0; r < 8; ++r) {
      if (row_start(t, r) != (t % 2) * tile1 + (t / 2) * tile2 + r * row_step)
        return fail("the tiles' rows are not evenly spaced");
      if (row_start(t, r) % 8 != 0) return fail("a row does not start 16 bytes apart from the first");
    }
  const ir::Expr eight = ir::make_int(index_type, 8);
  if (!analyzer.can_prove(ir::eq(ir::floormod(base, eight), ir::make_zero(index_type))))
    return fail("the first row is not proved 16-byte aligned");
  const ir::Expr p = ir::cast(index_type, lane);
  ir::Expr row = base + ir::floormod(p, eight) * ir::make_int(index_type, row_step) +
                 ir::floormod(ir::floordiv(p, eight), ir::make_int(index_type, 2)) * ir::make_int(index_type, tile1);
  if (tiles == 4) row = row + ir::floordiv(p, ir::make_int(index_type, 16)) * ir::make_int(index_type, tile2);
  return LdmatrixLoad{tiles, trans, analyzer.simplify(row)};
}

}  // namespace kiln::codegen
