// The graph IR core: types, host tensors, attributes, checking constructors, printer, verifier,
// infer_types and the mutator.
#include <catch2/catch.hpp>

#include <cstdint>

#include "kiln/relay/op.h"
#include "kiln/relay/printer.h"
#include "kiln/relay/transforms.h"
#include "kiln/relay/verify.h"
#include "kiln/support/error.h"

using namespace kiln::relay;
using kiln::ir::DataType;
using Catch::Matchers::Contains;

namespace {
Expr f32_var(const std::string& name, Shape shape) { return make_var(name, tensor_type(DataType::f32(), shape)); }
Expr f32_const(Shape shape) { return make_constant(HostTensor::zeros(DataType::f32(), shape)); }
Attrs conv_attrs(std::vector<int64_t> strides = {1, 1}, std::vector<int64_t> pad = {1, 1, 1, 1}, int64_t groups = 1) {
  return Attrs().set_ints("strides", strides).set_ints("padding", pad).set_ints("dilation", {1, 1}).set_int("groups", groups);
}
}  // namespace

TEST_CASE("types print, compare structurally and reject bad shapes", "[relay]") {
  Type a = tensor_type(DataType::f32(), {1, 3, 224, 224});
  CHECK(a.str() == "float32[1,3,224,224]");
  CHECK(tensor_type(DataType::i64(), {}).str() == "int64[]");
  CHECK(a == tensor_type(DataType::f32(), {1, 3, 224, 224}));
  CHECK(a != tensor_type(DataType::f16(), {1, 3, 224, 224}));
  Type t = tuple_type({a, tensor_type(DataType::boolean(), {0})});
  CHECK(t.str() == "(float32[1,3,224,224], bool[0])");
  CHECK(t.as<TupleTypeNode>()->fields.size() == 2);
  CHECK(t.as<TensorTypeNode>() == nullptr);
  REQUIRE_THROWS_WITH(tensor_type(DataType::f32(), {2, -1}), "negative dimension in shape [2,-1]");
  REQUIRE_THROWS_WITH(tensor_type(DataType::f32(4), {2}), Contains("scalar data type, not float32x4"));
}

TEST_CASE("num_elements saturates where the product of dims overflows int64", "[relay]") {
  CHECK(kiln::relay::num_elements({2, 3, 4}) == 24);
  CHECK(kiln::relay::num_elements({}) == 1);
  // An ONNX node-suite model's dims, 105 x 1840022140283712000, and a 1e12 x 1e12 tensor.
  CHECK(kiln::relay::num_elements({105, 1840022140283712000}) == INT64_MAX);
  CHECK(kiln::relay::num_elements({1000000000000, 1000000000000, 3}) == INT64_MAX);
  CHECK(kiln::relay::num_elements({-1000000000000, 1000000000000}) == INT64_MIN);
  CHECK(kiln::relay::num_elements({1000000000000, 1000000000000, 0}) == 0);
}

TEST_CASE("host tensors convert values exactly and decode half floats", "[relay]") {
  HostTensor i = HostTensor::from_int64s(DataType::i64(), {2}, {INT64_MAX, -5});
  CHECK(i.to_int64s() == std::vector<int64_t>{INT64_MAX, -5});  // exact: no detour through double
  CHECK(HostTensor::from_doubles(DataType::i32(), {3}, {2.9, -2.9, 7}).to_int64s() == std::vector<int64_t>{2, -2, 7});
  CHECK(HostTensor::from_doubles(DataType::u8(), {1}, {300}).to_int64s() == std::vector<int64_t>{44});  // wraps
  CHECK(HostTensor::from_doubles(DataType::boolean(), {2}, {0.0, -3}).str() == "bool[2]{false, true}");
  // float16: exact values, rounding to nearest even, subnormals, overflow to inf.
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(half_to_float(0xC000) == -2.0f);
  CHECK(float_to_half(65504.0f) == 0x7BFF);
  CHECK(float_to_half(70000.0f) == 0x7C00);
  CHECK(float_to_half(1.0f + 1.0f / 2048) == 0x3C00);  // halfway: even mantissa wins
  CHECK(float_to_half(1.0f + 3.0f / 2048) == 0x3C02);
  CHECK(float_to_half(5.9604645e-8f) == 0x0001);
  CHECK(half_to_float(0x0001) == 5.9604645e-8f);
  CHECK(float_to_bfloat16(1.0f) == 0x3F80);
  CHECK(bfloat16_to_float(0xC040) == -3.0f);
  HostTensor h = HostTensor::from_doubles(DataType::f16(), {3}, {0.5, -1.25, 1024});
  CHECK(h.to_doubles() == std::vector<double>{0.5, -1.25, 1024});
  CHECK(h.str() == "float16[3]{0.5, -1.25, 1024}");
  CHECK(HostTensor::zeros(DataType::f32(), {100}).str() == "float32[100]");  // too many values to list
  REQUIRE_THROWS_WITH(HostTensor(DataType::f32(), {3}, std::vector<uint8_t>(8)), "tensor float32[3] needs 12 bytes, got 8");
  CHECK(i.reshaped({2, 1}).shape() == Shape{2, 1});
  CHECK(i.bitwise_equal(HostTensor::from_int64s(DataType::i64(), {2}, {INT64_MAX, -5})));
  CHECK(!i.bitwise_equal(HostTensor::from_int64s(DataType::i64(), {2}, {INT64_MAX, -4})));
}

TEST_CASE("attrs are ordered by key and their errors name the op, node and attribute", "[relay]") {
  Attrs a = Attrs().set_int("groups", 1).set_ints("strides", {2, 2}).set_str("mode", "edge").set_float("eps", 1e-5);
  Attrs b = Attrs().set_float("eps", 1e-5).set_str("mode", "edge").set_ints("strides", {2, 2}).set_int("groups", 1);
  CHECK(a == b);
  CHECK(a.hash() == b.hash());
  CHECK(a.str() == "eps=1e-05, groups=1, mode=\"edge\", strides=[2,2]");
  CHECK(a != Attrs(b).set_int("groups", 2));
  CHECK(a.get_float("groups") == 1.0);  // an int reads as a float
  REQUIRE_THROWS_WITH(a.get_int("mode"), "attribute 'mode' is a string, expected an int");
  REQUIRE_THROWS_WITH(a.with_context("nn.pad (node 'p1')").get_ints("pads"),
                      "nn.pad (node 'p1'): attribute 'pads' is missing");
  CHECK(a.get_int("missing", 7) == 7);
  // Inside a call, the relation's attribute errors carry the op, node and input types.
  Expr x = f32_var("x", {1, 3, 8, 8});
  REQUIRE_THROWS_WITH(make_call("nn.conv2d", {x, f32_const({4, 3, 3, 3})}, Attrs().set_int("groups", 1), "conv1"),
                      "nn.conv2d (node 'conv1') on (float32[1,3,8,8], float32[4,3,3,3]): attribute 'strides' is missing");
  Expr c = make_call("nn.conv2d", {x, f32_const({4, 3, 3, 3})}, conv_attrs(), "conv1");
  REQUIRE_THROWS_WITH(c.as<CallNode>()->attrs.get_str("groups"),
                      "nn.conv2d (node 'conv1'): attribute 'groups' is an int, expected a string");
}

TEST_CASE("make_call types each call and rejects ill-typed ones with the shapes", "[relay]") {
  Expr x = f32_var("x", {1, 6, 8, 8});
  Expr c = make_call("nn.conv2d", {x, f32_const({4, 3, 3, 3})}, conv_attrs({2, 2}, {1, 1, 1, 1}, 2), "c");
  CHECK(c.type().str() == "float32[1,4,4,4]");
  REQUIRE_THROWS_WITH(make_call("nn.conv2d", {x, f32_const({4, 3, 3, 3})}, conv_attrs(), "c"),
                      "nn.conv2d (node 'c') on (float32[1,6,8,8], float32[4,3,3,3]): weight [4,3,3,3] expects 3 input "
                      "channels (3 x groups 1), data has 6");
  REQUIRE_THROWS_WITH(make_call("add", {x, f32_var("y", {7})}),
                      "add on (float32[1,6,8,8], float32[7]): shapes [1,6,8,8] and [7] do not broadcast");
  REQUIRE_THROWS_WITH(make_call("add", {x}), "add: takes 2 argument(s), got 1");
  REQUIRE_THROWS_WITH(make_call("nn.conv9d", {x}), "unknown graph op 'nn.conv9d'");
  REQUIRE_THROWS_WITH(make_call("exp", {make_var("i", tensor_type(DataType::i32(), {2}))}),
                      "exp on (int32[2]): input must be floating-point, got int32");
  REQUIRE_THROWS_WITH(make_var("t", tuple_type({})), "graph input 't' must have a tensor type, not ()");
}

TEST_CASE("the printer numbers nodes in post order and lists constants", "[relay]") {
  Expr x = f32_var("x", {1, 2, 4, 4});
  Expr w = make_constant(HostTensor::from_doubles(DataType::f32(), {2, 2, 1, 1}, {1, 0, 0, 1}));
  Expr conv = make_call("nn.conv2d", {x, w}, conv_attrs({1, 1}, {0, 0, 0, 0}), "conv");
  Expr half = make_constant(HostTensor::scalar(DataType::f32(), 0.5));
  Expr scaled = make_call("multiply", {conv, half});
  Expr parts = make_call("split", {scaled}, Attrs().set_int("axis", 1).set_ints("sizes", {1, 1}));
  Expr a = make_tuple_get_item(parts, 0), b = make_tuple_get_item(parts, 1);
  Module m = Module::make({x}, {a, make_call("add", {b, make_call("nn.relu", {a})})}, {"first", "second"});
  CHECK(to_string(m, PrintOptions{true, true}) ==
        "fn (%x: float32[1,2,4,4]) -> (float32[1,1,4,4], float32[1,1,4,4]) {\n"
        "  %0 = nn.conv2d(%x, meta[0], dilation=[1,1], groups=1, padding=[0,0,0,0], strides=[1,1]) : float32[1,2,4,4]  # conv\n"
        "  %1 = multiply(%0, 0.5f) : float32[1,2,4,4]\n"
        "  %2 = split(%1, axis=1, sizes=[1,1]) : (float32[1,1,4,4], float32[1,1,4,4])\n"
        "  %3 = %2.0 : float32[1,1,4,4]\n"
        "  %4 = %2.1 : float32[1,1,4,4]\n"
        "  %5 = nn.relu(%3) : float32[1,1,4,4]\n"
        "  %6 = add(%4, %5) : float32[1,1,4,4]\n"
        "  %7 = (%3, %6) : (float32[1,1,4,4], float32[1,1,4,4])\n"
        "  return %7\n"
        "}\n"
        "outputs: first, second\n"
        "meta[0] = float32[2,2,1,1]{1, 0, 0, 1}\n");
  CHECK(to_string(m) == to_string(m));
  CHECK(to_string(make_call("neg", {make_var("in put", tensor_type(DataType::i64(), {}))})) ==
        "fn (%\"in put\": int64[]) -> int64[] {\n  %0 = neg(%\"in put\") : int64[]\n  return %0\n}\n");
  // An input named "0" (old PyTorch exports) must not read as node %0.
  CHECK(to_string(make_call("neg", {make_var("0", tensor_type(DataType::i64(), {}))})) ==
        "fn (%\"0\": int64[]) -> int64[] {\n  %0 = neg(%\"0\") : int64[]\n  return %0\n}\n");
}

TEST_CASE("verify names what is broken", "[relay]") {
  Expr x = f32_var("x", {2, 3}), y = f32_var("y", {2, 3});
  Expr sum = make_call("add", {x, y});
  Module ok = Module::make({x, y}, {sum}, {"out"});
  verify(ok);
  Module free_var = Module::make({x}, {sum}, {"out"});
  REQUIRE_THROWS_WITH(verify(free_var), Contains("%y is read but is not a param of the module"));
  Module dup = Module::make({x, f32_var("x", {1})}, {x}, {"out"});
  REQUIRE_THROWS_WITH(verify(dup), Contains("two params are named 'x'"));
  Module names = ok;
  names.output_names = {"a", "b"};
  REQUIRE_THROWS_WITH(verify(names), Contains("2 output names but the body is float32[2,3]"));
  // A node built around the checking constructor, with a stale type.
  Expr stale(std::make_shared<CallNode>(tensor_type(DataType::f32(), {9}), &get_op("add"), std::vector<Expr>{x, y},
                                        Attrs(), "bad_add"));
  REQUIRE_THROWS_AS(verify(Module::make({x, y}, {stale}, {"out"})), kiln::InternalError);
  REQUIRE_THROWS_WITH(verify(Module::make({x, y}, {stale}, {"out"})),
                      Contains("call add (node 'bad_add') has type float32[9] but its op derives float32[2,3]"));
}

TEST_CASE("infer_types keeps a typed module as is and repairs stale types", "[relay]") {
  Expr x = f32_var("x", {2, 3});
  Expr r = make_call("nn.relu", {x});
  Module m = Module::make({x}, {make_call("exp", {r})}, {"out"});
  CHECK(infer_types(m).body.same_as(m.body));
  Expr stale(std::make_shared<CallNode>(tensor_type(DataType::f32(), {1}), &get_op("nn.relu"), std::vector<Expr>{x},
                                        Attrs(), "r"));
  Module broken = Module::make({x}, {make_call("nn.relu", {stale})}, {"out"});
  CHECK(broken.body.type().str() == "float32[1]");  // the stale type propagated
  Module fixed = infer_types(broken);
  CHECK(fixed.body.type().str() == "float32[2,3]");
  verify(fixed);
}

namespace {
// Replaces relu by sigmoid: a minimal rewrite.
class ReluToSigmoid : public ExprMutator {
 protected:
  Expr rewrite_call(const CallNode* op, const Expr& self, std::vector<Expr> args) override {
    if (op->op_name() == "nn.relu") return make_call("sigmoid", std::move(args), {}, op->name);
    return ExprMutator::rewrite_call(op, self, std::move(args));
  }
};
}  // namespace

TEST_CASE("the mutator shares what it does not change and keeps diamonds shared", "[relay]") {
  Expr x = f32_var("x", {4});
  Expr e = make_call("exp", {x});
  Expr r = make_call("nn.relu", {e});
  Expr a = make_call("add", {r, r});        // a diamond over r
  Expr other = make_call("neg", {e});
  Expr out = make_tuple({a, other});
  std::vector<Expr> order = post_order({out});
  REQUIRE(order.size() == 6);  // x, e, r, a, other, tuple: each once
  CHECK(order[0].same_as(x));
  CHECK(order[5].same_as(out));
  Expr rewritten = ReluToSigmoid().mutate(out);
  const auto* t = rewritten.as<TupleNode>();
  REQUIRE(t != nullptr);
  CHECK(t->fields[1].same_as(other));  // untouched subtree: the very same node
  const auto* add = t->fields[0].as<CallNode>();
  CHECK(add->args[0].same_as(add->args[1]));  // still one shared sigmoid
  CHECK(add->args[0].as<CallNode>()->op_name() == "sigmoid");
  CHECK(add->args[0].as<CallNode>()->args[0].same_as(e));
}
