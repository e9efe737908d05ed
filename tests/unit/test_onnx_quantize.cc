// The ONNX importer's quantization nodes on small hand-built models: the graphs they import to
// (QDQ and QOperator forms alike: dequantize -> float op -> quantize, weights kept int8), the
// types they produce, and every refusal and user error with its message naming the node.
// Numerics: the node suite (kiln conformance) and tests/models' quant_* cases.
#include <catch2/catch.hpp>

#include "kiln/relay/error.h"
#include "kiln/relay/frontend/onnx.h"
#include "kiln/relay/printer.h"
#include "test_onnx_builder.h"

using namespace kiln::relay;
using namespace onnx_builder;
using Catch::Matchers::Contains;

namespace {

// TensorProto.DataType codes past the builder's list.
constexpr int kInt4 = 22;

Module import(const std::string& bytes) { return from_onnx_bytes(bytes, "test model", {}); }
std::string print(const std::string& bytes) { return to_string(import(bytes), PrintOptions{true, false}); }
std::string out_types(const std::string& bytes) {
  std::string s;
  for (const Type& t : import(bytes).output_types()) s += (s.empty() ? "" : ", ") + t.str();
  return s;
}

Pb scalar_f32(const std::string& name, float v) { return tensor_f32(name, {}, {v}); }
Pb u8(const std::string& name, const std::vector<int64_t>& dims, uint8_t v) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return tensor_raw(name, UINT8, dims, std::string(static_cast<size_t>(n), static_cast<char>(v)));
}
Pb i8(const std::string& name, const std::vector<int64_t>& dims, int8_t v) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return tensor_raw(name, INT8, dims, std::string(static_cast<size_t>(n), static_cast<char>(v)));
}

// x (float [1,2,4,4]) -> QuantizeLinear -> DequantizeLinear -> Conv(DequantizeLinear(w int8,
// per output channel)) -> QuantizeLinear, as ONNX Runtime's QDQ quantizer writes it.
std::string qdq_conv() {
  return model(
      21,
      {node("QuantizeLinear", {"x", "s", "z"}, {"xq"}, "qx"), node("DequantizeLinear", {"xq", "s", "z"}, {"xf"}, "dqx"),
       node("DequantizeLinear", {"w", "ws"}, {"wf"}, "dqw", {attr_i("axis", 0)}),
       node("Conv", {"xf", "wf"}, {"c"}, "conv"), node("QuantizeLinear", {"c", "s1", "z"}, {"y"}, "qy")},
      {value("x", FLOAT, {1, 2, 4, 4})}, {value("y", UINT8, {})},
      {tensor_f32("s", {1}, {0.1f}), u8("z", {}, 128), i8("w", {3, 2, 1, 1}, 1), tensor_f32("ws", {3}, {0.5f, 0.25f, 2.f}),
       scalar_f32("s1", 0.2f)});
}

}  // namespace

TEST_CASE("a QDQ conv imports to quantize, dequantize, conv, quantize with its weight still int8", "[onnx][quantize]") {
  std::string text = print(qdq_conv());
  // The 1-element scale [1] is per tensor (a scalar); the weight's scale runs along axis 0.
  CHECK_THAT(text, Contains("quantize(%x, 0.1f, 128u8, axis=0, out_dtype=\"uint8\") : uint8[1,2,4,4]  # qx"));
  CHECK_THAT(text, Contains("dequantize(%0, 0.1f, 128u8, axis=0) : float32[1,2,4,4]  # dqx"));
  CHECK_THAT(text, Contains("dequantize(meta[0], meta[1], axis=0) : float32[3,2,1,1]  # dqw"));
  CHECK_THAT(text, Contains("nn.conv2d(%1, %2,"));
  CHECK_THAT(text, Contains("quantize(%3, 0.2f, 128u8, axis=0, out_dtype=\"uint8\") : uint8[1,3,4,4]  # qy"));
  CHECK_THAT(text, Contains("meta[0] = int8[3,2,1,1]"));
}

TEST_CASE("QuantizeLinear's output type: zero point, output_dtype, default uint8, division type", "[onnx][quantize]") {
  auto q = [](const std::vector<std::string>& in, const std::vector<Pb>& attrs, int x_type = FLOAT, int s_type = FLOAT) {
    return model(21, {node("QuantizeLinear", in, {"y"}, "q", attrs)},
                 {value("x", x_type, {2, 3}), value("s", s_type, {}), value("zi", INT8, {}), value("zu", UINT16, {3}),
                  value("z32", INT32, {})},
                 {value("y", UINT8, {})});
  };
  CHECK(out_types(q({"x", "s"}, {})) == "uint8[2,3]");
  CHECK(out_types(q({"x", "s", "zi"}, {})) == "int8[2,3]");
  CHECK(out_types(q({"x", "s", "zu"}, {attr_i("axis", -1)})) == "uint16[2,3]");
  CHECK(out_types(q({"x", "s"}, {attr_i("output_dtype", INT16)})) == "int16[2,3]");
  CHECK(out_types(q({"x", "s", "zi"}, {attr_i("output_dtype", INT8)})) == "int8[2,3]");
  // numpy's division types: float16 by float32 in float32, int32 by float32 in float64.
  CHECK_THAT(print(q({"x", "s"}, {}, FLOAT16)), Contains("cast(%x, dtype=\"float32\")"));
  CHECK_THAT(print(q({"x", "s"}, {}, INT32)),
             Contains("cast(%x, dtype=\"float64\")") && Contains("cast(%s, dtype=\"float64\")"));
  CHECK_THAT(print(q({"x", "s"}, {attr_i("precision", FLOAT16)})), Contains("cast(%x, dtype=\"float16\")"));

  REQUIRE_THROWS_WITH(import(q({"x", "s", "zi"}, {attr_i("output_dtype", UINT8)})),
                      Contains("ONNX node 'q' (QuantizeLinear): output_dtype UINT8 differs from y_zero_point's type INT8"));
  REQUIRE_THROWS_WITH(import(q({"x", "s"}, {attr_i("precision", INT32)})),
                      Contains("ONNX node 'q' (QuantizeLinear): precision INT32 is not a floating type"));
  REQUIRE_THROWS_WITH(import(q({"x", "s"}, {attr_i("output_dtype", INT32)})),
                      Contains("ONNX node 'q' (QuantizeLinear): output_dtype INT32 is not a quantized type"));
  REQUIRE_THROWS_WITH(import(q({"x", "s", "z32"}, {})),
                      Contains("ONNX node 'q' (QuantizeLinear)") &&
                          Contains("out_dtype must be int8, uint8, int16 or uint16, got int32"));
  REQUIRE_THROWS_WITH(import(q({"x", "s", "zu"}, {attr_i("axis", 0)})),
                      Contains("ONNX node 'q' (QuantizeLinear)") &&
                          Contains("zero point [3] must be a scalar (per tensor) or [2] (per axis 0 of input [2,3])"));
  REQUIRE_THROWS_WITH(import(q({"x", "s", "zu"}, {attr_i("axis", 2)})),
                      Contains("ONNX node 'q' (QuantizeLinear): axis 2 is out of range for rank 2"));
}

TEST_CASE("DequantizeLinear: scale's type, output_dtype, int32 input, mismatched zero point", "[onnx][quantize]") {
  auto dq = [](int x_type, int z_type, int s_type, const std::vector<Pb>& attrs = {}) {
    return model(23, {node("DequantizeLinear", {"x", "s", "z"}, {"y"}, "dq", attrs)},
                 {value("x", x_type, {4}), value("s", s_type, {}), value("z", z_type, {})}, {value("y", FLOAT, {})});
  };
  CHECK(out_types(dq(INT8, INT8, FLOAT)) == "float32[4]");
  CHECK(out_types(dq(UINT16, UINT16, FLOAT16)) == "float16[4]");
  CHECK(out_types(dq(INT32, INT32, FLOAT)) == "float32[4]");
  CHECK(out_types(dq(UINT8, UINT8, FLOAT16, {attr_i("output_dtype", FLOAT)})) == "float32[4]");
  REQUIRE_THROWS_WITH(import(dq(INT8, UINT8, FLOAT)),
                      Contains("ONNX node 'dq' (DequantizeLinear): x_zero_point is uint8, x is int8: they must have "
                               "one type"));
  REQUIRE_THROWS_WITH(import(dq(FLOAT, FLOAT, FLOAT)),
                      Contains("ONNX node 'dq' (DequantizeLinear)") &&
                          Contains("input must be int8, uint8, int16, uint16 or int32, got float32"));
  REQUIRE_THROWS_WITH(import(dq(INT8, INT8, FLOAT, {attr_i("output_dtype", INT32)})),
                      Contains("output_dtype INT32 is not a floating type"));
}

TEST_CASE("out-of-scope quantization is unsupported, naming the node and the type or attribute", "[onnx][quantize]") {
  // Blocked quantization.
  std::string blocked = model(21, {node("DequantizeLinear", {"x", "s"}, {"y"}, "dq",
                                        {attr_i("axis", 1), attr_i("block_size", 2)})},
                              {value("x", INT8, {2, 4}), value("s", FLOAT, {2, 2})}, {value("y", FLOAT, {})});
  REQUIRE_THROWS_AS(import(blocked), UnsupportedError);
  REQUIRE_THROWS_WITH(import(blocked),
                      Contains("ONNX node 'dq' (DequantizeLinear): blocked quantization (block_size=2) is not supported"));
  // A float8 output type named by output_dtype.
  std::string f8 = model(21, {node("QuantizeLinear", {"x", "s"}, {"y"}, "q", {attr_i("output_dtype", FLOAT8E4M3FN)})},
                         {value("x", FLOAT, {4}), value("s", FLOAT, {})}, {value("y", FLOAT8E4M3FN, {})});
  REQUIRE_THROWS_AS(import(f8), UnsupportedError);
  REQUIRE_THROWS_WITH(import(f8), Contains("ONNX node 'q' (QuantizeLinear): output_dtype FLOAT8E4M3FN is not supported: "
                                           "kiln quantizes to int8, uint8, int16 and uint16"));
  // A float8 zero point (a graph input) and an int4 weight (an initializer): their reader is named.
  std::string f8_zp = model(21, {node("QuantizeLinear", {"x", "s", "z"}, {"y"}, "q")},
                            {value("x", FLOAT, {4}), value("s", FLOAT, {}), value("z", FLOAT8E4M3FN, {})},
                            {value("y", FLOAT8E4M3FN, {})});
  REQUIRE_THROWS_AS(import(f8_zp), UnsupportedError);
  REQUIRE_THROWS_WITH(import(f8_zp), Contains("ONNX node 'q' (QuantizeLinear) reads 'z', graph input 'z' of element type "
                                              "FLOAT8E4M3FN, which kiln does not support"));
  std::string int4 = model(21, {node("DequantizeLinear", {"w", "s"}, {"y"}, "dqw")}, {value("s", FLOAT, {})},
                           {value("y", FLOAT, {})}, {tensor_raw("w", kInt4, {4}, std::string(2, '\0'))});
  REQUIRE_THROWS_AS(import(int4), UnsupportedError);
  REQUIRE_THROWS_WITH(import(int4), Contains("ONNX node 'dqw' (DequantizeLinear) reads 'w', initializer 'w' of element "
                                             "type INT4, which kiln does not support"));
  // One that no node reads is refused all the same.
  std::string unread = model(21, {node("Relu", {"x"}, {"y"})}, {value("x", FLOAT, {4}), value("z", FLOAT8E4M3FN, {})},
                             {value("y", FLOAT, {})});
  REQUIRE_THROWS_AS(import(unread), UnsupportedError);
  REQUIRE_THROWS_WITH(import(unread), Contains("graph input 'z' has element type FLOAT8E4M3FN, which kiln does not support"));
}

TEST_CASE("DynamicQuantizeLinear: uint8 y, float32 scale and uint8 zero point scalars", "[onnx][quantize]") {
  auto m = [](int type) {
    return model(11, {node("DynamicQuantizeLinear", {"x"}, {"y", "ys", "yz"}, "dql")}, {value("x", type, {3, 4})},
                 {value("y", UINT8, {}), value("ys", FLOAT, {}), value("yz", UINT8, {})});
  };
  CHECK(out_types(m(FLOAT)) == "uint8[3,4], float32[], uint8[]");
  REQUIRE_THROWS_WITH(import(m(FLOAT16)),
                      Contains("ONNX node 'dql' (DynamicQuantizeLinear): x must be float32, got float16"));
}

TEST_CASE("MatMulInteger and ConvInteger: int32 operands minus per-row / per-channel zero points", "[onnx][quantize]") {
  std::string mm = model(10, {node("MatMulInteger", {"a", "b", "az", "bz"}, {"y"}, "mmi")},
                         {value("a", UINT8, {4, 3}), value("b", INT8, {3, 2})}, {value("y", INT32, {})},
                         {u8("az", {4}, 7), i8("bz", {2}, 1)});
  std::string text = print(mm);
  CHECK(out_types(mm) == "int32[4,2]");
  CHECK_THAT(text, Contains("cast(%a, dtype=\"int32\")") && Contains("cast(%b, dtype=\"int32\")"));
  CHECK_THAT(text, Contains("int32[4,1]"));  // a's zero point, one per row
  CHECK_THAT(text, Contains("nn.matmul(") && Contains(": int32[4,2]"));
  std::string bad = model(10, {node("MatMulInteger", {"a", "b"}, {"y"}, "mmi")},
                          {value("a", FLOAT, {4, 3}), value("b", INT8, {3, 2})}, {value("y", INT32, {})});
  REQUIRE_THROWS_WITH(import(bad), Contains("ONNX node 'mmi' (MatMulInteger): A must be int8 or uint8, got float32"));
  std::string mixed = model(10, {node("MatMulInteger", {"a", "b", "az"}, {"y"}, "mmi")},
                            {value("a", UINT8, {4, 3}), value("b", INT8, {3, 2})}, {value("y", INT32, {})},
                            {i8("az", {}, 1)});
  REQUIRE_THROWS_WITH(import(mixed), Contains("A's zero point is int8, A is uint8: they must have one type"));

  std::string conv = model(10, {node("ConvInteger", {"x", "w", "xz", "wz"}, {"y"}, "ci", {attr_ints("pads", {1, 1, 1, 1})})},
                           {value("x", UINT8, {1, 2, 5, 5})}, {value("y", INT32, {})},
                           {u8("w", {3, 2, 3, 3}, 2), u8("xz", {}, 128), u8("wz", {3}, 1)});
  CHECK(out_types(conv) == "int32[1,3,5,5]");
  CHECK_THAT(print(conv), Contains("nn.conv2d(") && Contains("padding=[1,1,1,1]"));
}

TEST_CASE("QLinearMatMul, QLinearConv and the com.microsoft QLinear ops import as dequantize, op, quantize",
          "[onnx][quantize]") {
  // float16 scales become float32: the float op between runs in float32.
  std::string mm = model(21, {node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}, "qmm")},
                         {value("a", INT8, {2, 4}), value("as", FLOAT16, {1}), value("az", INT8, {1}),
                          value("b", INT8, {4, 3}), value("bs", FLOAT16, {1}), value("bz", INT8, {1}),
                          value("ys", FLOAT16, {1}), value("yz", INT8, {1})},
                         {value("y", INT8, {})});
  std::string text = print(mm);
  CHECK(out_types(mm) == "int8[2,3]");
  CHECK_THAT(text, Contains("nn.matmul(") && Contains(": float32[2,3]") && Contains("out_dtype=\"int8\""));

  // QLinearConv with a bias: dequantized by x_scale * w_scale, added per output channel.
  std::string conv = model(10, {node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"}, "qc")},
                           {value("x", UINT8, {1, 2, 5, 5})}, {value("y", UINT8, {})},
                           {scalar_f32("xs", 0.1f), u8("xz", {}, 128), i8("w", {3, 2, 3, 3}, 1),
                            tensor_f32("ws", {3}, {0.1f, 0.2f, 0.3f}), i8("wz", {3}, 0), scalar_f32("ys", 0.5f),
                            u8("yz", {}, 10), tensor_raw("b", INT32, {3}, std::string(12, '\0'))});
  text = print(conv);
  CHECK(out_types(conv) == "uint8[1,3,3,3]");
  CHECK_THAT(text, Contains("dequantize(meta[") && Contains("nn.conv2d(") && Contains("nn.bias_add(") &&
                       Contains("out_dtype=\"uint8\""));

  for (const char* op : {"QLinearAdd", "QLinearMul"}) {
    std::string bin = model(17, {node(op, {"a", "as", "az", "b", "bs", "bz", "cs", "cz"}, {"c"}, "q", {}, "com.microsoft")},
                            {value("a", UINT8, {2, 3}), value("b", UINT8, {3})}, {value("c", UINT8, {})},
                            {scalar_f32("as", 0.1f), u8("az", {}, 1), scalar_f32("bs", 0.2f), u8("bz", {}, 2),
                             scalar_f32("cs", 0.3f), u8("cz", {}, 3)});
    INFO(op);
    CHECK(out_types(bin) == "uint8[2,3]");
  }
  for (int64_t last : {0, 1}) {
    std::string gap = model(17, {node("QLinearGlobalAveragePool", {"x", "xs", "xz", "ys", "yz"}, {"y"}, "g",
                                      {attr_i("channels_last", last)}, "com.microsoft")},
                            {value("x", UINT8, {1, 4, 3, 2})}, {value("y", UINT8, {})},
                            {scalar_f32("xs", 0.1f), u8("xz", {}, 1), scalar_f32("ys", 0.2f), u8("yz", {}, 2)});
    CHECK(out_types(gap) == (last ? "uint8[1,1,1,2]" : "uint8[1,4,1,1]"));
  }
  std::string flat = model(17, {node("QLinearGlobalAveragePool", {"x", "xs", "xz", "ys", "yz"}, {"y"}, "g", {},
                                     "com.microsoft")},
                           {value("x", UINT8, {4, 3})}, {value("y", UINT8, {})},
                           {scalar_f32("xs", 0.1f), u8("xz", {}, 1), scalar_f32("ys", 0.2f), u8("yz", {}, 2)});
  REQUIRE_THROWS_WITH(import(flat), Contains("ONNX node 'g' (QLinearGlobalAveragePool): X must have a batch, a channel "
                                             "and spatial dims, got [4,3]"));
  // Scales must be floating-point.
  std::string int_scale = model(17, {node("QLinearAdd", {"a", "as", "az", "a", "as", "az", "as", "az"}, {"c"}, "q", {},
                                          "com.microsoft")},
                                {value("a", UINT8, {3}), value("as", INT32, {})}, {value("c", UINT8, {})},
                                {u8("az", {}, 1)});
  REQUIRE_THROWS_WITH(import(int_scale), Contains("ONNX node 'q' (QLinearAdd): A_scale must be floating-point, got int32"));
  // Other contrib ops are listed with their domain.
  std::string other = model(17, {node("QLinearSigmoid", {"x"}, {"y"}, "s", {}, "com.microsoft")}, {value("x", UINT8, {2})},
                            {value("y", UINT8, {})});
  REQUIRE_THROWS_WITH(import(other),
                      Contains("unsupported ONNX operator (1 op type): com.microsoft.QLinearSigmoid (node 's')"));
}
