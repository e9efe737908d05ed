// fuse_ops: printed fused graphs for the TVM fusion rules (anchor + epilogue, diamonds, injective
// chains, reductions, opaque ops, outputs, tuples), the post-dominator tree they rest on, and the
// invariants every partition keeps on a real model.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include "../../src/relay/analysis/post_dominator.h"
#include "kiln/lower/schedule_group.h"
#include "kiln/relay/frontend/onnx.h"
#include "kiln/relay/printer.h"
#include "test_graph_util.h"

using namespace kiln::graph_test;

namespace {
std::string fused_text(const Module& m) { return to_string(fuse_ops(m), PrintOptions{false, false}); }
Attrs axis_attr(int64_t a) { return Attrs().set_int("axis", a); }
}  // namespace

TEST_CASE("fuse_ops: conv + bias + residual add + relu is one kernel", "[graph][fuse]") {
  relay::Expr x = var("x", {1, 3, 8, 8}), skip = var("skip", {1, 4, 8, 8});
  relay::Expr c = call("nn.conv2d", {x, cst({4, 3, 3, 3}, wave(108, 1, 0))}, conv_attrs(), "Conv_0");
  relay::Expr b = call("add", {c, cst({4, 1, 1}, {1, 2, 3, 4})}, {}, "Add_1");
  relay::Expr r = call("nn.relu", {call("add", {b, skip}, {}, "Add_2")}, {}, "Relu_3");
  Module m = Module::make({x, skip}, {r}, {"y"});
  FusedModule f = fuse_ops(m);
  CHECK(to_string(f, PrintOptions{true, false}) ==
        "fn (%x: float32[1,3,8,8], %skip: float32[1,4,8,8]) -> float32[1,4,8,8] {\n"
        "  %0 = fused(nn.conv2d, add, add, nn.relu)(%x, meta[0], meta[1], %skip) : float32[1,4,8,8]  # Conv_0, Add_1, "
        "Add_2, Relu_3\n"
        "  return %0\n"
        "}\n"
        "outputs: y\n"
        "meta[0] = float32[4,3,3,3]\n"
        "meta[1] = float32[4,1,1]\n");
  REQUIRE(f.groups.size() == 1);
  CHECK(f.groups[0].pattern == OpPattern::OutElementwiseFusable);
  CHECK(f.groups[0].anchor.same_as(c));
  CHECK(f.groups[0].root.same_as(r));
  CHECK(f.groups[0].label() == "nn.conv2d+add+add+nn.relu");
  CHECK(kiln::lower::kernel_name(f.groups[0], 0) == "fused_nn_conv2d_add_add_nn_relu_0");
}

TEST_CASE("fuse_ops: a diamond of elementwise ops joins the anchor, an opaque branch blocks it", "[graph][fuse]") {
  relay::Expr x = var("x", {1, 3, 8, 8});
  relay::Expr r = call("nn.relu", {call("nn.conv2d", {x, cst({4, 3, 3, 3}, wave(108, 1, 0))}, conv_attrs())});
  SECTION("all paths elementwise") {
    relay::Expr y = call("add", {call("multiply", {r, scalar(2)}), call("sigmoid", {r})});
    CHECK(fused_text(Module::make({x}, {y}, {"y"})) ==
          "fn (%x: float32[1,3,8,8]) -> float32[1,4,8,8] {\n"
          "  %0 = fused(nn.conv2d, nn.relu, multiply, sigmoid, add)(%x, meta[0]) : float32[1,4,8,8]\n"
          "  return %0\n"
          "}\n"
          "outputs: y\n"
          "meta[0] = float32[4,3,3,3]\n");
  }
  SECTION("one path through softmax") {
    relay::Expr y = call("add", {call("multiply", {r, scalar(2)}), call("nn.softmax", {r}, axis_attr(3))});
    CHECK(fused_text(Module::make({x}, {y}, {"y"})) ==
          "fn (%x: float32[1,3,8,8]) -> float32[1,4,8,8] {\n"
          "  %0 = fused(nn.conv2d, nn.relu)(%x, meta[0]) : float32[1,4,8,8]\n"
          "  %1 = fused(nn.softmax)(%0) : float32[1,4,8,8]\n"
          "  %2 = fused(multiply, add)(%0, %1) : float32[1,4,8,8]\n"
          "  return %2\n"
          "}\n"
          "outputs: y\n"
          "meta[0] = float32[4,3,3,3]\n");
  }
}

TEST_CASE("fuse_ops: injective chains fuse with the elementwise ops among them", "[graph][fuse]") {
  relay::Expr x = var("x", {2, 3, 4});
  relay::Expr a = call("reshape", {x}, Attrs().set_ints("newshape", {6, 4}));
  relay::Expr t = call("transpose", {a}, Attrs().set_ints("axes", {1, 0}));
  relay::Expr y = call("reshape", {call("nn.relu", {t})}, Attrs().set_ints("newshape", {24}));
  CHECK(fused_text(Module::make({x}, {y}, {"y"})) ==
        "fn (%x: float32[2,3,4]) -> float32[24] {\n"
        "  %0 = fused(reshape, transpose, nn.relu, reshape)(%x) : float32[24]\n"
        "  return %0\n"
        "}\n"
        "outputs: y\n");
}

TEST_CASE("fuse_ops: a reduction takes elementwise and injective producers, not its consumers", "[graph][fuse]") {
  relay::Expr x = var("x", {4, 6});
  relay::Expr e = call("exp", {call("transpose", {x}, Attrs().set_ints("axes", {1, 0}))});
  relay::Expr s = call("sum", {e}, Attrs().set_ints("axes", {1}).set_int("keepdims", 0));
  CHECK(fused_text(Module::make({x}, {call("nn.relu", {s})}, {"y"})) ==
        "fn (%x: float32[4,6]) -> float32[6] {\n"
        "  %0 = fused(transpose, exp, sum)(%x) : float32[6]\n"
        "  %1 = fused(nn.relu)(%0) : float32[6]\n"
        "  return %1\n"
        "}\n"
        "outputs: y\n");
}

TEST_CASE("fuse_ops: opaque ops stand alone and split their neighbours", "[graph][fuse]") {
  relay::Expr x = var("x", {2, 8});
  relay::Expr y = call("nn.relu", {call("nn.softmax", {call("exp", {x})}, axis_attr(1))});
  CHECK(fused_text(Module::make({x}, {y}, {"y"})) ==
        "fn (%x: float32[2,8]) -> float32[2,8] {\n"
        "  %0 = fused(exp)(%x) : float32[2,8]\n"
        "  %1 = fused(nn.softmax)(%0) : float32[2,8]\n"
        "  %2 = fused(nn.relu)(%1) : float32[2,8]\n"
        "  return %2\n"
        "}\n"
        "outputs: y\n");
}

TEST_CASE("fuse_ops: a value read by a model output ends its group", "[graph][fuse]") {
  relay::Expr x = var("x", {1, 3, 8, 8});
  relay::Expr c = call("nn.conv2d", {x, cst({4, 3, 3, 3}, wave(108, 1, 0))}, conv_attrs());
  relay::Expr r = call("nn.relu", {c});
  CHECK(fused_text(Module::make({x}, {c, r}, {"conv", "relu"})) ==
        "fn (%x: float32[1,3,8,8]) -> (float32[1,4,8,8], float32[1,4,8,8]) {\n"
        "  %0 = fused(nn.conv2d)(%x, meta[0]) : float32[1,4,8,8]\n"
        "  %1 = fused(nn.relu)(%0) : float32[1,4,8,8]\n"
        "  %2 = (%0, %1) : (float32[1,4,8,8], float32[1,4,8,8])\n"
        "  return %2\n"
        "}\n"
        "outputs: conv, relu\n"
        "meta[0] = float32[4,3,3,3]\n");
}

TEST_CASE("fuse_ops: tuple-typed ops are kernels of their own, read through get-items", "[graph][fuse]") {
  relay::Expr x = var("x", {4, 6});
  relay::Expr sp = call("split", {call("nn.relu", {x})}, Attrs().set_int("axis", 0).set_ints("sizes", {2, 2}));
  relay::Expr y = call("add", {make_tuple_get_item(sp, 0), make_tuple_get_item(sp, 1)});
  FusedModule f = fuse_ops(Module::make({x}, {y}, {"y"}));
  CHECK(to_string(f) ==
        "fn (%x: float32[4,6]) -> float32[2,6] {\n"
        "  %0 = fused(nn.relu)(%x) : float32[4,6]\n"
        "  %1 = fused(split)(%0) : (float32[2,6], float32[2,6])\n"
        "  %2 = %1.0 : float32[2,6]\n"
        "  %3 = %1.1 : float32[2,6]\n"
        "  %4 = fused(add)(%2, %3) : float32[2,6]\n"
        "  return %4\n"
        "}\n"
        "outputs: y\n");
  CHECK(f.groups[1].pattern == OpPattern::Injective);
}

TEST_CASE("kernel_name: long groups keep their first ops and a unique index", "[graph][fuse]") {
  relay::Expr x = var("x", {8});
  relay::Expr y = x;
  for (int i = 0; i < 12; ++i) y = call("nn.relu", {y});
  FusedModule f = fuse_ops(Module::make({x}, {y}, {"y"}));
  REQUIRE(f.groups.size() == 1);
  CHECK(f.groups[0].calls.size() == 12);
  CHECK(kiln::lower::kernel_name(f.groups[0], 7) ==
        "fused_nn_relu_nn_relu_nn_relu_nn_relu_nn_relu_nn_relu_nn_relu_nn_relu_etc_7");
}

TEST_CASE("post-dominator tree: immediate post-dominators and the edges on the way", "[graph][fuse]") {
  using namespace kiln::relay::analysis;
  relay::Expr x = var("x", {4, 4});
  relay::Expr a = call("exp", {x});
  relay::Expr b = call("nn.relu", {a});
  relay::Expr c = call("nn.softmax", {a}, axis_attr(1));
  relay::Expr d = call("add", {b, c});
  Module m = Module::make({x}, {d}, {"y"});
  IndexedGraph g = index_graph(m);
  PostDominatorTree t = post_dominators(g);
  auto ipdom = [&](const relay::Expr& e) { return t.nodes[g.index(e)].parent; };
  CHECK(ipdom(a) == g.index(d));  // both paths from exp meet at add
  CHECK(t.nodes[g.index(a)].pattern == OpPattern::Opaque);  // one of them through softmax
  CHECK(ipdom(b) == g.index(d));
  CHECK(t.nodes[g.index(b)].pattern == OpPattern::Elementwise);
  CHECK(ipdom(d) == -1);  // the output
  CHECK(g.nodes[g.index(d)].extern_ref);
  // add reads exp's users with elementwise edges (same shapes); softmax's use of exp is opaque.
  REQUIRE(g.nodes[g.index(a)].uses.size() == 2);
  CHECK(g.nodes[g.index(a)].uses[1].edge == OpPattern::Opaque);
}

TEST_CASE("fuse_ops on resnet18: every call in one group, groups single-exit and in order", "[graph][fuse][models]") {
  std::string path = "/work/shared/models/resnet18/model.onnx";
  if (!std::ifstream(path)) {
    WARN("skipped: " << path << " not found");
    return;
  }
  Module m = relay::from_onnx(path);
  m = remove_dead(eliminate_common_subexpr(simplify(fold_batch_norm(fold_constants(infer_types(m))))));
  FusedModule f = fuse_ops(m);
  size_t calls = 0, convs = 0;
  for (const relay::Expr& e : post_order({m.body}))
    if (e.as<CallNode>()) ++calls;
  size_t members = 0;
  for (size_t gi = 0; gi < f.groups.size(); ++gi) {
    members += f.groups[gi].calls.size();
    for (const relay::Expr& in : f.groups[gi].inputs)
      if (auto* c = in.as<CallNode>()) CHECK(f.group_of.at(c) < static_cast<int>(gi));  // producers run first
    if (f.groups[gi].anchor.as<CallNode>()->op_name() == "nn.conv2d") ++convs;
  }
  CHECK(members == calls);
  CHECK(convs == 20);  // each conv anchors its own kernel
  // Every conv took its bias add (folded batch norm) and, where resnet has one, its relu.
  std::string text = to_string(f);
  CHECK(text.find("fused(nn.conv2d, nn.bias_add, nn.relu)") != std::string::npos);
  CHECK(text.find("fused(nn.conv2d, nn.bias_add, add, nn.relu)") != std::string::npos);  // residual
  CHECK(f.groups.size() < 30);
}
