// kiln::compile end to end: a small hand-built model is compiled, its kernels JIT-built and run in
// plan order on buffers laid out as the plan says (storages, offsets, the weights blob), and the
// outputs compared with an independent reference: relay::evaluate_call node by node on the
// original graph (plain loops for conv and softmax, which the evaluator does not cover).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <map>
#include <sstream>
#include <unordered_map>

#include "kiln/codegen/build.h"
#include "kiln/compiler.h"
#include "kiln/lower/schedule_group.h"
#include "kiln/relay/evaluate.h"
#include "kiln/runtime/ndarray.h"
#include "kiln/runtime/version.h"
#include "test_graph_util.h"

using namespace kiln::graph_test;
using kiln::CompiledModel;
using kiln::CompileOptions;
using kiln::runtime::NDArray;
namespace te = kiln::te;
namespace ir = kiln::ir;

namespace {

using Values = std::map<std::string, std::vector<float>>;

Values run_plan(const CompiledModel& c, const Values& inputs) {
  std::map<std::string, HostTensor> in;
  for (const auto& io : c.plan.inputs)
    in[io.name] = HostTensor(DataType::f32(), c.plan.entries[io.entry].shape, inputs.at(io.name).data());
  Values out;
  for (const auto& [name, t] : kiln::graph_test::run_plan(c, in)) {
    std::vector<double> d = t.to_doubles();
    out[name] = std::vector<float>(d.begin(), d.end());
  }
  return out;
}

// The reference: every node of the original graph evaluated on host tensors.
Values reference(const Module& m, const Values& inputs) {
  std::unordered_map<const ExprNode*, HostTensor> v;
  for (const relay::Expr& p : m.params)
    v[p.get()] = HostTensor::from_doubles(DataType::f32(), p.tensor_type().shape,
                                          std::vector<double>(inputs.at(p.as<VarNode>()->name).begin(),
                                                              inputs.at(p.as<VarNode>()->name).end()));
  for (const relay::Expr& e : post_order({m.body})) {
    if (auto* k = e.as<ConstantNode>()) v[e.get()] = k->value;
    if (auto* g = e.as<TupleGetItemNode>()) {
      // A part of a split: the evaluator's strided_slice of the split's input.
      const auto* sp = g->tuple.as<CallNode>();
      REQUIRE(sp->op_name() == "split");
      const relay::Expr& data = sp->args[0];
      Shape shape = data.tensor_type().shape;
      int64_t axis = sp->attrs.get_int("axis"), begin = 0;
      for (int i = 0; i < g->index; ++i) begin += sp->attrs.get_ints("sizes")[i];
      std::vector<int64_t> b(shape.size(), 0), end = shape, st(shape.size(), 1);
      b[axis] = begin;
      end[axis] = begin + sp->attrs.get_ints("sizes")[g->index];
      relay::Expr slice = call("strided_slice", {data}, Attrs().set_ints("begin", b).set_ints("end", end).set_ints("strides", st));
      auto r = evaluate_call(*slice.as<CallNode>(), {v.at(data.get())});
      REQUIRE(r.has_value());
      v[e.get()] = *r;
    }
    const auto* c = e.as<CallNode>();
    if (!c || c->op_name() == "split") continue;
    std::vector<HostTensor> args;
    for (const relay::Expr& a : c->args) args.push_back(v.at(a.get()));
    const Shape& ys = c->type.as<TensorTypeNode>()->shape;
    if (c->op_name() == "nn.conv2d") {
      auto y = conv_nchw_ref(args[0].to_doubles(), args[0].shape(), args[1].to_doubles(), args[1].shape(),
                             c->attrs.get_ints("padding")[0]);
      v[e.get()] = HostTensor::from_doubles(DataType::f32(), ys, y);
    } else if (c->op_name() == "nn.softmax") {
      auto y = args[0].to_doubles();
      int64_t len = ys.back();
      for (size_t row = 0; row < y.size(); row += len) {
        double mx = -1e300, total = 0;
        for (int64_t k = 0; k < len; ++k) mx = std::max(mx, y[row + k]);
        for (int64_t k = 0; k < len; ++k) total += y[row + k] = std::exp(y[row + k] - mx);
        for (int64_t k = 0; k < len; ++k) y[row + k] /= total;
      }
      v[e.get()] = HostTensor::from_doubles(DataType::f32(), ys, y);
    } else {
      auto r = evaluate_call(*c, args);
      REQUIRE(r.has_value());
      v[e.get()] = *r;
    }
  }
  Values out;
  std::vector<relay::Expr> outs = m.outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    auto d = v.at(outs[i].get()).to_doubles();
    out[m.output_names[i]] = std::vector<float>(d.begin(), d.end());
  }
  return out;
}

// conv + bias (folded into a bias_add) + residual + relu; a transpose/reshape chain into softmax;
// a scale by a scalar (compiled into the kernel), exp and sum.
Module small_model() {
  relay::Expr x = var("x", {1, 3, 8, 8}), skip = var("skip", {1, 4, 8, 8});
  relay::Expr c = call("nn.conv2d", {x, cst({4, 3, 3, 3}, wave(108, 0.3, 0))}, conv_attrs(), "Conv_0");
  relay::Expr a = call("add", {c, cst({4, 1, 1}, {0.5, -0.25, 0.125, 1})});
  relay::Expr h = call("nn.relu", {call("add", {a, skip})}, {}, "Relu_0");
  relay::Expr t = call("transpose", {h}, Attrs().set_ints("axes", {0, 2, 3, 1}));
  relay::Expr r = call("reshape", {t}, Attrs().set_ints("newshape", {1, 64, 4}));
  relay::Expr sm = call("nn.softmax", {r}, Attrs().set_int("axis", 2));
  relay::Expr s = call("sum", {call("exp", {call("multiply", {h, scalar(0.5)})})}, Attrs().set_ints("axes", {2, 3}).set_int("keepdims", 0));
  return Module::make({x, skip}, {sm, s}, {"probs", "energy"});
}

Values small_inputs() {
  auto f = [](std::vector<double> d) { return std::vector<float>(d.begin(), d.end()); };
  return {{"x", f(wave(192, 1, 0.2))}, {"skip", f(wave(256, 0.5, 1.1))}};
}

void check_close(const Values& got, const Values& want) {
  REQUIRE(got.size() == want.size());
  for (const auto& [name, w] : want) {
    const std::vector<float>& g = got.at(name);
    REQUIRE(g.size() == w.size());
    double worst = 0;
    for (size_t i = 0; i < g.size(); ++i)
      worst = std::max(worst, std::fabs(double(g[i]) - w[i]) / (1e-5 + 1e-5 * std::fabs(double(w[i]))));
    INFO(name << ": worst error is " << worst << " x (1e-5 + 1e-5 |ref|)");
    CHECK(worst <= 1.0);
  }
}

}  // namespace

TEST_CASE("compile: a small model runs kernel by kernel in plan order and matches the reference", "[graph][compile]") {
  Module m = small_model();
  std::ostringstream dump;
  CompileOptions opts;
  opts.dump_ir_stage = "fuse_ops";
  opts.dump_to = &dump;
  CompiledModel c = kiln::compile(m, opts);
  CHECK(dump.str() ==
        "// graph after fuse_ops\n"
        "fn (%x: float32[1,3,8,8], %skip: float32[1,4,8,8]) -> (float32[1,64,4], float32[1,4]) {\n"
        "  %0 = fused(nn.conv2d, nn.bias_add, add, nn.relu)(%x, meta[0], meta[1], %skip) : float32[1,4,8,8]\n"
        "  %1 = fused(transpose, reshape)(%0) : float32[1,64,4]\n"
        "  %2 = fused(nn.softmax)(%1) : float32[1,64,4]\n"
        "  %3 = fused(multiply, exp, sum)(%0) : float32[1,4]\n"
        "  %4 = (%2, %3) : (float32[1,64,4], float32[1,4])\n"
        "  return %4\n"
        "}\n"
        "outputs: probs, energy\n"
        "meta[0] = float32[4,3,3,3]\n"
        "meta[1] = float32[4]{0.5, -0.25, 0.125, 1}\n");
  REQUIRE(c.kernels.size() == 4);
  CHECK(c.kernels[0].name == "fused_nn_conv2d_nn_bias_add_add_nn_relu_0");
  CHECK(c.plan.nodes[3].label == "multiply+exp+sum");
  CHECK(c.plan.inputs.size() == 2);
  CHECK(c.plan.inputs[1].name == "skip");
  CHECK(c.plan.outputs[0].name == "probs");
  CHECK(c.plan.target == kiln::Target::host().str());
  CHECK(c.plan.kiln_version == KILN_VERSION_STRING);
  // Weights: the two constants (the conv weight maybe prepacked) at 64-byte aligned offsets, one
  // after the other, the checksum over the blob; the bias's bytes are the model's.
  std::vector<const kiln::runtime::GraphEntry*> consts;
  for (const auto& e : c.plan.entries)
    if (e.is_constant) consts.push_back(&e);
  REQUIRE(consts.size() == 2);
  int64_t end = 0;
  for (const auto* e : consts) {
    int64_t bytes = 4;
    for (int64_t d : e->shape) bytes *= d;
    CHECK(e->offset % 64 == 0);
    CHECK(e->offset >= end);
    CHECK(e->offset < end + 64);
    end = e->offset + bytes;
  }
  CHECK(c.plan.weights_bytes == end);
  CHECK(c.plan.weights_checksum == kiln::runtime::fnv1a64(c.weights.data(), c.weights.size()));
  // The conv weight is stored the way its kernel reads it: packed when the library prepacks it.
  const auto* conv = m.outputs()[0].as<CallNode>();
  while (conv->op_name() != "nn.conv2d") conv = conv->args[0].as<CallNode>();
  FusedModule fused = fuse_ops(kiln::relay::infer_types(m));
  kiln::lower::Strategy st = kiln::lower::select_strategy(fused.groups.at(0), kiln::Target::host());
  const HostTensor& w = conv->args[1].as<ConstantNode>()->value;
  CHECK(consts[0]->shape == (st.packing ? st.packing->pack(w).shape() : w.shape()));
  REQUIRE(consts[1]->shape == std::vector<int64_t>{4});
  std::vector<float> bias(4);
  std::memcpy(bias.data(), c.weights.data() + consts[1]->offset, 16);
  CHECK(bias == std::vector<float>{0.5f, -0.25f, 0.125f, 1.0f});
  bool noted = false;
  for (const std::string& n : c.notes) noted = noted || n.rfind("plan_memory:", 0) == 0;
  CHECK(noted);

  check_close(run_plan(c, small_inputs()), reference(m, small_inputs()));

  // The plan survives its binary form unchanged.
  std::string bytes = kiln::runtime::encode_plan(c.plan);
  CHECK(kiln::runtime::encode_plan(kiln::runtime::decode_plan(bytes.data(), bytes.size())) == bytes);
}

TEST_CASE("compile: tuple-typed kernels, scalar outputs and an output read by another kernel", "[graph][compile]") {
  relay::Expr x = var("x", {4, 6});
  relay::Expr sp = call("split", {call("exp", {x})}, Attrs().set_int("axis", 0).set_ints("sizes", {1, 3}));
  relay::Expr a = call("nn.relu", {make_tuple_get_item(sp, 0)});
  relay::Expr b = call("sum", {make_tuple_get_item(sp, 1)}, Attrs().set_ints("axes", {0, 1}).set_int("keepdims", 0));
  relay::Expr d = call("multiply", {a, b});  // a [1,6] times the scalar b
  Module m = Module::make({x}, {a, b, d}, {"a", "total", "scaled"});
  CompiledModel c = kiln::compile(m);
  Values in{{"x", [] { auto w = wave(24, 1, 0.4); return std::vector<float>(w.begin(), w.end()); }()}};
  check_close(run_plan(c, in), reference(m, in));
  // The scalar output keeps its rank-0 shape in the plan.
  CHECK(c.plan.entries[c.plan.outputs[1].entry].shape.empty());
}

TEST_CASE("compile: a scalar constant can be a module output", "[graph][compile]") {
  // ONNX Size of a static shape folds to a rank-0 constant that is the graph's output: it goes
  // to the weights like any constant output (it was an internal error in the fused printer).
  relay::Expr x = var("x", {2, 3});
  relay::Expr size = relay::make_constant(HostTensor::from_int64s(DataType::i64(), {}, {6}));
  Module m = Module::make({x}, {call("nn.relu", {x}), size}, {"y", "size"});
  CompiledModel c = kiln::compile(m);
  const auto& entry = c.plan.entries[c.plan.outputs[1].entry];
  CHECK(entry.shape.empty());
  CHECK(entry.is_constant);
}

TEST_CASE("compile: every op without a lowering is listed in one error, unknown dump stages are refused",
          "[graph][compile]") {
  relay::Expr x = var("x", {1, 4, 4, 4});
  relay::Expr y = call("nn.lrn", {call("nn.softmax", {x}, Attrs().set_int("axis", 3), "Soft_0")},
                       Attrs().set_int("size", 3).set_float("alpha", 1e-4).set_float("beta", 0.75).set_float("bias", 1),
                       "LRN_7");
  Module m = Module::make({x}, {y}, {"y"});
  bool lrn_lowered = kiln::lower::find_op_lowering("nn.lrn") || kiln::lower::find_op_lowering("nn.softmax");
  if (!lrn_lowered) {
    CHECK_THROWS_WITH(kiln::compile(m), Catch::Matchers::Contains("no kernel lowering for 2 ops:\n  nn.lrn (node LRN_7)\n"
                                                                  "  nn.softmax (node Soft_0)"));
    CHECK_THROWS_AS(kiln::compile(m), kiln::UnsupportedError);
  }
  CompileOptions opts;
  opts.dump_ir_stage = "fuse";
  CHECK_THROWS_WITH(kiln::compile(m, opts), Catch::Matchers::Contains("unknown IR stage 'fuse' to dump; stages: "
                                                                      "infer_types, fold_constants"));
}
