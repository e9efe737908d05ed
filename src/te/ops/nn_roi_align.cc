// RoiAlign (nn_image.h): one stage; every sample of a bin is unrolled into the body (the
// sampling grid is a compile-time constant), the roi's geometry and each sample's coordinates
// bound once by lets so that the taps share them.
#include <string>
#include <utility>
#include <vector>

#include "kiln/support/error.h"
#include "kiln/te/ops/nn_image.h"

namespace kiln::te::ops {

using ir::Expr;
using ir::Var;

namespace {

const ir::DataType f64 = ir::DataType::f64();
const ir::DataType i32 = ir::DataType::i32();

Expr d64(double v) { return ir::make_float(f64, v); }

// Lets collected while building a body, wrapped around it at the end (outermost first).
struct Lets {
  std::vector<std::pair<Var, Expr>> binds;
  Expr bind(const std::string& name, const Expr& value) {
    Var v(name + std::to_string(binds.size()), value.dtype());
    binds.emplace_back(v, value);
    return v;
  }
  Expr wrap(Expr body) const {
    for (size_t i = binds.size(); i-- > 0;) body = ir::let(binds[i].first, binds[i].second, body);
    return body;
  }
};

}  // namespace

Tensor roi_align(const Tensor& x, const Tensor& rois, const Tensor& batch_indices, const RoiAlignAttrs& a,
                 const std::string& name) {
  KILN_USER_CHECK(x.ndim() == 4 && rois.ndim() == 2 && rois.shape()[1] == 4 && batch_indices.ndim() == 1 &&
                  batch_indices.shape()[0] == rois.shape()[0])
      << name << ": needs x [N, C, H, W], rois [R, 4] and batch_indices [R]";
  KILN_USER_CHECK(a.mode == "avg" || a.mode == "max") << name << ": unknown mode '" << a.mode << "'";
  KILN_USER_CHECK(a.sampling_ratio >= 1 && a.output_height >= 1 && a.output_width >= 1)
      << name << ": sampling_ratio and the output size must be positive";
  KILN_USER_CHECK(x.dtype().is_floating()) << name << ": x must be floating-point";
  int64_t h = x.shape()[2], w = x.shape()[3], g = a.sampling_ratio;
  std::vector<int64_t> out = {rois.shape()[0], x.shape()[1], a.output_height, a.output_width};
  return compute(out, [&](const std::vector<Var>& v) {
    Lets lets;
    double offset = a.half_pixel ? 0.5 : 0.0;
    auto corner = [&](int k) { return ir::cast(f64, rois({v[0], Expr(k)})) * d64(a.spatial_scale) - d64(offset); };
    Expr sw = lets.bind("sw", corner(0)), sh = lets.bind("sh", corner(1));
    Expr rw = corner(2) - sw, rh = corner(3) - sh;
    if (!a.half_pixel) {  // malformed rois are 1 x 1
      rw = ir::max(rw, d64(1.0));
      rh = ir::max(rh, d64(1.0));
    }
    Expr bh = lets.bind("bh", rh / d64(static_cast<double>(a.output_height)));
    Expr bw = lets.bind("bw", rw / d64(static_cast<double>(a.output_width)));
    // An out-of-range batch index is the user's error; clamped so that it reads inside x.
    Expr batch = lets.bind("b", ir::min(ir::max(ir::cast(i32, batch_indices({v[0]})), Expr(0)),
                                        Expr(static_cast<int>(x.shape()[0] - 1))));
    // Sample coordinates along one axis: clamped (as the reference does), the low and high taps
    // and the fraction; `valid` false beyond [-1, len].
    struct Axis {
      Expr lo, hi, frac, valid;
    };
    auto axis = [&](const Expr& start, const Expr& bin, const Var& p, int64_t k, int64_t len, const char* nm) {
      Expr c = start + ir::cast(f64, Expr(p)) * bin + d64((static_cast<double>(k) + 0.5) / static_cast<double>(g)) * bin;
      c = lets.bind(nm, c);
      Axis ax;
      ax.valid = c >= d64(-1.0) && c <= d64(static_cast<double>(len));
      // Clamped into [0, len] (the upper clamp only keeps invalid samples' indices in range).
      Expr cc = lets.bind(nm, ir::min(ir::max(c, d64(0.0)), d64(static_cast<double>(len))));
      Expr low = lets.bind(nm, ir::cast(i32, cc));  // truncation: cc >= 0
      Expr edge = low >= static_cast<int>(len - 1);
      ax.lo = ir::select(edge, Expr(static_cast<int>(len - 1)), low);
      ax.hi = ir::select(edge, Expr(static_cast<int>(len - 1)), low + 1);
      ax.frac = ir::select(edge, d64(0.0), cc - ir::cast(f64, low));
      return ax;
    };
    Expr acc;
    for (int64_t iy = 0; iy < g; ++iy) {
      Axis ya = axis(sh, bh, v[2], iy, h, "y");
      for (int64_t ix = 0; ix < g; ++ix) {
        Axis xa = axis(sw, bw, v[3], ix, w, "x");
        Expr valid = ya.valid && xa.valid;
        Expr ly = ya.frac, lx = xa.frac, hy = d64(1.0) - ly, hx = d64(1.0) - lx;
        std::vector<std::pair<Expr, Expr>> taps = {
            {hy * hx, x({batch, v[1], ya.lo, xa.lo})}, {hy * lx, x({batch, v[1], ya.lo, xa.hi})},
            {ly * hx, x({batch, v[1], ya.hi, xa.lo})}, {ly * lx, x({batch, v[1], ya.hi, xa.hi})}};
        Expr sample;
        for (auto& [wt, val] : taps) {
          Expr t = ir::select(valid, wt, d64(0.0)) * ir::cast(f64, val);
          sample = !sample.defined() ? t : a.mode == "avg" ? sample + t : ir::max(sample, t);
        }
        acc = !acc.defined() ? sample : a.mode == "avg" ? acc + sample : ir::max(acc, sample);
      }
    }
    if (a.mode == "avg") acc = acc / d64(static_cast<double>(g * g));
    return lets.wrap(ir::cast(x.dtype(), acc));
  }, name);
}

}  // namespace kiln::te::ops
