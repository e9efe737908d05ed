// combine_parallel: the graph before and after, and the compiled combined model checked against
// the original graph computed with plain reference loops (convs) and the constant evaluator.
#include <catch2/catch.hpp>

#include <cmath>
#include <unordered_map>

#include "kiln/relay/evaluate.h"
#include "kiln/relay/printer.h"
#include "kiln/relay/verify.h"
#include "test_graph_util.h"

using namespace kiln::graph_test;

namespace {

// The module's outputs for one input, convs by conv_nchw_ref (stride 1), the rest evaluated.
std::vector<std::vector<double>> reference(const Module& m, const std::vector<double>& input) {
  std::unordered_map<const ExprNode*, HostTensor> v;
  v[m.params[0].get()] = HostTensor::from_doubles(DataType::f32(), m.params[0].tensor_type().shape, input);
  for (const relay::Expr& e : post_order({m.body})) {
    if (auto* k = e.as<ConstantNode>()) v[e.get()] = k->value;
    const auto* c = e.as<CallNode>();
    if (!c) continue;
    std::vector<HostTensor> args;
    for (const relay::Expr& a : c->args) args.push_back(v.at(a.get()));
    const Shape& ys = c->type.as<TensorTypeNode>()->shape;
    if (c->op_name() == "nn.conv2d") {
      REQUIRE(c->attrs.get_ints("strides")[0] == 1);
      v[e.get()] = HostTensor::from_doubles(DataType::f32(), ys,
                                            conv_nchw_ref(args[0].to_doubles(), args[0].shape(), args[1].to_doubles(),
                                                          args[1].shape(), c->attrs.get_ints("padding")[0]));
    } else if (c->op_name() == "nn.bias_add") {  // along axis 1 of NCHW
      std::vector<double> y = args[0].to_doubles(), b = args[1].to_doubles();
      const int64_t plane = ys[2] * ys[3];
      for (size_t i = 0; i < y.size(); ++i) y[i] += b[(i / static_cast<size_t>(plane)) % b.size()];
      v[e.get()] = HostTensor::from_doubles(DataType::f32(), ys, y);
    } else if (c->op_name() == "nn.matmul") {  // [1, M, K] x [K, N]
      std::vector<double> a = args[0].to_doubles(), b = args[1].to_doubles(), y(static_cast<size_t>(ys[1] * ys[2]), 0.0);
      const int64_t K = args[1].shape()[0], N = ys[2];
      for (int64_t i = 0; i < ys[1]; ++i)
        for (int64_t j = 0; j < N; ++j)
          for (int64_t k = 0; k < K; ++k) y[i * N + j] += a[i * K + k] * b[k * N + j];
      v[e.get()] = HostTensor::from_doubles(DataType::f32(), ys, y);
    } else {
      auto r = evaluate_call(*c, args);
      REQUIRE(r.has_value());
      v[e.get()] = *r;
    }
  }
  std::vector<std::vector<double>> out;
  for (const relay::Expr& o : m.outputs()) out.push_back(v.at(o.get()).to_doubles());
  return out;
}

int count_ops(const Module& m, const std::string& op) {
  int n = 0;
  for (const relay::Expr& e : post_order({m.body}))
    if (const auto* c = e.as<CallNode>(); c && c->op_name() == op) ++n;
  return n;
}

relay::Expr conv_branch(const relay::Expr& x, int64_t oc, int64_t k, double phase, bool relu) {
  const int64_t c = x.tensor_type().shape[1];
  relay::Expr y = call("nn.conv2d", {x, cst({oc, c, k, k}, wave(oc * c * k * k, 0.3, phase))}, conv_attrs(k / 2));
  y = call("nn.bias_add", {y, cst({oc}, wave(oc, 0.5, phase + 1))}, Attrs().set_int("axis", 1));
  return relu ? call("nn.relu", {y}) : y;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(std::fabs(got[i] - want[i]) <= 1e-4 * (1 + std::fabs(want[i])));
}

}  // namespace

TEST_CASE("combine_parallel: an inception block's 1x1 convs on one input become one conv, sliced",
          "[graph][combine_parallel]") {
  relay::Expr x = var("x", {1, 8, 6, 6});
  relay::Expr b1 = conv_branch(x, 16, 1, 0.0, true);
  relay::Expr b2 = conv_branch(x, 32, 1, 0.7, true);
  relay::Expr b3 = conv_branch(x, 16, 1, 1.4, false);  // no relu: the branches share conv and bias only
  relay::Expr b4 = conv_branch(x, 8, 3, 2.1, true);    // a 3x3 conv: another group, alone
  relay::Expr y = call("concatenate", {b1, b2, b3, b4}, Attrs().set_int("axis", 1));
  Module m = Module::make({x}, {y}, {"y"});

  CombineResult r = combine_parallel(m, 2);
  CHECK(r.groups == 1);
  verify(r.module);
  CHECK(count_ops(r.module, "nn.conv2d") == 2);
  CHECK(count_ops(r.module, "nn.bias_add") == 2);
  CHECK(count_ops(r.module, "strided_slice") == 3);
  CHECK(count_ops(r.module, "nn.relu") == 3);  // after the slices of the branches that had one
  const std::string text = to_string(r.module);
  CHECK(text.find("float32[1,64,6,6]") != std::string::npos);  // 16 + 32 + 16 output channels
  CHECK(text.find("begin=[0,48,0,0], end=[1,64,6,6]") != std::string::npos);

  // Three branches are enough for min_branches 3, not for 4.
  CHECK(combine_parallel(m, 3).groups == 1);
  CHECK(combine_parallel(m, 4).groups == 0);

  // Compiled (blocked layout, slices of whole channel blocks) it computes the original graph.
  kiln::CompileOptions opts;
  opts.combine_branches = 2;
  kiln::CompiledModel c = kiln::compile(m, opts);
  bool combined_note = false;
  for (const std::string& n : c.notes) combined_note = combined_note || n.find("combine_parallel: 1 group") == 0;
  CHECK(combined_note);
  std::vector<double> in = wave(8 * 36, 1, 0.5);
  auto got = run_plan(c, {{"x", HostTensor::from_doubles(DataType::f32(), {1, 8, 6, 6}, in)}}).at("y").to_doubles();
  check_close(got, reference(m, in)[0]);
}

TEST_CASE("combine_parallel: convs that differ in attributes, or read other inputs, stay apart",
          "[graph][combine_parallel]") {
  relay::Expr x = var("x", {1, 8, 6, 6});
  relay::Expr w = cst({4, 8, 1, 1}, wave(32, 0.3, 0));
  relay::Expr a = call("nn.conv2d", {x, w}, conv_attrs(0));
  Attrs strided = conv_attrs(0);
  strided.set_ints("strides", {2, 2});
  relay::Expr b = call("nn.conv2d", {x, w}, strided);
  relay::Expr other = call("nn.relu", {x});
  relay::Expr c = call("nn.conv2d", {other, w}, conv_attrs(0));
  Module m = Module::make({x}, {a, b, c}, {"a", "b", "c"});
  CombineResult r = combine_parallel(m, 2);
  CHECK(r.groups == 0);
  CHECK(r.module.body.same_as(m.body));
}

TEST_CASE("combine_parallel: attention's three projections of one input become one matmul",
          "[graph][combine_parallel]") {
  relay::Expr x = var("x", {1, 5, 12});
  std::vector<relay::Expr> outs;
  for (int i = 0; i < 3; ++i) {
    relay::Expr p = call("nn.matmul", {x, cst({12, 8}, wave(96, 0.2, i))});
    outs.push_back(call("add", {cst({8}, wave(8, 1, i + 3)), p}));  // bias first, as exporters write it
  }
  Module m = Module::make({x}, outs, {"q", "k", "v"});
  CombineResult r = combine_parallel(m, 2);
  CHECK(r.groups == 1);
  CHECK(count_ops(r.module, "nn.matmul") == 1);
  CHECK(count_ops(r.module, "add") == 1);
  CHECK(to_string(r.module).find("float32[1,5,24]") != std::string::npos);

  kiln::CompileOptions opts;
  opts.combine_branches = 2;
  kiln::CompiledModel c = kiln::compile(m, opts);
  std::vector<double> in = wave(60, 1, 0.25);
  auto got = run_plan(c, {{"x", HostTensor::from_doubles(DataType::f32(), {1, 5, 12}, in)}});
  auto want = reference(m, in);
  check_close(got.at("q").to_doubles(), want[0]);
  check_close(got.at("k").to_doubles(), want[1]);
  check_close(got.at("v").to_doubles(), want[2]);
}

TEST_CASE("sum_parallel_convs: a RepVGG block's 3x3, 1x1 and second 3x3 convs of one input become one conv",
          "[graph][combine_parallel]") {
  relay::Expr x = var("x", {1, 8, 6, 6});
  relay::Expr a = conv_branch(x, 8, 3, 0.0, false);
  relay::Expr b = conv_branch(x, 8, 1, 0.9, false);  // padding 0: the centre tap of the 3x3 window
  relay::Expr c = call("nn.conv2d", {x, cst({8, 8, 3, 3}, wave(576, 0.2, 2.2))}, conv_attrs(1));  // no bias
  relay::Expr y = call("nn.relu", {call("add", {call("add", {a, b}), c})});
  Module m = Module::make({x}, {y}, {"y"});
  Module s = sum_parallel_convs(m);
  verify(s);
  CHECK(count_ops(s, "nn.conv2d") == 1);
  CHECK(count_ops(s, "add") == 0);
  CHECK(count_ops(s, "nn.bias_add") == 1);
  std::vector<double> in = wave(8 * 36, 1, 0.5);
  check_close(reference(s, in)[0], reference(m, in)[0]);

  // Compiled by default, the model computes the original graph.
  kiln::CompiledModel compiled = kiln::compile(m, kiln::CompileOptions());
  auto got = run_plan(compiled, {{"x", HostTensor::from_doubles(DataType::f32(), {1, 8, 6, 6}, in)}}).at("y").to_doubles();
  check_close(got, reference(m, in)[0]);
}

TEST_CASE("sum_parallel_convs: convs with other readers, strides or windows are left alone", "[graph][combine_parallel]") {
  relay::Expr x = var("x", {1, 8, 6, 6});
  relay::Expr w3 = cst({8, 8, 3, 3}, wave(576, 0.2, 0));
  relay::Expr a = call("nn.conv2d", {x, w3}, conv_attrs(1));
  relay::Expr read_twice = call("nn.conv2d", {x, cst({8, 8, 1, 1}, wave(64, 0.2, 1))}, conv_attrs(0));
  Module shared = Module::make({x}, {call("add", {a, read_twice}), read_twice}, {"y", "z"});
  CHECK(sum_parallel_convs(shared).body.same_as(shared.body));

  // Stride 2: a 2x2 conv without padding has the 3x3 conv's output shape but not its window
  // (it would sit at offset 1 on the top-left and -1 on the bottom-right).
  Attrs stride2 = conv_attrs(1);
  stride2.set_ints("strides", {2, 2});
  Attrs stride2_unpadded = conv_attrs(0);
  stride2_unpadded.set_ints("strides", {2, 2});
  relay::Expr x7 = var("x", {1, 8, 6, 6});
  relay::Expr big = call("nn.conv2d", {x7, cst({8, 8, 3, 3}, wave(576, 0.2, 0))}, stride2);
  relay::Expr small = call("nn.conv2d", {x7, cst({8, 8, 2, 2}, wave(256, 0.2, 1))}, stride2_unpadded);
  Module misaligned = Module::make({x7}, {call("add", {big, small})}, {"y"});
  CHECK(sum_parallel_convs(misaligned).body.same_as(misaligned.body));
}
