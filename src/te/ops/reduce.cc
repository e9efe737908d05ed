#include "kiln/te/ops/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/support/error.h"
#include "kiln/te/ops/elemwise.h"
#include "kiln/te/ops/transform.h"
#include "kiln/te/reduce.h"

namespace kiln::te::ops {

using ir::DataType;
using ir::Expr;
using ir::Var;

namespace {

// Output shape and, per input dim, the output position of its index (-1: reduced and dropped).
struct ReducedLayout {
  std::vector<int64_t> shape;
  std::vector<int> out_pos;
  std::vector<bool> reduced;
};

ReducedLayout reduced_layout(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims,
                             const std::string& name) {
  int nd = x.ndim();
  ReducedLayout l;
  l.reduced.assign(nd, false);
  for (int64_t a : axes) {
    KILN_USER_CHECK(a >= 0 && a < nd) << name << ": axis " << a << " is out of range for rank " << nd;
    KILN_USER_CHECK(!l.reduced[a]) << name << ": axis " << a << " is listed twice";
    l.reduced[a] = true;
  }
  for (int d = 0; d < nd; ++d) {
    if (!l.reduced[d] || keepdims) {
      l.out_pos.push_back(static_cast<int>(l.shape.size()));
      l.shape.push_back(l.reduced[d] ? 1 : x.shape()[d]);
    } else {
      l.out_pos.push_back(-1);
    }
  }
  if (l.shape.empty()) l.shape.push_back(1);
  return l;
}

DataType accumulate_type(DataType t) { return t.is_bool() ? DataType::u8() : compute_type(t); }

}  // namespace

Tensor reduce(const Tensor& x, ReduceKind kind, const std::vector<int64_t>& axes, bool keepdims,
              const std::string& name) {
  if (axes.empty()) return copy(x, name);
  DataType t = x.dtype();
  KILN_USER_CHECK(!t.is_bool() || kind == ReduceKind::Max || kind == ReduceKind::Min)
      << name << ": sum, mean and prod need numbers, " << x.name() << " is bool";
  ReducedLayout l = reduced_layout(x, axes, keepdims, name);
  // Reduce axes in dim order, so the innermost loop walks the innermost reduced dim.
  std::vector<ir::IterVar> rax;
  std::vector<int> rax_of(x.ndim(), -1);
  int64_t count = 1;
  for (int d = 0; d < x.ndim(); ++d) {
    if (!l.reduced[d]) continue;
    rax_of[d] = static_cast<int>(rax.size());
    rax.push_back(reduce_axis(x.shape()[d], "k" + std::to_string(d)));
    count *= x.shape()[d];
  }
  DataType acc_t = accumulate_type(t);
  bool needs_epilogue = kind == ReduceKind::Mean || acc_t != t;
  Tensor acc = compute(l.shape, [&](const std::vector<Var>& idx) {
    std::vector<Expr> src;
    for (int d = 0; d < x.ndim(); ++d) src.push_back(l.reduced[d] ? Expr(rax[rax_of[d]].var()) : Expr(idx[l.out_pos[d]]));
    Expr v = ir::cast(acc_t, x(src));
    switch (kind) {
      case ReduceKind::Sum:
      case ReduceKind::Mean: return te::sum(v, rax);
      case ReduceKind::Prod: return te::prod(v, rax);
      case ReduceKind::Max: return te::max(v, rax);
      case ReduceKind::Min: return te::min(v, rax);
    }
    return Expr();
  }, needs_epilogue ? name + ".acc" : name);
  if (!needs_epilogue) return acc;
  return compute(l.shape, [&](const std::vector<Var>& idx) {
    Expr v = acc(std::vector<Expr>(idx.begin(), idx.end()));
    if (kind == ReduceKind::Mean) {
      v = acc_t.is_floating() ? v / ir::make_const(acc_t, static_cast<double>(count))
                              : ir::truncdiv(v, ir::make_int(acc_t, count));
    }
    return ir::cast(t, v);
  }, name);
}

ir::CommReducer arg_reducer(DataType index_type, DataType value_type, bool is_min, bool select_last) {
  Var i0("i0", index_type), v0("v0", value_type), i1("i1", index_type), v1("v1", value_type);
  // Ties compare indices, which keeps the combiner commutative and the result independent of
  // the reduction order.
  Expr better = is_min ? v1 < v0 : v1 > v0;
  Expr tie_wins = select_last ? i1 > i0 : i1 < i0;
  Expr take_rhs = better || (ir::eq(v1, v0) && tie_wins);
  double worst = is_min ? INFINITY : -INFINITY;
  Expr id_value = value_type.is_floating() ? ir::make_float(value_type, worst)
                                           : (is_min ? ir::max_value(value_type) : ir::min_value(value_type));
  Expr id_index = select_last ? ir::make_int(index_type, -1) : ir::max_value(index_type);
  return ir::make_comm_reducer({i0, v0}, {i1, v1}, {ir::select(take_rhs, i1, i0), ir::select(take_rhs, v1, v0)},
                               {id_index, id_value});
}

Tensor arg_reduce(const Tensor& x, int64_t axis, bool keepdims, bool is_min, bool select_last,
                  const std::string& name) {
  ReducedLayout l = reduced_layout(x, {axis}, keepdims, name);
  DataType vt = accumulate_type(x.dtype());
  auto k = reduce_axis(x.shape()[axis], "k");
  ir::CommReducer r = arg_reducer(DataType::i64(), vt, is_min, select_last);
  std::vector<Tensor> outs = compute_multi(l.shape, [&](const std::vector<Var>& idx) {
    std::vector<Expr> src;
    for (int d = 0; d < x.ndim(); ++d) src.push_back(d == axis ? Expr(k) : Expr(idx[l.out_pos[d]]));
    return te::comm_reduce(r, {ir::cast(DataType::i64(), k), ir::cast(vt, x(src))}, {k});
  }, name + ".pair");
  // A one-output stage of its own: lowering needs every output of a multi-output op among the
  // kernel's arguments, and the value slot is no one's business.
  return compute(l.shape, [&](const std::vector<Var>& idx) {
    return outs[0](std::vector<Expr>(idx.begin(), idx.end()));
  }, name);
}

}  // namespace kiln::te::ops
