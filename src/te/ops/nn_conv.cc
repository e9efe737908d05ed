#include "kiln/te/ops/nn_conv.h"

#include <algorithm>
#include <array>

#include "kiln/support/error.h"
#include "kiln/te/ops/elemwise.h"
#include "kiln/te/ops/transform.h"
#include "kiln/te/reduce.h"

namespace kiln::te::ops {

using ir::Expr;
using ir::Var;

namespace {

Expr c32(int64_t v) { return Expr(static_cast<int>(v)); }

// Shapes shared by the convolution flavours, checked once.
struct ConvShape {
  size_t d = 0;
  int64_t n = 0, c = 0, oc = 0, cg = 0, og = 0;
  std::vector<int64_t> in, kernel, out;
};

void check_window(const ConvNdAttrs& a, size_t d, const std::string& name) {
  KILN_USER_CHECK(d >= 1 && d <= 3) << name << ": 1 to 3 spatial dims are supported, got " << d;
  KILN_USER_CHECK(a.padding.size() == 2 * d && a.dilation.size() == d)
      << name << ": strides, padding and dilation must have " << d << ", " << 2 * d << " and " << d << " entries";
  for (size_t i = 0; i < d; ++i) {
    KILN_USER_CHECK(a.strides[i] >= 1 && a.dilation[i] >= 1) << name << ": strides and dilation must be positive";
    KILN_USER_CHECK(a.padding[i] >= 0 && a.padding[d + i] >= 0) << name << ": negative padding is not supported";
  }
}

// Shapes of a convolution of x by a weight with `oc` output channels, `cg` input channels per
// group and the given kernel extents.
ConvShape conv_shape(const Tensor& x, int64_t oc, int64_t cg, const std::vector<int64_t>& kernel, const ConvNdAttrs& a,
                     const std::string& name, const std::string& wname) {
  ConvShape s;
  s.d = a.dims();
  check_window(a, s.d, name);
  KILN_USER_CHECK(x.ndim() == static_cast<int>(s.d) + 2 && kernel.size() == s.d)
      << name << ": data " << x.name() << " and weight " << wname << " must both have rank " << s.d + 2;
  s.n = x.shape()[0];
  s.c = x.shape()[1];
  s.oc = oc;
  s.cg = cg;
  KILN_USER_CHECK(a.groups >= 1 && s.c % a.groups == 0 && s.oc % a.groups == 0 && s.cg * a.groups == s.c)
      << name << ": weight " << wname << " has " << s.cg << " input channels per group, data has " << s.c
      << " channels in " << a.groups << " groups";
  s.og = s.oc / a.groups;
  for (size_t i = 0; i < s.d; ++i) {
    int64_t in = x.shape()[2 + i], k = kernel[i];
    int64_t ext = a.dilation[i] * (k - 1) + 1;
    int64_t padded = in + a.padding[i] + a.padding[s.d + i];
    KILN_USER_CHECK(padded >= ext) << name << ": kernel extent " << ext << " exceeds the padded input " << padded
                                   << " on spatial axis " << i;
    s.in.push_back(in);
    s.kernel.push_back(k);
    s.out.push_back((padded - ext) / a.strides[i] + 1);
  }
  return s;
}

ConvShape conv_shape(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, const std::string& name) {
  KILN_USER_CHECK(w.ndim() == static_cast<int>(a.dims()) + 2)
      << name << ": weight " << w.name() << " must have rank " << a.dims() + 2;
  return conv_shape(x, w.shape()[0], w.shape()[1], std::vector<int64_t>(w.shape().begin() + 2, w.shape().end()), a,
                    name, w.name());
}

// Rows of a padded copy are widened to a multiple of `multiple` elements (zeros never read)
// when longer than that: whole vectors fill them.
int64_t round_row(int64_t n, int64_t multiple) { return n > multiple ? (n + multiple - 1) / multiple * multiple : n; }

// A map of the values read from a conv's input into its padded plane (null: as they are).
using PlaneMap = std::function<Expr(const Expr&)>;

// x zero-padded on its spatial dims, or x itself when no pad is set and no `map` (whose
// results, of type `plane`, the plane then holds).
Tensor pad_spatial(const Tensor& x, const ConvNdAttrs& a, int64_t row_multiple, const std::string& name,
                   const PlaneMap& map = nullptr, ir::DataType plane = ir::DataType::f32()) {
  size_t d = a.dims();
  std::vector<int64_t> before(2, 0), after(2, 0);
  bool any = false;
  for (size_t i = 0; i < d; ++i) {
    before.push_back(a.padding[i]);
    after.push_back(a.padding[d + i]);
    any = any || a.padding[i] || a.padding[d + i];
  }
  if (!any && !map) return x;
  int64_t w = x.shape().back() + before.back() + after.back();
  after.back() += round_row(w, row_multiple) - w;
  return pad_masked(x, before, after, ir::make_zero(map ? plane : x.dtype()), name, map);
}

}  // namespace

int64_t conv_channel_block(int64_t oc, int64_t groups, int64_t lanes) {
  // A power of two: odd vector widths make poor code (zero-padded channels are cheaper).
  if (groups == 1) {
    int64_t b = 1;
    while (b < oc && b < lanes) b *= 2;
    return b;
  }
  for (int64_t b = std::min<int64_t>(oc, lanes); b > 1; --b) {
    if (oc % b == 0) return b;
  }
  return 1;
}

namespace {

// The blocked reduction over a padded input and a packed weight [OC/co, C/groups, K..., co],
// and the unpacking into NC[D]HW.
Tensor conv_core(const Tensor& xp, const Tensor& wp, const ConvShape& s, const ConvNdAttrs& a, int64_t co,
                 const std::string& name) {
  size_t d = s.d;
  int64_t nblk = (s.oc + co - 1) / co;
  auto rc = reduce_axis(s.cg, "rc");
  std::vector<IterVar> rk;
  for (size_t i = 0; i < d; ++i) rk.push_back(reduce_axis(s.kernel[i], "r" + std::to_string(i)));
  std::vector<ir::IterVar> axes = {rc};
  axes.insert(axes.end(), rk.begin(), rk.end());

  std::vector<int64_t> blk_shape = {s.n, nblk};
  blk_shape.insert(blk_shape.end(), s.out.begin(), s.out.end());
  blk_shape.push_back(co);
  // float16 sums in float32 (as dense and matmul): the unpacking stage rounds once.
  const ir::DataType acc_t = compute_type(xp.dtype());
  Tensor blk = compute(blk_shape, [&](const std::vector<Var>& v) {
    Expr ci = a.groups == 1 ? Expr(rc) : (v[1] / c32(s.og / co)) * c32(s.cg) + rc;
    std::vector<Expr> xi = {v[0], ci};
    std::vector<Expr> wi = {v[1], rc};
    for (size_t i = 0; i < d; ++i) {
      xi.push_back(v[2 + i] * c32(a.strides[i]) + rk[i] * c32(a.dilation[i]));
      wi.push_back(rk[i]);
    }
    wi.push_back(v.back());
    return te::sum(ir::cast(acc_t, xp(xi)) * ir::cast(acc_t, wp(wi)), axes);
  }, name + kBlockedSuffix);

  std::vector<int64_t> out_shape = {s.n, s.oc};
  out_shape.insert(out_shape.end(), s.out.begin(), s.out.end());
  return compute(out_shape, [&](const std::vector<Var>& v) {
    std::vector<Expr> idx = {v[0], v[1] / c32(co)};
    for (size_t i = 0; i < d; ++i) idx.push_back(v[2 + i]);
    idx.push_back(v[1] % c32(co));
    return ir::cast(xp.dtype(), blk(idx));
  }, name);
}

}  // namespace

Tensor conv_nd(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, const ConvLayout& layout, const std::string& name) {
  ConvShape s = conv_shape(x, w, a, name);
  size_t d = s.d;
  int64_t co = layout.oc_block;
  KILN_USER_CHECK(co >= 1 && layout.row_multiple >= 1) << name << ": the output-channel block and row multiple must be positive";
  KILN_USER_CHECK(a.groups == 1 || s.og % co == 0)
      << name << ": output-channel block " << co << " must divide the " << s.og << " channels of a group";
  int64_t nblk = (s.oc + co - 1) / co;

  std::vector<int64_t> pack_shape = {nblk, s.cg};
  pack_shape.insert(pack_shape.end(), s.kernel.begin(), s.kernel.end());
  pack_shape.push_back(co);
  Tensor wp = compute(pack_shape, [&](const std::vector<Var>& v) {
    Expr o = v[0] * c32(co) + v.back();
    std::vector<Expr> idx = {o, v[1]};
    for (size_t i = 0; i < d; ++i) idx.push_back(v[2 + i]);
    if (nblk * co == s.oc) return w(idx);
    idx[0] = ir::min(o, c32(s.oc - 1));
    return ir::select(o < c32(s.oc), w(idx), ir::make_zero(w.dtype()));
  }, name + kPackSuffix);
  return conv_core(pad_spatial(x, a, layout.row_multiple, name + kPadSuffix), wp, s, a, co, name);
}

Tensor conv_nd_packed(const Tensor& x, const Tensor& wp, int64_t oc, const ConvNdAttrs& a, int64_t row_multiple,
                      const std::string& name) {
  size_t d = a.dims();
  KILN_USER_CHECK(wp.ndim() == static_cast<int>(d) + 3)
      << name << ": packed weight " << wp.name() << " must be [OC/co, C/groups, K..., co]";
  std::vector<int64_t> kernel(wp.shape().begin() + 2, wp.shape().end() - 1);
  ConvShape s = conv_shape(x, oc, wp.shape()[1], kernel, a, name, wp.name());
  int64_t co = wp.shape().back();
  KILN_USER_CHECK(wp.shape()[0] == (oc + co - 1) / co && (a.groups == 1 || s.og % co == 0))
      << name << ": packed weight " << wp.name() << " does not hold " << oc << " output channels in blocks of " << co;
  return conv_core(pad_spatial(x, a, row_multiple, name + kPadSuffix), wp, s, a, co, name);
}

Tensor conv_nd_plain(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, const std::string& name) {
  ConvShape s = conv_shape(x, w, a, name);
  const size_t d = s.d;
  IterVar rc = reduce_axis(s.cg, "rc");
  std::vector<IterVar> rk;
  for (size_t i = 0; i < d; ++i) rk.push_back(reduce_axis(s.kernel[i], "r" + std::to_string(i)));
  std::vector<ir::IterVar> axes = {rc};
  axes.insert(axes.end(), rk.begin(), rk.end());
  std::vector<int64_t> out_shape = {s.n, s.oc};
  out_shape.insert(out_shape.end(), s.out.begin(), s.out.end());
  Tensor xp = pad_spatial(x, a, 1, name + kPadSuffix);
  const ir::DataType acc_t = compute_type(x.dtype());
  const bool widen = acc_t != x.dtype();
  Tensor acc = compute(out_shape, [&](const std::vector<Var>& v) {
    // Output channel oc belongs to group oc / og, which reads input channels from group * cg.
    Expr channel = a.groups == 1 ? Expr(rc) : (v[1] / c32(s.og)) * c32(s.cg) + rc;
    std::vector<Expr> xi = {v[0], channel};
    std::vector<Expr> wi = {v[1], rc};
    for (size_t i = 0; i < d; ++i) {
      xi.push_back(v[2 + i] * c32(a.strides[i]) + rk[i] * c32(a.dilation[i]));
      wi.push_back(rk[i]);
    }
    return te::sum(ir::cast(acc_t, xp(xi)) * ir::cast(acc_t, w(wi)), axes);
  }, widen ? name + ".acc" : name);
  if (!widen) return acc;
  return compute(out_shape, [&](const std::vector<Var>& v) {
    return ir::cast(x.dtype(), acc(std::vector<Expr>(v.begin(), v.end())));
  }, name);
}

Tensor conv2d_gemm(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, const std::string& name,
                   const ProductPad& pad) {
  ConvShape s = conv_shape(x, w, a, name);
  const ir::DataType t = x.dtype();
  KILN_USER_CHECK(s.d == 2 && a.groups == 1 && (t == ir::DataType::f32() || t == ir::DataType::f16() || t == ir::DataType::bf16()))
      << name << ": conv2d_gemm takes a float32, float16 or bfloat16 2-d convolution of one group, got "
      << t.str() << " with " << a.groups << " groups and " << s.d << " spatial dims";
  const int64_t kh = s.kernel[0], kw = s.kernel[1], q = s.c * kh * kw;
  Tensor xp = pad_spatial(x, a, 1, name + kPadSuffix);
  // Column q of output pixel (oh, ow): input channel q / (kh kw), kernel tap t / kw, t % kw of
  // t = q % (kh kw). In that form the weight's flattened index simplifies back to oc C kh kw + q,
  // so a tile of the weight matrix is rows of contiguous elements (vector copies, cp.async).
  // The columns of an output row are the last two axes, so that the product is a batch_matmul
  // (whose tensor-core tiles are a buffer's last two dims) batched over (n, oh).
  auto tap = [&](Var qq) {
    const Expr t = qq % c32(kh * kw);
    return std::array<Expr, 3>{qq / c32(kh * kw), t / c32(kw), t % c32(kw)};
  };
  Tensor cols = compute({s.n, s.out[0], q, s.out[1]}, [&](Var n, Var oh, Var qq, Var ow) {
    const auto [c, ky, kx] = tap(qq);
    return xp(n, c, oh * c32(a.strides[0]) + ky * c32(a.dilation[0]), ow * c32(a.strides[1]) + kx * c32(a.dilation[1]));
  }, name + ".im2col", {"n", "oh", "q", "ow"});
  Tensor wm = compute({s.oc, q}, [&](Var oc, Var qq) {
    const auto [c, ky, kx] = tap(qq);
    return w(oc, c, ky, kx);
  }, name + ".wmat", {"oc", "q"});
  const Tensor prod = batch_matmul(wm, cols, 1, name + ".gemm", pad);
  return compute({s.n, s.oc, s.out[0], s.out[1]}, [&](Var n, Var oc, Var oh, Var ow) {
    return prod(n, oh, oc, ow);
  }, name, {"n", "oc", "oh", "ow"});
}

Tensor depthwise_conv_nd(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, int64_t row_multiple,
                         const std::string& name) {
  // float16 sums in float32: the reduction is "<name>.acc", and <name> rounds it once (a float16
  // sum rounding every product and addition measured 1.5x ONNX's tolerance on a causal conv).
  return depthwise_conv_nd_mapped(x, w, a, row_multiple, name, nullptr, compute_type(x.dtype()), x.dtype());
}

Tensor depthwise_conv_nd_mapped(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, int64_t row_multiple,
                                const std::string& name, const std::function<Expr(const Expr&)>& map,
                                ir::DataType acc_t, ir::DataType out_t) {
  ConvShape s = conv_shape(x, w, a, name);
  KILN_USER_CHECK(s.cg == 1) << name << ": depthwise convolution needs one input channel per group, weight "
                             << w.name() << " has " << s.cg;
  int64_t mult = s.oc / s.c;
  size_t d = s.d, last = d - 1;
  int64_t sw = a.strides[last];
  std::vector<IterVar> rk;
  for (size_t i = 0; i < d; ++i) rk.push_back(reduce_axis(s.kernel[i], "r" + std::to_string(i)));
  std::vector<ir::IterVar> axes(rk.begin(), rk.end());
  std::vector<int64_t> out_shape = {s.n, s.oc};
  out_shape.insert(out_shape.end(), s.out.begin(), s.out.end());
  auto spatial_index = [&](const std::vector<Var>& v, size_t i) {
    return v[2 + i] * c32(a.strides[i]) + rk[i] * c32(a.dilation[i]);
  };
  const ir::DataType plane_t = map ? acc_t : x.dtype();
  auto finish = [&](const Tensor& acc) {
    if (acc_t == out_t) return acc;
    return compute(out_shape, [&](const std::vector<Var>& v) {
      return ir::cast(out_t, acc(std::vector<Expr>(v.begin(), v.end())));
    }, name);
  };
  const std::string red_name = acc_t != out_t ? name + ".acc" : name;
  if (sw == 1) {
    Tensor xp = pad_spatial(x, a, row_multiple, name + kPadSuffix, map, plane_t);
    return finish(compute(out_shape, [&](const std::vector<Var>& v) {
      std::vector<Expr> xi = {v[0], mult == 1 ? Expr(v[1]) : v[1] / c32(mult)};
      std::vector<Expr> wi = {v[1], Expr(0)};
      for (size_t i = 0; i < d; ++i) {
        xi.push_back(spatial_index(v, i));
        wi.push_back(rk[i]);
      }
      return te::sum(ir::cast(acc_t, xp(xi)) * ir::cast(acc_t, w(wi)), axes);
    }, red_name));
  }
  // Strided along the row: the padded input is also split into sw phases, [.., S, sw, W/sw],
  // so that neighbouring outputs read neighbouring elements (no gathers).
  int64_t need = (s.out[last] - 1) * sw + (s.kernel[last] - 1) * a.dilation[last] + 1;
  int64_t q = round_row((need + sw - 1) / sw, row_multiple);
  std::vector<int64_t> ps = {s.n, s.c};
  for (size_t i = 0; i < last; ++i) ps.push_back(s.in[i] + a.padding[i] + a.padding[d + i]);
  ps.push_back(sw);
  ps.push_back(q);
  Tensor xp = compute(ps, [&](const std::vector<Var>& v) {
    std::vector<Expr> src = {v[0], v[1]};
    Expr inside;
    auto add = [&](const Expr& c) { inside = inside.defined() ? inside && c : c; };
    for (size_t i = 0; i < last; ++i) {
      Expr p = v[2 + i] - c32(a.padding[i]);
      if (a.padding[i] || a.padding[d + i]) add(p >= 0 && p < c32(s.in[i]));
      src.push_back(p);
    }
    Expr p = v[2 + last + 1] * c32(sw) + v[2 + last] - c32(a.padding[last]);
    add(p >= 0 && p < c32(s.in[last]));
    src.push_back(p);
    return ir::select(inside, map ? map(x(src)) : x(src), ir::make_zero(plane_t));
  }, name + kPadSuffix);
  return finish(compute(out_shape, [&](const std::vector<Var>& v) {
    std::vector<Expr> xi = {v[0], mult == 1 ? Expr(v[1]) : v[1] / c32(mult)};
    std::vector<Expr> wi = {v[1], Expr(0)};
    for (size_t i = 0; i < last; ++i) {
      xi.push_back(spatial_index(v, i));
      wi.push_back(rk[i]);
    }
    Expr col = spatial_index(v, last);
    xi.push_back(col % c32(sw));
    xi.push_back(col / c32(sw));
    wi.push_back(rk[last]);
    return te::sum(ir::cast(acc_t, xp(xi)) * ir::cast(acc_t, w(wi)), axes);
  }, red_name));
}

Tensor conv_transpose_nd(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, const std::string& name) {
  size_t d = a.dims();
  check_window(a, d, name);
  KILN_USER_CHECK(a.output_padding.size() == d) << name << ": output_padding must have " << d << " entries";
  KILN_USER_CHECK(x.ndim() == static_cast<int>(d) + 2 && w.ndim() == x.ndim())
      << name << ": data " << x.name() << " and weight " << w.name() << " must both have rank " << d + 2;
  int64_t n = x.shape()[0], c = x.shape()[1], og = w.shape()[1];
  KILN_USER_CHECK(a.groups >= 1 && c % a.groups == 0 && w.shape()[0] == c)
      << name << ": weight " << w.name() << " must be [C, OC/groups, K...] for " << c << " input channels in "
      << a.groups << " groups";
  int64_t cg = c / a.groups, oc = og * a.groups;
  std::vector<int64_t> in, k, out, lead, dil_shape = {n, c};
  for (size_t i = 0; i < d; ++i) {
    in.push_back(x.shape()[2 + i]);
    k.push_back(w.shape()[2 + i]);
    int64_t ext = a.dilation[i] * (k[i] - 1);
    int64_t o = a.strides[i] * (in[i] - 1) + ext + 1 - a.padding[i] - a.padding[d + i] + a.output_padding[i];
    KILN_USER_CHECK(o >= 1) << name << ": output size " << o << " on spatial axis " << i << " is not positive";
    out.push_back(o);
    // Where input element 0 lands in the dilated input that a stride-1 convolution reads.
    lead.push_back(ext - a.padding[i]);
    dil_shape.push_back(o + ext);
  }
  // The input spread out by the stride, with the border the flipped kernel reads.
  Tensor xu = compute(dil_shape, [&](const std::vector<Var>& v) {
    Expr inside = ir::make_int(ir::DataType::boolean(), 1);
    std::vector<Expr> idx = {v[0], v[1]};
    for (size_t i = 0; i < d; ++i) {
      Expr q = v[2 + i] - c32(lead[i]);
      Expr src = q / c32(a.strides[i]);
      inside = inside && q >= 0 && src < c32(in[i]);
      if (a.strides[i] > 1) inside = inside && ir::eq(q % c32(a.strides[i]), 0);
      idx.push_back(ir::min(ir::max(src, 0), c32(in[i] - 1)));
    }
    return ir::select(inside, x(idx), ir::make_zero(x.dtype()));
  }, name + ".dilated");
  auto rc = reduce_axis(cg, "rc");
  std::vector<IterVar> rk;
  for (size_t i = 0; i < d; ++i) rk.push_back(reduce_axis(k[i], "r" + std::to_string(i)));
  std::vector<ir::IterVar> axes = {rc};
  axes.insert(axes.end(), rk.begin(), rk.end());
  std::vector<int64_t> out_shape = {n, oc};
  out_shape.insert(out_shape.end(), out.begin(), out.end());
  return compute(out_shape, [&](const std::vector<Var>& v) {
    Expr ci = a.groups == 1 ? Expr(rc) : (v[1] / c32(og)) * c32(cg) + rc;
    std::vector<Expr> xi = {v[0], ci};
    std::vector<Expr> wi = {ci, a.groups == 1 ? Expr(v[1]) : v[1] % c32(og)};
    for (size_t i = 0; i < d; ++i) {
      xi.push_back(v[2 + i] + rk[i] * c32(a.dilation[i]));
      wi.push_back(c32(k[i] - 1) - rk[i]);
    }
    return te::sum(xu(xi) * w(wi), axes);
  }, name);
}

namespace {

// A 2-d window over blocked data x [N, C/x, H, W, x]: the output's spatial extents and x
// padded for it ("<name>.pad", or x itself when unpadded).
struct BlockedWindow {
  int64_t oh = 0, ow = 0;
  Tensor xp;
};
BlockedWindow blocked_window(const Tensor& x, int64_t kh, int64_t kw, const ConvNdAttrs& a, const std::string& name,
                             const PlaneMap& map = nullptr, ir::DataType plane = ir::DataType::f32()) {
  BlockedWindow bw;
  int64_t k[2] = {kh, kw}, o[2];
  for (int i = 0; i < 2; ++i) {
    int64_t ext = a.dilation[i] * (k[i] - 1) + 1;
    int64_t padded = x.shape()[2 + i] + a.padding[i] + a.padding[2 + i];
    KILN_USER_CHECK(padded >= ext) << name << ": kernel extent " << ext << " exceeds the padded input " << padded;
    o[i] = (padded - ext) / a.strides[i] + 1;
  }
  bw.oh = o[0];
  bw.ow = o[1];
  bool padded = a.padding[0] || a.padding[1] || a.padding[2] || a.padding[3];
  bw.xp = padded || map ? pad_masked(x, {0, 0, a.padding[0], a.padding[1], 0}, {0, 0, a.padding[2], a.padding[3], 0},
                                     ir::make_zero(map ? plane : x.dtype()), name + kPadSuffix, map)
                        : x;
  return bw;
}

}  // namespace

Tensor conv2d_nchwc(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, const std::string& name) {
  check_window(a, 2, name);
  KILN_USER_CHECK(x.ndim() == 5 && w.ndim() == 6) << name << ": data " << x.name() << " must be [N, C/ci, H, W, ci] and "
                                                  << "weight " << w.name() << " [OC/co, C/ci, KH, KW, ci, co]";
  KILN_SUPPORTED(a.groups == 1) << name << ": grouped convolutions stay in NCHW (groups " << a.groups << ")";
  int64_t n = x.shape()[0], cb = x.shape()[1], ci = x.shape()[4];
  int64_t ob = w.shape()[0], kh = w.shape()[2], kw = w.shape()[3], co = w.shape()[5];
  KILN_USER_CHECK(w.shape()[1] == cb && w.shape()[4] == ci)
      << name << ": weight " << w.name() << " does not match the input channel blocks of " << x.name();
  BlockedWindow bw = blocked_window(x, kh, kw, a, name);
  auto rcb = reduce_axis(cb, "rcb");
  auto ry = reduce_axis(kh, "ry");
  auto rx = reduce_axis(kw, "rx");
  auto rci = reduce_axis(ci, "rci");
  return compute({n, ob, bw.oh, bw.ow, co}, [&](const std::vector<Var>& v) {
    Expr hi = v[2] * c32(a.strides[0]) + ry * c32(a.dilation[0]);
    Expr wi = v[3] * c32(a.strides[1]) + rx * c32(a.dilation[1]);
    return te::sum(bw.xp({v[0], rcb, hi, wi, rci}) * w({v[1], rcb, ry, rx, rci, v[4]}), {rcb, ry, rx, rci});
  }, name, {"n", "ocb", "oh", "ow", "oc"});
}

Tensor depthwise_conv2d_nchwc(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, const std::string& name) {
  return depthwise_conv2d_nchwc_mapped(x, w, a, name, nullptr, x.dtype(), x.dtype());
}

Tensor depthwise_conv2d_nchwc_mapped(const Tensor& x, const Tensor& w, const ConvNdAttrs& a, const std::string& name,
                                     const std::function<Expr(const Expr&)>& map, ir::DataType acc_t,
                                     ir::DataType out_t) {
  check_window(a, 2, name);
  KILN_USER_CHECK(x.ndim() == 5 && w.ndim() == 4) << name << ": data " << x.name() << " must be [N, C/b, H, W, b] and "
                                                  << "weight " << w.name() << " [C/b, KH, KW, b]";
  int64_t n = x.shape()[0], cb = x.shape()[1], b = x.shape()[4], kh = w.shape()[1], kw = w.shape()[2];
  KILN_USER_CHECK(w.shape()[0] == cb && w.shape()[3] == b)
      << name << ": weight " << w.name() << " does not match the channel blocks of " << x.name();
  BlockedWindow bw = blocked_window(x, kh, kw, a, name, map, acc_t);
  auto ry = reduce_axis(kh, "ry");
  auto rx = reduce_axis(kw, "rx");
  const std::vector<int64_t> shape = {n, cb, bw.oh, bw.ow, b};
  const std::vector<std::string> axes = {"n", "cb", "oh", "ow", "c"};
  Tensor acc = compute(shape, [&](const std::vector<Var>& v) {
    Expr hi = v[2] * c32(a.strides[0]) + ry * c32(a.dilation[0]);
    Expr wi = v[3] * c32(a.strides[1]) + rx * c32(a.dilation[1]);
    return te::sum(ir::cast(acc_t, bw.xp({v[0], v[1], hi, wi, v[4]})) * ir::cast(acc_t, w({v[1], ry, rx, v[4]})),
                   {ry, rx});
  }, acc_t == out_t ? name : name + ".acc", axes);
  if (acc_t == out_t) return acc;
  return compute(shape, [&](const std::vector<Var>& v) {
    return ir::cast(out_t, acc(std::vector<Expr>(v.begin(), v.end())));
  }, name, axes);
}

}  // namespace kiln::te::ops
