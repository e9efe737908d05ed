// Plain single-stage tensor programs the schedule and codegen tests schedule by hand: a matmul,
// a direct NCHW conv2d, pooling, softmax and sums as one compute each (plus their pads). Test
// fixtures, not the op library (te/ops): its ops are shaped for the CPU templates (blocked
// convs, packed weights), these for exercising schedule primitives.
#pragma once

#include <array>
#include <limits>
#include <string>
#include <vector>

#include "kiln/support/error.h"
#include "kiln/te/operation.h"
#include "kiln/te/reduce.h"

namespace kiln::test_ops {

using te::Tensor;
using ir::Expr;
using ir::Var;
using te::compute;
using te::reduce_axis;

struct Conv2dAttrs {
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 4> pad{0, 0, 0, 0};  // top, left, bottom, right
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
};

struct Pool2dAttrs {
  std::array<int64_t, 2> kernel{2, 2};
  std::array<int64_t, 2> stride{2, 2};
  std::array<int64_t, 4> pad{0, 0, 0, 0};  // top, left, bottom, right
  bool count_include_pad = false;          // average pooling only
};

inline Tensor matmul(const Tensor& a, const Tensor& b, const std::string& name = "matmul") {
  KILN_USER_CHECK(a.ndim() == 2 && b.ndim() == 2 && a.shape()[1] == b.shape()[0])
      << name << ": cannot multiply " << a.name() << " and " << b.name() << " (shapes must be [M, K] x [K, N])";
  auto k = reduce_axis(a.shape()[1], "k");
  return compute({a.shape()[0], b.shape()[1]}, [&](Var i, Var j) { return te::sum(a(i, k) * b(k, j), {k}); }, name,
                 {"i", "j"});
}

inline Tensor pad(const Tensor& x, const std::vector<int64_t>& before, const std::vector<int64_t>& after, double value = 0.0,
                  const std::string& name = "pad") {
  int nd = x.ndim();
  KILN_USER_CHECK(static_cast<int>(before.size()) == nd && static_cast<int>(after.size()) == nd)
      << name << ": pads must give one value per dimension of " << x.name();
  std::vector<int64_t> shape(nd);
  for (int d = 0; d < nd; ++d) shape[d] = x.shape()[d] + before[d] + after[d];
  return compute(shape, [&](const std::vector<Var>& idx) {
    // Select evaluates both sides, so the load's indices are clamped into bounds; the
    // condition picks `value` wherever the unclamped index falls outside x.
    Expr inside = ir::make_int(ir::DataType::boolean(), 1);
    std::vector<Expr> src(nd);
    for (int d = 0; d < nd; ++d) {
      Expr i = idx[d] - Expr(static_cast<int>(before[d]));
      if (before[d] == 0 && after[d] == 0) { src[d] = idx[d]; continue; }
      inside = inside && i >= 0 && i < Expr(static_cast<int>(x.shape()[d]));
      src[d] = ir::min(ir::max(i, 0), Expr(static_cast<int>(x.shape()[d] - 1)));
    }
    return ir::select(inside, x(src), ir::make_const(x.dtype(), value));
  }, name);
}


inline Tensor conv2d_nchw(const Tensor& x, const Tensor& w, const Conv2dAttrs& a, const std::string& name = "conv2d") {
  KILN_USER_CHECK(x.ndim() == 4 && w.ndim() == 4) << name << ": conv2d_nchw needs 4-d input and weight";
  int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  int64_t oc = w.shape()[0], cg = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3];
  KILN_USER_CHECK(a.groups >= 1 && c % a.groups == 0 && oc % a.groups == 0 && cg == c / a.groups)
      << name << ": weight " << w.name() << " has " << cg << " input channels per group but input has " << c
      << " channels in " << a.groups << " groups";
  int64_t oh = (h + a.pad[0] + a.pad[2] - a.dilation[0] * (kh - 1) - 1) / a.stride[0] + 1;
  int64_t ow = (wd + a.pad[1] + a.pad[3] - a.dilation[1] * (kw - 1) - 1) / a.stride[1] + 1;
  KILN_USER_CHECK(oh > 0 && ow > 0) << name << ": kernel larger than the padded input";
  bool padded = a.pad[0] || a.pad[1] || a.pad[2] || a.pad[3];
  Tensor xp = padded ? pad(x, {0, 0, a.pad[0], a.pad[1]}, {0, 0, a.pad[2], a.pad[3]}, 0.0, name + ".pad") : x;
  auto rc = reduce_axis(cg, "rc");
  auto ry = reduce_axis(kh, "ry");
  auto rx = reduce_axis(kw, "rx");
  int64_t og = oc / a.groups;
  return compute({n, oc, oh, ow}, [&](Var b, Var o, Var i, Var j) {
    Expr ci = og == oc ? Expr(rc) : (o / static_cast<int>(og)) * static_cast<int>(cg) + rc;
    Expr hi = i * static_cast<int>(a.stride[0]) + ry * static_cast<int>(a.dilation[0]);
    Expr wi = j * static_cast<int>(a.stride[1]) + rx * static_cast<int>(a.dilation[1]);
    return te::sum(xp(b, ci, hi, wi) * w(o, rc, ry, rx), {rc, ry, rx});
  }, name, {"n", "oc", "oh", "ow"});
}

inline std::array<int64_t, 2> pooled_extent(const Tensor& x, const Pool2dAttrs& a, const std::string& name) {
  KILN_USER_CHECK(x.ndim() == 4) << name << ": pooling needs a 4-d NCHW input";
  int64_t oh = (x.shape()[2] + a.pad[0] + a.pad[2] - a.kernel[0]) / a.stride[0] + 1;
  int64_t ow = (x.shape()[3] + a.pad[1] + a.pad[3] - a.kernel[1]) / a.stride[1] + 1;
  KILN_USER_CHECK(oh > 0 && ow > 0) << name << ": pooling window larger than the padded input";
  return {oh, ow};
}

inline Tensor max_pool2d_nchw(const Tensor& x, const Pool2dAttrs& a, const std::string& name = "max_pool2d") {
  auto [oh, ow] = pooled_extent(x, a, name);
  bool padded = a.pad[0] || a.pad[1] || a.pad[2] || a.pad[3];
  Tensor xp = padded ? pad(x, {0, 0, a.pad[0], a.pad[1]}, {0, 0, a.pad[2], a.pad[3]},
                           -std::numeric_limits<double>::infinity(), name + ".pad")
                     : x;
  auto ry = reduce_axis(a.kernel[0], "ry");
  auto rx = reduce_axis(a.kernel[1], "rx");
  return compute({x.shape()[0], x.shape()[1], oh, ow}, [&](Var b, Var c, Var i, Var j) {
    return te::max(xp(b, c, i * static_cast<int>(a.stride[0]) + ry, j * static_cast<int>(a.stride[1]) + rx), {ry, rx});
  }, name, {"n", "c", "oh", "ow"});
}

inline Tensor avg_pool2d_nchw(const Tensor& x, const Pool2dAttrs& a, const std::string& name = "avg_pool2d") {
  auto [oh, ow] = pooled_extent(x, a, name);
  bool padded = a.pad[0] || a.pad[1] || a.pad[2] || a.pad[3];
  Tensor xp = padded ? pad(x, {0, 0, a.pad[0], a.pad[1]}, {0, 0, a.pad[2], a.pad[3]}, 0.0, name + ".pad") : x;
  auto ry = reduce_axis(a.kernel[0], "ry");
  auto rx = reduce_axis(a.kernel[1], "rx");
  int sh = static_cast<int>(a.stride[0]), sw = static_cast<int>(a.stride[1]);
  Tensor total = compute({x.shape()[0], x.shape()[1], oh, ow}, [&](Var b, Var c, Var i, Var j) {
    return te::sum(xp(b, c, i * sh + ry, j * sw + rx), {ry, rx});
  }, name + ".sum", {"n", "c", "oh", "ow"});
  int h = static_cast<int>(x.shape()[2]), w = static_cast<int>(x.shape()[3]);
  int pt = static_cast<int>(a.pad[0]), pl = static_cast<int>(a.pad[1]);
  int kh = static_cast<int>(a.kernel[0]), kw = static_cast<int>(a.kernel[1]);
  return compute(total.shape(), [&](Var b, Var c, Var i, Var j) {
    if (a.count_include_pad) return total(b, c, i, j) / ir::make_const(x.dtype(), double(kh * kw));
    // Count of window elements that fall inside the unpadded input.
    Expr h0 = ir::max(i * sh - pt, 0), h1 = ir::min(i * sh - pt + kh, h);
    Expr w0 = ir::max(j * sw - pl, 0), w1 = ir::min(j * sw - pl + kw, w);
    return total(b, c, i, j) / ir::cast(x.dtype(), (h1 - h0) * (w1 - w0));
  }, name, {"n", "c", "oh", "ow"});
}

inline Tensor softmax_last_axis(const Tensor& x, const std::string& name = "softmax") {
  int nd = x.ndim();
  KILN_USER_CHECK(nd >= 1) << name << ": softmax of a scalar";
  std::vector<int64_t> outer(x.shape().begin(), x.shape().end() - 1);
  if (outer.empty()) outer.push_back(1);
  int64_t len = x.shape().back();
  auto at = [&](const std::vector<Var>& idx, Expr last) {
    std::vector<Expr> i(idx.begin(), idx.begin() + (nd - 1));
    i.push_back(last);
    return x(i);
  };
  auto k1 = reduce_axis(len, "k");
  Tensor mx = compute(outer, [&](const std::vector<Var>& idx) { return te::max(at(idx, k1), {k1}); }, name + ".max");
  auto k2 = reduce_axis(len, "k");
  auto outer_of = [&](const std::vector<Var>& idx) {
    return nd == 1 ? std::vector<Expr>{Expr(0)} : std::vector<Expr>(idx.begin(), idx.begin() + (nd - 1));
  };
  Tensor ex = compute(x.shape(), [&](const std::vector<Var>& idx) {
    return ir::make_intrinsic("exp", {x(std::vector<Expr>(idx.begin(), idx.end())) - mx(outer_of(idx))});
  }, name + ".exp");
  Tensor total = compute(outer, [&](const std::vector<Var>& idx) {
    std::vector<Expr> i(idx.begin(), idx.begin() + (nd - 1));
    i.push_back(k2);
    return te::sum(ex(i), {k2});
  }, name + ".sum");
  return compute(x.shape(), [&](const std::vector<Var>& idx) {
    return ex(std::vector<Expr>(idx.begin(), idx.end())) / total(outer_of(idx));
  }, name);
}

inline Tensor reduce_sum(const Tensor& x, int axis, const std::string& name = "sum") {
  int nd = x.ndim();
  KILN_USER_CHECK(axis >= 0 && axis < nd) << name << ": axis " << axis << " out of range for " << x.name();
  std::vector<int64_t> shape;
  for (int d = 0; d < nd; ++d) if (d != axis) shape.push_back(x.shape()[d]);
  if (shape.empty()) shape.push_back(1);
  auto k = reduce_axis(x.shape()[axis], "k");
  return compute(shape, [&](const std::vector<Var>& idx) {
    std::vector<Expr> src;
    for (int d = 0, o = 0; d < nd; ++d) src.push_back(d == axis ? Expr(k) : Expr(idx[nd == 1 ? 0 : o++]));
    return te::sum(x(src), {k});
  }, name);
}

}  // namespace kiln::test_ops
