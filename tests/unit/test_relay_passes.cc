// Graph passes: before/after printed IR for each rewrite, a numerical check of batch-norm
// folding against a plain reference convolution, and the passes on the shared models.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>

#include "kiln/relay/frontend/onnx.h"
#include "kiln/relay/op.h"
#include "kiln/relay/printer.h"
#include "kiln/relay/transforms.h"
#include "kiln/relay/verify.h"
#include "test_shared_dir.h"

using namespace kiln::relay;
using kiln::ir::DataType;

namespace {
Expr var(const std::string& n, Shape s) { return make_var(n, tensor_type(DataType::f32(), s)); }
Expr cst(Shape s, std::vector<double> v) { return make_constant(HostTensor::from_doubles(DataType::f32(), s, v)); }
Expr call(const std::string& op, std::vector<Expr> args, Attrs a = {}) { return make_call(op, std::move(args), a); }
std::string body(const Module& m) {  // the printed function without the outputs/meta lines
  std::string s = to_string(m, PrintOptions{false, true});
  return s.substr(0, s.find("}\n") + 2);
}
Module mod(Expr x, Expr out) { return Module::make({x}, {out}, {"y"}); }
Attrs conv_attrs() {
  return Attrs().set_ints("strides", {1, 1}).set_ints("padding", {1, 1, 1, 1}).set_ints("dilation", {1, 1}).set_int("groups", 1);
}
std::vector<double> seq(int64_t n, double scale, double offset) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = std::sin(static_cast<double>(i) * 1.7 + offset) * scale;
  return v;
}
// Plain NCHW conv, stride 1, pad 1, 3x3, one image.
std::vector<double> conv_ref(const std::vector<double>& x, int64_t c, int64_t h, int64_t w, const std::vector<double>& wt,
                             int64_t o) {
  std::vector<double> y(o * h * w, 0.0);
  for (int64_t oc = 0; oc < o; ++oc)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j)
        for (int64_t ic = 0; ic < c; ++ic)
          for (int64_t ki = 0; ki < 3; ++ki)
            for (int64_t kj = 0; kj < 3; ++kj) {
              int64_t ii = i + ki - 1, jj = j + kj - 1;
              if (ii < 0 || ii >= h || jj < 0 || jj >= w) continue;
              y[(oc * h + i) * w + j] += x[(ic * h + ii) * w + jj] * wt[((oc * c + ic) * 3 + ki) * 3 + kj];
            }
  return y;
}
const HostTensor& const_arg(const Expr& e, size_t i) { return e.as<CallNode>()->args[i].as<ConstantNode>()->value; }
}  // namespace

TEST_CASE("fold_constants evaluates calls on constants but does not inflate weights", "[relay][passes]") {
  Expr x = var("x", {2, 3});
  Expr w = cst({3, 2}, {1, 2, 3, 4, 5, 6});
  Expr wt = call("transpose", {w}, Attrs().set_ints("axes", {1, 0}));
  Expr big = call("broadcast_to", {cst({}, {0.5})}, Attrs().set_ints("shape", {300, 300}));
  Module m = Module::make({x}, {call("add", {x, wt}), big}, {"y", "z"});
  Module f = fold_constants(m);
  verify(f);
  CHECK(to_string(f) ==
        "fn (%x: float32[2,3]) -> (float32[2,3], float32[300,300]) {\n"
        "  %0 = add(%x, meta[0]) : float32[2,3]\n"
        "  %1 = broadcast_to(0.5f, shape=[300,300]) : float32[300,300]\n"
        "  %2 = (%0, %1) : (float32[2,3], float32[300,300])\n"
        "  return %2\n"
        "}\n"
        "outputs: y, z\n"
        "meta[0] = float32[2,3]{1, 3, 5, 2, 4, 6}\n");
  CHECK(fold_constants(f).body.same_as(f.body));  // nothing left to fold: the same module
}

TEST_CASE("simplify removes identities, collapses reshapes and composes transposes", "[relay][passes]") {
  Expr x = var("x", {2, 3, 4});
  Expr a = call("nn.dropout", {call("identity", {x})}, Attrs().set_float("rate", 0.1));
  Expr r = call("reshape", {call("reshape", {a}, Attrs().set_ints("newshape", {6, 4}))}, Attrs().set_ints("newshape", {24}));
  Expr back = call("reshape", {call("reshape", {x}, Attrs().set_ints("newshape", {24}))}, Attrs().set_ints("newshape", {2, 3, 4}));
  Expr t = call("transpose", {call("transpose", {back}, Attrs().set_ints("axes", {1, 2, 0}))}, Attrs().set_ints("axes", {2, 0, 1}));
  Expr t2 = call("transpose", {call("transpose", {x}, Attrs().set_ints("axes", {1, 0, 2}))}, Attrs().set_ints("axes", {0, 2, 1}));
  Expr zero = call("add", {call("multiply", {t, cst({}, {1})}), cst({1}, {0})});
  Expr widen = call("add", {x, cst({5, 1, 1, 1}, {0, 0, 0, 0, 0})});  // x + 0 that broadcasts: stays
  Expr parts = make_tuple({zero, r});
  Module m = Module::make({x}, {make_tuple_get_item(parts, 0), make_tuple_get_item(parts, 1), t2, widen},
                          {"a", "b", "c", "d"});
  CHECK(body(m).find("identity") != std::string::npos);
  Module s = simplify(m);
  verify(s);
  CHECK(body(s) ==
        "fn (%x: float32[2,3,4]) -> (float32[2,3,4], float32[24], float32[3,4,2], float32[5,2,3,4]) {\n"
        "  %0 = reshape(%x, newshape=[24]) : float32[24]\n"
        "  %1 = transpose(%x, axes=[1,2,0]) : float32[3,4,2]\n"
        "  %2 = add(%x, meta[0]) : float32[5,2,3,4]\n"
        "  %3 = (%x, %0, %1, %2) : (float32[2,3,4], float32[24], float32[3,4,2], float32[5,2,3,4])\n"
        "  return %3\n"
        "}\n");
}

TEST_CASE("eliminate_common_subexpr merges equal calls and constants, not different attrs", "[relay][passes]") {
  Expr x = var("x", {4});
  Expr a1 = call("add", {call("exp", {x}), cst({4}, {1, 2, 3, 4})});
  Expr a2 = call("add", {call("exp", {x}), cst({4}, {1, 2, 3, 4})});
  Expr l1 = call("nn.leaky_relu", {a1}, Attrs().set_float("alpha", 0.1));
  Expr l2 = call("nn.leaky_relu", {a2}, Attrs().set_float("alpha", 0.2));
  Module m = mod(x, call("multiply", {l1, l2}));
  Module c = eliminate_common_subexpr(m);
  verify(c);
  CHECK(body(c) ==
        "fn (%x: float32[4]) -> float32[4] {\n"
        "  %0 = exp(%x) : float32[4]\n"
        "  %1 = add(%0, meta[0]) : float32[4]\n"
        "  %2 = nn.leaky_relu(%1, alpha=0.1) : float32[4]\n"
        "  %3 = nn.leaky_relu(%1, alpha=0.2) : float32[4]\n"
        "  %4 = multiply(%2, %3) : float32[4]\n"
        "  return %4\n"
        "}\n");
  CHECK(post_order({m.body}).size() == 10);
  CHECK(post_order({c.body}).size() == 7);
}

TEST_CASE("fold_batch_norm folds bn and a scale/shift into the conv, numerically", "[relay][passes]") {
  const int64_t C = 2, O = 3, H = 4, W = 5;
  std::vector<double> wv = seq(O * C * 9, 0.5, 0.1), bv = seq(O, 0.3, 2.0), xv = seq(C * H * W, 1.0, 0.7);
  std::vector<double> gamma = {1.5, -0.7, 0.9}, beta = {0.1, 0.2, -0.3}, mean = {0.05, -0.4, 0.6}, varv = {0.8, 1.9, 0.3};
  std::vector<double> post_scale = {2.0, -1.0, 0.5}, post_shift = {0.25, 0.5, -1.0};
  double eps = 1e-3;
  Expr x = var("x", {1, C, H, W});
  Expr conv = call("nn.conv2d", {x, cst({O, C, 3, 3}, wv)}, conv_attrs());
  Expr biased = call("nn.bias_add", {conv, cst({O}, bv)}, Attrs().set_int("axis", 1));
  Expr bn = call("nn.batch_norm", {biased, cst({O}, gamma), cst({O}, beta), cst({O}, mean), cst({O}, varv)},
                 Attrs().set_float("epsilon", eps).set_int("axis", 1));
  Expr scaled = call("multiply", {cst({O, 1, 1}, post_scale), bn});
  Expr shifted = call("add", {scaled, cst({1, O, 1, 1}, post_shift)});
  Module f = fold_batch_norm(mod(x, shifted));
  verify(f);
  CHECK(body(f) ==
        "fn (%x: float32[1,2,4,5]) -> float32[1,3,4,5] {\n"
        "  %0 = nn.conv2d(%x, meta[0], dilation=[1,1], groups=1, padding=[1,1,1,1], strides=[1,1]) : float32[1,3,4,5]\n"
        "  %1 = nn.bias_add(%0, meta[1], axis=1) : float32[1,3,4,5]\n"
        "  return %1\n"
        "}\n");
  const CallNode* bias_add = f.body.as<CallNode>();
  REQUIRE(bias_add->op_name() == "nn.bias_add");
  const CallNode* folded_conv = bias_add->args[0].as<CallNode>();
  REQUIRE(folded_conv->op_name() == "nn.conv2d");
  // Reference: the original chain, computed with plain loops in double.
  std::vector<double> ref = conv_ref(xv, C, H, W, wv, O);
  for (int64_t o = 0; o < O; ++o)
    for (int64_t p = 0; p < H * W; ++p) {
      double v = ref[o * H * W + p] + bv[o];
      v = (v - mean[o]) / std::sqrt(varv[o] + eps) * gamma[o] + beta[o];
      ref[o * H * W + p] = v * post_scale[o] + post_shift[o];
    }
  std::vector<double> got = conv_ref(xv, C, H, W, const_arg(bias_add->args[0], 1).to_doubles(), O);
  std::vector<double> fb = const_arg(f.body, 1).to_doubles();
  for (int64_t o = 0; o < O; ++o)
    for (int64_t p = 0; p < H * W; ++p) {
      INFO("channel " << o << " pixel " << p);
      CHECK(got[o * H * W + p] + fb[o] == Approx(ref[o * H * W + p]).epsilon(1e-5).margin(1e-5));
    }
}

TEST_CASE("fold_batch_norm leaves shared convs alone and spells out a lone batch norm", "[relay][passes]") {
  Expr x = var("x", {1, 2, 3, 3});
  Expr conv = call("nn.conv2d", {x, cst({2, 2, 3, 3}, seq(36, 1, 0))}, conv_attrs());
  Expr params[4] = {cst({2}, {1, 2}), cst({2}, {0, 1}), cst({2}, {0, 0}), cst({2}, {1, 4})};
  Attrs bn_attrs = Attrs().set_float("epsilon", 0).set_int("axis", 1);
  // The conv feeds the batch norm and the output: folding would need two convs.
  Expr bn = call("nn.batch_norm", {conv, params[0], params[1], params[2], params[3]}, bn_attrs);
  Module shared = Module::make({x}, {bn, conv}, {"a", "b"});
  Module f = fold_batch_norm(shared);
  CHECK(body(f) ==
        "fn (%x: float32[1,2,3,3]) -> (float32[1,2,3,3], float32[1,2,3,3]) {\n"
        "  %0 = nn.conv2d(%x, meta[0], dilation=[1,1], groups=1, padding=[1,1,1,1], strides=[1,1]) : float32[1,2,3,3]\n"
        "  %1 = multiply(%0, meta[1]) : float32[1,2,3,3]\n"
        "  %2 = add(%1, meta[2]) : float32[1,2,3,3]\n"
        "  %3 = (%2, %0) : (float32[1,2,3,3], float32[1,2,3,3])\n"
        "  return %3\n"
        "}\n");
  // scale = gamma / sqrt(var) = [1, 1], shift = beta - mean * scale = [0, 1], shaped [C,1,1].
  CHECK(to_string(f).find("meta[1] = float32[2,1,1]{1, 1}\nmeta[2] = float32[2,1,1]{0, 1}\n") != std::string::npos);
  verify(f);
}

namespace {
using kiln::test::shared_dir;

int count_op(const Module& m, const std::string& op) {
  int n = 0;
  for (const Expr& e : post_order({m.body}))
    if (auto* c = e.as<CallNode>()) n += c->op_name() == op;
  return n;
}
}  // namespace

TEST_CASE("the passes on bert_mini fold every weight transpose and keep the types", "[relay][passes][models]") {
  Module m = from_onnx(shared_dir() + "/models/bert_mini/model.onnx");
  CHECK(count_op(m, "transpose") == 28);
  Module p = eliminate_common_subexpr(simplify(fold_constants(fold_batch_norm(m))));
  verify(p);
  CHECK(p.output_types() == m.output_types());
  CHECK(count_op(p, "transpose") == 16);  // the 12 weight transposes became constants; 16 move activations
  CHECK(count_op(p, "nn.matmul") == 24);
}
