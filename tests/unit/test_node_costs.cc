// Per-node costs for kiln bench --roofline: te::count_flops on known kernels, the plan's flops
// and bytes after compile, and their place in the plan's binary form (format 3).
#include <catch2/catch.hpp>

#include <cstring>

#include "kiln/compiler.h"
#include "kiln/runtime/graph_plan.h"
#include "kiln/te/count_flops.h"
#include "kiln/te/ops/nn_conv.h"
#include "kiln/te/ops/nn_dense.h"
#include "test_graph_util.h"

using namespace kiln::graph_test;
namespace te = kiln::te;
using kiln::runtime::GraphPlan;

TEST_CASE("count_flops: 2 per multiply-add of a dense and a convolution", "[te][flops]") {
  te::Tensor x = te::placeholder({3, 5}, DataType::f32(), "x");
  te::Tensor w = te::placeholder({4, 5}, DataType::f32(), "w");
  CHECK(te::count_flops({te::ops::dense_plain(x, w)}) == 2.0 * 3 * 4 * 5);
  // No padding, so no pad stage: [1,3,6,6] * [4,3,3,3] -> [1,4,4,4], 27 terms per output.
  te::Tensor img = te::placeholder({1, 3, 6, 6}, DataType::f32(), "img");
  te::Tensor k = te::placeholder({4, 3, 3, 3}, DataType::f32(), "k");
  te::ops::ConvNdAttrs a;
  a.strides = {1, 1}, a.padding = {0, 0, 0, 0}, a.dilation = {1, 1};
  CHECK(te::count_flops({te::ops::conv_nd_plain(img, k, a)}) == 2.0 * (4 * 4 * 4) * 27);
}

TEST_CASE("compile: a dense node carries its FLOPs and minimum bytes", "[graph][compile][flops]") {
  relay::Expr x = var("x", {2, 8});
  relay::Expr d = call("nn.dense", {x, cst({16, 8}, wave(128, 0.1, 0))});
  kiln::CompiledModel c = kiln::compile(Module::make({x}, {d}, {"y"}));
  REQUIRE(c.plan.has_costs);
  REQUIRE(c.plan.nodes.size() == 1);
  CHECK(c.plan.nodes[0].flops == 2.0 * 2 * 16 * 8);
  CHECK(c.plan.nodes[0].bytes == (2 * 8 + 16 * 8 + 2 * 16) * 4);  // x, w read once; y written once
  // Format 3 keeps them; a plan without costs keeps format 1.
  std::string bytes = kiln::runtime::encode_plan(c.plan);
  uint32_t version;
  std::memcpy(&version, &bytes[4], 4);
  CHECK(version == kiln::runtime::kCostPlanFormatVersion);
  GraphPlan back = kiln::runtime::decode_plan(bytes.data(), bytes.size());
  CHECK(back.has_costs);
  CHECK(back.nodes[0].flops == c.plan.nodes[0].flops);
  CHECK(back.nodes[0].bytes == c.plan.nodes[0].bytes);
  GraphPlan old = c.plan;
  old.has_costs = false;
  std::string old_bytes = kiln::runtime::encode_plan(old);
  std::memcpy(&version, &old_bytes[4], 4);
  CHECK(version == kiln::runtime::kPlanFormatVersion);
  CHECK(old_bytes.size() == bytes.size() - 16);
  CHECK_FALSE(kiln::runtime::decode_plan(old_bytes.data(), old_bytes.size()).has_costs);
}
