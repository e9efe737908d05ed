// Binary (and ternary) ops with numpy broadcasting: out shape = broadcast of the input shapes.
#include "kiln/support/error.h"
#include "op_families.h"
#include "op_util.h"

namespace kiln::relay {

namespace {

enum class Accepts { Numeric, Integer, Bool, Any };

// Both operands of one dtype; result of that dtype, or bool for comparisons.
TypeRelation binary(Accepts accepts, bool bool_result) {
  return [=](const std::vector<Type>& args, const Attrs&) -> Type {
    const TensorTypeNode& a = tensor_arg(args, 0, "lhs");
    const TensorTypeNode& b = tensor_arg(args, 1, "rhs");
    check_same_dtype(a, b, "both operands");
    DataType t = a.dtype;
    if (accepts == Accepts::Numeric) {
      KILN_USER_CHECK(!t.is_bool()) << "operands must be numeric, got bool";
    } else if (accepts == Accepts::Integer) {
      KILN_USER_CHECK(t.is_integer()) << "operands must be integers, got " << t.str();
    } else if (accepts == Accepts::Bool) {
      KILN_USER_CHECK(t.is_bool()) << "operands must be bool, got " << t.str();
    }
    return tensor_type(bool_result ? DataType::boolean() : t, broadcast_shapes(a.shape, b.shape));
  };
}

Type power_rel(const std::vector<Type>& args, const Attrs&) {
  // ONNX Pow lets the exponent have its own numeric type; the result has the base's.
  const TensorTypeNode& a = tensor_arg(args, 0, "base");
  const TensorTypeNode& b = tensor_arg(args, 1, "exponent");
  KILN_USER_CHECK(!a.dtype.is_bool() && !b.dtype.is_bool()) << "power needs numeric operands";
  return tensor_type(a.dtype, broadcast_shapes(a.shape, b.shape));
}

Type where_rel(const std::vector<Type>& args, const Attrs&) {
  const TensorTypeNode& c = tensor_arg(args, 0, "condition");
  const TensorTypeNode& x = tensor_arg(args, 1, "x");
  const TensorTypeNode& y = tensor_arg(args, 2, "y");
  KILN_USER_CHECK(c.dtype.is_bool()) << "condition must be bool, got " << c.dtype.str();
  check_same_dtype(x, y, "x and y");
  return tensor_type(x.dtype, broadcast_shapes(c.shape, broadcast_shapes(x.shape, y.shape)));
}

Type prelu_rel(const std::vector<Type>& args, const Attrs&) {
  // The slope broadcasts to the input, never the other way (unidirectional broadcasting).
  const TensorTypeNode& x = tensor_arg(args, 0, "input");
  const TensorTypeNode& s = tensor_arg(args, 1, "slope");
  check_same_dtype(x, s, "input and slope");
  KILN_USER_CHECK(broadcast_shapes(x.shape, s.shape) == x.shape)
      << "slope " << shape_str(s.shape) << " does not broadcast to input " << shape_str(x.shape);
  return args[0];
}

Type bias_add_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "input");
  const TensorTypeNode& b = tensor_arg(args, 1, "bias");
  check_same_dtype(x, b, "input and bias");
  int64_t axis = attrs.get_int("axis");
  KILN_USER_CHECK(axis >= 0 && axis < x.rank()) << "axis " << axis << " is out of range for rank " << x.rank();
  KILN_USER_CHECK(b.rank() == 1 && b.shape[0] == x.shape[axis])
      << "bias " << shape_str(b.shape) << " must be [" << x.shape[axis] << "] (input dim " << axis << ")";
  return args[0];
}

void bin(const std::string& name, Accepts accepts, bool bool_result = false, const std::string& doc = "") {
  register_op(name, 2, 2, OpPattern::Broadcast, binary(accepts, bool_result), doc);
}

}  // namespace

void register_broadcast_ops() {
  bin("add", Accepts::Numeric);
  bin("subtract", Accepts::Numeric);
  bin("multiply", Accepts::Numeric);
  bin("divide", Accepts::Numeric, false, "integers truncate toward zero (as ONNX Runtime)");
  bin("mod", Accepts::Numeric, false, "fmod (int): 0 takes the divisor's sign (Python %), 1 the dividend's (C fmod)");
  bin("maximum", Accepts::Numeric);
  bin("minimum", Accepts::Numeric);
  bin("equal", Accepts::Any, true);
  bin("less", Accepts::Numeric, true);
  bin("less_equal", Accepts::Numeric, true);
  bin("greater", Accepts::Numeric, true);
  bin("greater_equal", Accepts::Numeric, true);
  bin("logical_and", Accepts::Bool);
  bin("logical_or", Accepts::Bool);
  bin("logical_xor", Accepts::Bool);
  bin("bitwise_and", Accepts::Integer);
  bin("bitwise_or", Accepts::Integer);
  bin("bitwise_xor", Accepts::Integer);
  bin("left_shift", Accepts::Integer);
  bin("right_shift", Accepts::Integer);
  register_op("power", 2, 2, OpPattern::Broadcast, power_rel, "result has the base's dtype");
  register_op("where", 3, 3, OpPattern::Broadcast, where_rel, "where(condition, x, y)");
  register_op("nn.prelu", 2, 2, OpPattern::Broadcast, prelu_rel, "prelu(x, slope): slope broadcasts to x");
  register_op("nn.bias_add", 2, 2, OpPattern::Broadcast, bias_add_rel,
              "axis (int): adds bias[C] along that axis of x");
}

}  // namespace kiln::relay
