// Elementwise ONNX ops: unary math, activations, binary math with broadcasting, logic, casts.
#include <cmath>

#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

Converter unary(const std::string& op) {
  return [op](NodeContext& c) -> std::vector<Expr> { return {c.call(op, {c.input(0)})}; };
}

// Before opset 7, B broadcasts to A only as the broadcast/axis attributes say, and PRelu's slope
// is per channel (convert_legacy.cc).
Converter binary(const std::string& op) {
  return [op](NodeContext& c) -> std::vector<Expr> {
    Expr b = c.input(1, "B");
    if (c.opset() < 7) b = op == "nn.prelu" ? legacy_prelu_slope(c) : legacy_binary_operand(c);
    return {c.call(op, {c.input(0, "A"), b})};
  };
}

// Sum / Max / Min / Mean of any number of inputs: a left fold of the binary op.
Converter variadic(const std::string& op, bool mean) {
  return [=](NodeContext& c) -> std::vector<Expr> {
    KILN_USER_CHECK(c.num_inputs() >= 1) << "needs at least one input";
    Expr acc = c.input(0);
    for (size_t i = 1; i < c.num_inputs(); ++i) acc = c.call(op, {acc, c.input(i)});
    if (c.num_inputs() == 1) acc = c.call("identity", {acc});
    if (mean && c.num_inputs() > 1)
      acc = c.call("divide", {acc, c.scalar(c.input_type(0).dtype, static_cast<double>(c.num_inputs()))});
    return {acc};
  };
}

// An activation with float attributes, each with its ONNX default.
Converter activation(const std::string& op, std::vector<std::pair<std::string, double>> defaults,
                     std::vector<std::string> relay_names = {}) {
  return [=](NodeContext& c) -> std::vector<Expr> {
    Attrs attrs;
    for (size_t i = 0; i < defaults.size(); ++i)
      attrs.set_float(relay_names.empty() ? defaults[i].first : relay_names[i], c.attr_float(defaults[i].first, defaults[i].second));
    return {c.call(op, {c.input(0)}, attrs)};
  };
}

std::vector<Expr> clip(NodeContext& c) {
  Expr x = c.input(0);
  DataType t = c.input_type(0).dtype;
  double lo = -INFINITY, hi = INFINITY;
  if (t.is_integer()) {  // "no bound" for integers is the type's range; a double holds it closely enough
    lo = t.is_uint() ? 0.0 : -std::ldexp(1.0, t.bits - 1);
    hi = std::ldexp(1.0, t.bits - (t.is_uint() ? 0 : 1)) - 1;
  }
  if (c.opset() < 11) {
    lo = c.attr_float("min", lo);
    hi = c.attr_float("max", hi);
    return {c.call("clip", {x}, Attrs().set_float("a_min", lo).set_float("a_max", hi))};
  }
  // Opset 11 moved the bounds to inputs; constant bounds become attributes, others max/min ops.
  std::vector<Expr> dynamic(3);
  for (size_t i = 1; i <= 2; ++i) {
    if (!c.has_input(i)) continue;
    if (auto v = c.const_input(i)) {
      KILN_USER_CHECK(v->numel() == 1) << (i == 1 ? "min" : "max") << " must be a scalar, got " << v->str(4);
      (i == 1 ? lo : hi) = v->double_at(0);
    } else {
      dynamic[i] = c.input(i);
    }
  }
  Expr y = c.call("clip", {x}, Attrs().set_float("a_min", lo).set_float("a_max", hi));
  if (dynamic[1].defined()) y = c.call("maximum", {y, dynamic[1]});
  if (dynamic[2].defined()) y = c.call("minimum", {y, dynamic[2]});
  return {y};
}

std::vector<Expr> cast(NodeContext& c) {
  DataType to = cast_target(c);
  return {c.call("cast", {c.input(0)}, Attrs().set_str("dtype", to.str()))};
}

std::vector<Expr> cast_like(NodeContext& c) {
  DataType to = c.input_type(1, "target_type").dtype;
  return {c.call("cast", {c.input(0)}, Attrs().set_str("dtype", to.str()))};
}

std::vector<Expr> dropout(NodeContext& c) {
  double ratio = c.attr_float("ratio", 0.5);
  if (c.opset() >= 12) {
    if (auto r = c.const_input(1)) ratio = r->double_at(0);
    if (c.has_input(2)) {
      HostTensor training = c.require_const(2, "training_mode");
      KILN_SUPPORTED(training.int64_at(0) == 0)
          << "training-mode dropout is random; kiln compiles inference graphs only";
    }
  }
  const TensorTypeNode& t = c.input_type(0);
  std::vector<Expr> outs = {c.call("nn.dropout", {c.input(0)}, Attrs().set_float("rate", ratio))};
  // In inference every element is kept: the mask is all true (ones of the input's type before
  // opset 10, which made it bool). Opsets 1 to 6's is_test is a hint that changes nothing here.
  DataType mask = c.opset() < 10 ? t.dtype : DataType::boolean();
  if (c.output_used(1))
    outs.push_back(c.call("full", {}, Attrs().set_ints("shape", t.shape).set_tensor("value", HostTensor::scalar(mask, 1))));
  return outs;
}

std::vector<Expr> bit_shift(NodeContext& c) {
  std::string dir = c.attr_str("direction", "");
  KILN_USER_CHECK(dir == "LEFT" || dir == "RIGHT") << "attribute 'direction' must be LEFT or RIGHT, got '" << dir << "'";
  return {c.call(dir == "LEFT" ? "left_shift" : "right_shift", {c.input(0), c.input(1)})};
}

std::vector<Expr> is_inf(NodeContext& c) {
  Attrs a;
  a.set_int("detect_negative", c.attr_int("detect_negative", 1)).set_int("detect_positive", c.attr_int("detect_positive", 1));
  return {c.call("isinf", {c.input(0)}, a)};
}

std::vector<Expr> swish(NodeContext& c) {
  // Swish (opset 24): x * sigmoid(alpha * x).
  Expr x = c.input(0);
  Expr ax = c.call("multiply", {x, c.scalar(c.input_type(0).dtype, c.attr_float("alpha", 1.0))});
  return {c.call("multiply", {x, c.call("sigmoid", {ax})})};
}

}  // namespace

void register_elemwise_converters(ConverterTable& t) {
  const std::pair<const char*, const char*> unaries[] = {
      {"Abs", "abs"},         {"Neg", "neg"},       {"Floor", "floor"},     {"Ceil", "ceil"},     {"Round", "round"},
      {"Sqrt", "sqrt"},       {"Exp", "exp"},       {"Log", "log"},         {"Erf", "erf"},       {"Tanh", "tanh"},
      {"Sigmoid", "sigmoid"}, {"Reciprocal", "reciprocal"}, {"Sin", "sin"}, {"Cos", "cos"},       {"Tan", "tan"},
      {"Asin", "asin"},       {"Acos", "acos"},     {"Atan", "atan"},       {"Sinh", "sinh"},     {"Cosh", "cosh"},
      {"Asinh", "asinh"},     {"Acosh", "acosh"},   {"Atanh", "atanh"},     {"Sign", "sign"},     {"Not", "logical_not"},
      {"BitwiseNot", "bitwise_not"}, {"IsNaN", "isnan"}, {"Identity", "identity"}, {"Relu", "nn.relu"},
      {"Softplus", "nn.softplus"}, {"Softsign", "nn.softsign"}, {"HardSwish", "nn.hard_swish"}, {"Mish", "nn.mish"}};
  for (const auto& [onnx, relay] : unaries) t[onnx] = unary(relay);
  const std::pair<const char*, const char*> binaries[] = {
      {"Add", "add"},         {"Sub", "subtract"},  {"Mul", "multiply"},   {"Div", "divide"},     {"Pow", "power"},
      {"Equal", "equal"},     {"Less", "less"},     {"LessOrEqual", "less_equal"}, {"Greater", "greater"},
      {"GreaterOrEqual", "greater_equal"}, {"And", "logical_and"}, {"Or", "logical_or"}, {"Xor", "logical_xor"},
      {"BitwiseAnd", "bitwise_and"}, {"BitwiseOr", "bitwise_or"}, {"BitwiseXor", "bitwise_xor"}, {"PRelu", "nn.prelu"}};
  for (const auto& [onnx, relay] : binaries) t[onnx] = binary(relay);
  t["Mod"] = [](NodeContext& c) -> std::vector<Expr> {
    return {c.call("mod", {c.input(0), c.input(1)}, Attrs().set_int("fmod", c.attr_int("fmod", 0)))};
  };
  t["Where"] = [](NodeContext& c) -> std::vector<Expr> {
    return {c.call("where", {c.input(0, "condition"), c.input(1, "X"), c.input(2, "Y")})};
  };
  t["Sum"] = variadic("add", false);
  t["Mean"] = variadic("add", true);
  t["Max"] = variadic("maximum", false);
  t["Min"] = variadic("minimum", false);
  t["LeakyRelu"] = activation("nn.leaky_relu", {{"alpha", 0.01}});
  t["Elu"] = activation("nn.elu", {{"alpha", 1.0}});
  t["Celu"] = activation("nn.celu", {{"alpha", 1.0}});
  t["Selu"] = activation("nn.selu", {{"alpha", 1.67326319217681884765625}, {"gamma", 1.05070102214813232421875}});
  t["HardSigmoid"] = activation("nn.hard_sigmoid", {{"alpha", 0.2}, {"beta", 0.5}});
  t["ThresholdedRelu"] = activation("nn.thresholded_relu", {{"alpha", 1.0}});
  t["Shrink"] = activation("nn.shrink", {{"lambd", 0.5}, {"bias", 0.0}});
  t["Gelu"] = [](NodeContext& c) -> std::vector<Expr> {
    std::string approx = c.attr_str("approximate", "none");
    KILN_USER_CHECK(approx == "none" || approx == "tanh") << "attribute 'approximate' must be none or tanh, got '"
                                                         << approx << "'";
    return {c.call("nn.gelu", {c.input(0)}, Attrs().set_str("approximate", approx))};
  };
  t["Clip"] = clip;
  t["Cast"] = cast;
  t["CastLike"] = cast_like;
  t["Dropout"] = dropout;
  t["BitShift"] = bit_shift;
  t["IsInf"] = is_inf;
  t["Swish"] = swish;
}

}  // namespace kiln::relay::onnx_frontend
