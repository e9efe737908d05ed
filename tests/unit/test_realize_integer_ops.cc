// relay::realize_integer_ops: the QDQ pattern dequantize -> conv2d / dense / matmul -> quantize
// becomes nn.conv2d_integer / nn.dense_integer and one dequantize of the int32 sums (graph text
// before/after, refusals), alter_layout blocks the integer convs, and the compiled model agrees with the float computation on the
// dequantized values (CompileOptions::int8_kernels false) within one quantization step of the
// output, equal on almost every element (a step apart only where the two roundings straddle a
// tie), at every x86 level this machine runs.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "kiln/compiler.h"
#include "kiln/relay/printer.h"
#include "kiln/relay/transforms.h"
#include "test_graph_util.h"

using namespace kiln::graph_test;
using kiln::CompileOptions;

namespace {

relay::Expr konst(DataType t, Shape s, const std::vector<double>& v) { return make_constant(HostTensor::from_doubles(t, s, v)); }
relay::Expr kscalar(DataType t, double v) { return make_constant(HostTensor::scalar(t, v)); }

relay::Expr quantize(relay::Expr x, double scale, int zp) {
  return call("quantize", {x, scalar(scale), kscalar(DataType::i8(), zp)}, Attrs().set_str("out_dtype", "int8").set_int("axis", 1));
}
relay::Expr dequantize(relay::Expr q, relay::Expr scale, relay::Expr zp, int64_t axis) {
  return call("dequantize", {q, scale, zp}, Attrs().set_int("axis", axis));
}

// Seeded int8 weights over the whole range.
std::vector<double> int8_values(int64_t n, int64_t seed) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(((i * 7919 + seed * 104729) % 256) - 128);
  return v;
}

struct QdqConv {
  int64_t c = 6, oc = 20, hw = 9, groups = 1;
  int weight_zero_point = 0;
  bool per_channel_data = false;
};

// conv2d(dx, dequantized int8 weights, per-channel scales) + bias -> quantize -> dequantize.
relay::Expr qdq_conv_of(const relay::Expr& dx, const QdqConv& q, int64_t seed) {
  const int64_t cg = q.c / q.groups;
  std::vector<double> ws(q.oc);
  for (int64_t o = 0; o < q.oc; ++o) ws[o] = 0.001 * (1 + o % 5);
  relay::Expr w = dequantize(konst(DataType::i8(), {q.oc, cg, 3, 3}, int8_values(q.oc * cg * 9, seed)), cst({q.oc}, ws),
                             konst(DataType::i8(), {q.oc}, std::vector<double>(q.oc, q.weight_zero_point)), 0);
  Attrs a = conv_attrs();
  a.set_int("groups", q.groups);
  relay::Expr conv = call("nn.conv2d", {dx, w}, a, "Conv_" + std::to_string(seed));
  std::vector<double> bias(q.oc);
  for (int64_t o = 0; o < q.oc; ++o) bias[o] = 0.01 * (o % 7) - 0.03;
  relay::Expr b = call("nn.bias_add", {conv, cst({q.oc}, bias)}, Attrs().set_int("axis", 1));
  return dequantize(quantize(b, 0.05, -5), scalar(0.05), kscalar(DataType::i8(), -5), 1);
}

// x -> quantize -> dequantize -> conv2d(dequantized int8 weights, per-channel scales) + bias ->
// quantize -> dequantize: the QDQ form of ONNX Runtime's quantizer.
Module qdq_conv(const QdqConv& q) {
  relay::Expr x = var("x", {1, q.c, q.hw, q.hw});
  relay::Expr dx = q.per_channel_data
                       ? dequantize(call("quantize", {x, cst({q.c}, std::vector<double>(q.c, 0.02)),
                                                       konst(DataType::i8(), {q.c}, std::vector<double>(q.c, 3))},
                                         Attrs().set_str("out_dtype", "int8").set_int("axis", 1)),
                                    cst({q.c}, std::vector<double>(q.c, 0.02)),
                                    konst(DataType::i8(), {q.c}, std::vector<double>(q.c, 3)), 1)
                       : dequantize(quantize(x, 0.02, 3), scalar(0.02), kscalar(DataType::i8(), 3), 1);
  return Module::make({x}, {qdq_conv_of(dx, q, 1)}, {"y"});
}

int count_ops(const Module& m, const std::string& op) {
  int n = 0;
  for (const relay::Expr& e : post_order({m.body}))
    if (const auto* c = e.as<CallNode>(); c && c->op_name() == op) ++n;
  return n;
}

std::vector<double> run(const Module& m, const std::string& target, bool int8, const std::vector<double>& x,
                        CompileOptions::Layout layout) {
  CompileOptions o;
  o.target = kiln::Target::parse(target);
  o.int8_kernels = int8;
  o.layout = layout;
  kiln::CompiledModel c = kiln::compile(m, o);
  const relay::Expr& p = m.params[0];
  auto out = run_plan(c, {{"x", HostTensor::from_doubles(DataType::f32(), p.tensor_type().shape, x)}});
  return out.at("y").to_doubles();
}

// Integer kernels against the float computation: steps apart at most one, and rarely; in the
// layout the compiler picks (blocked where it pays) and in NCHW.
void check_against_float(const Module& m, int64_t numel, double step) {
  std::vector<double> x(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i) x[i] = std::sin(0.37 * i) * 2.2;
  using Layout = CompileOptions::Layout;
  for (const std::string& target : {std::string("llvm"), std::string("llvm -mcpu=x86-64-v3")}) {
    if (target != "llvm" && !kiln::Target::host().is_x86()) continue;
    for (Layout layout : {Layout::kAuto, Layout::kNCHW}) {
      std::vector<double> got = run(m, target, true, x, layout), want = run(m, target, false, x, layout);
      REQUIRE(got.size() == want.size());
      size_t off = 0;
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        double steps = std::fabs(got[i] - want[i]) / step;
        worst = std::max(worst, steps);
        off += steps > 0.5;
      }
      INFO(target << ", layout " << (layout == Layout::kNCHW ? "NCHW" : "auto") << ": " << off << " of " << got.size()
                  << " outputs a step apart");
      CHECK(worst <= 1.0 + 1e-4);
      CHECK(off * 100 <= got.size());
    }
  }
}

}  // namespace

TEST_CASE("realize_integer_ops: dequantize -> conv2d becomes conv2d_integer and one dequantize", "[graph][int8]") {
  Module m = infer_types(qdq_conv({}));
  Module r = realize_integer_ops(m);
  CHECK(count_ops(m, "nn.conv2d") == 1);
  CHECK(count_ops(r, "nn.conv2d") == 0);
  CHECK(count_ops(r, "nn.conv2d_integer") == 1);
  std::string text = to_string(r);
  INFO(text);
  // The data's int8 values and zero point, the weight's int8 values and sums; the sums scaled
  // by x scale * w scale per output channel (axis 1 of NCHW).
  CHECK(text.find("nn.conv2d_integer(%0, meta[") != std::string::npos);
  CHECK(text.find(", 3i8, meta[") != std::string::npos);
  CHECK(text.find("int32[1,20,9,9]") != std::string::npos);
  CHECK(text.find(", axis=1) : float32[1,20,9,9]") != std::string::npos);
  check_against_float(m, 6 * 81, 0.05);
}

TEST_CASE("realize_integer_ops: a depthwise conv becomes a depthwise conv2d_integer", "[graph][int8]") {
  QdqConv q;
  q.c = q.oc = q.groups = 16;
  Module m = infer_types(qdq_conv(q));
  Module r = realize_integer_ops(m);
  CHECK(count_ops(r, "nn.conv2d") == 0);
  CHECK(count_ops(r, "nn.conv2d_integer") == 1);
  std::string text = to_string(r);
  INFO(text);
  CHECK(text.find("groups=16") != std::string::npos);
  CHECK(text.find("int32[1,16,9,9]") != std::string::npos);
  check_against_float(m, 16 * 81, 0.05);
}

TEST_CASE("alter_layout: integer convs exchange blocked int8 tensors, the first reading NCHW as it is",
          "[graph][int8][alter_layout]") {
  // x -> QDQ -> conv 8 -> 16 -> QDQ -> depthwise 16 -> QDQ -> y, as a mobilenet block.
  relay::Expr x = var("x", {1, 8, 9, 9});
  relay::Expr dx = dequantize(quantize(x, 0.02, 3), scalar(0.02), kscalar(DataType::i8(), 3), 1);
  QdqConv expand;
  expand.c = 8;
  expand.oc = 16;
  QdqConv depthwise;
  depthwise.c = depthwise.oc = depthwise.groups = 16;
  relay::Expr y = qdq_conv_of(qdq_conv_of(dx, expand, 1), depthwise, 2);
  Module m = infer_types(Module::make({x}, {y}, {"y"}));
  relay::AlterLayoutOptions lo;
  lo.max_block = 8;
  Module b = infer_types(relay::alter_layout(realize_integer_ops(m), lo));
  std::string text = to_string(b);
  INFO(text);
  CHECK(count_ops(b, "nn.conv2d_integer_NCHWc") == 2);
  CHECK(count_ops(b, "nn.conv2d_integer") == 0);
  // Per-channel dequantizes of the sums: a cast and a product with the scales in blocks.
  CHECK(count_ops(b, "multiply") == 2);
  CHECK(text.find("float32[1,2,1,1,8]") != std::string::npos);
  // The int8 values between the convs stay blocked; the only transform is the output's.
  CHECK(count_ops(b, "layout_transform") == 1);
  CHECK(text.find("data_layout=\"NCHW\"") != std::string::npos);
  CHECK(text.find("int8[1,2,9,9,8]") != std::string::npos);
  check_against_float(m, 8 * 81, 0.05);
}

TEST_CASE("realize_integer_ops leaves what integer kernels cannot compute exactly in float", "[graph][int8]") {
  QdqConv asymmetric;
  asymmetric.weight_zero_point = 2;
  QdqConv grouped;
  grouped.groups = 2;
  QdqConv per_channel_data;
  per_channel_data.per_channel_data = true;
  for (const QdqConv& q : {asymmetric, grouped, per_channel_data}) {
    Module m = infer_types(qdq_conv(q));
    Module r = realize_integer_ops(m);
    CHECK(count_ops(r, "nn.conv2d_integer") == 0);
    CHECK(count_ops(r, "nn.conv2d") == 1);
  }
}

TEST_CASE("realize_integer_ops: dense and matmul with a constant B become dense_integer", "[graph][int8]") {
  // x [2, 5, 24] quantized; dense weight [N=40, K=24], matmul weight [K=24, N=40] per column.
  for (bool kn : {false, true}) {
    relay::Expr x = var("x", {2, 5, 24});
    relay::Expr dx = dequantize(quantize(x, 0.03, -1), scalar(0.03), kscalar(DataType::i8(), -1), 2);
    std::vector<double> ws(40);
    for (int o = 0; o < 40; ++o) ws[o] = 0.002 * (1 + o % 3);
    Shape wshape = kn ? Shape{24, 40} : Shape{40, 24};
    relay::Expr w = dequantize(konst(DataType::i8(), wshape, int8_values(960, 2)), cst({40}, ws),
                               konst(DataType::i8(), {40}, std::vector<double>(40, 0)), kn ? 1 : 0);
    relay::Expr prod = kn ? call("nn.matmul", {dx, w}) : call("nn.dense", {call("reshape", {dx}, Attrs().set_ints("newshape", {10, 24})), w});
    relay::Expr y = dequantize(quantize(prod, 0.1, 0), scalar(0.1), kscalar(DataType::i8(), 0), 1);
    Module m = infer_types(Module::make({x}, {y}, {"y"}));
    Module r = realize_integer_ops(m);
    INFO(to_string(r));
    CHECK(count_ops(r, "nn.dense_integer") == 1);
    CHECK(count_ops(r, kn ? "nn.matmul" : "nn.dense") == 0);
    check_against_float(m, 240, 0.1);
  }
}

TEST_CASE("realize_integer_ops passes over calls of tuple type", "[graph][int8]") {
  // A split's call has a tuple type (gpt2's qkv split crashed the pass when it read a tensor type).
  relay::Expr x = var("x", {1, 6, 4});
  relay::Expr sp = call("split", {x}, Attrs().set_ints("sizes", {2, 4}).set_int("axis", 1));
  relay::Expr a = make_tuple_get_item(sp, 0), b = make_tuple_get_item(sp, 1);
  Module m = infer_types(Module::make({x}, {a, b}, {"a", "b"}));
  CHECK(to_string(realize_integer_ops(m)) == to_string(m));
}

TEST_CASE("nn.conv2d_integer and nn.dense_integer name the operand of a wrong type or shape", "[graph][int8]") {
  auto i8 = [](Shape s) { return make_constant(HostTensor::zeros(DataType::i8(), s)); };
  auto sums = [](int64_t n) { return make_constant(HostTensor::zeros(DataType::i32(), {n})); };
  relay::Expr xf = var("x", {2, 8});
  REQUIRE_THROWS_WITH(call("nn.dense_integer", {xf, i8({4, 8}), kscalar(DataType::i8(), 0), sums(4)}),
                      Catch::Matchers::Contains("data must be int8 or uint8, got float32"));
  relay::Expr xq = make_var("xq", tensor_type(DataType::u8(), {2, 8}));
  REQUIRE_THROWS_WITH(call("nn.dense_integer", {xq, i8({4, 8}), kscalar(DataType::i8(), 0), sums(4)}),
                      Catch::Matchers::Contains("data zero point must be a uint8 scalar, got int8"));
  REQUIRE_THROWS_WITH(call("nn.dense_integer", {xq, i8({4, 8}), kscalar(DataType::u8(), 0), sums(5)}),
                      Catch::Matchers::Contains("weight sums must be int32 [4], got int32 [5]"));
  relay::Expr img = make_var("img", tensor_type(DataType::i8(), {1, 4, 6, 6}));
  Attrs a = conv_attrs();
  a.set_int("groups", 2);
  REQUIRE_THROWS_WITH(call("nn.conv2d_integer", {img, i8({4, 4, 3, 3}), kscalar(DataType::i8(), 0), sums(4)}, a),
                      Catch::Matchers::Contains("integer convolutions of one group or depthwise") &&
                          Catch::Matchers::Contains("got groups 2 with weight [4,4,3,3]"));
  relay::Expr blocked = make_var("blocked", tensor_type(DataType::i8(), {1, 2, 6, 6, 4}));
  Attrs nchwc = conv_attrs();
  nchwc.set_int("groups", 1).set_str("data_layout", "NCHW4c").set_str("out_layout", "NCHW3c");
  REQUIRE_THROWS_WITH(call("nn.conv2d_integer_NCHWc", {blocked, i8({4, 8, 3, 3}), kscalar(DataType::i8(), 0), sums(4)}, nchwc),
                      Catch::Matchers::Contains("4 output channels are not whole blocks of 3"));
  nchwc.set_str("data_layout", "NCHW8c");
  REQUIRE_THROWS_WITH(call("nn.conv2d_integer_NCHWc", {blocked, i8({4, 8, 3, 3}), kscalar(DataType::i8(), 0), sums(4)}, nchwc),
                      Catch::Matchers::Contains("data [1,2,6,6,4] is not NCHW8c"));
  nchwc.set_str("data_layout", "NCHW4c").set_str("out_layout", "NCHW");
  REQUIRE_THROWS_WITH(call("nn.conv2d_integer_NCHWc", {blocked, i8({4, 8, 3, 3}), kscalar(DataType::i8(), 0), sums(4)}, nchwc),
                      Catch::Matchers::Contains("out_layout must be blocked (NCHW<y>c), got NCHW"));
  relay::Expr img8 = make_var("img8", tensor_type(DataType::i8(), {1, 8, 6, 6}));
  Attrs dw = conv_attrs();
  dw.set_int("groups", 8).set_str("data_layout", "NCHW").set_str("out_layout", "NCHW4c");
  REQUIRE_THROWS_WITH(call("nn.conv2d_integer_NCHWc", {img8, i8({8, 1, 3, 3}), kscalar(DataType::i8(), 0), sums(8)}, dw),
                      Catch::Matchers::Contains("a depthwise conv's data and output must share one block"));
}
