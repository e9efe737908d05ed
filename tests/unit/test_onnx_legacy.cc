// The ONNX importer on the forms of opsets 1 to 6 (old PyTorch and Caffe2 exports): the explicit
// broadcast of binary ops, Cast-1's type names, Reshape-1, Concat-1, Split-1, Tile-1, Pad-1,
// Upsample-1, BatchNormalization with spatial=0, Dropout's mask type; and their user errors.
#include <catch2/catch.hpp>

#include "kiln/relay/error.h"
#include "kiln/relay/frontend/onnx.h"
#include "kiln/relay/printer.h"
#include "test_onnx_builder.h"

using namespace kiln::relay;
using namespace onnx_builder;
using Catch::Matchers::Contains;

namespace {
Module import(const std::string& bytes) { return from_onnx_bytes(bytes, "test model", {}); }
std::string print(const std::string& bytes) { return to_string(import(bytes)); }
std::string out_type(const std::string& bytes) { return import(bytes).output_types()[0].str(); }
// y = op(a, b) on float inputs of the given shapes.
std::string binary(int opset, const std::string& op, const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                   const std::vector<Pb>& attrs) {
  return model(opset, {node(op, {"a", "b"}, {"y"}, "n", attrs)}, {value("a", FLOAT, a), value("b", FLOAT, b)},
               {value("y", FLOAT, {})});
}
std::string one_node(int opset, const Pb& n, const std::vector<int64_t>& shape, const std::vector<Pb>& inits = {}) {
  return model(opset, {n}, {value("x", FLOAT, shape)}, {value("y", FLOAT, {})}, inits);
}
}  // namespace

TEST_CASE("opsets 1 to 6: binary ops broadcast only with broadcast=1, B aligned at axis", "[onnx]") {
  // B [3,4] at axis 1 of A [2,3,4,5]: B's dims get a trailing 1 so numpy broadcasting aligns them.
  CHECK_THAT(print(binary(6, "Add", {2, 3, 4, 5}, {3, 4}, {attr_i("broadcast", 1), attr_i("axis", 1)})),
             Contains("reshape(%b, newshape=[3,4,1]) : float32[3,4,1]"));
  CHECK(out_type(binary(1, "Mul", {2, 3, 4, 5}, {4, 5}, {attr_i("broadcast", 1)})) == "float32[2,3,4,5]");
  CHECK(out_type(binary(6, "Sub", {2, 3}, {}, {attr_i("broadcast", 1)})) == "float32[2,3]");
  CHECK(out_type(binary(1, "Greater", {2, 3}, {2, 3}, {attr_ints("consumed_inputs", {0, 0})})) == "bool[2,3]");
  // Opset 7 broadcasts numpy-style and ignores the attributes it no longer has.
  CHECK(out_type(binary(7, "Add", {2, 3}, {3}, {})) == "float32[2,3]");
  REQUIRE_THROWS_WITH(import(binary(6, "Add", {2, 3}, {3}, {})),
                      "test model: ONNX node 'n' (Add): A [2,3] and B [3] differ in shape and broadcast=0 (opset 6 "
                      "broadcasts only with broadcast=1)");
  REQUIRE_THROWS_WITH(import(binary(6, "Div", {2, 3, 4}, {3}, {attr_i("broadcast", 1)})),
                      Contains("B [3] does not match A [2,3,4] from axis 2"));
  REQUIRE_THROWS_WITH(import(binary(6, "Pow", {2, 3}, {3}, {attr_i("broadcast", 1), attr_i("axis", 2)})),
                      Contains("axis 2 does not place B [3] within A [2,3]"));
  REQUIRE_THROWS_WITH(import(binary(6, "Add", {3}, {2, 3}, {attr_i("broadcast", 1)})),
                      Contains("B [2,3] has a higher rank than A [3]"));
}

TEST_CASE("opsets 1 to 6: attributes of the old forms", "[onnx]") {
  std::vector<int64_t> shp = {2, 3, 4};
  SECTION("Cast-1 names its type") {
    CHECK(out_type(one_node(1, node("Cast", {"x"}, {"y"}, "c", {attr_s("to", "INT32")}), shp)) == "int32[2,3,4]");
    CHECK(out_type(one_node(6, node("Cast", {"x"}, {"y"}, "c", {attr_i("to", DOUBLE)}), shp)) == "float64[2,3,4]");
    REQUIRE_THROWS_WITH(import(one_node(1, node("Cast", {"x"}, {"y"}, "c", {attr_s("to", "REAL")}), shp)),
                        "test model: ONNX node 'c' (Cast): attribute 'to' names no ONNX element type: 'REAL'");
  }
  SECTION("Reshape-1 takes its shape as an attribute") {
    CHECK(out_type(one_node(1, node("Reshape", {"x"}, {"y"}, "", {attr_ints("shape", {0, -1})}), shp)) ==
          "float32[2,12]");
    REQUIRE_THROWS_WITH(import(one_node(4, node("Reshape", {"x"}, {"y"}, "r"), shp)),
                        "test model: ONNX node 'r' (Reshape): attribute 'shape' is required");
  }
  SECTION("Concat-1 concatenates along axis 1 by default") {
    std::string m = model(3, {node("Concat", {"x", "x"}, {"y"})}, {value("x", FLOAT, shp)}, {value("y", FLOAT, {})});
    CHECK(out_type(m) == "float32[2,6,4]");
  }
  SECTION("Split-1 takes its sizes from an input or an attribute") {
    std::string m = model(1, {node("Split", {"x", "s"}, {"a", "b"}, "", {attr_i("axis", 2)})}, {value("x", FLOAT, shp)},
                          {value("a", FLOAT, {}), value("b", FLOAT, {})}, {tensor_i64("s", {2}, {1, 3})});
    CHECK(import(m).output_types()[1].str() == "float32[2,3,3]");
  }
  SECTION("Tile-1 repeats along one axis") {
    CHECK(out_type(one_node(1, node("Tile", {"x", "t", "ax"}, {"y"}), shp,
                            {tensor_i64("t", {}, {3}), tensor_i64("ax", {}, {1})})) == "float32[2,9,4]");
    REQUIRE_THROWS_WITH(import(one_node(1, node("Tile", {"x", "t", "ax"}, {"y"}, "t1"), shp,
                                        {tensor_i64("t", {2}, {3, 1}), tensor_i64("ax", {}, {1})})),
                        "test model: ONNX node 't1' (Tile): tiles [2] and axis [] must be scalars");
  }
  SECTION("Pad-1 calls its pads paddings") {
    CHECK_THAT(print(one_node(1, node("Pad", {"x"}, {"y"}, "", {attr_ints("paddings", {0, 1, 0, 0, 1, 2})}), shp)),
               Contains("pad_width=[0,1,0,0,1,2]) : float32[2,5,6]"));
  }
  SECTION("Upsample-1 scales height and width") {
    CHECK(out_type(one_node(1, node("Upsample", {"x"}, {"y"}, "", {attr_f("height_scale", 2), attr_f("width_scale", 3)}),
                            {1, 2, 3, 4})) == "float32[1,2,6,12]");
    REQUIRE_THROWS_WITH(import(one_node(1, node("Upsample", {"x"}, {"y"}, "u", {attr_f("width_scale", 3)}), {1, 2, 3, 4})),
                        Contains("'u' (Upsample): attributes 'height_scale' and 'width_scale' are required"));
  }
  SECTION("BatchNormalization with spatial=0 normalizes per feature; training outputs are refused") {
    auto bn = [&](const std::vector<int64_t>& param, const std::vector<std::string>& outs) {
      std::vector<Pb> inits;
      size_t n = 1;
      for (int64_t d : param) n *= static_cast<size_t>(d);
      for (const char* p : {"s", "b", "m", "v"}) inits.push_back(tensor_f32(p, param, std::vector<float>(n, 1.0f)));
      return model(6, {node("BatchNormalization", {"x", "s", "b", "m", "v"}, outs, "bn",
                            {attr_i("spatial", 0), attr_i("is_test", 1), attr_ints("consumed_inputs", {0, 0, 0, 1, 1})})},
                   {value("x", FLOAT, shp)}, {value("y", FLOAT, {})}, inits);
    };
    CHECK(out_type(bn({3, 4}, {"y"})) == "float32[2,3,4]");
    REQUIRE_THROWS_WITH(import(bn({3}, {"y"})), Contains("scale [3] must have the shape [3,4] of one sample of X [2,3,4]"));
    REQUIRE_THROWS_AS(import(bn({3, 4}, {"y", "mean"})), UnsupportedError);
  }
  SECTION("Dropout before opset 10 gives a mask of the input's type") {
    std::string m = model(6, {node("Dropout", {"x"}, {"y", "mask"}, "", {attr_i("is_test", 1)})}, {value("x", FLOAT, shp)},
                          {value("y", FLOAT, {}), value("mask", FLOAT, {})});
    CHECK(import(m).output_types()[1].str() == "float32[2,3,4]");
  }
}

TEST_CASE("opset 0 is refused as no ONNX opset", "[onnx]") {
  REQUIRE_THROWS_WITH(import(one_node(0, node("Relu", {"x"}, {"y"}), {2})),
                      "test model: opset 0 is not an ONNX opset (they start at 1)");
}
