// The loss converters (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss) and the small ones of
// convert_misc.cc on hand-built models: output types and every user error they report; the
// ops they added (cumprod, reinterpret) numerically against plain loops. The node suite checks
// the converters' values (kiln conformance).
#include <catch2/catch.hpp>

#include <cstring>

#include "kiln/relay/error.h"
#include "kiln/relay/frontend/onnx.h"
#include "test_onnx_builder.h"
#include "test_ops_b_util.h"

using namespace kiln::relay;
using namespace onnx_builder;
using Catch::Matchers::Contains;
using kiln::opsb_test::check_op;
using kiln::opsb_test::random_tensor;

namespace {
Module import(const std::string& bytes, const OnnxImportOptions& opts = {}) {
  return from_onnx_bytes(bytes, "test model", opts);
}
std::string out_types(const std::string& bytes, const OnnxImportOptions& opts = {}) {
  std::string s;
  for (const Type& t : import(bytes, opts).output_types()) s += (s.empty() ? "" : " ") + t.str();
  return s;
}

// A loss node on x float[3,5,4] and target int64 `target` (weight float[5] when `weighted`).
std::string loss_model(const std::string& op, const std::vector<Pb>& attrs, const std::vector<int64_t>& target,
                       bool weighted, int outputs = 1, int x_elem = FLOAT) {
  std::vector<std::string> in = {"x", "t"};
  std::vector<Pb> inputs = {value("x", x_elem, {3, 5, 4}), value("t", INT64, target)};
  if (weighted) {
    in.push_back("w");
    inputs.push_back(value("w", FLOAT, {5}));
  }
  std::vector<std::string> out = {"y"};
  std::vector<Pb> out_values = {value("y", FLOAT, {})};
  if (outputs == 2) {
    out.push_back("logp");
    out_values.push_back(value("logp", FLOAT, {}));
  }
  return model(13, {node(op, in, out, "loss1", attrs)}, inputs, out_values);
}

// Product scan of a [rows, cols] tensor along axis 1, as ONNX CumProd.
HostTensor cumprod_ref(const HostTensor& x, bool exclusive, bool reverse) {
  int64_t rows = x.shape()[0], cols = x.shape()[1];
  std::vector<double> v = x.to_doubles(), y(v.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < cols; ++i) {
      double acc = 1;
      for (int64_t k = 0; k < cols; ++k) {
        bool take = reverse ? (exclusive ? k > i : k >= i) : (exclusive ? k < i : k <= i);
        if (take) acc *= v[r * cols + k];
      }
      y[r * cols + i] = acc;
    }
  }
  return HostTensor::from_doubles(x.dtype(), x.shape(), y);
}

HostTensor bits_as(const HostTensor& x, DataType to) {
  std::vector<uint8_t> bytes(x.data(), x.data() + x.nbytes());
  return HostTensor(to, x.shape(), bytes);
}
}  // namespace

TEST_CASE("NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: output types per reduction", "[onnx][loss]") {
  CHECK(out_types(loss_model("NegativeLogLikelihoodLoss", {attr_s("reduction", "none")}, {3, 4}, false)) ==
        "float32[3,4]");
  CHECK(out_types(loss_model("NegativeLogLikelihoodLoss", {attr_i("ignore_index", -1)}, {3, 4}, true)) == "float32[]");
  CHECK(out_types(loss_model("NegativeLogLikelihoodLoss", {attr_s("reduction", "sum")}, {3, 4}, true)) == "float32[]");
  // The second output of SoftmaxCrossEntropyLoss is the log-probabilities, of the scores' shape.
  CHECK(out_types(loss_model("SoftmaxCrossEntropyLoss", {attr_s("reduction", "none")}, {3, 4}, true, 2)) ==
        "float32[3,4] float32[3,5,4]");
}

TEST_CASE("loss nodes name what is wrong with their inputs and attributes", "[onnx][loss]") {
  for (const char* op : {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"}) {
    INFO(op);
    REQUIRE_THROWS_WITH(import(loss_model(op, {}, {3, 5}, false)),
                        Contains("ONNX node 'loss1'") && Contains("target must be [3,4] for") &&
                            Contains("[3,5,4], got [3,5]"));
    REQUIRE_THROWS_WITH(import(loss_model(op, {attr_s("reduction", "average")}, {3, 4}, false)),
                        Contains("ONNX node 'loss1'") && Contains("reduction must be none, sum or mean, got 'average'"));
    REQUIRE_THROWS_WITH(import(loss_model(op, {}, {3, 4}, false, 1, INT32)),
                        Contains("ONNX node 'loss1'") && Contains("must be floating, got int32"));
  }
  std::string bad_weight =
      model(13, {node("NegativeLogLikelihoodLoss", {"x", "t", "w"}, {"y"}, "nll", {})},
            {value("x", FLOAT, {3, 5}), value("t", INT64, {3}), value("w", FLOAT, {4})}, {value("y", FLOAT, {})});
  REQUIRE_THROWS_WITH(import(bad_weight), Contains("ONNX node 'nll'") && Contains("weight must be float32[5], got float32[4]"));
  std::string float_target = model(13, {node("NegativeLogLikelihoodLoss", {"x", "t"}, {"y"}, "nll", {})},
                                   {value("x", FLOAT, {3, 5}), value("t", FLOAT, {3})}, {value("y", FLOAT, {})});
  REQUIRE_THROWS_WITH(import(float_target), Contains("target must be int32 or int64, got float32"));
}

TEST_CASE("small tensor operators: output types", "[onnx][misc]") {
  auto one = [](int opset, const Pb& n, int elem, const std::vector<int64_t>& shape, const std::vector<Pb>& extra = {},
                const std::vector<Pb>& inits = {}) {
    std::vector<Pb> inputs = {value("x", elem, shape)};
    inputs.insert(inputs.end(), extra.begin(), extra.end());
    return out_types(model(opset, {n}, inputs, {value("y", FLOAT, {})}, inits));
  };
  CHECK(one(11, node("Hardmax", {"x"}, {"y"}, "h", {attr_i("axis", 1)}), FLOAT, {2, 3, 4}) == "float32[2,3,4]");
  CHECK(one(13, node("Det", {"x"}, {"y"}), FLOAT, {5, 3, 3}) == "float32[5]");
  CHECK(one(26, node("BitCast", {"x"}, {"y"}, "b", {attr_i("to", FLOAT)}), INT32, {2, 3}) == "float32[2,3]");
  CHECK(one(18, node("CenterCropPad", {"x", "s"}, {"y"}, "c", {attr_ints("axes", {-1})}), FLOAT, {4, 7}, {},
            {tensor_i64("s", {1}, {4})}) == "float32[4,4]");
  CHECK(one(17, node("HannWindow", {"n"}, {"y"}, "w", {attr_i("output_datatype", DOUBLE)}), FLOAT, {1}, {},
            {tensor_i64("n", {}, {6})}) == "float64[6]");
  CHECK(one(11, node("MaxUnpool", {"x", "i"}, {"y"}, "u", {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})}),
            FLOAT, {1, 2, 3, 3}, {value("i", INT64, {1, 2, 3, 3})}) == "float32[1,2,6,6]");
}

TEST_CASE("small tensor operators name what is wrong, and refuse what kiln does not do", "[onnx][misc]") {
  auto one = [](int opset, const Pb& n, int elem, const std::vector<int64_t>& shape, const std::vector<Pb>& extra = {},
                const std::vector<Pb>& inits = {}) {
    std::vector<Pb> inputs = {value("x", elem, shape)};
    inputs.insert(inputs.end(), extra.begin(), extra.end());
    return model(opset, {n}, inputs, {value("y", FLOAT, {})}, inits);
  };
  REQUIRE_THROWS_WITH(import(one(26, node("BitCast", {"x"}, {"y"}, "bc", {attr_i("to", INT64)}), FLOAT, {4})),
                      "test model: ONNX node 'bc' (BitCast): BitCast from float32 (4 bytes) to int64 (8 bytes) "
                      "changes the element width");
  REQUIRE_THROWS_WITH(import(one(13, node("Det", {"x"}, {"y"}, "det"), FLOAT, {2, 3})),
                      Contains("ONNX node 'det' (Det): input must be [..., M, M], got [2,3]"));
  REQUIRE_THROWS_AS(import(one(13, node("Det", {"x"}, {"y"}, "det"), FLOAT, {4, 4})), UnsupportedError);
  REQUIRE_THROWS_WITH(import(one(13, node("Det", {"x"}, {"y"}, "det"), FLOAT, {4, 4})),
                      Contains("Det of 4x4 matrices is not supported (only up to 3x3)"));
  REQUIRE_THROWS_WITH(
      import(one(10, node("ReverseSequence", {"x", "l"}, {"y"}, "rs", {attr_i("batch_axis", 2)}), FLOAT, {3, 4, 2},
                 {value("l", INT64, {4})})),
      Contains("ONNX node 'rs' (ReverseSequence): batch_axis 2 and time_axis 0 must be 0 and 1 in some order"));
  REQUIRE_THROWS_WITH(
      import(one(10, node("ReverseSequence", {"x", "l"}, {"y"}, "rs"), FLOAT, {3, 4}, {value("l", INT64, {3})})),
      Contains("sequence_lens must be an integer [4], got int64[3]"));
  REQUIRE_THROWS_WITH(import(one(18, node("CenterCropPad", {"x", "s"}, {"y"}, "ccp"), FLOAT, {4, 7}, {},
                                 {tensor_i64("s", {1}, {4})})),
                      Contains("ONNX node 'ccp' (CenterCropPad): shape has 1 sizes for 2 axes"));
  REQUIRE_THROWS_WITH(
      import(one(11, node("MaxUnpool", {"x", "i", "s"}, {"y"}, "mu", {attr_ints("kernel_shape", {2})}), FLOAT, {1, 1, 3},
                 {value("i", INT64, {1, 1, 3})}, {tensor_i64("s", {3}, {1, 1, 2})})),
      Contains("ONNX node 'mu' (MaxUnpool): output_shape [1,1,2] is smaller than the unpooled shape [1,1,4]"));
  // A window's size is needed at compile time: unbound, the error names the input to bind.
  std::string window = model(17, {node("HammingWindow", {"n"}, {"y"}, "hw")}, {value("n", INT64, {})},
                             {value("y", FLOAT, {})});
  REQUIRE_THROWS_AS(import(window), CompileTimeInputError);
  REQUIRE_THROWS_WITH(import(window), Contains("ONNX node 'hw' (HammingWindow): input 0 (size) is graph input 'n'"));
}

TEST_CASE("cumprod forwards, backwards, exclusive, int32 too", "[ops_b]") {
  HostTensor x = random_tensor(DataType::f32(), {3, 7}, 3, 0.5, 1.5);
  HostTensor xi = random_tensor(DataType::i32(), {2, 9}, 4, -3, 3);
  for (int excl = 0; excl < 2; ++excl) {
    for (int rev = 0; rev < 2; ++rev) {
      Attrs a = Attrs().set_int("axis", 1).set_int("exclusive", excl).set_int("reverse", rev);
      INFO("exclusive " << excl << " reverse " << rev);
      CHECK(check_op("cumprod", {x}, a, {cumprod_ref(x, excl, rev)}, 1e-5, 1e-6) == "");
      CHECK(check_op("cumprod", {xi}, a, {cumprod_ref(xi, excl, rev)}, 0, 0) == "");
    }
  }
}

TEST_CASE("reinterpret keeps the bits: float and int both ways, bool and bytes", "[ops_b]") {
  // Long rows, so that the template vectorizes; the float bits include negative zero and NaN.
  HostTensor f = random_tensor(DataType::f32(), {3, 67}, 5, -1e6, 1e6);
  std::vector<uint8_t> fb(f.data(), f.data() + f.nbytes());
  uint32_t nan_bits = 0x7fc00001u, neg_zero = 0x80000000u;
  std::memcpy(fb.data(), &nan_bits, 4);
  std::memcpy(fb.data() + 4, &neg_zero, 4);
  f = HostTensor(DataType::f32(), f.shape(), fb);
  Attrs to_i32 = Attrs().set_str("dtype", "int32");
  CHECK(check_op("reinterpret", {f}, to_i32, {bits_as(f, DataType::i32())}, 0, 0) == "");
  HostTensor i = random_tensor(DataType::i32(), {2, 45}, 6, -1000000000, 1000000000);
  CHECK(check_op("reinterpret", {i}, Attrs().set_str("dtype", "float32"), {bits_as(i, DataType::f32())}, 0, 0) == "");
  HostTensor d = random_tensor(DataType::f64(), {40}, 7);
  CHECK(check_op("reinterpret", {d}, Attrs().set_str("dtype", "int64"), {bits_as(d, DataType::i64())}, 0, 0) == "");
  HostTensor b = random_tensor(DataType::boolean(), {37}, 8, 0, 1);
  CHECK(check_op("reinterpret", {b}, Attrs().set_str("dtype", "uint8"), {bits_as(b, DataType::u8())}, 0, 0) == "");
  HostTensor s = random_tensor(DataType::u8(), {37}, 9, 0, 255);
  CHECK(check_op("reinterpret", {s}, Attrs().set_str("dtype", "int8"), {bits_as(s, DataType::i8())}, 0, 0) == "");
}
