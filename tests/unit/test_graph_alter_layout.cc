// alter_layout: the blocked graph printed (only the transforms a layout change needs), and its
// values checked against the NCHW graph with plain reference loops for both convolutions.
#include <catch2/catch.hpp>

#include <cmath>
#include <unordered_map>

#include "kiln/relay/evaluate.h"
#include "kiln/lower/lower.h"
#include "kiln/relay/printer.h"
#include "kiln/relay/verify.h"
#include "test_graph_util.h"

using namespace kiln::graph_test;

namespace {

int64_t block_of(const std::string& layout) { return layout == "NCHW" ? 0 : std::stoll(layout.substr(4)); }

// value at NCHW coordinates of a tensor in layout `b` (0: NCHW).
double at(const std::vector<double>& v, const Shape& s, int64_t b, int64_t n, int64_t c, int64_t h, int64_t w) {
  if (b == 0) return v[((n * s[1] + c) * s[2] + h) * s[3] + w];
  return v[(((n * s[1] + c / b) * s[2] + h) * s[3] + w) * b + c % b];
}

std::vector<double> layout_transform_ref(const std::vector<double>& x, const Shape& xs, const Shape& ys, int64_t from,
                                         int64_t to) {
  std::vector<double> y(x.size());
  int64_t C = to ? ys[1] * ys[4] : ys[1];
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < ys[2]; ++h)
        for (int64_t w = 0; w < ys[3]; ++w) {
          int64_t dst = to ? (((n * ys[1] + c / to) * ys[2] + h) * ys[3] + w) * to + c % to
                           : ((n * ys[1] + c) * ys[2] + h) * ys[3] + w;
          y[dst] = at(x, xs, from, n, c, h, w);
        }
  return y;
}

// Blocked conv, stride 1, dilation 1, symmetric padding.
std::vector<double> conv_nchwc_ref(const std::vector<double>& x, const Shape& xs, const std::vector<double>& w,
                                   const Shape& ws, const Shape& ys, int64_t pad) {
  int64_t xb = xs[4], yb = ys[4];
  std::vector<double> y(num_elements(ys), 0.0);
  for (int64_t ob = 0; ob < ys[1]; ++ob)
    for (int64_t i = 0; i < ys[2]; ++i)
      for (int64_t j = 0; j < ys[3]; ++j)
        for (int64_t o = 0; o < yb; ++o) {
          double acc = 0;
          for (int64_t ib = 0; ib < xs[1]; ++ib)
            for (int64_t ki = 0; ki < ws[2]; ++ki)
              for (int64_t kj = 0; kj < ws[3]; ++kj)
                for (int64_t c = 0; c < xb; ++c) {
                  int64_t ii = i + ki - pad, jj = j + kj - pad;
                  if (ii < 0 || ii >= xs[2] || jj < 0 || jj >= xs[3]) continue;
                  acc += x[((ib * xs[2] + ii) * xs[3] + jj) * xb + c] *
                         w[((((ob * ws[1] + ib) * ws[2] + ki) * ws[3] + kj) * xb + c) * yb + o];
                }
          y[((ob * ys[2] + i) * ys[3] + j) * yb + o] = acc;
        }
  return y;
}

// Values of a module's single output: convs, transforms and softmax by the loops above, everything
// else by the reference evaluator (which rounds to float32: the two graphs sum in different
// orders, so results agree to float32 precision; a packing mistake is off by O(1)).
std::vector<double> run(const Module& m, const std::vector<double>& input) {
  std::unordered_map<const ExprNode*, HostTensor> v;
  v[m.params[0].get()] = HostTensor::from_doubles(DataType::f32(), m.params[0].tensor_type().shape, input);
  for (const relay::Expr& e : post_order({m.body})) {
    if (auto* k = e.as<ConstantNode>()) v[e.get()] = k->value;
    const auto* c = e.as<CallNode>();
    if (!c) continue;
    std::vector<HostTensor> args;
    for (const relay::Expr& a : c->args) args.push_back(v.at(a.get()));
    const Shape& ys = c->type.as<TensorTypeNode>()->shape;
    std::vector<double> y;
    int64_t pad = c->attrs.has("padding") ? c->attrs.get_ints("padding")[0] : 0;
    if (c->op_name() == "nn.conv2d") {
      y = conv_nchw_ref(args[0].to_doubles(), args[0].shape(), args[1].to_doubles(), args[1].shape(), pad);
    } else if (c->op_name() == "nn.conv2d_NCHWc") {
      y = conv_nchwc_ref(args[0].to_doubles(), args[0].shape(), args[1].to_doubles(), args[1].shape(), ys, pad);
    } else if (c->op_name() == "nn.bias_add") {
      REQUIRE(c->attrs.get_int("axis") == 1);
      y = args[0].to_doubles();
      std::vector<double> b = args[1].to_doubles();
      int64_t inner = ys[2] * ys[3];
      for (size_t i = 0; i < y.size(); ++i) y[i] += b[(i / inner) % ys[1]];
    } else if (c->op_name() == "nn.softmax") {
      y = args[0].to_doubles();
      int64_t len = ys.back();
      REQUIRE(c->attrs.get_int("axis") == static_cast<int64_t>(ys.size()) - 1);
      for (size_t row = 0; row < y.size(); row += len) {
        double mx = -1e300, total = 0;
        for (int64_t k = 0; k < len; ++k) mx = std::max(mx, y[row + k]);
        for (int64_t k = 0; k < len; ++k) total += y[row + k] = std::exp(y[row + k] - mx);
        for (int64_t k = 0; k < len; ++k) y[row + k] /= total;
      }
    } else if (c->op_name() == "layout_transform") {
      y = layout_transform_ref(args[0].to_doubles(), args[0].shape(), ys, block_of(c->attrs.get_str("src_layout")),
                               block_of(c->attrs.get_str("dst_layout")));
    } else {
      auto r = evaluate_call(*c, args);
      INFO("no reference for " << c->op_name());
      REQUIRE(r.has_value());
      y = r->to_doubles();
    }
    v[e.get()] = HostTensor::from_doubles(DataType::f64(), ys, y);
  }
  return v.at(m.body.get()).to_doubles();
}

}  // namespace

TEST_CASE("alter_layout: conv blocks exchange NCHW[x]c tensors with no transforms in between", "[graph][alter_layout]") {
  relay::Expr x = var("x", {1, 8, 6, 6});
  relay::Expr c1 = call("nn.conv2d", {x, cst({16, 8, 3, 3}, wave(16 * 72, 0.2, 0))}, conv_attrs());
  relay::Expr r1 = call("nn.relu", {call("add", {c1, cst({16, 1, 1}, wave(16, 1, 1))})});
  relay::Expr c2 = call("nn.conv2d", {r1, cst({16, 16, 3, 3}, wave(16 * 144, 0.1, 2))}, conv_attrs());
  relay::Expr b2 = call("nn.bias_add", {c2, cst({16}, wave(16, 1, 3))}, Attrs().set_int("axis", 1));
  relay::Expr y = call("nn.relu", {call("add", {b2, r1})});
  Module m = Module::make({x}, {y}, {"y"});
  Module a = alter_layout(m, AlterLayoutOptions{8});
  verify(a);
  CHECK(to_string(a, PrintOptions{false, false}) ==
        "fn (%x: float32[1,8,6,6]) -> float32[1,16,6,6] {\n"
        "  %0 = layout_transform(%x, dst_layout=\"NCHW8c\", src_layout=\"NCHW\") : float32[1,1,6,6,8]\n"
        "  %1 = nn.conv2d_NCHWc(%0, meta[0], data_layout=\"NCHW8c\", dilation=[1,1], groups=1, "
        "kernel_layout=\"OIHW8i8o\", out_layout=\"NCHW8c\", padding=[1,1,1,1], strides=[1,1]) : float32[1,2,6,6,8]\n"
        "  %2 = add(%1, meta[1]) : float32[1,2,6,6,8]\n"
        "  %3 = nn.relu(%2) : float32[1,2,6,6,8]\n"
        "  %4 = nn.conv2d_NCHWc(%3, meta[2], data_layout=\"NCHW8c\", dilation=[1,1], groups=1, "
        "kernel_layout=\"OIHW8i8o\", out_layout=\"NCHW8c\", padding=[1,1,1,1], strides=[1,1]) : float32[1,2,6,6,8]\n"
        "  %5 = add(%4, meta[3]) : float32[1,2,6,6,8]\n"
        "  %6 = add(%5, %3) : float32[1,2,6,6,8]\n"
        "  %7 = nn.relu(%6) : float32[1,2,6,6,8]\n"
        "  %8 = layout_transform(%7, dst_layout=\"NCHW\", src_layout=\"NCHW8c\") : float32[1,16,6,6]\n"
        "  return %8\n"
        "}\n"
        "outputs: y\n"
        "meta[0] = float32[2,1,3,3,8,8]\n"
        "meta[1] = float32[1,2,1,1,8]\n"
        "meta[2] = float32[2,2,3,3,8,8]\n"
        "meta[3] = float32[1,2,1,1,8]\n");

  std::vector<double> in = wave(8 * 36, 1, 0.5);
  std::vector<double> want = run(m, in), got = run(a, in);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(std::fabs(got[i] - want[i]) <= 1e-5 * (1 + std::fabs(want[i])));
  // The fused blocked graph: each conv with its epilogue, the transforms on their own.
  CHECK(to_string(fuse_ops(a)).find("fused(nn.conv2d_NCHWc, add, add, nn.relu)(%1, meta[2], meta[3])") !=
        std::string::npos);
}

TEST_CASE("alter_layout: block sizes differ per tensor; plain readers get one transform back", "[graph][alter_layout]") {
  relay::Expr x = var("x", {1, 3, 5, 5});
  relay::Expr c1 = call("nn.conv2d", {x, cst({12, 3, 3, 3}, wave(12 * 27, 0.2, 0))}, conv_attrs());
  relay::Expr r = call("nn.relu", {c1});
  relay::Expr s = call("nn.softmax", {r}, Attrs().set_int("axis", 3));  // not blockable: NCHW
  relay::Expr c2 = call("nn.conv2d", {r, cst({8, 12, 1, 1}, wave(96, 0.3, 1))}, conv_attrs(0));
  relay::Expr y = call("add", {call("sum", {s}, Attrs().set_ints("axes", {1}).set_int("keepdims", 1)), c2});
  Module m = Module::make({x}, {y}, {"y"});
  Module a = alter_layout(m, AlterLayoutOptions{8});
  verify(a);
  std::string text = to_string(a, PrintOptions{false, false});
  // C=3 -> block 3; 12 channels -> block 6 (largest divisor <= 8); 8 -> 8.
  CHECK(text.find("layout_transform(%x, dst_layout=\"NCHW3c\", src_layout=\"NCHW\") : float32[1,1,5,5,3]") !=
        std::string::npos);
  CHECK(text.find("out_layout=\"NCHW6c\"") != std::string::npos);
  CHECK(text.find("kernel_layout=\"OIHW6i8o\"") != std::string::npos);
  size_t transforms = 0;
  for (size_t at = text.find("layout_transform("); at != std::string::npos; at = text.find("layout_transform(", at + 1))
    ++transforms;
  CHECK(transforms == 3);  // x in, relu back to NCHW for softmax, conv2 back for the add
  std::vector<double> in = wave(75, 1, 0.1);
  std::vector<double> want = run(m, in), got = run(a, in);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(std::fabs(got[i] - want[i]) <= 1e-5 * (1 + std::fabs(want[i])));
}

TEST_CASE("alter_layout: convs it cannot block are left alone", "[graph][alter_layout]") {
  relay::Expr x = var("x", {1, 4, 5, 5}), w2 = var("w2", {8, 4, 1, 1});
  relay::Expr dw = call("nn.conv2d", {x, cst({4, 1, 3, 3}, wave(36, 1, 0))}, conv_attrs().set_int("groups", 4));
  relay::Expr y = call("nn.conv2d", {dw, w2}, conv_attrs(0));  // a weight known only at run time
  Module m = Module::make({x, w2}, {y}, {"y"});
  Module a = alter_layout(m);
  CHECK(a.body.same_as(m.body));
}

TEST_CASE("compile with alter_layout: blocked kernels run and match the NCHW reference", "[graph][alter_layout]") {
  relay::Expr x = var("x", {1, 8, 6, 6});
  relay::Expr c1 = call("nn.conv2d", {x, cst({16, 8, 3, 3}, wave(16 * 72, 0.2, 0))}, conv_attrs());
  relay::Expr r1 = call("nn.relu", {call("add", {c1, cst({16, 1, 1}, wave(16, 1, 1))})});
  relay::Expr c2 = call("nn.conv2d", {r1, cst({16, 16, 3, 3}, wave(16 * 144, 0.1, 2))}, conv_attrs());
  relay::Expr y = call("nn.relu", {call("add", {c2, r1})});
  Module m = Module::make({x}, {y}, {"y"});
  kiln::CompileOptions opts;
  opts.alter_layout = true;
  kiln::CompiledModel c = kiln::compile(m, opts);
  std::vector<std::string> labels;
  for (const auto& n : c.plan.nodes) labels.push_back(n.label);
  CHECK(labels == std::vector<std::string>{"layout_transform", "nn.conv2d_NCHWc+add+nn.relu",
                                           "nn.conv2d_NCHWc+add+nn.relu", "layout_transform"});
  std::vector<double> in = wave(8 * 36, 1, 0.5);
  auto got = run_plan(c, {{"x", HostTensor::from_doubles(DataType::f32(), {1, 8, 6, 6}, in)}}).at("y").to_doubles();
  std::vector<double> want = run(m, in);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(std::fabs(got[i] - want[i]) <= 1e-4 * (1 + std::fabs(want[i])));
}
