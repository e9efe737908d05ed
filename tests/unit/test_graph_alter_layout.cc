// alter_layout: the blocked graph printed (only the transforms a layout change needs), and its
// values checked against the NCHW graph with plain reference loops for both convolutions.
#include <catch2/catch.hpp>

#include <cmath>
#include <unordered_map>

#include "kiln/lower/schedule_group.h"
#include "kiln/relay/evaluate.h"
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

// Blocked depthwise conv (channel multiplier 1), dilation 1, symmetric padding.
std::vector<double> depthwise_nchwc_ref(const std::vector<double>& x, const Shape& xs, const std::vector<double>& w,
                                        const Shape& ws, const Shape& ys, int64_t pad, int64_t stride) {
  int64_t b = xs[4];
  std::vector<double> y(num_elements(ys), 0.0);
  for (int64_t cb = 0; cb < ys[1]; ++cb)
    for (int64_t i = 0; i < ys[2]; ++i)
      for (int64_t j = 0; j < ys[3]; ++j)
        for (int64_t c = 0; c < b; ++c) {
          double acc = 0;
          for (int64_t ki = 0; ki < ws[1]; ++ki)
            for (int64_t kj = 0; kj < ws[2]; ++kj) {
              int64_t ii = i * stride + ki - pad, jj = j * stride + kj - pad;
              if (ii < 0 || ii >= xs[2] || jj < 0 || jj >= xs[3]) continue;
              acc += x[((cb * xs[2] + ii) * xs[3] + jj) * b + c] * w[((cb * ws[1] + ki) * ws[2] + kj) * b + c];
            }
          y[((cb * ys[2] + i) * ys[3] + j) * b + c] = acc;
        }
  return y;
}

// How many layout_transform calls a printed module holds.
size_t transforms(const std::string& text) {
  size_t n = 0;
  for (size_t at = text.find("layout_transform("); at != std::string::npos; at = text.find("layout_transform(", at + 1))
    ++n;
  return n;
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
    if (c->op_name() == "nn.conv2d" && c->attrs.get_int("groups") == 1 && c->attrs.get_ints("strides")[0] == 1) {
      y = conv_nchw_ref(args[0].to_doubles(), args[0].shape(), args[1].to_doubles(), args[1].shape(), pad);
    } else if (c->op_name() == "nn.conv2d_NCHWc") {
      y = conv_nchwc_ref(args[0].to_doubles(), args[0].shape(), args[1].to_doubles(), args[1].shape(), ys, pad);
    } else if (c->op_name() == "nn.conv2d" && c->attrs.get_int("groups") == ys[1]) {
      // NCHW is the blocked layout with blocks of one channel.
      const Shape& xs = args[0].shape();
      const Shape& ws = args[1].shape();
      y = depthwise_nchwc_ref(args[0].to_doubles(), {xs[0], xs[1], xs[2], xs[3], 1}, args[1].to_doubles(),
                              {ws[0], ws[2], ws[3], 1}, {ys[0], ys[1], ys[2], ys[3], 1}, pad,
                              c->attrs.get_ints("strides")[0]);
    } else if (c->op_name() == "nn.depthwise_conv2d_NCHWc") {
      y = depthwise_nchwc_ref(args[0].to_doubles(), args[0].shape(), args[1].to_doubles(), args[1].shape(), ys, pad,
                              c->attrs.get_ints("strides")[0]);
    } else if (c->op_name() == "concatenate") {
      // Of one image on axis 1, in NCHW or NCHW[x]c alike: the operands one after another.
      REQUIRE((ys[0] == 1 && c->attrs.get_int("axis") == 1));
      for (const HostTensor& t : args) {
        std::vector<double> part = t.to_doubles();
        y.insert(y.end(), part.begin(), part.end());
      }
    } else if ((c->op_name() == "nn.max_pool2d" || c->op_name() == "nn.avg_pool2d") && ys.size() == 4) {
      // Taps in the padding are skipped (count_include_pad 0).
      REQUIRE(c->attrs.get_int("count_include_pad", 0) == 0);
      const Shape& xs = args[0].shape();
      std::vector<double> xv = args[0].to_doubles();
      const auto& k = c->attrs.get_ints("kernel");
      const auto& st = c->attrs.get_ints("strides");
      const auto& pd = c->attrs.get_ints("padding");
      bool is_max = c->op_name() == "nn.max_pool2d";
      for (int64_t ch = 0; ch < ys[1]; ++ch)
        for (int64_t i = 0; i < ys[2]; ++i)
          for (int64_t j = 0; j < ys[3]; ++j) {
            double acc = is_max ? -1e300 : 0;
            int64_t taps = 0;
            for (int64_t ki = 0; ki < k[0]; ++ki)
              for (int64_t kj = 0; kj < k[1]; ++kj) {
                int64_t ii = i * st[0] + ki - pd[0], jj = j * st[1] + kj - pd[1];
                if (ii < 0 || ii >= xs[2] || jj < 0 || jj >= xs[3]) continue;
                double v = xv[(ch * xs[2] + ii) * xs[3] + jj];
                acc = is_max ? std::max(acc, v) : acc + v;
                ++taps;
              }
            y.push_back(is_max ? acc : acc / double(taps));
          }
    } else if (c->op_name() == "nn.global_avg_pool") {
      std::vector<double> xv = args[0].to_doubles();
      int64_t plane = xv.size() / ys[1];
      for (int64_t ch = 0; ch < ys[1]; ++ch) {
        double total = 0;
        for (int64_t i = 0; i < plane; ++i) total += xv[ch * plane + i];
        y.push_back(total / double(plane));
      }
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

TEST_CASE("alter_layout: block sizes differ per tensor, plain readers get one transform back", "[graph][alter_layout]") {
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
  CHECK(transforms(text) == 3);  // x in, relu back to NCHW for softmax, conv2 back for the add
  std::vector<double> in = wave(75, 1, 0.1);
  std::vector<double> want = run(m, in), got = run(a, in);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(std::fabs(got[i] - want[i]) <= 1e-5 * (1 + std::fabs(want[i])));
}

TEST_CASE("alter_layout: depthwise convs and channel concatenations stay blocked", "[graph][alter_layout]") {
  relay::Expr x = var("x", {1, 8, 7, 7});
  relay::Expr c1 = call("nn.relu", {call("nn.conv2d", {x, cst({16, 8, 1, 1}, wave(128, 0.3, 0))}, conv_attrs(0))});
  relay::Expr dw = call("nn.conv2d", {c1, cst({16, 1, 3, 3}, wave(144, 0.5, 1))},
                        conv_attrs().set_int("groups", 16).set_ints("strides", {2, 2}));
  relay::Expr c2 = call("nn.conv2d", {dw, cst({8, 16, 1, 1}, wave(128, 0.2, 2))}, conv_attrs(0));
  relay::Expr y = call("concatenate", {dw, c2}, Attrs().set_int("axis", 1));
  Module m = Module::make({x}, {y}, {"y"});
  Module a = alter_layout(m, AlterLayoutOptions{8});
  verify(a);
  std::string text = to_string(a, PrintOptions{false, false});
  CHECK(text.find("nn.depthwise_conv2d_NCHWc(%2, meta[1], data_layout=\"NCHW8c\", dilation=[1,1], groups=16, "
                  "out_layout=\"NCHW8c\", padding=[1,1,1,1], strides=[2,2]) : float32[1,2,4,4,8]") != std::string::npos);
  CHECK(text.find("concatenate(%3, %4, axis=1) : float32[1,3,4,4,8]") != std::string::npos);
  CHECK(transforms(text) == 2);  // x in, the concatenation out
  LayoutTraffic t = layout_traffic(a);
  CHECK(t.transformed == 8 * 49 + 24 * 16);
  CHECK(t.blocked == 16 * 49 + 16 * 16 + 8 * 16);
  std::vector<double> in = wave(8 * 49, 1, 0.5);
  std::vector<double> want = run(m, in), got = run(a, in);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(std::fabs(got[i] - want[i]) <= 1e-5 * (1 + std::fabs(want[i])));
}

TEST_CASE("alter_layout: a squeeze-and-excitation block stays blocked", "[graph][alter_layout]") {
  // efficientnet's: x * sigmoid(conv(relu(conv(global_avg_pool(x))))), all in blocks of 8.
  relay::Expr x = var("x", {1, 8, 5, 5});
  relay::Expr c = call("nn.relu", {call("nn.conv2d", {x, cst({16, 8, 1, 1}, wave(128, 0.3, 0))}, conv_attrs(0))});
  relay::Expr p = call("nn.global_avg_pool", {c});
  relay::Expr s1 = call("nn.relu", {call("nn.conv2d", {p, cst({8, 16, 1, 1}, wave(128, 0.2, 1))}, conv_attrs(0))});
  relay::Expr s2 = call("sigmoid", {call("nn.conv2d", {s1, cst({16, 8, 1, 1}, wave(128, 0.4, 2))}, conv_attrs(0))});
  relay::Expr y = call("multiply", {c, s2});
  Module m = Module::make({x}, {y}, {"y"});
  Module a = alter_layout(m, AlterLayoutOptions{8});
  verify(a);
  std::string text = to_string(a, PrintOptions{false, false});
  CHECK(text.find("mean(%2, axes=[2,3], keepdims=1) : float32[1,2,1,1,8]") != std::string::npos);
  CHECK(text.find("multiply(%2, %7) : float32[1,2,5,5,8]") != std::string::npos);
  CHECK(transforms(text) == 2);  // x in, y out
  std::vector<double> in = wave(200, 1, 0.5);
  std::vector<double> want = run(m, in), got = run(a, in);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(std::fabs(got[i] - want[i]) <= 1e-5 * (1 + std::fabs(want[i])));
  // Compiled in the target's blocks: the blocked mean and broadcast kernels compute the same.
  kiln::CompileOptions opts;
  opts.layout = kiln::CompileOptions::Layout::kBlocked;
  kiln::CompiledModel compiled = kiln::compile(m, opts);
  got = run_plan(compiled, {{"x", HostTensor::from_doubles(DataType::f32(), {1, 8, 5, 5}, in)}}).at("y").to_doubles();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(std::fabs(got[i] - want[i]) <= 1e-4 * (1 + std::fabs(want[i])));
}

TEST_CASE("alter_layout: max and average pools of blocked values pool the blocks", "[graph][alter_layout]") {
  relay::Expr x = var("x", {1, 8, 9, 9});
  relay::Expr c = call("nn.relu", {call("nn.conv2d", {x, cst({16, 8, 1, 1}, wave(128, 0.3, 0))}, conv_attrs(0))});
  relay::Attrs mp = Attrs().set_ints("kernel", {3, 3}).set_ints("strides", {2, 2}).set_ints("padding", {1, 1, 1, 1});
  mp.set_ints("dilation", {1, 1}).set_int("ceil_mode", 0);
  relay::Expr p = call("nn.max_pool2d", {c}, mp);
  relay::Attrs ap = Attrs().set_ints("kernel", {2, 2}).set_ints("strides", {2, 2}).set_ints("padding", {0, 0, 0, 0});
  ap.set_ints("dilation", {1, 1}).set_int("ceil_mode", 1).set_int("count_include_pad", 0);
  relay::Expr y = call("nn.avg_pool2d", {call("nn.conv2d", {p, cst({16, 16, 1, 1}, wave(256, 0.2, 1))}, conv_attrs(0))}, ap);
  Module m = Module::make({x}, {y}, {"y"});
  Module a = alter_layout(m, AlterLayoutOptions{8});
  verify(a);
  std::string text = to_string(a, PrintOptions{false, false});
  CHECK(text.find("nn.max_pool2d(%2, ceil_mode=0, dilation=[1,1], kernel=[3,3], layout=\"NCHW8c\", padding=[1,1,1,1], "
                  "strides=[2,2]) : float32[1,2,5,5,8]") != std::string::npos);
  CHECK(text.find("layout=\"NCHW8c\", padding=[0,0,0,0], strides=[2,2]) : float32[1,2,3,3,8]") != std::string::npos);
  // Compiled in the target's blocks (pool_nchwc kernels) against the NCHW graph's reference.
  std::vector<double> in = wave(8 * 81, 1, 0.5);
  kiln::CompileOptions blocked;
  blocked.layout = kiln::CompileOptions::Layout::kBlocked;
  auto input = HostTensor::from_doubles(DataType::f32(), {1, 8, 9, 9}, in);
  std::vector<double> want = run(m, in);
  kiln::CompiledModel c2 = kiln::compile(m, blocked);
  size_t pools = 0;
  for (const auto& n : c2.plan.nodes) pools += n.label.find("pool2d") != std::string::npos;
  CHECK(pools == 2);
  std::vector<double> got = run_plan(c2, {{"x", input}}).at("y").to_doubles();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(std::fabs(got[i] - want[i]) <= 1e-5 * (1 + std::fabs(want[i])));
}

TEST_CASE("alter_layout: convs it cannot block are left alone", "[graph][alter_layout]") {
  relay::Expr x = var("x", {1, 4, 5, 5}), w2 = var("w2", {8, 8, 1, 1});
  // A depthwise conv with channel multiplier 2, and one whose weight is known only at run time.
  relay::Expr dw = call("nn.conv2d", {x, cst({8, 1, 3, 3}, wave(72, 1, 0))}, conv_attrs().set_int("groups", 4));
  relay::Expr y = call("nn.conv2d", {dw, w2}, conv_attrs(0));
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
  opts.winograd = false;  // 3x3 stride-1 convs Winograd computes stay NCHW
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

TEST_CASE("compile: blocked depthwise convs and concatenations run and match the NCHW reference",
          "[graph][alter_layout]") {
  relay::Expr x = var("x", {1, 8, 9, 9});
  relay::Expr c1 = call("nn.relu", {call("nn.conv2d", {x, cst({32, 8, 1, 1}, wave(256, 0.3, 0))}, conv_attrs(0))});
  relay::Expr d1 = call("nn.conv2d", {c1, cst({32, 1, 3, 3}, wave(288, 0.5, 1))}, conv_attrs().set_int("groups", 32));
  relay::Expr d2 = call("nn.conv2d", {d1, cst({32, 1, 5, 5}, wave(800, 0.2, 3))},
                        conv_attrs(2).set_int("groups", 32).set_ints("strides", {2, 2}));
  relay::Expr c2 = call("nn.conv2d", {d2, cst({32, 32, 1, 1}, wave(1024, 0.1, 2))}, conv_attrs(0));
  relay::Expr y = call("concatenate", {d2, c2}, Attrs().set_int("axis", 1));
  Module m = Module::make({x}, {y}, {"y"});
  kiln::CompiledModel c = kiln::compile(m, kiln::CompileOptions());
  size_t depthwise = 0;
  for (const auto& n : c.plan.nodes) depthwise += n.label.rfind("nn.depthwise_conv2d_NCHWc", 0) == 0;
  CHECK(depthwise == 2);
  std::vector<double> in = wave(8 * 81, 1, 0.5);
  auto got = run_plan(c, {{"x", HostTensor::from_doubles(DataType::f32(), {1, 8, 9, 9}, in)}}).at("y").to_doubles();
  std::vector<double> want = run(m, in);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(std::fabs(got[i] - want[i]) <= 1e-4 * (1 + std::fabs(want[i])));
}

TEST_CASE("compile keeps NCHW where the layout transforms would move more than 2.5x what the blocked convs write",
          "[graph][alter_layout]") {
  // Transforms move the input (16 channels) and the output (8): 3x the blocked conv's 8.
  relay::Expr x = var("x", {1, 16, 6, 6});
  relay::Expr c1 = call("nn.conv2d", {x, cst({8, 16, 1, 1}, wave(128, 0.3, 0))}, conv_attrs(0));
  relay::Expr y = call("nn.softmax", {c1}, Attrs().set_int("axis", 3));  // read in NCHW
  Module m = Module::make({x}, {y}, {"y"});
  kiln::CompiledModel c = kiln::compile(m, kiln::CompileOptions());
  std::vector<std::string> labels;
  for (const auto& n : c.plan.nodes) labels.push_back(n.label);
  CHECK(labels == std::vector<std::string>{"nn.conv2d", "nn.softmax"});
  bool told = false;
  for (const std::string& note : c.notes) told = told || note.find("convs kept in NCHW") != std::string::npos;
  CHECK(told);
}
