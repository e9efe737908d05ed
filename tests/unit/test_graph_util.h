// Helpers of the graph-compiler tests: graph builders and a few test-only op lowerings.
//
// The production lowerings belong to the op library (te/ops/lowering.h). These tests need some
// ops lowered before it lands, so ScopedTestLowerings installs simple te definitions for a
// handful of ops and puts back whatever the slots held before when it goes out of scope, so
// other tests in the binary see the registry unchanged.
#pragma once

#include <algorithm>
#include <any>
#include <cmath>
#include <string>
#include <vector>

#include "kiln/relay/op.h"
#include "kiln/relay/transforms.h"
#include "kiln/support/error.h"
#include "kiln/te/ops/lowering.h"
#include "kiln/te/ops/nn.h"

namespace kiln::graph_test {

using namespace kiln::relay;
namespace relay = ::kiln::relay;  // so tests can say relay::Expr after `using namespace graph_test`

inline relay::Expr var(const std::string& n, Shape s) { return make_var(n, tensor_type(DataType::f32(), s)); }
inline relay::Expr cst(Shape s, std::vector<double> v) {
  return make_constant(HostTensor::from_doubles(DataType::f32(), s, v));
}
inline relay::Expr scalar(double v) { return make_constant(HostTensor::scalar(DataType::f32(), v)); }
inline relay::Expr call(const std::string& op, std::vector<relay::Expr> args, Attrs a = {}, std::string name = "") {
  return make_call(op, std::move(args), a, std::move(name));
}
inline Attrs conv_attrs(int64_t pad = 1) {
  return Attrs().set_ints("strides", {1, 1}).set_ints("padding", {pad, pad, pad, pad}).set_ints("dilation", {1, 1}).set_int("groups", 1);
}
inline std::vector<double> wave(int64_t n, double scale, double phase) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = std::sin(static_cast<double>(i) * 0.731 + phase) * scale;
  return v;
}

// Plain NCHW convolution (groups 1, dilation 1, stride 1, symmetric padding `pad`) in double.
inline std::vector<double> conv_nchw_ref(const std::vector<double>& x, const Shape& xs, const std::vector<double>& w,
                                         const Shape& ws, int64_t pad) {
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], KH = ws[2], KW = ws[3];
  int64_t OH = H + 2 * pad - KH + 1, OW = W + 2 * pad - KW + 1;
  std::vector<double> y(N * O * OH * OW, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t ki = 0; ki < KH; ++ki)
              for (int64_t kj = 0; kj < KW; ++kj) {
                int64_t ii = i + ki - pad, jj = j + kj - pad;
                if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
                acc += x[((n * C + c) * H + ii) * W + jj] * w[((o * C + c) * KH + ki) * KW + kj];
              }
          y[((n * O + o) * OH + i) * OW + j] = acc;
        }
  return y;
}

namespace detail {
using ir::Expr;  // te expressions; graph nodes are relay::Expr outside this namespace
using ir::Var;
inline std::vector<int64_t> te_shape(const Type& t) {
  const Shape& s = t.as<TensorTypeNode>()->shape;
  return s.empty() ? std::vector<int64_t>{1} : s;
}
// t read at the output index `idx` with numpy broadcasting (dims of 1 read index 0).
inline Expr bcast(const te::Tensor& t, const std::vector<Var>& idx) {
  std::vector<Expr> ix;
  size_t off = idx.size() - t.shape().size();
  for (size_t d = 0; d < t.shape().size(); ++d) ix.push_back(t.shape()[d] == 1 ? Expr(0) : Expr(idx[off + d]));
  return t(ix);
}
using Binary = Expr (*)(Expr, Expr);
inline te::ops::FLower binary(Binary f) {
  return [f](const std::vector<te::Tensor>& in, const Attrs&, const Type& out) {
    return std::vector<te::Tensor>{te::compute(te_shape(out), [&](const std::vector<Var>& i) {
      return f(bcast(in[0], i), bcast(in[1], i));
    }, "binary")};
  };
}
using Unary = Expr (*)(Expr);
inline te::ops::FLower unary(Unary f) {
  return [f](const std::vector<te::Tensor>& in, const Attrs&, const Type& out) {
    return std::vector<te::Tensor>{te::compute(te_shape(out), [&](const std::vector<Var>& i) {
      return f(in[0](std::vector<Expr>(i.begin(), i.end())));
    }, "unary")};
  };
}
inline std::vector<te::Tensor> reshape(const std::vector<te::Tensor>& in, const Attrs&, const Type& out) {
  const te::Tensor& x = in[0];
  std::vector<int64_t> os = te_shape(out);
  return {te::compute(os, [&](const std::vector<Var>& i) {
    Expr flat = 0;
    for (size_t d = 0; d < os.size(); ++d) flat = flat * static_cast<int>(os[d]) + i[d];
    std::vector<Expr> src(x.ndim());
    for (int d = x.ndim() - 1; d >= 0; --d) {
      src[d] = flat % static_cast<int>(x.shape()[d]);
      flat = flat / static_cast<int>(x.shape()[d]);
    }
    return x(src);
  }, "reshape")};
}
inline std::vector<te::Tensor> transpose(const std::vector<te::Tensor>& in, const Attrs& a, const Type& out) {
  const auto& axes = a.get_ints("axes");
  return {te::compute(te_shape(out), [&](const std::vector<Var>& i) {
    std::vector<Expr> src(axes.size());
    for (size_t d = 0; d < axes.size(); ++d) src[axes[d]] = i[d];
    return in[0](src);
  }, "transpose")};
}
inline std::vector<te::Tensor> sum(const std::vector<te::Tensor>& in, const Attrs& a, const Type& out) {
  const te::Tensor& x = in[0];
  const auto& axes = a.get_ints("axes");
  bool keep = a.get_int("keepdims") != 0;
  std::vector<te::IterVar> rs;
  for (int64_t ax : axes) rs.push_back(te::reduce_axis(x.shape()[ax], "r" + std::to_string(ax)));
  return {te::compute(te_shape(out), [&](const std::vector<Var>& i) {
    std::vector<Expr> src;
    size_t o = 0, r = 0;
    for (int d = 0; d < x.ndim(); ++d) {
      bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
      if (reduced) {
        src.push_back(rs[r++]);
        if (keep) ++o;
      } else {
        src.push_back(i[o++]);
      }
    }
    return te::sum(x(src), std::vector<ir::IterVar>(rs.begin(), rs.end()));
  }, "sum")};
}
inline std::vector<te::Tensor> conv2d(const std::vector<te::Tensor>& in, const Attrs& a, const Type&) {
  te::ops::Conv2dAttrs c;
  const auto &s = a.get_ints("strides"), &p = a.get_ints("padding"), &d = a.get_ints("dilation");
  c.stride = {s[0], s[1]};
  c.pad = {p[0], p[1], p[2], p[3]};
  c.dilation = {d[0], d[1]};
  c.groups = a.get_int("groups");
  return {te::ops::conv2d_nchw(in[0], in[1], c)};
}
inline std::vector<te::Tensor> softmax(const std::vector<te::Tensor>& in, const Attrs& a, const Type&) {
  KILN_USER_CHECK(a.get_int("axis") == in[0].ndim() - 1) << "test softmax: last axis only";
  return {te::ops::softmax_last_axis(in[0])};
}
inline std::vector<te::Tensor> split(const std::vector<te::Tensor>& in, const Attrs& a, const Type&) {
  const te::Tensor& x = in[0];
  int64_t axis = a.get_int("axis"), begin = 0;
  std::vector<te::Tensor> outs;
  for (int64_t size : a.get_ints("sizes")) {
    std::vector<int64_t> shape = x.shape();
    shape[axis] = size;
    outs.push_back(te::compute(shape, [&](const std::vector<Var>& i) {
      std::vector<Expr> src(i.begin(), i.end());
      src[axis] = src[axis] + static_cast<int>(begin);
      return x(src);
    }, "split"));
    begin += size;
  }
  return outs;
}
inline std::vector<te::Tensor> bias_add(const std::vector<te::Tensor>& in, const Attrs& a, const Type& out) {
  int64_t axis = a.get_int("axis");
  return {te::compute(te_shape(out), [&](const std::vector<Var>& i) {
    return in[0](std::vector<Expr>(i.begin(), i.end())) + in[1](i[axis]);
  }, "bias_add")};
}
inline Expr relu_f(Expr x) { return ir::max(x, ir::make_const(x.dtype(), 0)); }
inline Expr exp_f(Expr x) { return ir::make_intrinsic("exp", {x}); }
inline Expr add_f(Expr a, Expr b) { return a + b; }
inline Expr mul_f(Expr a, Expr b) { return a * b; }
}  // namespace detail

class ScopedTestLowerings {
 public:
  ScopedTestLowerings() {
    set("add", detail::binary(detail::add_f));
    set("multiply", detail::binary(detail::mul_f));
    set("nn.relu", detail::unary(detail::relu_f));
    set("exp", detail::unary(detail::exp_f));
    set("reshape", detail::reshape);
    set("transpose", detail::transpose);
    set("sum", detail::sum);
    set("nn.conv2d", detail::conv2d);
    set("nn.bias_add", detail::bias_add);
    set("nn.softmax", detail::softmax);
    set("split", detail::split);
  }
  ~ScopedTestLowerings() {
    for (auto& [name, old] : saved_) set_op_lowering(name, old);
  }
  ScopedTestLowerings(const ScopedTestLowerings&) = delete;
  ScopedTestLowerings& operator=(const ScopedTestLowerings&) = delete;

 private:
  void set(const std::string& name, te::ops::FLower f) {
    saved_.emplace_back(name, get_op(name).lower);
    set_op_lowering(name, std::move(f));
  }
  std::vector<std::pair<std::string, std::any>> saved_;
};

}  // namespace kiln::graph_test
