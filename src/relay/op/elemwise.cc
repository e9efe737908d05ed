// Elementwise unary ops: out[i] = f(in[i]), same shape. Math, activations, cast, reinterpret,
// identity.
#include "kiln/support/error.h"
#include "op_families.h"
#include "op_util.h"

namespace kiln::relay {

namespace {

// What element types an op accepts, checked by its relation.
enum class Accepts { Any, Numeric, Signed, Floating, Integer, Bool };

TypeRelation same_type(Accepts accepts) {
  return [accepts](const std::vector<Type>& args, const Attrs&) -> Type {
    const TensorTypeNode& x = tensor_arg(args, 0, "input");
    DataType t = x.dtype;
    switch (accepts) {
      case Accepts::Any: break;
      case Accepts::Numeric: KILN_USER_CHECK(!t.is_bool()) << "input must be numeric, got bool"; break;
      case Accepts::Signed:
        KILN_USER_CHECK(t.is_floating() || t.is_int()) << "input must be signed, got " << t.str();
        break;
      case Accepts::Floating: check_floating(x, "input"); break;
      case Accepts::Integer: KILN_USER_CHECK(t.is_integer()) << "input must be an integer, got " << t.str(); break;
      case Accepts::Bool: KILN_USER_CHECK(t.is_bool()) << "input must be bool, got " << t.str(); break;
    }
    return args[0];
  };
}

Type to_bool(const std::vector<Type>& args, const Attrs&) {
  const TensorTypeNode& x = tensor_arg(args, 0, "input");
  check_floating(x, "input");
  return tensor_type(DataType::boolean(), x.shape);
}

Type cast_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "input");
  return tensor_type(DataType::parse(attrs.get_str("dtype")), x.shape);
}

// The same bits read as another type: only between types of one storage width (bool is a byte).
Type reinterpret_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "input");
  DataType to = DataType::parse(attrs.get_str("dtype"));
  KILN_USER_CHECK(to.bytes() == x.dtype.bytes())
      << "reinterpret from " << x.dtype.str() << " to " << to.str() << " changes the element width";
  return tensor_type(to, x.shape);
}

Type clip_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "input");
  KILN_USER_CHECK(!x.dtype.is_bool()) << "input must be numeric, got bool";
  double lo = attrs.get_float("a_min"), hi = attrs.get_float("a_max");
  (void)lo;
  (void)hi;  // lo > hi is legal in ONNX: the result is hi everywhere
  return args[0];
}

void unary(const std::string& name, Accepts accepts, const std::string& doc = "") {
  register_op(name, 1, 1, OpPattern::Elementwise, same_type(accepts), doc);
}

}  // namespace

void register_elemwise_ops() {
  for (const char* n : {"exp", "log", "sqrt", "rsqrt", "erf", "tanh", "sigmoid", "reciprocal", "sin", "cos", "tan",
                        "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"}) {
    unary(n, Accepts::Floating);
  }
  unary("round", Accepts::Floating, "rounds half to even (ONNX Round)");
  unary("floor", Accepts::Floating);
  unary("ceil", Accepts::Floating);
  unary("abs", Accepts::Numeric);
  unary("neg", Accepts::Signed);
  unary("sign", Accepts::Numeric);
  unary("identity", Accepts::Any, "a copy; simplify removes it");
  unary("logical_not", Accepts::Bool);
  unary("bitwise_not", Accepts::Integer);
  register_op("isnan", 1, 1, OpPattern::Elementwise, to_bool, "bool result");
  register_op("isinf", 1, 1, OpPattern::Elementwise, to_bool,
              "detect_negative (int), detect_positive (int); bool result");
  register_op("cast", 1, 1, OpPattern::Elementwise, cast_rel,
              "dtype (string, e.g. \"float32\"); float to int truncates toward zero");
  register_op("reinterpret", 1, 1, OpPattern::Elementwise, reinterpret_rel,
              "dtype (string): the same bits as that type, of the same width (ONNX BitCast)");
  register_op("clip", 1, 1, OpPattern::Elementwise, clip_rel, "a_min (float), a_max (float): min(max(x, a_min), a_max)");

  // Activations.
  unary("nn.relu", Accepts::Signed);
  unary("nn.leaky_relu", Accepts::Floating, "alpha (float)");
  unary("nn.elu", Accepts::Floating, "alpha (float)");
  unary("nn.selu", Accepts::Floating, "alpha (float), gamma (float)");
  unary("nn.celu", Accepts::Floating, "alpha (float)");
  unary("nn.hard_sigmoid", Accepts::Floating, "alpha (float), beta (float): max(0, min(1, alpha*x + beta))");
  unary("nn.hard_swish", Accepts::Floating, "x * max(0, min(1, x/6 + 1/2))");
  unary("nn.thresholded_relu", Accepts::Floating, "alpha (float): x if x > alpha else 0");
  unary("nn.shrink", Accepts::Numeric, "lambd (float), bias (float)");
  unary("nn.gelu", Accepts::Floating, "approximate (string: \"none\" erf form, \"tanh\")");
  unary("nn.mish", Accepts::Floating, "x * tanh(softplus(x))");
  unary("nn.softplus", Accepts::Floating, "log(1 + exp(x))");
  unary("nn.softsign", Accepts::Floating, "x / (1 + |x|)");
  unary("nn.dropout", Accepts::Any, "rate (float); inference: identity, simplify removes it");
}

}  // namespace kiln::relay
