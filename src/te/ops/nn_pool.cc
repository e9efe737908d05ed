#include "kiln/te/ops/nn_pool.h"

#include <algorithm>
#include <limits>

#include "kiln/support/error.h"
#include "kiln/te/reduce.h"

namespace kiln::te::ops {

using ir::Expr;
using ir::Var;

namespace {

Expr c32(int64_t v) { return Expr(static_cast<int>(v)); }

void check_pool(const Tensor& x, const PoolNdAttrs& a, const std::string& name) {
  size_t d = a.dims(), rank = d + 2 + (a.blocked ? 1 : 0);
  KILN_USER_CHECK(d >= 1 && d <= 3 && x.ndim() == static_cast<int>(rank))
      << name << ": input " << x.name() << " must have rank " << rank << " for a " << d << "-d window"
      << (a.blocked ? " over blocked channels" : "");
  KILN_USER_CHECK(a.strides.size() == d && a.padding.size() == 2 * d && a.dilation.size() == d)
      << name << ": kernel, strides, padding and dilation do not agree on " << d << " spatial dims";
  for (size_t i = 0; i < d; ++i) {
    KILN_USER_CHECK(a.kernel[i] >= 1 && a.strides[i] >= 1 && a.dilation[i] >= 1 && a.padding[i] >= 0 &&
                    a.padding[d + i] >= 0)
        << name << ": kernel, strides and dilation must be positive and padding non-negative";
  }
}

// x padded on its spatial dims with `value` so that every window of the output fits.
Tensor pad_for_windows(const Tensor& x, const PoolNdAttrs& a, const std::vector<int64_t>& out, const Expr& value,
                       const std::string& name) {
  size_t d = a.dims();
  std::vector<int64_t> before(d), shape = {x.shape()[0], x.shape()[1]};
  bool any = false;
  for (size_t i = 0; i < d; ++i) {
    int64_t in = x.shape()[2 + i];
    int64_t need = (out[i] - 1) * a.strides[i] + (a.kernel[i] - 1) * a.dilation[i] + 1;
    int64_t after = std::max<int64_t>(0, need - in - a.padding[i]);
    before[i] = a.padding[i];
    int64_t len = in + before[i] + after;
    // Rows widened to whole vectors (the extra elements are never read).
    if (i + 1 == d && len > 16 && !a.blocked) len = (len + 15) / 16 * 16;
    shape.push_back(len);
    any = any || before[i] || after;
  }
  if (a.blocked) shape.push_back(x.shape().back());
  if (!any) return x;
  // Unclamped loads under the select: they vectorize to masked loads (see te::ops::pad_masked).
  return compute(shape, [&](const std::vector<Var>& v) {
    Expr inside = ir::make_int(ir::DataType::boolean(), 1);
    std::vector<Expr> src = {v[0], v[1]};
    for (size_t i = 0; i < d; ++i) {
      int64_t in = x.shape()[2 + i];
      Expr s = v[2 + i] - c32(before[i]);
      inside = inside && s >= 0 && s < c32(in);
      src.push_back(s);
    }
    if (a.blocked) src.push_back(v.back());
    return ir::select(inside, x(src), value);
  }, name);
}

// Reduction over the window: f(padded value) combined by `reducer` into [N, C, O...].
template <typename Reducer, typename F>
Tensor window_reduce(const Tensor& xp, const PoolNdAttrs& a, const std::vector<int64_t>& out, Reducer reducer, F f,
                     const std::string& name) {
  size_t d = a.dims();
  std::vector<IterVar> rk;
  for (size_t i = 0; i < d; ++i) rk.push_back(reduce_axis(a.kernel[i], "r" + std::to_string(i)));
  std::vector<ir::IterVar> axes(rk.begin(), rk.end());
  std::vector<int64_t> shape = {xp.shape()[0], xp.shape()[1]};
  shape.insert(shape.end(), out.begin(), out.end());
  if (a.blocked) shape.push_back(xp.shape().back());
  return compute(shape, [&](const std::vector<Var>& v) {
    std::vector<Expr> idx = {v[0], v[1]};
    for (size_t i = 0; i < d; ++i) idx.push_back(v[2 + i] * c32(a.strides[i]) + rk[i] * c32(a.dilation[i]));
    if (a.blocked) idx.push_back(v.back());
    return reducer(f(xp(idx)), axes);
  }, name);
}

std::vector<int64_t> spatial_in(const Tensor& x, const PoolNdAttrs& a) {
  return std::vector<int64_t>(x.shape().begin() + 2, x.shape().begin() + 2 + a.dims());
}

// Number of window taps of output `o` on dim i that fall in [lo, hi) of the unpadded input.
Expr taps_inside(const Expr& o, const PoolNdAttrs& a, size_t i, int64_t lo, int64_t hi) {
  int64_t s = a.strides[i], dil = a.dilation[i], k = a.kernel[i];
  Expr start = o * c32(s) - c32(a.padding[i]);
  // First tap at or after lo, last tap before hi (floor division on ints).
  Expr first = ir::max((c32(lo) - start + c32(dil - 1)) / c32(dil), 0);
  Expr last = ir::min((c32(hi - 1) - start) / c32(dil), c32(k - 1));
  return ir::max(last - first + 1, 0);
}

}  // namespace

std::vector<int64_t> pooled_shape(const std::vector<int64_t>& in, const PoolNdAttrs& a) {
  size_t d = a.dims();
  std::vector<int64_t> out;
  for (size_t i = 0; i < d; ++i) {
    int64_t padded = in[i] + a.padding[i] + a.padding[d + i];
    int64_t ext = a.dilation[i] * (a.kernel[i] - 1) + 1;
    KILN_USER_CHECK(padded >= ext) << "pooling window of extent " << ext << " exceeds the padded input " << padded;
    int64_t o = (padded - ext + (a.ceil_mode ? a.strides[i] - 1 : 0)) / a.strides[i] + 1;
    if (a.ceil_mode && (o - 1) * a.strides[i] >= in[i] + a.padding[i]) --o;
    out.push_back(o);
  }
  return out;
}

Tensor max_pool_nd(const Tensor& x, const PoolNdAttrs& a, const std::string& name) {
  check_pool(x, a, name);
  std::vector<int64_t> out = pooled_shape(spatial_in(x, a), a);
  ir::DataType t = x.dtype();
  Expr lowest = t.is_floating() ? ir::make_float(t, -std::numeric_limits<double>::infinity()) : ir::min_value(t);
  Tensor xp = pad_for_windows(x, a, out, lowest, name + ".pad");
  return window_reduce(xp, a, out, [](Expr e, std::vector<ir::IterVar> ax) { return te::max(e, ax); },
                       [](Expr e) { return e; }, name);
}

Tensor avg_pool_nd(const Tensor& x, const PoolNdAttrs& a, const std::string& name) {
  check_pool(x, a, name);
  KILN_USER_CHECK(x.dtype().is_floating()) << name << ": average pooling needs a floating-point input";
  size_t d = a.dims();
  std::vector<int64_t> out = pooled_shape(spatial_in(x, a), a);
  Tensor xp = pad_for_windows(x, a, out, ir::make_zero(x.dtype()), name + ".pad");
  Tensor total = window_reduce(xp, a, out, [](Expr e, std::vector<ir::IterVar> ax) { return te::sum(e, ax); },
                               [](Expr e) { return e; }, name + ".sum");
  return compute(total.shape(), [&](const std::vector<Var>& v) {
    Expr count;
    for (size_t i = 0; i < d; ++i) {
      int64_t in = x.shape()[2 + i];
      Expr c = a.count_include_pad ? taps_inside(v[2 + i], a, i, -a.padding[i], in + a.padding[d + i])
                                   : taps_inside(v[2 + i], a, i, 0, in);
      count = count.defined() ? count * c : c;
    }
    return total(std::vector<Expr>(v.begin(), v.end())) / ir::cast(x.dtype(), count);
  }, name);
}

Tensor lp_pool_nd(const Tensor& x, const PoolNdAttrs& a, const std::string& name) {
  check_pool(x, a, name);
  KILN_USER_CHECK(x.dtype().is_floating()) << name << ": lp pooling needs a floating-point input";
  KILN_USER_CHECK(a.p >= 1) << name << ": p must be positive, got " << a.p;
  std::vector<int64_t> out = pooled_shape(spatial_in(x, a), a);
  ir::DataType t = x.dtype();
  Tensor xp = pad_for_windows(x, a, out, ir::make_zero(t), name + ".pad");
  int64_t p = a.p;
  auto power = [p, t](Expr e) -> Expr {
    if (p == 1) return ir::make_intrinsic("fabs", {e});
    if (p == 2) return e * e;
    return ir::make_intrinsic("pow", {ir::make_intrinsic("fabs", {e}), ir::make_float(t, double(p))});
  };
  Tensor total = window_reduce(xp, a, out, [](Expr e, std::vector<ir::IterVar> ax) { return te::sum(e, ax); }, power,
                               name + ".sum");
  return compute(total.shape(), [&](const std::vector<Var>& v) {
    Expr s = total(std::vector<Expr>(v.begin(), v.end()));
    if (p == 1) return s;
    if (p == 2) return ir::make_intrinsic("sqrt", {s});
    return ir::make_intrinsic("pow", {s, ir::make_float(t, 1.0 / double(p))});
  }, name);
}

namespace {
template <typename Reducer>
Tensor global_reduce(const Tensor& x, Reducer reducer, const Expr& identity, GlobalPartial partial,
                     const std::string& name) {
  KILN_USER_CHECK(x.ndim() >= 3) << name << ": input " << x.name() << " needs rank >= 3 (N, C, spatial dims)";
  KILN_USER_CHECK(partial.lanes >= 1 && partial.chains >= 1) << name << ": partial lanes and chains must be positive";
  std::vector<int64_t> shape = {x.shape()[0], x.shape()[1]}, spatial(x.shape().begin() + 2, x.shape().end());
  int64_t plane = 1;
  for (int64_t e : spatial) plane *= e;
  shape.resize(x.ndim(), 1);
  const int64_t block = partial.lanes * partial.chains;
  if (block == 1 || plane < block) {
    std::vector<IterVar> rk;
    for (size_t i = 0; i < spatial.size(); ++i) rk.push_back(reduce_axis(spatial[i], "r" + std::to_string(i)));
    std::vector<ir::IterVar> axes(rk.begin(), rk.end());
    return compute(shape, [&](const std::vector<Var>& v) {
      std::vector<Expr> idx = {v[0], v[1]};
      for (const IterVar& r : rk) idx.push_back(r);
      return reducer(x(idx), axes);
    }, name);
  }
  const int64_t steps = (plane + block - 1) / block;
  IterVar k = reduce_axis(steps, "rk");
  Tensor part = compute({shape[0], shape[1], partial.chains, partial.lanes}, [&](const std::vector<Var>& v) {
    Expr f = (k * c32(partial.chains) + v[2]) * c32(partial.lanes) + v[3];
    std::vector<Expr> idx(spatial.size());
    Expr rest = f;  // the flat index unflattened, last axis first
    for (size_t i = spatial.size(); i-- > 1;) {
      idx[i] = rest % c32(spatial[i]);
      rest = rest / c32(spatial[i]);
    }
    idx[0] = rest;
    idx.insert(idx.begin(), {v[0], v[1]});
    // Past the plane: masked loads in vector code.
    Expr val = steps * block == plane ? x(idx) : ir::select(f < c32(plane), x(idx), identity);
    return reducer(val, {k});
  }, name + ".part");
  IterVar q = reduce_axis(partial.chains, "rq");
  Tensor lane = compute({shape[0], shape[1], partial.lanes}, [&](const std::vector<Var>& v) {
    return reducer(part({v[0], v[1], q, v[2]}), {q});
  }, name + ".lane");
  IterVar l = reduce_axis(partial.lanes, "rl");
  return compute(shape, [&](const std::vector<Var>& v) { return reducer(lane({v[0], v[1], l}), {l}); }, name);
}
}  // namespace

Tensor global_avg_pool(const Tensor& x, const std::string& name, GlobalPartial partial) {
  KILN_USER_CHECK(x.dtype().is_floating()) << name << ": average pooling needs a floating-point input";
  Tensor total = global_reduce(x, [](Expr e, std::vector<ir::IterVar> ax) { return te::sum(e, ax); },
                               ir::make_zero(x.dtype()), partial, name + ".sum");
  int64_t count = 1;
  for (int i = 2; i < x.ndim(); ++i) count *= x.shape()[i];
  return compute(total.shape(), [&](const std::vector<Var>& v) {
    return total(std::vector<Expr>(v.begin(), v.end())) / ir::make_float(x.dtype(), double(count));
  }, name);
}

Tensor global_max_pool(const Tensor& x, const std::string& name, GlobalPartial partial) {
  ir::DataType t = x.dtype();
  Expr lowest = t.is_floating() ? ir::make_float(t, -std::numeric_limits<double>::infinity()) : ir::min_value(t);
  return global_reduce(x, [](Expr e, std::vector<ir::IterVar> ax) { return te::max(e, ax); }, lowest, partial, name);
}

}  // namespace kiln::te::ops
