#include "kiln/te/ops/nn_scan.h"

#include "kiln/support/error.h"
#include "kiln/te/reduce.h"

namespace kiln::te::ops {

using ir::Expr;
using ir::Var;

namespace {

Expr c32(int64_t v) { return Expr(static_cast<int>(v)); }
std::vector<Expr> as_exprs(const std::vector<Var>& v) { return std::vector<Expr>(v.begin(), v.end()); }

// An index value read from an integer tensor, made non-negative (ONNX counts negative indices
// from the end) and int32.
Expr normalized_index(const Expr& raw, int64_t dim) {
  Expr i = ir::cast(ir::DataType::i32(), raw);
  return ir::select(i < 0, i + c32(dim), i);
}

ir::CommReducer reducer_for(const std::string& reduction, ir::DataType t, const std::string& name) {
  if (reduction == "add") return ir::sum_reducer(t);
  if (reduction == "mul") return ir::prod_reducer(t);
  if (reduction == "max") return ir::max_reducer(t);
  if (reduction == "min") return ir::min_reducer(t);
  KILN_SUPPORTED(false) << name << ": reduction '" << reduction << "' is not supported";
  return nullptr;
}

// data[p] combined with the reduction of the matching updates (or replaced by the last one).
Expr combine(const std::string& reduction, const Expr& old, const Expr& reduced) {
  if (reduction == "add") return old + reduced;
  if (reduction == "mul") return old * reduced;
  if (reduction == "max") return ir::max(old, reduced);
  return ir::min(old, reduced);
}

// cumsum and cumprod: one reduction over the scanned axis up to (or from) each position.
Tensor cumulative(const Tensor& x, int64_t axis, bool exclusive, bool reverse, bool product, const std::string& name) {
  KILN_USER_CHECK(axis >= 0 && axis < x.ndim()) << name << ": axis " << axis << " is out of range for " << x.name();
  auto k = reduce_axis(x.shape()[axis], "k");
  return compute(x.shape(), [&](const std::vector<Var>& v) {
    std::vector<Expr> idx = as_exprs(v);
    idx[axis] = k;
    Expr i = v[axis];
    Expr cond = reverse ? (exclusive ? Expr(k) > i : Expr(k) >= i) : (exclusive ? Expr(k) < i : Expr(k) <= i);
    return product ? te::prod(x(idx), {k}, cond) : te::sum(x(idx), {k}, cond);
  }, name);
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive, bool reverse, const std::string& name) {
  return cumulative(x, axis, exclusive, reverse, false, name);
}

Tensor cumprod(const Tensor& x, int64_t axis, bool exclusive, bool reverse, const std::string& name) {
  return cumulative(x, axis, exclusive, reverse, true, name);
}

std::vector<Tensor> topk(const Tensor& x, int64_t k, int64_t axis, bool largest, const std::string& name) {
  KILN_USER_CHECK(axis >= 0 && axis < x.ndim()) << name << ": axis " << axis << " is out of range for " << x.name();
  int64_t n = x.shape()[axis];
  KILN_USER_CHECK(k >= 1 && k <= n) << name << ": k " << k << " is out of range for an axis of " << n;
  auto j = reduce_axis(n, "j");
  Tensor rank = compute(x.shape(), [&](const std::vector<Var>& v) {
    std::vector<Expr> other = as_exprs(v);
    other[axis] = j;
    Expr mine = x(as_exprs(v)), theirs = x(other);
    Expr beats = largest ? theirs > mine : theirs < mine;
    Expr tie = ir::eq(theirs, mine) && Expr(j) < v[axis];
    return te::sum(ir::make_int(ir::DataType::i32(), 1), {j}, beats || tie);
  }, name + ".rank");
  std::vector<int64_t> shape = x.shape();
  shape[axis] = k;
  auto pick = [&](bool index, const std::string& n2) {
    auto i = reduce_axis(n, "i");
    return compute(shape, [&](const std::vector<Var>& v) {
      std::vector<Expr> src = as_exprs(v);
      src[axis] = i;
      Expr value = index ? ir::cast(ir::DataType::i64(), Expr(i)) : x(src);
      return te::sum(value, {i}, ir::eq(rank(src), Expr(v[axis])));
    }, n2);
  };
  return {pick(false, name + ".values"), pick(true, name + ".indices")};
}

Tensor scatter_elements(const Tensor& data, const Tensor& indices, const Tensor& updates, int64_t axis,
                        const std::string& reduction, const std::string& name) {
  int r = data.ndim();
  KILN_USER_CHECK(axis >= 0 && axis < r) << name << ": axis " << axis << " is out of range for " << data.name();
  KILN_USER_CHECK(indices.ndim() == r && updates.shape() == indices.shape())
      << name << ": indices and updates must have one shape and the rank of data";
  int64_t len = data.shape()[axis];
  auto u = reduce_axis(updates.shape()[axis], "u");
  // The update position that can reach output position p: p with u on the axis.
  auto source = [&](const std::vector<Var>& p, Expr* fits) {
    std::vector<Expr> src;
    for (int d = 0; d < r; ++d) {
      if (d == axis) {
        src.push_back(u);
        continue;
      }
      int64_t ud = updates.shape()[d];
      if (ud < data.shape()[d]) *fits = *fits && Expr(p[d]) < c32(ud);
      src.push_back(ud < data.shape()[d] ? ir::min(Expr(p[d]), c32(ud - 1)) : Expr(p[d]));
    }
    return src;
  };
  if (reduction == "none") {
    // The last matching update wins: the largest u whose index points here.
    Tensor last = compute(data.shape(), [&](const std::vector<Var>& p) {
      Expr fits = ir::make_int(ir::DataType::boolean(), 1);
      std::vector<Expr> src = source(p, &fits);
      return te::max(Expr(u), {u}, fits && ir::eq(normalized_index(indices(src), len), Expr(p[axis])));
    }, name + ".last");
    return compute(data.shape(), [&](const std::vector<Var>& p) {
      Expr fits = ir::make_int(ir::DataType::boolean(), 1);
      std::vector<Expr> src = source(p, &fits);
      Expr l = last(as_exprs(p));
      src[axis] = ir::max(ir::min(l, c32(updates.shape()[axis] - 1)), 0);
      return ir::select(l >= 0, updates(src), data(as_exprs(p)));
    }, name);
  }
  ir::CommReducer red = reducer_for(reduction, data.dtype(), name);
  Tensor acc = compute(data.shape(), [&](const std::vector<Var>& p) {
    Expr fits = ir::make_int(ir::DataType::boolean(), 1);
    std::vector<Expr> src = source(p, &fits);
    Expr cond = fits && ir::eq(normalized_index(indices(src), len), Expr(p[axis]));
    return te::comm_reduce(red, {updates(src)}, {u}, cond)[0];
  }, name + ".acc");
  return compute(data.shape(), [&](const std::vector<Var>& p) {
    return combine(reduction, data(as_exprs(p)), acc(as_exprs(p)));
  }, name);
}

Tensor scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates, const std::string& reduction,
                  const std::string& name) {
  int r = data.ndim(), m = indices.ndim() - 1;
  KILN_USER_CHECK(m >= 0) << name << ": indices " << indices.name() << " must have rank >= 1";
  int64_t q = indices.shape().back();
  KILN_USER_CHECK(q >= 1 && q <= r && updates.ndim() == m + r - q)
      << name << ": indices [..., " << q << "] and updates do not fit data of rank " << r;
  std::vector<IterVar> t;
  std::vector<ir::IterVar> axes;
  for (int d = 0; d < m; ++d) {
    t.push_back(reduce_axis(indices.shape()[d], "t" + std::to_string(d)));
    axes.push_back(t.back());
  }
  KILN_SUPPORTED(m >= 1) << name << ": indices of rank 1 (a single update) are not supported";
  auto matches = [&](const std::vector<Var>& p, const std::vector<Expr>& tt) {
    Expr all = ir::make_int(ir::DataType::boolean(), 1);
    for (int64_t j = 0; j < q; ++j) {
      std::vector<Expr> ii = tt;
      ii.push_back(c32(j));
      all = all && ir::eq(normalized_index(indices(ii), data.shape()[j]), Expr(p[j]));
    }
    return all;
  };
  auto update_at = [&](const std::vector<Var>& p, std::vector<Expr> tt) {
    for (int d = static_cast<int>(q); d < r; ++d) tt.push_back(p[d]);
    return updates(tt);
  };
  std::vector<Expr> tv(t.begin(), t.end());
  if (reduction == "none") {
    // The last matching tuple (largest row-major position) wins.
    Expr linear;
    for (int d = 0; d < m; ++d) linear = linear.defined() ? linear * c32(indices.shape()[d]) + t[d] : Expr(t[d]);
    Tensor last = compute(data.shape(), [&](const std::vector<Var>& p) {
      return te::max(linear, axes, matches(p, tv));
    }, name + ".last");
    return compute(data.shape(), [&](const std::vector<Var>& p) {
      Expr l = last(as_exprs(p));
      std::vector<Expr> tt(m);
      Expr rest = ir::max(l, 0);
      for (int d = m - 1; d >= 0; --d) {
        int64_t ext = indices.shape()[d];
        tt[d] = ir::min(rest % c32(ext), c32(ext - 1));
        rest = rest / c32(ext);
      }
      return ir::select(l >= 0, update_at(p, tt), data(as_exprs(p)));
    }, name);
  }
  ir::CommReducer red = reducer_for(reduction, data.dtype(), name);
  Tensor acc = compute(data.shape(), [&](const std::vector<Var>& p) {
    return te::comm_reduce(red, {update_at(p, tv)}, axes, matches(p, tv))[0];
  }, name + ".acc");
  return compute(data.shape(), [&](const std::vector<Var>& p) {
    return combine(reduction, data(as_exprs(p)), acc(as_exprs(p)));
  }, name);
}

}  // namespace kiln::te::ops
