// The constant evaluator: plain loops over host tensors, written for clarity, not speed (it runs
// on shape vectors and small constants while importing).
#include "kiln/relay/evaluate.h"

#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "kiln/relay/op.h"
#include "kiln/support/error.h"

namespace kiln::relay {

namespace {

// ---- indexing -------------------------------------------------------------------------------

Shape strides_of(const Shape& s) {
  Shape st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// For every element of `out`, the flat index of the element of `in` (numpy-broadcast to out).
std::vector<int64_t> broadcast_map(const Shape& out, const Shape& in) {
  Shape ost = strides_of(out), ist = strides_of(in);
  size_t off = out.size() - in.size();
  std::vector<int64_t> map(static_cast<size_t>(num_elements(out)));
  for (int64_t f = 0; f < static_cast<int64_t>(map.size()); ++f) {
    int64_t src = 0;
    for (size_t d = off; d < out.size(); ++d) {
      int64_t c = (f / ost[d]) % out[d];
      if (in[d - off] != 1) src += c * ist[d - off];
    }
    map[f] = src;
  }
  return map;
}

// Gathers elements (raw bytes) of `in` at `src` positions into a tensor of `shape`.
HostTensor gather_bytes(const HostTensor& in, const Shape& shape, const std::vector<int64_t>& src) {
  size_t eb = static_cast<size_t>(in.dtype().bytes());
  std::vector<uint8_t> bytes(src.size() * eb);
  for (size_t i = 0; i < src.size(); ++i) std::memcpy(bytes.data() + i * eb, in.data() + src[i] * eb, eb);
  return HostTensor(in.dtype(), shape, std::move(bytes));
}

// Calls f(out_flat, coords) for every output element.
void for_each_index(const Shape& shape, const std::function<void(int64_t, const Shape&)>& f) {
  int64_t n = num_elements(shape);
  Shape c(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, c);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++c[d] < shape[d]) break;
      c[d] = 0;
    }
  }
}

// ---- elementwise math -----------------------------------------------------------------------

double round_half_even(double v) { return std::nearbyint(v); }  // default FP mode: to nearest even

const std::map<std::string, double (*)(double)>& float_unary() {
  static const std::map<std::string, double (*)(double)> m = {
      {"exp", [](double x) { return std::exp(x); }},      {"log", [](double x) { return std::log(x); }},
      {"sqrt", [](double x) { return std::sqrt(x); }},    {"rsqrt", [](double x) { return 1 / std::sqrt(x); }},
      {"erf", [](double x) { return std::erf(x); }},      {"tanh", [](double x) { return std::tanh(x); }},
      {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"reciprocal", [](double x) { return 1 / x; }},     {"sin", [](double x) { return std::sin(x); }},
      {"cos", [](double x) { return std::cos(x); }},      {"tan", [](double x) { return std::tan(x); }},
      {"floor", [](double x) { return std::floor(x); }},  {"ceil", [](double x) { return std::ceil(x); }},
      {"round", round_half_even},                         {"abs", [](double x) { return std::fabs(x); }},
      {"neg", [](double x) { return -x; }},               {"sign", [](double x) { return double((x > 0) - (x < 0)); }},
      {"identity", [](double x) { return x; }},           {"nn.dropout", [](double x) { return x; }},
      {"nn.relu", [](double x) { return x > 0 ? x : 0.0; }},
  };
  return m;
}

const std::map<std::string, int64_t (*)(int64_t)>& int_unary() {
  static const std::map<std::string, int64_t (*)(int64_t)> m = {
      {"abs", [](int64_t x) { return x < 0 ? -x : x; }},  {"neg", [](int64_t x) { return -x; }},
      {"sign", [](int64_t x) { return int64_t((x > 0) - (x < 0)); }},
      {"identity", [](int64_t x) { return x; }},          {"nn.dropout", [](int64_t x) { return x; }},
      {"nn.relu", [](int64_t x) { return x > 0 ? x : 0; }},
      {"logical_not", [](int64_t x) { return int64_t(x == 0); }},
      {"bitwise_not", [](int64_t x) { return ~x; }},
  };
  return m;
}

int64_t int_binary(const std::string& op, int64_t a, int64_t b, const Attrs& attrs) {
  if (op == "add") return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  if (op == "subtract") return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  if (op == "multiply") return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  if (op == "divide" || op == "mod") {
    KILN_USER_CHECK(b != 0) << "integer division by zero in a constant expression";
    if (op == "divide") return a / b;
    int64_t r = a % b;
    if (attrs.get_int("fmod", 0) == 0 && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
  if (op == "maximum") return std::max(a, b);
  if (op == "minimum") return std::min(a, b);
  if (op == "power") {
    int64_t r = 1;
    for (int64_t i = 0; i < b; ++i) r *= a;
    return r;
  }
  if (op == "equal") return a == b;
  if (op == "less") return a < b;
  if (op == "less_equal") return a <= b;
  if (op == "greater") return a > b;
  if (op == "greater_equal") return a >= b;
  if (op == "logical_and") return (a != 0) && (b != 0);
  if (op == "logical_or") return (a != 0) || (b != 0);
  if (op == "logical_xor") return (a != 0) != (b != 0);
  if (op == "bitwise_and") return a & b;
  if (op == "bitwise_or") return a | b;
  if (op == "bitwise_xor") return a ^ b;
  if (op == "left_shift") return static_cast<int64_t>(static_cast<uint64_t>(a) << b);
  if (op == "right_shift") return static_cast<int64_t>(static_cast<uint64_t>(a) >> b);
  KILN_CHECK(false) << "no integer evaluation of " << op;
  return 0;
}

double float_binary(const std::string& op, double a, double b, const Attrs& attrs) {
  if (op == "add") return a + b;
  if (op == "subtract") return a - b;
  if (op == "multiply") return a * b;
  if (op == "divide") return a / b;
  if (op == "mod") {
    double r = std::fmod(a, b);
    if (attrs.get_int("fmod", 0) == 0 && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
  if (op == "maximum") return std::max(a, b);
  if (op == "minimum") return std::min(a, b);
  if (op == "power") return std::pow(a, b);
  if (op == "equal") return a == b;
  if (op == "less") return a < b;
  if (op == "less_equal") return a <= b;
  if (op == "greater") return a > b;
  if (op == "greater_equal") return a >= b;
  KILN_CHECK(false) << "no float evaluation of " << op;
  return 0;
}

const std::vector<std::string>& binary_ops() {
  static const std::vector<std::string> ops = {
      "add", "subtract", "multiply", "divide", "mod", "maximum", "minimum", "power", "equal", "less", "less_equal",
      "greater", "greater_equal", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
      "bitwise_xor", "left_shift", "right_shift"};
  return ops;
}

bool is_binary(const std::string& op) {
  for (const auto& b : binary_ops())
    if (b == op) return true;
  return false;
}

HostTensor eval_binary(const CallNode& call, const HostTensor& a, const HostTensor& b, const TensorTypeNode& out) {
  auto ma = broadcast_map(out.shape, a.shape()), mb = broadcast_map(out.shape, b.shape());
  const std::string& op = call.op_name();
  // Integer math stays exact in int64 (shape arithmetic); floats go through double.
  if (!a.dtype().is_floating() && !(op == "power" && b.dtype().is_floating())) {
    auto va = a.to_int64s(), vb = b.to_int64s();
    std::vector<int64_t> r(ma.size());
    for (size_t i = 0; i < r.size(); ++i) r[i] = int_binary(op, va[ma[i]], vb[mb[i]], call.attrs);
    return HostTensor::from_int64s(out.dtype, out.shape, r);
  }
  auto va = a.to_doubles(), vb = b.to_doubles();
  std::vector<double> r(ma.size());
  for (size_t i = 0; i < r.size(); ++i) r[i] = float_binary(op, va[ma[i]], vb[mb[i]], call.attrs);
  return HostTensor::from_doubles(out.dtype, out.shape, r);
}

// ---- reductions -----------------------------------------------------------------------------

HostTensor eval_reduce(const CallNode& call, const HostTensor& x, const TensorTypeNode& out) {
  const auto& axes = call.attrs.get_ints("axes");
  const std::string& op = call.op_name();
  Shape in = x.shape(), kept = in;
  for (int64_t a : axes) kept[a] = 1;
  Shape kst = strides_of(kept);
  int64_t n_out = num_elements(kept);
  bool as_int = !x.dtype().is_floating();
  std::vector<double> acc(n_out, op == "prod" ? 1.0 : 0.0);
  std::vector<int64_t> iacc(n_out, op == "prod" ? 1 : 0);
  std::vector<bool> seen(n_out, false);
  auto vi = as_int ? x.to_int64s() : std::vector<int64_t>{};
  auto vf = as_int ? std::vector<double>{} : x.to_doubles();
  for_each_index(in, [&](int64_t f, const Shape& c) {
    int64_t o = 0;
    for (size_t d = 0; d < c.size(); ++d) o += (kept[d] == 1 ? 0 : c[d]) * kst[d];
    if (as_int) {
      int64_t v = vi[f];
      if (op == "sum" || op == "mean") iacc[o] += v;
      else if (op == "prod") iacc[o] *= v;
      else if (op == "max") iacc[o] = seen[o] ? std::max(iacc[o], v) : v;
      else iacc[o] = seen[o] ? std::min(iacc[o], v) : v;
    } else {
      double v = vf[f];
      if (op == "sum" || op == "mean") acc[o] += v;
      else if (op == "prod") acc[o] *= v;
      else if (op == "max") acc[o] = seen[o] ? std::max(acc[o], v) : v;
      else acc[o] = seen[o] ? std::min(acc[o], v) : v;
    }
    seen[o] = true;
  });
  // max/min over an empty set: the identity, as ONNX says (-inf / +inf, or the type's extreme
  // value for integers), not 0.
  if (op == "max" || op == "min") {
    DataType t = x.dtype();
    bool is_max = op == "max";
    int64_t lo = 0, hi = std::numeric_limits<int64_t>::max();
    if (!t.is_floating() && t.bits < 64) {
      lo = t.is_uint() || t.is_bool() ? 0 : -(int64_t{1} << (t.bits - 1));
      hi = t.is_uint() || t.is_bool() ? (int64_t{1} << t.bits) - 1 : (int64_t{1} << (t.bits - 1)) - 1;
    } else if (!t.is_floating()) {
      lo = t.is_uint() ? 0 : std::numeric_limits<int64_t>::min();
    }
    for (int64_t o = 0; o < n_out; ++o) {
      if (seen[o]) continue;
      acc[o] = is_max ? -INFINITY : INFINITY;
      iacc[o] = is_max ? lo : hi;
    }
  }
  int64_t count = num_elements(in) / std::max<int64_t>(n_out, 1);
  if (as_int) {
    if (op == "mean")
      for (auto& v : iacc) v = count ? v / count : 0;
    return HostTensor::from_int64s(out.dtype, out.shape, iacc);
  }
  if (op == "mean")
    for (auto& v : acc) v /= static_cast<double>(count);
  return HostTensor::from_doubles(out.dtype, out.shape, acc);
}

// ---- injective ops --------------------------------------------------------------------------

HostTensor eval_injective(const CallNode& call, const std::vector<HostTensor>& args, const TensorTypeNode& out) {
  const std::string& op = call.op_name();
  const Attrs& at = call.attrs;
  const HostTensor& x = args[0];
  if (op == "reshape") return x.reshaped(out.shape);
  if (op == "broadcast_to") return gather_bytes(x, out.shape, broadcast_map(out.shape, x.shape()));
  Shape ist = strides_of(x.shape());
  std::vector<int64_t> src(static_cast<size_t>(num_elements(out.shape)));
  if (op == "transpose") {
    const auto& axes = at.get_ints("axes");
    for_each_index(out.shape, [&](int64_t f, const Shape& c) {
      int64_t s = 0;
      for (size_t d = 0; d < c.size(); ++d) s += c[d] * ist[axes[d]];
      src[f] = s;
    });
  } else if (op == "strided_slice") {
    const auto& b = at.get_ints("begin");
    const auto& st = at.get_ints("strides");
    for_each_index(out.shape, [&](int64_t f, const Shape& c) {
      int64_t s = 0;
      for (size_t d = 0; d < c.size(); ++d) s += (b[d] + c[d] * st[d]) * ist[d];
      src[f] = s;
    });
  } else if (op == "tile") {
    for_each_index(out.shape, [&](int64_t f, const Shape& c) {
      int64_t s = 0;
      for (size_t d = 0; d < c.size(); ++d) s += (c[d] % x.shape()[d]) * ist[d];
      src[f] = s;
    });
  } else if (op == "take") {
    int64_t axis = at.get_int("axis");
    auto idx = args[1].to_int64s();
    int64_t q = args[1].rank(), dim = x.shape()[axis];
    Shape idx_st = strides_of(args[1].shape());
    for_each_index(out.shape, [&](int64_t f, const Shape& c) {
      int64_t flat_idx = 0;
      for (int64_t k = 0; k < q; ++k) flat_idx += c[axis + k] * idx_st[k];
      int64_t i = idx[flat_idx];
      KILN_USER_CHECK(i >= -dim && i < dim) << "index " << i << " out of range for axis " << axis << " of size " << dim;
      if (i < 0) i += dim;
      int64_t s = i * ist[axis];
      for (int64_t d = 0; d < axis; ++d) s += c[d] * ist[d];
      for (int64_t d = axis + 1; d < x.rank(); ++d) s += c[d + q - 1] * ist[d];
      src[f] = s;
    });
  } else if (op == "concatenate") {
    // Concatenate copies each input's rows into place instead of building an index map.
    int64_t axis = at.get_int("axis");
    size_t eb = static_cast<size_t>(out.dtype.bytes());
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out.shape[d];
    std::vector<uint8_t> bytes(static_cast<size_t>(num_elements(out.shape)) * eb);
    int64_t out_row = num_elements(out.shape) / std::max<int64_t>(outer, 1), offset = 0;
    for (const HostTensor& a : args) {
      int64_t row = outer ? a.numel() / outer : 0;
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(bytes.data() + (o * out_row + offset) * eb, a.data() + o * row * eb, row * eb);
      offset += row;
    }
    return HostTensor(out.dtype, out.shape, std::move(bytes));
  } else {
    KILN_CHECK(false) << "no injective evaluation of " << op;
  }
  return gather_bytes(x, out.shape, src);
}

bool is_injective(const std::string& op) {
  return op == "reshape" || op == "broadcast_to" || op == "transpose" || op == "strided_slice" || op == "tile" ||
         op == "take" || op == "concatenate";
}

bool is_reduce(const std::string& op) {
  return op == "sum" || op == "mean" || op == "prod" || op == "max" || op == "min";
}

// dequantize(x, scale[, zero_point]) of an int32 x (a quantized model's bias) with a float32 scale
// as te::ops::dequantize computes it: the difference exact in 64 bits, converted to float32 (one
// rounding), times the scale in float32. A scale and zero point of one element each (per tensor)
// or of x's extent along `axis`. 8-bit weights stay dequantize calls: realize_integer_ops turns
// those around a conv or dense into an integer kernel.
std::optional<HostTensor> eval_dequantize(const CallNode& call, const std::vector<HostTensor>& args,
                                          const TensorTypeNode& out) {
  if (out.dtype != DataType::f32() || args[0].dtype() != DataType::i32()) return std::nullopt;
  const HostTensor& x = args[0];
  const std::vector<int64_t> v = x.to_int64s();
  const std::vector<double> scale = args[1].to_doubles();
  const std::vector<int64_t> zp = args.size() > 2 ? args[2].to_int64s() : std::vector<int64_t>{0};
  const std::vector<int64_t>& shape = x.shape();
  const int64_t axis = call.attrs.get_int("axis", 1);
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t extent = static_cast<size_t>(axis) < shape.size() ? shape[static_cast<size_t>(axis)] : 1;
  auto at = [&](const auto& param, int64_t i) { return param.size() == 1 ? param[0] : param[(i / inner) % extent]; };
  std::vector<double> y(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t k = static_cast<int64_t>(i);
    y[i] = static_cast<float>(v[i] - at(zp, k)) * static_cast<float>(at(scale, k));
  }
  return HostTensor::from_doubles(out.dtype, out.shape, y);
}

}  // namespace

bool can_evaluate(const OpDef& op) {
  const std::string& n = op.name;
  return float_unary().count(n) || int_unary().count(n) || is_binary(n) || is_injective(n) || is_reduce(n) ||
         n == "cast" || n == "where" || n == "full" || n == "clip" || n == "dequantize";
}

std::optional<HostTensor> evaluate_call(const CallNode& call, const std::vector<HostTensor>& args) {
  if (!can_evaluate(*call.op)) return std::nullopt;
  const auto* out = call.type.as<TensorTypeNode>();
  KILN_CHECK(out != nullptr) << "evaluate_call on a call of type " << call.type.str();
  KILN_CHECK(args.size() == call.args.size()) << "evaluate_call: " << args.size() << " values for "
                                              << call.args.size() << " arguments";
  const std::string& op = call.op_name();
  if (op == "full") {
    const HostTensor& v = call.attrs.get_tensor("value");
    return gather_bytes(v.reshaped({}), out->shape, std::vector<int64_t>(num_elements(out->shape), 0));
  }
  const HostTensor& x = args[0];
  if (op == "cast") {
    if (x.dtype().is_floating() || out->dtype.is_floating())
      return HostTensor::from_doubles(out->dtype, out->shape, x.to_doubles());
    return HostTensor::from_int64s(out->dtype, out->shape, x.to_int64s());
  }
  if (is_binary(op)) return eval_binary(call, x, args[1], *out);
  if (is_injective(op)) return eval_injective(call, args, *out);
  if (is_reduce(op)) return eval_reduce(call, x, *out);
  if (op == "where") {
    auto mc = broadcast_map(out->shape, x.shape()), mx = broadcast_map(out->shape, args[1].shape()),
         my = broadcast_map(out->shape, args[2].shape());
    auto c = x.to_int64s();
    size_t eb = static_cast<size_t>(out->dtype.bytes());
    std::vector<uint8_t> bytes(mc.size() * eb);
    for (size_t i = 0; i < mc.size(); ++i) {
      const HostTensor& from = c[mc[i]] ? args[1] : args[2];
      std::memcpy(bytes.data() + i * eb, from.data() + (c[mc[i]] ? mx[i] : my[i]) * eb, eb);
    }
    return HostTensor(out->dtype, out->shape, std::move(bytes));
  }
  if (op == "dequantize") return eval_dequantize(call, args, *out);
  if (op == "clip") {
    double lo = call.attrs.get_float("a_min"), hi = call.attrs.get_float("a_max");
    if (x.dtype().is_floating()) {
      auto v = x.to_doubles();
      for (auto& e : v) e = std::min(std::max(e, lo), hi);
      return HostTensor::from_doubles(out->dtype, out->shape, v);
    }
    // Integer bounds compare as integers (a double bound of 2^63 must not be cast back).
    int64_t ilo = lo <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(std::ceil(lo));
    int64_t ihi = hi >= 9.2e18 ? INT64_MAX : static_cast<int64_t>(std::floor(hi));
    auto v = x.to_int64s();
    for (auto& e : v) e = std::min(std::max(e, ilo), ihi);
    return HostTensor::from_int64s(out->dtype, out->shape, v);
  }
  // Unary math: exact on integers where the op has an integer form.
  if (!x.dtype().is_floating() && int_unary().count(op)) {
    auto v = x.to_int64s();
    auto f = int_unary().at(op);
    for (auto& e : v) e = f(e);
    return HostTensor::from_int64s(out->dtype, out->shape, v);
  }
  if (!float_unary().count(op)) return std::nullopt;
  auto v = x.to_doubles();
  auto f = float_unary().at(op);
  for (auto& e : v) e = f(e);
  return HostTensor::from_doubles(out->dtype, out->shape, v);
}

}  // namespace kiln::relay
