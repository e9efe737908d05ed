// quantize / dequantize (relay/op/quantize.cc, te/ops/nn_quantize.h): compiled end to end under
// the naive schedule and the default template, against plain reference loops written here from
// the ONNX definitions (the quotient a float32 division, rounded half to even, saturated; the
// dequantized value (x - zero_point) * scale in float32), and against literal expected values
// for rounding ties and saturation; on the OpenCL device (PoCL) through the GPU injective
// template; every error of the type relations and the te computes with its message.
// Results are compared exactly.
#include <catch2/catch.hpp>

#include <cfenv>
#include <cmath>
#include <limits>

#include "kiln/pipeline.h"
#include "schedule/templates/injective_gpu.h"
#include "kiln/te/ops/nn_quantize.h"
#include "test_gpu_util.h"
#include "test_ops_a_util.h"

using namespace kiln;
using namespace kiln::opsa;
using relay::Attrs;

namespace {

const DataType f32 = DataType::f32(), f16 = DataType::f16();

// A value rounded to float16 (through HostTensor's conversion, round to nearest even).
double to_f16(double v) { return HostTensor::from_doubles(f16, {1}, {v}).to_doubles()[0]; }

// The parameter of per-tensor (one element) or per-axis p at the coordinates c.
double param(const HostTensor& p, const std::vector<int64_t>& c, int64_t axis) {
  return p.numel() == 1 ? p.double_at(0) : p.double_at(c[axis]);
}

// ONNX QuantizeLinear, one element: x / scale divided in x's type (float16 by a float32
// division rounded once to float16), rounded half to even, plus the zero point, saturated; NaN
// saturates low.
double quantize_ref(double x, double scale, double zp, DataType xt, DataType out) {
  float q = static_cast<float>(x) / static_cast<float>(scale);
  double qd = xt == f16 ? to_f16(q) : q;
  auto [lo, hi] = te::ops::quantized_range(out);
  if (std::isnan(qd)) return static_cast<double>(lo);
  REQUIRE(std::fegetround() == FE_TONEAREST);
  double r = std::nearbyint(qd) + zp;  // nearbyint rounds half to even in the default mode
  return std::min(std::max(r, static_cast<double>(lo)), static_cast<double>(hi));
}

HostTensor quantize_ref(const HostTensor& x, const HostTensor& scale, const HostTensor* zp, int64_t axis, DataType out) {
  std::vector<double> xv = x.to_doubles(), y(xv.size());
  for_each_index(x.shape(), [&](int64_t f, const std::vector<int64_t>& c) {
    y[f] = quantize_ref(xv[f], param(scale, c, axis), zp ? param(*zp, c, axis) : 0, x.dtype(), out);
  });
  return HostTensor::from_doubles(out, x.shape(), y);
}

// ONNX DequantizeLinear: (x - zero_point) exactly, converted to float32, times the scale in
// float32, rounded to the scale's type.
HostTensor dequantize_ref(const HostTensor& x, const HostTensor& scale, const HostTensor* zp, int64_t axis) {
  std::vector<int64_t> xv = x.to_int64s();
  std::vector<double> y(xv.size());
  for_each_index(x.shape(), [&](int64_t f, const std::vector<int64_t>& c) {
    int64_t z = zp ? static_cast<int64_t>(param(*zp, c, axis)) : 0;
    y[f] = static_cast<float>(xv[f] - z) * static_cast<float>(param(scale, c, axis));
  });
  return HostTensor::from_doubles(scale.dtype(), x.shape(), y);
}

Attrs q_attrs(int64_t axis, DataType out) { return Attrs().set_int("axis", axis).set_str("out_dtype", out.str()); }

// Runs op on inputs under both schedules; "" or what differed from want.
std::string check(const std::string& op, const std::vector<HostTensor>& inputs, const Attrs& attrs,
                  const HostTensor& want) {
  for (Sched mode : {Sched::Naive, Sched::Default}) {
    CallResult r = run_call(op, inputs, attrs, mode);
    std::string why = mismatch(r.outputs[0], want, 0, 0);
    if (!why.empty()) return op + (mode == Sched::Naive ? " (naive): " : " (default): ") + why;
  }
  return "";
}

relay::Type tt(DataType t, const Shape& s) { return relay::tensor_type(t, s); }

// The type of op on arguments of types `args`: its relation's verdict.
relay::Type type_of(const std::string& op, const std::vector<relay::Type>& args, const Attrs& attrs) {
  std::vector<relay::Expr> vars;
  for (size_t i = 0; i < args.size(); ++i) vars.push_back(relay::make_var("v" + std::to_string(i), args[i]));
  return relay::make_call(op, vars, attrs).type();
}

}  // namespace

TEST_CASE("quantize rounds ties half to even and saturates at both ends of every type", "[ops_quantize]") {
  // x / 1: ties, values at the edges of int8, overflow, infinities and NaN.
  HostTensor x = HostTensor::from_doubles(
      f32, {16}, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, -3.5, 126.5, 127.5, -128.5, -129, 1e30, -INFINITY, INFINITY, NAN});
  HostTensor one = HostTensor::scalar(f32, 1);
  std::vector<double> int8 = {0, 2, 2, 0, -2, -2, 4, -4, 126, 127, -128, -128, 127, -128, 127, -128};
  CHECK(check("quantize", {x, one}, q_attrs(0, DataType::i8()), HostTensor::from_doubles(DataType::i8(), {16}, int8)) == "");
  // uint8 with zero point 10: the ties shift by 10, everything below -10 saturates at 0.
  std::vector<double> uint8 = {10, 12, 12, 10, 8, 8, 14, 6, 136, 138, 0, 0, 255, 0, 255, 0};
  CHECK(check("quantize", {x, one, HostTensor::scalar(DataType::u8(), 10)}, q_attrs(0, DataType::u8()),
              HostTensor::from_doubles(DataType::u8(), {16}, uint8)) == "");
  // int16 / uint16: the ranges' own ends; a scale of 0.5 doubles x (32767.25 / 0.5 = 65534.5 -> 65534).
  HostTensor wide = HostTensor::from_doubles(f32, {6}, {16383.25, 16383.75, -16384.25, -16384.5, 32767.25, 40000});
  HostTensor half = HostTensor::scalar(f32, 0.5);
  CHECK(check("quantize", {wide, half}, q_attrs(0, DataType::i16()),
              HostTensor::from_doubles(DataType::i16(), {6}, {32766, 32767, -32768, -32768, 32767, 32767})) == "");
  CHECK(check("quantize", {wide, half}, q_attrs(0, DataType::u16()),
              HostTensor::from_doubles(DataType::u16(), {6}, {32766, 32768, 0, 0, 65534, 65535})) == "");
}

TEST_CASE("quantize per tensor and per axis against the reference, float32 and float16 inputs", "[ops_quantize]") {
  const Shape s = {2, 3, 5, 4};
  for (DataType out : {DataType::i8(), DataType::u8(), DataType::i16(), DataType::u16()}) {
    auto [lo, hi] = te::ops::quantized_range(out);
    for (DataType xt : {f32, f16}) {
      HostTensor x = random_tensor(xt, s, 1, -40, 40);
      HostTensor scale = HostTensor::scalar(xt, 0.13);
      HostTensor zp = HostTensor::scalar(out, static_cast<double>((lo + hi) / 2));
      INFO(xt.str() << " to " << out.str());
      CHECK(check("quantize", {x, scale, zp}, q_attrs(1, out), quantize_ref(x, scale, &zp, 1, out)) == "");
      CHECK(check("quantize", {x, scale}, q_attrs(1, out), quantize_ref(x, scale, nullptr, 1, out)) == "");
      for (int64_t axis : {1, 3}) {
        HostTensor ps = random_tensor(xt, {s[axis]}, 2 + axis, 0.05, 0.5);
        HostTensor pz = random_tensor(out, {s[axis]}, 3 + axis, static_cast<double>(lo) / 4, static_cast<double>(hi) / 4);
        INFO("per axis " << axis);
        CHECK(check("quantize", {x, ps, pz}, q_attrs(axis, out), quantize_ref(x, ps, &pz, axis, out)) == "");
        // A per-axis scale with a per-tensor zero point, as ONNX's reference allows.
        CHECK(check("quantize", {x, ps, zp}, q_attrs(axis, out), quantize_ref(x, ps, &zp, axis, out)) == "");
      }
    }
  }
}

TEST_CASE("quantize divides (no reciprocal): x / 7 and x / 0.3 round as divisions", "[ops_quantize]") {
  // (7k + 3.5) / 7 is the tie k + 0.5 exactly; multiplied by float(1/7) it lands beside the tie
  // for 70 of the k in [-120, 120). Near (k + 0.5) * 0.3, x * float(1/0.3) and x / 0.3 round to
  // different integers for 30 of them.
  for (double d : {7.0, 0.3}) {
    std::vector<double> xv;
    for (int k = -120; k < 120; ++k) xv.push_back(static_cast<float>((k + 0.5) * static_cast<float>(d)));
    HostTensor x = HostTensor::from_doubles(f32, {static_cast<int64_t>(xv.size())}, xv);
    HostTensor scale = HostTensor::scalar(f32, d);
    INFO("scale " << d);
    HostTensor want = quantize_ref(x, scale, nullptr, 0, DataType::i16());
    CHECK(check("quantize", {x, scale}, q_attrs(0, DataType::i16()), want) == "");
  }
}

TEST_CASE("dequantize of every input type per tensor and per axis against the reference", "[ops_quantize]") {
  const Shape s = {3, 4, 6};
  for (DataType xt : {DataType::i8(), DataType::u8(), DataType::i16(), DataType::u16(), DataType::i32()}) {
    double lo = xt == DataType::i32() ? -2e9 : static_cast<double>(te::ops::quantized_range(xt).first);
    double hi = xt == DataType::i32() ? 2e9 : static_cast<double>(te::ops::quantized_range(xt).second);
    HostTensor x = random_tensor(xt, s, 4, lo, hi);
    for (DataType st : {f32, f16}) {
      INFO(xt.str() << " with a " << st.str() << " scale");
      HostTensor scale = HostTensor::scalar(st, 0.0371);
      HostTensor zp = HostTensor::scalar(xt, xt.is_uint() ? std::floor(hi / 2) : -3);
      Attrs a = Attrs().set_int("axis", 1);
      CHECK(check("dequantize", {x, scale, zp}, a, dequantize_ref(x, scale, &zp, 1)) == "");
      CHECK(check("dequantize", {x, scale}, a, dequantize_ref(x, scale, nullptr, 1)) == "");
      HostTensor ps = random_tensor(st, {s[2]}, 5, 0.001, 0.1);
      HostTensor pz = random_tensor(xt, {s[2]}, 6, lo / 2, hi / 2);
      CHECK(check("dequantize", {x, ps, pz}, Attrs().set_int("axis", 2), dequantize_ref(x, ps, &pz, 2)) == "");
    }
  }
}

TEST_CASE("dequantize of an int32 constant (a bias) folds at compile time as the kernel computes it", "[ops_quantize]") {
  const Shape s = {3, 4, 6};
  HostTensor x = random_tensor(DataType::i32(), s, 7, -2e9, 2e9);
  HostTensor ps = random_tensor(f32, {s[2]}, 8, 0.001, 0.1);
  HostTensor pz = random_tensor(DataType::i32(), {s[2]}, 9, -1e9, 1e9);
  const Attrs a = Attrs().set_int("axis", 2);
  const HostTensor want = dequantize_ref(x, ps, &pz, 2);
  CallResult kernel = run_call("dequantize", {x, ps, pz}, a, Sched::Default);
  CHECK(mismatch(kernel.outputs[0], want, 0, 0) == "");
  // The relay evaluator (fold_constants) gives the same bits.
  CHECK(mismatch(evaluate(kernel.call, {x, ps, pz}), want, 0, 0) == "");
  const HostTensor one = HostTensor::scalar(f32, 0.0371);
  CHECK(mismatch(evaluate(run_call("dequantize", {x, one}, a, Sched::Naive).call, {x, one}), dequantize_ref(x, one, nullptr, 2), 0, 0) == "");
  // An 8-bit weight's dequantize is not folded: realize_integer_ops needs it to make an
  // integer kernel.
  HostTensor w = random_tensor(DataType::i8(), s, 10, -128, 127);
  CallResult w_call = run_call("dequantize", {w, one}, a, Sched::Naive);
  CHECK_FALSE(relay::evaluate_call(*w_call.call.as<relay::CallNode>(), {w, one}).has_value());
}

TEST_CASE("quantize and dequantize run on the OpenCL device through the GPU injective template",
          "[ops_quantize][gpu][opencl]") {
  REQUIRE_OPENCL(dev);
  const int64_t rows = 7, cols = 131;
  te::Tensor x = te::placeholder({rows, cols}, f32, "x");
  te::Tensor scale = te::placeholder({cols}, f32, "scale");
  te::Tensor zp = te::placeholder({cols}, DataType::u8(), "zp");
  te::Tensor q = te::ops::quantize(x, scale, zp, 1, DataType::u8());
  te::Tensor y = te::ops::dequantize(q, scale, zp, 1);
  schedule::Schedule s = schedule::create({q, y});
  schedule::Config cfg;
  schedule::schedule_injective_gpu(s, {q, y}, Target::parse("opencl"), cfg);
  codegen::GpuModule m = kiln::build_gpu({kiln::loop_ir(s, {x, scale, zp, q, y}, "f")}, Target::parse("opencl"));

  HostTensor xv = random_tensor(f32, {rows, cols}, 7, -30, 30);
  std::vector<double> xd = xv.to_doubles();
  for (int i = 0; i < 6; ++i) xd[i] = 0.5 + i;  // ties at a scale of 1 (column i < 6 below)
  xv = HostTensor::from_doubles(f32, {rows, cols}, xd);
  std::vector<double> sd = random_tensor(f32, {cols}, 8, 0.05, 0.4).to_doubles();
  for (int i = 0; i < 6; ++i) sd[i] = 1;
  HostTensor sv = HostTensor::from_doubles(f32, {cols}, sd);
  HostTensor zv = random_tensor(DataType::u8(), {cols}, 9, 100, 156);
  std::vector<runtime::NDArray> args = {to_ndarray(xv, {rows, cols}), to_ndarray(sv, {cols}), to_ndarray(zv, {cols}),
                                        runtime::NDArray::zeros({rows, cols}, to_dl(DataType::u8())),
                                        runtime::NDArray::zeros({rows, cols}, to_dl(f32))};
  test::run_on_device(*dev, m, args);
  HostTensor want_q = quantize_ref(xv, sv, &zv, 1, DataType::u8());
  CHECK(mismatch(from_ndarray(args[3], DataType::u8(), {rows, cols}), want_q, 0, 0) == "");
  CHECK(mismatch(from_ndarray(args[4], f32, {rows, cols}), dequantize_ref(want_q, sv, &zv, 1), 0, 0) == "");
}

TEST_CASE("quantize and dequantize compile through NVRTC for sm_80", "[ops_quantize][gpu][nvrtc]") {
  if (!codegen::cuda_codegen_available()) {
    WARN("skipped: kiln was built without the CUDA toolkit's NVRTC");
    return;
  }
  te::Tensor x = te::placeholder({64, 48}, f16, "x");
  te::Tensor scale = te::placeholder({1}, f16, "scale");
  te::Tensor q = te::ops::quantize(x, scale, te::Tensor(), 0, DataType::i16());
  te::Tensor y = te::ops::dequantize(q, scale, te::Tensor(), 0);
  Target cuda = Target::parse("cuda -arch=sm_80");
  schedule::Schedule s = schedule::create({y});
  schedule::Config cfg;
  schedule::schedule_injective_gpu(s, {y}, cuda, cfg);
  codegen::GpuModule m = kiln::build_gpu({kiln::loop_ir(s, {x, scale, y}, "f")}, cuda);
  REQUIRE(!m.images.empty());
  CHECK(m.images[0].bytes.rfind("\x7f" "ELF", 0) == 0);
}

TEST_CASE("quantize / dequantize type relations: results, and each error with its message", "[ops_quantize]") {
  using Catch::Contains;
  const DataType i8 = DataType::i8(), u8 = DataType::u8();
  CHECK(type_of("quantize", {tt(f32, {2, 3}), tt(f32, {})}, q_attrs(1, u8)).str() == "uint8[2,3]");
  CHECK(type_of("quantize", {tt(f16, {2, 3}), tt(f16, {3}), tt(i8, {3})}, q_attrs(1, i8)).str() == "int8[2,3]");
  CHECK(type_of("dequantize", {tt(i8, {2, 3}), tt(f16, {2}), tt(i8, {})}, Attrs().set_int("axis", 0)).str() ==
        "float16[2,3]");
  CHECK(type_of("dequantize", {tt(DataType::i32(), {5}), tt(f32, {})}, Attrs().set_int("axis", 0)).str() ==
        "float32[5]");

  REQUIRE_THROWS_WITH(type_of("quantize", {tt(f32, {2, 3}), tt(f32, {})}, q_attrs(1, DataType::i32())),
                      Contains("quantize") && Contains("out_dtype must be int8, uint8, int16 or uint16, got int32"));
  REQUIRE_THROWS_WITH(type_of("quantize", {tt(DataType::i32(), {2, 3}), tt(DataType::i32(), {})}, q_attrs(1, u8)),
                      Contains("input must be floating-point, got int32"));
  REQUIRE_THROWS_WITH(type_of("quantize", {tt(f32, {2, 3}), tt(f16, {})}, q_attrs(1, u8)),
                      Contains("scale must have the input's type float32, got float16"));
  REQUIRE_THROWS_WITH(type_of("quantize", {tt(f32, {2, 3}), tt(f32, {}), tt(i8, {})}, q_attrs(1, u8)),
                      Contains("zero point must be uint8, got int8"));
  REQUIRE_THROWS_WITH(type_of("quantize", {tt(f32, {2, 3}), tt(f32, {2})}, q_attrs(1, u8)),
                      Contains("scale [2] must be a scalar (per tensor) or [3] (per axis 1 of input [2,3])"));
  REQUIRE_THROWS_WITH(type_of("quantize", {tt(f32, {2, 3}), tt(f32, {}), tt(u8, {2, 3})}, q_attrs(1, u8)),
                      Contains("zero point [2,3] must be a scalar (per tensor) or [3]"));
  REQUIRE_THROWS_WITH(type_of("quantize", {tt(f32, {2, 3}), tt(f32, {3})}, q_attrs(2, u8)),
                      Contains("axis 2 is out of range for input [2,3] (per-axis scale [3])"));
  REQUIRE_THROWS_WITH(type_of("dequantize", {tt(f32, {4}), tt(f32, {})}, Attrs().set_int("axis", 0)),
                      Contains("dequantize") && Contains("input must be int8, uint8, int16, uint16 or int32, got float32"));
  REQUIRE_THROWS_WITH(type_of("dequantize", {tt(DataType::i64(), {4}), tt(f32, {})}, Attrs().set_int("axis", 0)),
                      Contains("got int64"));
  REQUIRE_THROWS_WITH(type_of("dequantize", {tt(i8, {4}), tt(i8, {})}, Attrs().set_int("axis", 0)),
                      Contains("scale must be floating-point, got int8"));
  REQUIRE_THROWS_WITH(type_of("dequantize", {tt(i8, {4}), tt(f32, {}), tt(u8, {})}, Attrs().set_int("axis", 0)),
                      Contains("zero point must be int8, got uint8"));
}

TEST_CASE("quantize / dequantize te computes refuse bad operands by name", "[ops_quantize]") {
  using Catch::Contains;
  te::Tensor x = te::placeholder({2, 3}, f32, "x"), s = te::placeholder({1}, f32, "s");
  te::Tensor xi = te::placeholder({2, 3}, DataType::i8(), "xi");
  REQUIRE_THROWS_WITH(te::ops::quantize(x, s, te::Tensor(), 0, DataType::i32()),
                      Contains("quantized type must be int8, uint8, int16 or uint16, got int32"));
  REQUIRE_THROWS_WITH(te::ops::quantize(xi, s, te::Tensor(), 0, DataType::i8()),
                      Contains("quantize: input must be floating-point, got int8"));
  REQUIRE_THROWS_WITH(te::ops::quantize(x, te::placeholder({1}, f16, "h"), te::Tensor(), 0, DataType::i8()),
                      Contains("quantize: scale must have the input's type float32, got float16"));
  REQUIRE_THROWS_WITH(te::ops::quantize(x, s, te::placeholder({1}, DataType::u8(), "z"), 0, DataType::i8()),
                      Contains("quantize: zero point must have the output type int8, got uint8"));
  REQUIRE_THROWS_WITH(te::ops::quantize(x, te::placeholder({2}, f32, "s2"), te::Tensor(), 1, DataType::i8()),
                      Contains("quantize: scale must have one element (per tensor) or 3 (per axis 1), got 2"));
  REQUIRE_THROWS_WITH(te::ops::quantize(x, te::placeholder({3}, f32, "s3"), te::Tensor(), 2, DataType::i8()),
                      Contains("quantize: axis 2 is out of range for rank 2"));
  REQUIRE_THROWS_WITH(te::ops::dequantize(x, s, te::Tensor(), 0),
                      Contains("dequantize: input must be int8, uint8, int16, uint16 or int32, got float32"));
  REQUIRE_THROWS_WITH(te::ops::dequantize(xi, te::placeholder({1}, DataType::i32(), "si"), te::Tensor(), 0),
                      Contains("dequantize: scale must be floating-point, got int32"));
  REQUIRE_THROWS_WITH(te::ops::dequantize(xi, s, te::placeholder({1}, DataType::u8(), "z"), 0),
                      Contains("dequantize: zero point must have the input's type int8, got uint8"));
  REQUIRE_THROWS_WITH(te::ops::dequantize(xi, s, te::placeholder({2}, DataType::i8(), "z2"), 1),
                      Contains("dequantize: zero point must have one element (per tensor) or 3 (per axis 1), got 2"));
}
