#include "kiln/te/ops/nn_image.h"

#include <cmath>

#include "kiln/support/error.h"

namespace kiln::te::ops {

using ir::Expr;
using ir::Var;

namespace {

const ir::DataType f64 = ir::DataType::f64();
const ir::DataType i32 = ir::DataType::i32();

Expr d64(double v) { return ir::make_float(f64, v); }
Expr c32(int64_t v) { return Expr(static_cast<int>(v)); }
Expr floor64(const Expr& e) { return ir::make_intrinsic("floor", {e}); }
Expr ceil64(const Expr& e) { return ir::make_intrinsic("ceil", {e}); }
Expr to_index(const Expr& e) { return ir::cast(i32, e); }
Expr clamp_index(const Expr& i, int64_t len) { return ir::min(ir::max(i, 0), c32(len - 1)); }

// One resampled axis of one output element: the input indices it reads and their weights.
struct Taps {
  std::vector<Expr> index;   // int32, clamped into the axis
  std::vector<Expr> weight;  // float64; empty for a single tap of weight 1
  Expr outside;              // tf_crop_and_resize: the coordinate left the input (bool)
};

// The input coordinate of output index v on axis d, in float64 (the ONNX reference computes
// in double).
Expr input_coordinate(const ResizeAttrs& a, size_t d, int64_t in, int64_t out, const Var& v, Expr* outside) {
  double scale = a.scales[d];
  double resized = scale * static_cast<double>(in);
  Expr x = ir::cast(f64, Expr(v));
  const std::string& m = a.coordinate_transformation_mode;
  if (m == "half_pixel") return (x + d64(0.5)) / d64(scale) - d64(0.5);
  if (m == "pytorch_half_pixel") return resized == 1.0 ? d64(-0.5) : (x + d64(0.5)) / d64(scale) - d64(0.5);
  if (m == "align_corners") {
    return resized == 1.0 ? d64(0.0) : x * d64(static_cast<double>(in - 1) / (resized - 1.0));
  }
  if (m == "asymmetric") return x / d64(scale);
  if (m == "tf_half_pixel_for_nn") return (x + d64(0.5)) / d64(scale);
  if (m == "half_pixel_symmetric") {
    double adjustment = static_cast<double>(out) / resized;
    double offset = static_cast<double>(in) / 2.0 * (1.0 - adjustment);
    return d64(offset) + (x + d64(0.5)) / d64(scale) - d64(0.5);
  }
  if (m == "tf_crop_and_resize") {
    size_t r = a.sizes.size();
    KILN_USER_CHECK(a.roi.size() == 2 * r) << "tf_crop_and_resize needs an roi of " << 2 * r << " values";
    double start = a.roi[d], end = a.roi[r + d], span = static_cast<double>(in - 1);
    Expr c = resized == 1.0 ? d64((end - start) * span / 2.0 + start * span)
                            : x * d64((end - start) * span / (resized - 1.0)) + d64(start * span);
    Expr off = c < d64(0.0) || c > d64(span);
    *outside = outside->defined() ? (*outside || off) : off;
    return c;
  }
  KILN_SUPPORTED(false) << "resize: coordinate_transformation_mode '" << m << "' is not supported";
  return Expr();
}

// Cubic convolution weights of the four neighbours floor-1 .. floor+2 at fraction t.
std::vector<Expr> cubic_weights(const Expr& t, double A) {
  auto far = [A](const Expr& s) {  // |distance| in [1, 2)
    return ((d64(A) * s - d64(5 * A)) * s + d64(8 * A)) * s - d64(4 * A);
  };
  auto near = [A](const Expr& s) {  // |distance| in [0, 1)
    return (d64(A + 2) * s - d64(A + 3)) * s * s + d64(1.0);
  };
  Expr u = d64(1.0) - t;
  return {far(t + d64(1.0)), near(t), near(u), far(u + d64(1.0))};
}

Taps axis_taps(const ResizeAttrs& a, size_t d, int64_t in, int64_t out, const Var& v) {
  Taps taps;
  const std::string& m = a.coordinate_transformation_mode;
  bool identity_map = m == "half_pixel" || m == "align_corners" || m == "asymmetric" || m == "pytorch_half_pixel" ||
                      m == "half_pixel_symmetric";
  if (in == out && a.scales[d] == 1.0 && identity_map) {
    taps.index.push_back(v);
    return taps;
  }
  Expr x = input_coordinate(a, d, in, out, v, &taps.outside);
  if (a.mode == "nearest") {
    const std::string& nm = a.nearest_mode;
    Expr i;
    if (nm == "round_prefer_floor") i = ceil64(x - d64(0.5));
    else if (nm == "round_prefer_ceil") i = floor64(x + d64(0.5));
    else if (nm == "floor") i = floor64(x);
    else if (nm == "ceil") i = ceil64(x);
    else KILN_SUPPORTED(false) << "resize: nearest_mode '" << nm << "' is not supported";
    taps.index.push_back(clamp_index(to_index(i), in));
    return taps;
  }
  Expr fl = floor64(x);
  Expr t = x - fl;
  Expr i0 = to_index(fl);
  if (a.mode == "linear") {
    taps.index = {clamp_index(i0, in), clamp_index(i0 + 1, in)};
    taps.weight = {d64(1.0) - t, t};
    return taps;
  }
  KILN_SUPPORTED(a.mode == "cubic") << "resize: mode '" << a.mode << "' is not supported";
  taps.weight = cubic_weights(t, a.cubic_coeff_a);
  for (int k = -1; k <= 2; ++k) taps.index.push_back(clamp_index(i0 + k, in));
  if (a.exclude_outside) {
    // Weights of neighbours outside the input drop out; the rest are renormalized.
    Expr total;
    for (int k = 0; k < 4; ++k) {
      Expr raw = i0 + (k - 1);
      Expr inside = raw >= 0 && raw < c32(in);
      taps.weight[k] = ir::select(inside, taps.weight[k], d64(0.0));
      total = total.defined() ? total + taps.weight[k] : taps.weight[k];
    }
    for (auto& w : taps.weight) w = w / total;
  }
  return taps;
}

}  // namespace

Tensor resize(const Tensor& x, const ResizeAttrs& a, const std::string& name) {
  size_t r = static_cast<size_t>(x.ndim());
  KILN_USER_CHECK(a.sizes.size() == r && a.scales.size() == r)
      << name << ": sizes and scales must have one entry per axis of " << x.name();
  KILN_USER_CHECK(a.mode == "nearest" || x.dtype().is_floating())
      << name << ": " << a.mode << " interpolation needs a floating-point input";
  return compute(a.sizes, [&](const std::vector<Var>& v) {
    std::vector<Taps> taps;
    Expr outside;
    for (size_t d = 0; d < r; ++d) {
      taps.push_back(axis_taps(a, d, x.shape()[d], a.sizes[d], v[d]));
      if (taps.back().outside.defined()) outside = outside.defined() ? (outside || taps.back().outside) : taps.back().outside;
    }
    // Sum over the cartesian product of every axis' taps.
    Expr value;
    std::vector<size_t> pick(r, 0);
    while (true) {
      std::vector<Expr> idx;
      Expr w;
      for (size_t d = 0; d < r; ++d) {
        idx.push_back(taps[d].index[pick[d]]);
        if (!taps[d].weight.empty()) w = w.defined() ? w * taps[d].weight[pick[d]] : taps[d].weight[pick[d]];
      }
      Expr term = x(idx);
      if (w.defined()) term = ir::cast(x.dtype(), w) * term;
      value = value.defined() ? value + term : term;
      size_t d = r;
      while (d-- > 0) {
        if (++pick[d] < taps[d].index.size()) break;
        pick[d] = 0;
      }
      if (d == static_cast<size_t>(-1)) break;
    }
    if (outside.defined()) value = ir::select(outside, ir::make_const(x.dtype(), a.extrapolation_value), value);
    return value;
  }, name);
}

}  // namespace kiln::te::ops

// ---- grid_sample ----------------------------------------------------------------------------

namespace kiln::te::ops {

namespace {

// Reflects v (float64) into [lo, hi] by the nearest border until it lies inside (ONNX
// GridSample's reflect, folded: the distance from lo modulo two spans, mirrored in the second).
Expr reflect(const Expr& v, double lo, double hi) {
  double span = hi - lo;
  if (span <= 0) return d64(lo);  // one-pixel axis with align_corners: every coordinate is 0
  Expr u = ir::make_intrinsic("fabs", {v - d64(lo)});
  Expr m = u - d64(2 * span) * floor64(u / d64(2 * span));
  return d64(lo + span) - ir::make_intrinsic("fabs", {d64(span) - m});
}

struct GridAxis {
  int64_t len;
  double lo, hi;  // the borders of the coordinate
};

// Neighbour index i (int32) of an axis under the padding mode: the index read (always inside)
// and, for zeros padding, whether it was inside.
Expr tap_index(const GridSampleAttrs& a, const GridAxis& ax, const Expr& i, Expr* inside) {
  if (a.padding_mode == "zeros") {
    Expr in = i >= 0 && i < c32(ax.len);
    *inside = inside->defined() ? (*inside && in) : in;
  } else if (a.padding_mode == "reflection") {
    return clamp_index(to_index(reflect(ir::cast(f64, i), ax.lo, ax.hi)), ax.len);
  }
  return clamp_index(i, ax.len);
}

}  // namespace

Tensor grid_sample(const Tensor& x, const Tensor& grid, const GridSampleAttrs& a, const std::string& name) {
  int64_t k = x.ndim() - 2;
  KILN_USER_CHECK(k >= 1 && grid.ndim() == k + 2 && grid.shape()[0] == x.shape()[0] && grid.shape().back() == k)
      << name << ": grid " << grid.name() << " must be [N, O1..O" << k << ", " << k << "] for " << x.name();
  KILN_USER_CHECK(a.mode == "nearest" || a.mode == "linear" || a.mode == "cubic")
      << name << ": unknown mode '" << a.mode << "'";
  KILN_USER_CHECK(a.padding_mode == "zeros" || a.padding_mode == "border" || a.padding_mode == "reflection")
      << name << ": unknown padding_mode '" << a.padding_mode << "'";
  KILN_USER_CHECK(a.mode == "nearest" || x.dtype().is_floating())
      << name << ": " << a.mode << " interpolation needs a floating-point input";
  std::vector<GridAxis> axes;
  for (int64_t i = 0; i < k; ++i) {
    int64_t d = x.shape()[2 + i];
    axes.push_back(a.align_corners ? GridAxis{d, 0.0, static_cast<double>(d - 1)}
                                   : GridAxis{d, -0.5, static_cast<double>(d) - 0.5});
  }
  std::vector<int64_t> out = {x.shape()[0], x.shape()[1]};
  for (int64_t i = 0; i < k; ++i) out.push_back(grid.shape()[1 + i]);
  return compute(out, [&](const std::vector<Var>& v) {
    std::vector<Taps> taps(static_cast<size_t>(k));
    std::vector<std::vector<Expr>> inside(static_cast<size_t>(k));  // zeros padding: per tap
    std::vector<std::pair<Var, Expr>> lets;
    for (int64_t i = 0; i < k; ++i) {
      const GridAxis& ax = axes[static_cast<size_t>(i)];
      std::vector<Expr> gi = {v[0]};
      for (int64_t j = 0; j < k; ++j) gi.push_back(v[2 + j]);
      gi.push_back(c32(k - 1 - i));  // the grid lists the innermost axis first
      Expr g = ir::cast(f64, grid(gi));
      double len = static_cast<double>(ax.len);
      Expr c = a.align_corners ? (g + d64(1.0)) * d64((len - 1) / 2.0) : ((g + d64(1.0)) * d64(len) - d64(1.0)) / d64(2.0);
      if (a.mode == "nearest") c = ir::make_intrinsic("round", {c});  // half to even, as PyTorch
      if (a.padding_mode == "border") {
        c = ir::select(c < d64(ax.lo) || c > d64(ax.hi), ir::min(ir::max(c, d64(0.0)), d64(len - 1)), c);
      } else if (a.padding_mode == "reflection") {
        c = reflect(c, ax.lo, ax.hi);
      }
      // Kept in [-3, len + 1] before it becomes an index (an int32 cast of a huge coordinate
      // overflows): beyond that every tap lies outside, which zeros padding reads as 0 either
      // way; border and reflection coordinates are inside already.
      c = ir::min(ir::max(c, d64(-3.0)), d64(len + 1));
      // The coordinate is read by every tap and weight: bound once, or the body grows with
      // the product of their counts.
      Var cv("c" + std::to_string(i), f64);
      lets.emplace_back(cv, c);
      c = cv;
      Taps& t = taps[static_cast<size_t>(i)];
      std::vector<Expr>& ins = inside[static_cast<size_t>(i)];
      if (a.mode == "nearest") {
        ins.emplace_back();
        t.index.push_back(tap_index(a, ax, to_index(c), &ins.back()));
        continue;
      }
      Expr fl = floor64(c);
      Expr frac = c - fl;
      Expr i0 = to_index(fl);
      int first = a.mode == "linear" ? 0 : -1, last = a.mode == "linear" ? 1 : 2;
      t.weight = a.mode == "linear" ? std::vector<Expr>{d64(1.0) - frac, frac} : cubic_weights(frac, -0.75);
      for (int o = first; o <= last; ++o) {
        ins.emplace_back();
        t.index.push_back(tap_index(a, ax, i0 + o, &ins.back()));
      }
    }
    // Sum over the cartesian product of every axis' taps.
    Expr value;
    std::vector<size_t> pick(static_cast<size_t>(k), 0);
    while (true) {
      std::vector<Expr> idx = {v[0], v[1]};
      Expr w, in;
      for (size_t d = 0; d < taps.size(); ++d) {
        idx.push_back(taps[d].index[pick[d]]);
        if (!taps[d].weight.empty()) w = w.defined() ? w * taps[d].weight[pick[d]] : taps[d].weight[pick[d]];
        const Expr& tin = inside[d][pick[d]];
        if (tin.defined()) in = in.defined() ? (in && tin) : tin;
      }
      // Zeros padding: a neighbour outside the input reads 0.
      Expr term = in.defined() ? ir::select(in, x(idx), ir::make_zero(x.dtype())) : x(idx);
      if (w.defined()) term = ir::cast(x.dtype(), w) * term;
      value = value.defined() ? value + term : term;
      size_t d = taps.size();
      while (d-- > 0) {
        if (++pick[d] < taps[d].index.size()) break;
        pick[d] = 0;
      }
      if (d == static_cast<size_t>(-1)) break;
    }
    for (size_t i = lets.size(); i-- > 0;) value = ir::let(lets[i].first, lets[i].second, value);
    return value;
  }, name);
}

}  // namespace kiln::te::ops
