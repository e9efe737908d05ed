#include "kiln/te/ops/nn_norm.h"

#include <algorithm>

#include "kiln/support/error.h"
#include "kiln/te/ops/elemwise.h"
#include "kiln/te/reduce.h"

namespace kiln::te::ops {

using ir::Expr;
using ir::Var;

namespace {

Expr c32(int64_t v) { return Expr(static_cast<int>(v)); }
Expr fconst(const Tensor& like, double v) { return ir::make_float(like.dtype(), v); }
std::vector<Expr> as_exprs(const std::vector<Var>& v) { return std::vector<Expr>(v.begin(), v.end()); }

void check_floating(const Tensor& x, const std::string& name) {
  KILN_USER_CHECK(x.dtype().is_floating()) << name << ": input " << x.name() << " must be floating-point, got "
                                           << x.dtype().str();
}

// A reduction of f(x[idx]) over the dims where `reduced` is set; those dims keep extent 1. When
// only the last dim is reduced and `lanes` (> 1) divides it, in two stages: "<name>.lanes"
// [..., lanes] reduces each lane's column x[..., ko * lanes + l] (a schedule keeps it in one
// vector register, reading contiguous vectors), then <name> reduces the lanes.
template <typename Reducer, typename F>
Tensor reduce_dims(const Tensor& x, const std::vector<bool>& reduced, Reducer reducer, F f, const std::string& name,
                   int64_t lanes = 1) {
  const int nd = x.ndim();
  const int64_t last = x.shape()[nd - 1];
  if (lanes > 1 && last > lanes && last % lanes == 0 &&
      std::count(reduced.begin(), reduced.end(), true) == 1 && reduced[nd - 1]) {
    std::vector<int64_t> pshape = x.shape(), shape = x.shape();
    pshape.back() = lanes;
    shape.back() = 1;
    auto ko = reduce_axis(last / lanes, "r" + std::to_string(nd - 1));
    Tensor part = compute(pshape, [&](const std::vector<Var>& v) {
      std::vector<Expr> idx(v.begin(), v.end());
      idx.back() = ko * c32(lanes) + v.back();
      return reducer(f(idx), std::vector<ir::IterVar>{ko});
    }, name + kLanesSuffix);
    auto rl = reduce_axis(lanes, "l");
    return compute(shape, [&](const std::vector<Var>& v) {
      std::vector<Expr> idx(v.begin(), v.end());
      idx.back() = rl;
      return reducer(part(idx), std::vector<ir::IterVar>{rl});
    }, name);
  }
  std::vector<int64_t> shape;
  std::vector<IterVar> rk;
  for (int d = 0; d < x.ndim(); ++d) {
    shape.push_back(reduced[d] ? 1 : x.shape()[d]);
    if (reduced[d]) rk.push_back(reduce_axis(x.shape()[d], "r" + std::to_string(d)));
  }
  std::vector<ir::IterVar> axes(rk.begin(), rk.end());
  return compute(shape, [&](const std::vector<Var>& v) {
    std::vector<Expr> idx;
    size_t r = 0;
    for (int d = 0; d < x.ndim(); ++d) idx.push_back(reduced[d] ? Expr(rk[r++]) : Expr(v[d]));
    return reducer(f(idx), axes);
  }, name);
}

// idx with the reduced dims replaced by 0: where a keepdims statistic is read.
std::vector<Expr> stat_index(const std::vector<Var>& v, const std::vector<bool>& reduced) {
  std::vector<Expr> idx;
  for (size_t d = 0; d < v.size(); ++d) idx.push_back(reduced[d] ? Expr(0) : Expr(v[d]));
  return idx;
}

// Mean and (two-pass) variance of x over the `reduced` dims, as keepdims stages.
std::pair<Tensor, Tensor> moments(const Tensor& x, const std::vector<bool>& reduced, const std::string& name,
                                  int64_t lanes = 1) {
  int64_t count = 1;
  for (int d = 0; d < x.ndim(); ++d) count *= reduced[d] ? x.shape()[d] : 1;
  auto sum = [](Expr e, std::vector<ir::IterVar> ax) { return te::sum(e, ax); };
  Tensor total = reduce_dims(x, reduced, sum, [&](const std::vector<Expr>& i) { return x(i); }, name + ".sum", lanes);
  Tensor mean = compute(total.shape(), [&](const std::vector<Var>& v) {
    return total(as_exprs(v)) / fconst(x, double(count));
  }, name + ".mean");
  Tensor sq = reduce_dims(x, reduced, sum, [&](const std::vector<Expr>& i) {
    std::vector<Expr> si;
    for (size_t d = 0; d < i.size(); ++d) si.push_back(reduced[d] ? Expr(0) : i[d]);
    Expr dev = x(i) - mean(si);
    return dev * dev;
  }, name + ".sqdev", lanes);
  Tensor var = compute(sq.shape(), [&](const std::vector<Var>& v) {
    return sq(as_exprs(v)) / fconst(x, double(count));
  }, name + ".var");
  return {mean, var};
}

// Index of a parameter broadcast numpy-style against the trailing dims of x from `axis` on.
std::vector<Expr> param_index(const Tensor& p, const std::vector<Var>& v) {
  std::vector<Expr> idx;
  size_t off = v.size() - p.ndim();
  for (int d = 0; d < p.ndim(); ++d) idx.push_back(p.shape()[d] == 1 ? Expr(0) : Expr(v[off + d]));
  return idx;
}

}  // namespace

Tensor batch_norm_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                            const Tensor& var, int64_t axis, double epsilon, const std::string& name) {
  check_floating(x, name);
  KILN_USER_CHECK(axis >= 0 && axis < x.ndim()) << name << ": axis " << axis << " is out of range for "
                                                << x.name();
  for (const Tensor* p : {&gamma, &beta, &mean, &var}) {
    KILN_USER_CHECK(p->ndim() == 1 && p->shape()[0] == x.shape()[axis])
        << name << ": " << p->name() << " must be [" << x.shape()[axis] << "]";
  }
  return compute(x.shape(), [&](const std::vector<Var>& v) {
    Var c = v[axis];
    Expr inv = ir::make_intrinsic("rsqrt", {var(c) + fconst(x, epsilon)});
    return (x(as_exprs(v)) - mean(c)) * (inv * gamma(c)) + beta(c);
  }, name);
}

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int64_t axis, double epsilon,
                  const std::string& name, int64_t lanes) {
  check_floating(x, name);
  KILN_USER_CHECK(axis >= 0 && axis < x.ndim()) << name << ": axis " << axis << " is out of range for "
                                                << x.name();
  int norm_rank = x.ndim() - static_cast<int>(axis);
  for (const Tensor* p : {&gamma, &beta}) {
    if (!p->defined()) continue;
    KILN_USER_CHECK(p->ndim() <= norm_rank) << name << ": " << p->name() << " has more dims than the normalized ones";
    for (int d = 0; d < p->ndim(); ++d) {
      int64_t want = x.shape()[x.ndim() - p->ndim() + d];
      KILN_USER_CHECK(p->shape()[d] == 1 || p->shape()[d] == want)
          << name << ": " << p->name() << " does not broadcast to the normalized dims of " << x.name();
    }
  }
  std::vector<bool> reduced(x.ndim(), false);
  for (int d = static_cast<int>(axis); d < x.ndim(); ++d) reduced[d] = true;
  // Named tensors, not a structured binding: lambdas capture those only from C++20 (clang 14
  // refuses them).
  const std::pair<Tensor, Tensor> stats = moments(x, reduced, name, lanes);
  const Tensor& mean = stats.first;
  const Tensor& var = stats.second;
  return compute(x.shape(), [&](const std::vector<Var>& v) {
    std::vector<Expr> s = stat_index(v, reduced);
    Expr y = (x(as_exprs(v)) - mean(s)) * ir::make_intrinsic("rsqrt", {var(s) + fconst(x, epsilon)});
    y = y * gamma(param_index(gamma, v));
    if (beta.defined()) y = y + beta(param_index(beta, v));
    return y;
  }, name);
}

Tensor group_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int64_t groups, double epsilon,
                  const std::string& name) {
  check_floating(x, name);
  KILN_USER_CHECK(x.ndim() >= 3) << name << ": input " << x.name() << " needs rank >= 3 (N, C, spatial dims)";
  int64_t n = x.shape()[0], c = x.shape()[1];
  KILN_USER_CHECK(groups >= 1 && c % groups == 0) << name << ": " << groups << " groups do not divide " << c
                                                  << " channels";
  for (const Tensor* p : {&gamma, &beta}) {
    KILN_USER_CHECK(p->ndim() == 1 && p->shape()[0] == c) << name << ": " << p->name() << " must be [" << c << "]";
  }
  int64_t cpg = c / groups;
  // The statistics of group g live at [n, g, 1...]: x seen as [N, G, C/G, S...].
  std::vector<int64_t> gshape = {n, groups, cpg};
  for (int d = 2; d < x.ndim(); ++d) gshape.push_back(x.shape()[d]);
  Tensor xg = compute(gshape, [&](const std::vector<Var>& v) {
    std::vector<Expr> idx = {v[0], v[1] * c32(cpg) + v[2]};
    for (size_t d = 3; d < v.size(); ++d) idx.push_back(v[d]);
    return x(idx);
  }, name + ".grouped");
  std::vector<bool> reduced(gshape.size(), true);
  reduced[0] = reduced[1] = false;
  const std::pair<Tensor, Tensor> stats = moments(xg, reduced, name);
  const Tensor& mean = stats.first;
  const Tensor& var = stats.second;
  return compute(x.shape(), [&](const std::vector<Var>& v) {
    std::vector<Expr> s = {v[0], cpg == 1 ? Expr(v[1]) : v[1] / c32(cpg)};
    for (size_t d = 2; d < gshape.size(); ++d) s.push_back(Expr(0));
    Expr y = (x(as_exprs(v)) - mean(s)) * ir::make_intrinsic("rsqrt", {var(s) + fconst(x, epsilon)});
    return y * gamma(v[1]) + beta(v[1]);
  }, name);
}

Tensor instance_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon,
                     const std::string& name) {
  KILN_USER_CHECK(x.ndim() >= 3) << name << ": input " << x.name() << " needs rank >= 3 (N, C, spatial dims)";
  return group_norm(x, gamma, beta, x.shape()[1], epsilon, name);
}

Tensor lrn(const Tensor& x, int64_t size, double alpha, double beta, double bias, const std::string& name) {
  check_floating(x, name);
  KILN_USER_CHECK(x.ndim() >= 3) << name << ": input " << x.name() << " needs rank >= 3 (N, C, spatial dims)";
  KILN_USER_CHECK(size >= 1) << name << ": size must be positive, got " << size;
  int64_t c = x.shape()[1], before = (size - 1) / 2;
  auto r = reduce_axis(size, "r");
  Tensor sq = compute(x.shape(), [&](const std::vector<Var>& v) {
    Expr ch = v[1] - c32(before) + r;
    std::vector<Expr> idx = as_exprs(v);
    idx[1] = ir::min(ir::max(ch, 0), c32(c - 1));
    Expr e = x(idx);
    return te::sum(e * e, {r}, ch >= 0 && ch < c32(c));
  }, name + ".sqsum");
  return compute(x.shape(), [&](const std::vector<Var>& v) {
    Expr base = fconst(x, bias) + fconst(x, alpha / double(size)) * sq(as_exprs(v));
    return x(as_exprs(v)) / ir::make_intrinsic("pow", {base, fconst(x, beta)});
  }, name);
}

namespace {

struct SoftmaxParts {
  Tensor max, sum, exp;
  std::vector<bool> reduced;
};

SoftmaxParts softmax_parts(const Tensor& x, int64_t axis, bool keep_exp, const std::string& name, int64_t lanes) {
  check_floating(x, name);
  KILN_USER_CHECK(axis >= 0 && axis < x.ndim()) << name << ": axis " << axis << " is out of range for "
                                                << x.name();
  SoftmaxParts p;
  p.reduced.assign(x.ndim(), false);
  p.reduced[axis] = true;
  p.max = reduce_dims(x, p.reduced, [](Expr e, std::vector<ir::IterVar> ax) { return te::max(e, ax); },
                      [&](const std::vector<Expr>& i) { return x(i); }, name + ".max", lanes);
  // exp and its sum in compute_type: a float16 running sum loses a bit per addition.
  ir::DataType ct = compute_type(x.dtype());
  auto shifted_exp = [&](const std::vector<Expr>& i) {
    std::vector<Expr> s = i;
    s[axis] = Expr(0);
    return ir::make_intrinsic("exp", {ir::cast(ct, x(i)) - ir::cast(ct, p.max(s))});
  };
  auto sum = [](Expr e, std::vector<ir::IterVar> ax) { return te::sum(e, ax); };
  if (keep_exp) {
    p.exp = compute(x.shape(), [&](const std::vector<Var>& v) { return shifted_exp(as_exprs(v)); }, name + ".exp");
    p.sum = reduce_dims(p.exp, p.reduced, sum, [&](const std::vector<Expr>& i) { return p.exp(i); }, name + ".sum", lanes);
  } else {
    p.sum = reduce_dims(x, p.reduced, sum, shifted_exp, name + ".sum", lanes);
  }
  return p;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t axis, const std::string& name, int64_t lanes) {
  SoftmaxParts p = softmax_parts(x, axis, true, name, lanes);
  return compute(x.shape(), [&](const std::vector<Var>& v) {
    return ir::cast(x.dtype(), p.exp(as_exprs(v)) / p.sum(stat_index(v, p.reduced)));
  }, name);
}

Tensor log_softmax(const Tensor& x, int64_t axis, const std::string& name, int64_t lanes) {
  SoftmaxParts p = softmax_parts(x, axis, false, name, lanes);
  return compute(x.shape(), [&](const std::vector<Var>& v) {
    std::vector<Expr> s = stat_index(v, p.reduced);
    ir::DataType ct = compute_type(x.dtype());
    Expr r = ir::cast(ct, x(as_exprs(v))) - ir::cast(ct, p.max(s)) - ir::make_intrinsic("log", {p.sum(s)});
    return ir::cast(x.dtype(), r);
  }, name);
}

}  // namespace kiln::te::ops
