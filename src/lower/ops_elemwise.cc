// Lowerings of the elementwise and broadcast ops: unary math and activations, cast, clip,
// binary arithmetic and comparisons with numpy broadcasting, where, prelu, bias_add, full.
#include <cmath>
#include <map>

#include "kiln/support/error.h"
#include "kiln/te/ops/elemwise.h"
#include "kiln/te/ops/transform.h"
#include "op_table.h"

namespace kiln::lower::detail {

namespace {

using ir::DataType;
using ir::Expr;
using relay::Attrs;

Expr k(const Expr& like, double v) { return ir::make_const(like.dtype(), v); }
Expr intr(const char* fn, const Expr& x) { return ir::make_intrinsic(fn, {x}); }

// A unary op's scalar function, applied in compute_type (float16 -> float32).
using UnaryFn = std::function<Expr(const Expr& x, const Attrs& a)>;

UnaryFn intrinsic(const char* fn) {
  return [fn](const Expr& x, const Attrs&) { return intr(fn, x); };
}
UnaryFn of(Expr (*f)(const Expr&)) {
  return [f](const Expr& x, const Attrs&) { return f(x); };
}

Expr gelu(const Expr& x, const Attrs& a) {
  if (a.get_str("approximate", "none") == "tanh") {
    Expr inner = k(x, std::sqrt(2.0 / M_PI)) * (x + k(x, 0.044715) * x * x * x);
    return k(x, 0.5) * x * (k(x, 1) + intr("tanh", inner));
  }
  return k(x, 0.5) * x * (k(x, 1) + intr("erf", x * k(x, M_SQRT1_2)));
}

// clip bounds for integer types: a bound beyond the type's range clamps nothing (and must not be
// converted, e.g. 2^63 to int64).
Expr clip(const Expr& x, const Attrs& a) {
  double lo = a.get_float("a_min"), hi = a.get_float("a_max");
  DataType t = x.dtype();
  if (t.is_floating()) return ir::min(ir::max(x, k(x, lo)), k(x, hi));
  double tmin = static_cast<double>(*ir::as_const_int(ir::min_value(t)));
  double tmax = t.is_uint() && t.bits == 64 ? 18446744073709551615.0 : static_cast<double>(*ir::as_const_int(ir::max_value(t)));
  Expr y = x;
  if (lo > tmin) y = ir::max(y, ir::make_int(t, static_cast<int64_t>(std::ceil(std::min(lo, tmax)))));
  if (hi < tmax) y = ir::min(y, ir::make_int(t, static_cast<int64_t>(std::floor(std::max(hi, tmin)))));
  return y;
}

const std::map<std::string, UnaryFn>& unary_ops() {
  static const std::map<std::string, UnaryFn> m = {
      {"exp", intrinsic("exp")},
      {"log", intrinsic("log")},
      {"sqrt", intrinsic("sqrt")},
      {"rsqrt", intrinsic("rsqrt")},
      {"erf", intrinsic("erf")},
      {"tanh", intrinsic("tanh")},
      {"sigmoid", intrinsic("sigmoid")},
      {"sin", intrinsic("sin")},
      {"cos", intrinsic("cos")},
      {"round", intrinsic("round")},
      {"floor", intrinsic("floor")},
      {"ceil", intrinsic("ceil")},
      {"reciprocal", [](const Expr& x, const Attrs&) { return k(x, 1) / x; }},
      {"tan", of(math::tan)},
      {"asin", of(math::asin)},
      {"acos", of(math::acos)},
      {"atan", of(math::atan)},
      {"sinh", of(math::sinh)},
      {"cosh", of(math::cosh)},
      {"asinh", of(math::asinh)},
      {"acosh", of(math::acosh)},
      {"atanh", of(math::atanh)},
      {"abs", [](const Expr& x, const Attrs&) { return x.dtype().is_uint() ? x : intr("fabs", x); }},
      {"neg", [](const Expr& x, const Attrs&) { return k(x, 0) - x; }},
      {"sign", of(math::sign)},
      {"identity", [](const Expr& x, const Attrs&) { return x; }},
      {"nn.dropout", [](const Expr& x, const Attrs&) { return x; }},
      {"logical_not", [](const Expr& x, const Attrs&) { return ir::logical_not(x); }},
      {"bitwise_not", of(math::bitwise_not)},
      {"isnan", [](const Expr& x, const Attrs&) { return ir::make_intrinsic(DataType::boolean(), "isnan", {x}); }},
      {"isinf",
       [](const Expr& x, const Attrs& a) {
         Expr r = ir::make_int(DataType::boolean(), 0);
         if (a.get_int("detect_positive", 1)) r = r || ir::eq(x, k(x, INFINITY));
         if (a.get_int("detect_negative", 1)) r = r || ir::eq(x, k(x, -INFINITY));
         return r;
       }},
      {"clip", clip},
      {"nn.relu", [](const Expr& x, const Attrs&) { return ir::max(x, k(x, 0)); }},
      {"nn.leaky_relu",
       [](const Expr& x, const Attrs& a) { return ir::select(x < k(x, 0), x * k(x, a.get_float("alpha")), x); }},
      {"nn.elu",
       [](const Expr& x, const Attrs& a) {
         return ir::select(x > k(x, 0), x, k(x, a.get_float("alpha")) * math::expm1(x));
       }},
      {"nn.selu",
       [](const Expr& x, const Attrs& a) {
         Expr g = k(x, a.get_float("gamma"));
         return ir::select(x > k(x, 0), g * x, g * k(x, a.get_float("alpha")) * math::expm1(x));
       }},
      {"nn.celu",
       [](const Expr& x, const Attrs& a) {
         Expr alpha = k(x, a.get_float("alpha"));
         return ir::max(x, k(x, 0)) + ir::min(k(x, 0), alpha * math::expm1(x / alpha));
       }},
      {"nn.hard_sigmoid",
       [](const Expr& x, const Attrs& a) {
         Expr y = k(x, a.get_float("alpha")) * x + k(x, a.get_float("beta"));
         return ir::max(k(x, 0), ir::min(k(x, 1), y));
       }},
      {"nn.hard_swish",
       [](const Expr& x, const Attrs&) { return x * ir::max(k(x, 0), ir::min(k(x, 1), x / k(x, 6) + k(x, 0.5))); }},
      {"nn.thresholded_relu",
       [](const Expr& x, const Attrs& a) { return ir::select(x > k(x, a.get_float("alpha")), x, k(x, 0)); }},
      {"nn.shrink",
       [](const Expr& x, const Attrs& a) {
         double l = a.get_float("lambd"), b = a.get_float("bias");
         return ir::select(x < k(x, -l), x + k(x, b), ir::select(x > k(x, l), x - k(x, b), k(x, 0)));
       }},
      {"nn.gelu", gelu},
      {"nn.mish", [](const Expr& x, const Attrs&) { return x * intr("tanh", math::softplus(x)); }},
      {"nn.softplus", of(math::softplus)},
      {"nn.softsign", [](const Expr& x, const Attrs&) { return x / (k(x, 1) + intr("fabs", x)); }},
  };
  return m;
}

// A binary op's scalar function, applied in compute_type.
using BinaryFn = std::function<Expr(const Expr& a, const Expr& b, const Attrs& attrs)>;

// Integer division by zero would trap (SIGFPE): the divisor 0 becomes 1 (ONNX leaves the
// result undefined; kiln must not crash).
Expr safe_divisor(const Expr& b) {
  if (b.dtype().is_floating()) return b;
  return ir::select(ir::eq(b, k(b, 0)), k(b, 1), b);
}

Expr power(const Expr& a, const Expr& b) {
  DataType t = a.dtype();
  if (t.is_floating()) return ir::make_intrinsic("pow", {a, ir::cast(t, b)});
  if (b.dtype().is_floating()) {
    Expr p = ir::make_intrinsic("pow", {ir::cast(DataType::f64(), a), ir::cast(DataType::f64(), b)});
    return ir::cast(t, p);
  }
  return math::int_pow(a, b);
}

const std::map<std::string, BinaryFn>& binary_ops() {
  using BF = math::BitOp;
  static const std::map<std::string, BinaryFn> m = {
      {"add", [](const Expr& a, const Expr& b, const Attrs&) { return a + b; }},
      {"subtract", [](const Expr& a, const Expr& b, const Attrs&) { return a - b; }},
      {"multiply", [](const Expr& a, const Expr& b, const Attrs&) { return a * b; }},
      {"divide",
       [](const Expr& a, const Expr& b, const Attrs&) {
         return a.dtype().is_floating() ? a / b : ir::truncdiv(a, safe_divisor(b));
       }},
      {"mod",
       [](const Expr& a, const Expr& b, const Attrs& at) { return math::mod(a, safe_divisor(b), at.get_int("fmod", 0) != 0); }},
      {"maximum", [](const Expr& a, const Expr& b, const Attrs&) { return ir::max(a, b); }},
      {"minimum", [](const Expr& a, const Expr& b, const Attrs&) { return ir::min(a, b); }},
      {"equal", [](const Expr& a, const Expr& b, const Attrs&) { return ir::eq(a, b); }},
      {"less", [](const Expr& a, const Expr& b, const Attrs&) { return ir::lt(a, b); }},
      {"less_equal", [](const Expr& a, const Expr& b, const Attrs&) { return ir::le(a, b); }},
      {"greater", [](const Expr& a, const Expr& b, const Attrs&) { return ir::gt(a, b); }},
      {"greater_equal", [](const Expr& a, const Expr& b, const Attrs&) { return ir::ge(a, b); }},
      {"logical_and", [](const Expr& a, const Expr& b, const Attrs&) { return ir::logical_and(a, b); }},
      {"logical_or", [](const Expr& a, const Expr& b, const Attrs&) { return ir::logical_or(a, b); }},
      {"logical_xor", [](const Expr& a, const Expr& b, const Attrs&) { return ir::ne(a, b); }},
      {"bitwise_and", [](const Expr& a, const Expr& b, const Attrs&) { return math::bitwise(BF::And, a, b); }},
      {"bitwise_or", [](const Expr& a, const Expr& b, const Attrs&) { return math::bitwise(BF::Or, a, b); }},
      {"bitwise_xor", [](const Expr& a, const Expr& b, const Attrs&) { return math::bitwise(BF::Xor, a, b); }},
      {"left_shift", [](const Expr& a, const Expr& b, const Attrs&) { return math::shift_left(a, b); }},
      {"right_shift", [](const Expr& a, const Expr& b, const Attrs&) { return math::shift_right(a, b); }},
      {"power", [](const Expr& a, const Expr& b, const Attrs&) { return power(a, b); }},
      {"nn.prelu", [](const Expr& x, const Expr& s, const Attrs&) { return ir::select(x < k(x, 0), x * s, x); }},
  };
  return m;
}

}  // namespace

void add_elemwise_lowerings() {
  for (const auto& [name, fn] : unary_ops()) {
    set_lowering(name, [name = name, fn = fn](const std::vector<Tensor>& in, const Attrs& attrs,
                                              const relay::Type& out) -> std::vector<Tensor> {
      DataType t = out_dtype(out);
      ScalarFn f = [&](const std::vector<Expr>& v) { return fn(v[0], attrs); };
      return {elementwise(in, te_shape(out), [&](const std::vector<Expr>& v) { return apply_in_compute_type(f, v, t); },
                          name)};
    });
  }
  for (const auto& [name, fn] : binary_ops()) {
    set_lowering(name, [name = name, fn = fn](const std::vector<Tensor>& in, const Attrs& attrs,
                                              const relay::Type& out) -> std::vector<Tensor> {
      DataType t = out_dtype(out);
      ScalarFn f = [&](const std::vector<Expr>& v) { return fn(v[0], v[1], attrs); };
      return {elementwise(in, te_shape(out), [&](const std::vector<Expr>& v) { return apply_in_compute_type(f, v, t); },
                          name)};
    });
  }
  set_lowering("cast", [](const std::vector<Tensor>& in, const Attrs&, const relay::Type& out) -> std::vector<Tensor> {
    DataType t = out_dtype(out);
    return {elementwise(in, te_shape(out), [&](const std::vector<Expr>& v) { return ir::cast(t, v[0]); }, "cast")};
  });
  // reinterpret: an intrinsic the backends lower as a bit cast (LLVM bitcast of the storage forms).
  set_lowering("reinterpret", [](const std::vector<Tensor>& in, const Attrs&, const relay::Type& out) -> std::vector<Tensor> {
    DataType t = out_dtype(out);
    return {elementwise(in, te_shape(out), [&](const std::vector<Expr>& v) { return ir::make_intrinsic(t, "reinterpret", {v[0]}); },
                        "reinterpret")};
  });
  set_lowering("where", [](const std::vector<Tensor>& in, const Attrs&, const relay::Type& out) -> std::vector<Tensor> {
    return {elementwise(in, te_shape(out), [](const std::vector<Expr>& v) { return ir::select(v[0], v[1], v[2]); },
                        "where")};
  });
  set_lowering("nn.bias_add",
               [](const std::vector<Tensor>& in, const Attrs& attrs, const relay::Type& out) -> std::vector<Tensor> {
                 const Tensor &x = in[0], &b = in[1];
                 int64_t axis = attrs.get_int("axis");
                 KILN_USER_CHECK(axis >= 0 && axis < x.ndim()) << "axis " << axis << " out of range";
                 DataType t = x.dtype();
                 return {te::compute(x.shape(), [&](const std::vector<ir::Var>& idx) {
                   ScalarFn f = [](const std::vector<Expr>& v) { return v[0] + v[1]; };
                   return apply_in_compute_type(f, {x(std::vector<Expr>(idx.begin(), idx.end())), b(idx[axis])}, t);
                 }, "bias_add")};
               });
  set_lowering("full", [](const std::vector<Tensor>&, const Attrs& attrs, const relay::Type& out) -> std::vector<Tensor> {
    const relay::HostTensor& v = attrs.get_tensor("value");
    DataType t = out_dtype(out);
    Expr value = t.is_floating() ? ir::make_float(t, v.double_at(0)) : ir::make_int(t, v.int64_at(0));
    return {full(te_shape(out), value, "full")};
  });
}

}  // namespace kiln::lower::detail
