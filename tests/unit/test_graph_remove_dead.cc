// remove_dead: before/after printed graphs.
#include <catch2/catch.hpp>

#include "kiln/relay/evaluate.h"
#include "kiln/relay/printer.h"
#include "kiln/relay/verify.h"
#include "test_graph_util.h"

using namespace kiln::graph_test;

TEST_CASE("remove_dead: a split with unread parts becomes slices of the parts read", "[graph][remove_dead]") {
  relay::Expr x = var("x", {6, 4});
  relay::Expr sp = call("split", {x}, Attrs().set_int("axis", 0).set_ints("sizes", {1, 2, 3}), "Split_0");
  relay::Expr last = make_tuple_get_item(sp, 2);
  relay::Expr y = call("add", {last, last});
  relay::Expr z = call("nn.relu", {make_tuple_get_item(sp, 1)});
  Module m = Module::make({x}, {y, z}, {"y", "z"});
  CHECK(to_string(m) ==
        "fn (%x: float32[6,4]) -> (float32[3,4], float32[2,4]) {\n"
        "  %0 = split(%x, axis=0, sizes=[1,2,3]) : (float32[1,4], float32[2,4], float32[3,4])\n"
        "  %1 = %0.2 : float32[3,4]\n"
        "  %2 = add(%1, %1) : float32[3,4]\n"
        "  %3 = %0.1 : float32[2,4]\n"
        "  %4 = nn.relu(%3) : float32[2,4]\n"
        "  %5 = (%2, %4) : (float32[3,4], float32[2,4])\n"
        "  return %5\n"
        "}\n"
        "outputs: y, z\n");
  Module d = remove_dead(m);
  verify(d);
  CHECK(to_string(d, PrintOptions{true, true}) ==
        "fn (%x: float32[6,4]) -> (float32[3,4], float32[2,4]) {\n"
        "  %0 = strided_slice(%x, begin=[3,0], end=[6,4], strides=[1,1]) : float32[3,4]  # Split_0\n"
        "  %1 = add(%0, %0) : float32[3,4]\n"
        "  %2 = strided_slice(%x, begin=[1,0], end=[3,4], strides=[1,1]) : float32[2,4]  # Split_0\n"
        "  %3 = nn.relu(%2) : float32[2,4]\n"
        "  %4 = (%1, %3) : (float32[3,4], float32[2,4])\n"
        "  return %4\n"
        "}\n"
        "outputs: y, z\n");

  // The slices read what the split's parts held.
  HostTensor xv = HostTensor::from_doubles(DataType::f32(), {6, 4}, wave(24, 1, 0.3));
  const auto* slice = d.outputs()[0].as<CallNode>()->args[0].as<CallNode>();
  auto got = evaluate_call(*slice, {xv});
  REQUIRE(got.has_value());
  std::vector<double> v = got->to_doubles(), all = xv.to_doubles();
  REQUIRE(v.size() == 12);
  for (size_t i = 0; i < v.size(); ++i) CHECK(v[i] == all[12 + i]);
}

TEST_CASE("remove_dead: a split read whole, and graphs with nothing dead, stay the same module", "[graph][remove_dead]") {
  relay::Expr x = var("x", {4, 4});
  relay::Expr sp = call("split", {x}, Attrs().set_int("axis", 1).set_ints("sizes", {2, 2}));
  relay::Expr y = call("add", {make_tuple_get_item(sp, 0), make_tuple_get_item(sp, 1)});
  Module m = Module::make({x, var("unused", {3})}, {y}, {"y"});
  Module d = remove_dead(m);
  CHECK(d.body.same_as(m.body));
  CHECK(d.params.size() == 2);  // an unread input is still part of the model's interface
}
