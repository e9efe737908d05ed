// Reductions of te: reduce axes and the reducers that consume them.
//
//   auto k = te::reduce_axis(K, "k");            // k in [0, K)
//   auto r = te::reduce_axis({1, 3}, "r");       // r in [1, 4): ir::Range{min, extent}
//   te::sum(A(i, k) * B(k, j), {k});
//   te::max(A(i, k), {k}, /*condition=*/k < i);  // only points where the condition holds
//
// A reduction must be the whole body of a compute (not nested inside another expression).
#pragma once

#include <string>
#include <vector>

#include "kiln/te/tensor.h"

namespace kiln::te {

// A reduce axis over [0, extent) or over the constant range {min, extent}; extent > 0.
IterVar reduce_axis(int64_t extent, std::string name = "k");
IterVar reduce_axis(const ir::Range& range, std::string name = "k");

// One-slot reductions; an undefined condition means every point takes part.
ir::Expr sum(ir::Expr source, std::vector<ir::IterVar> axis, ir::Expr condition = ir::Expr());
ir::Expr max(ir::Expr source, std::vector<ir::IterVar> axis, ir::Expr condition = ir::Expr());
ir::Expr min(ir::Expr source, std::vector<ir::IterVar> axis, ir::Expr condition = ir::Expr());
ir::Expr prod(ir::Expr source, std::vector<ir::IterVar> axis, ir::Expr condition = ir::Expr());

// A general commutative reduction: one source per reducer slot (matching the slot types);
// returns one Reduce per slot (value_index 0, 1, ...), to use as the bodies of compute_multi
// (or take [0] for a one-slot reducer).
std::vector<ir::Expr> comm_reduce(const ir::CommReducer& reducer, std::vector<ir::Expr> sources,
                                  std::vector<ir::IterVar> axis, ir::Expr condition = ir::Expr());

// The two-slot reducer (index, value) -> index of the largest value (first one on ties), as
// used by argmax: comm_reduce(argmax_reducer(i32, f32), {k, A(i, k)}, {k}).
ir::CommReducer argmax_reducer(ir::DataType index_type, ir::DataType value_type);

}  // namespace kiln::te
