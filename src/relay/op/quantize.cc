// Linear quantization: quantize (float -> int8/uint8/int16/uint16) and dequantize (back to
// float), with ONNX QuantizeLinear / DequantizeLinear semantics (te/ops/nn_quantize.h).
//
// Both are first-class graph ops whose scale and zero point are arguments, not attributes:
// in real models they are constants, and graph passes recognize dequantize -> conv/dense ->
// quantize by reading them. The relay evaluator deliberately does not compute these ops, so
// fold_constants leaves dequantize(int8 weight) unfolded: the weight stays int8 for such a pass.
#include "kiln/support/error.h"
#include "op_families.h"
#include "op_util.h"

namespace kiln::relay {

namespace {

bool quantized(DataType t) { return t.is_integer() && (t.bits == 8 || t.bits == 16); }

// A scale or zero point of a call on x: a scalar (per tensor) or 1-d of x's extent along
// `axis` (per axis).
void check_param(const TensorTypeNode& p, const char* role, const TensorTypeNode& x, int64_t axis) {
  if (p.rank() == 0) return;
  KILN_USER_CHECK(axis >= 0 && axis < x.rank()) << "axis " << axis << " is out of range for input "
                                                << shape_str(x.shape) << " (per-axis " << role << " "
                                                << shape_str(p.shape) << ")";
  KILN_USER_CHECK(p.rank() == 1 && p.shape[0] == x.shape[axis])
      << role << " " << shape_str(p.shape) << " must be a scalar (per tensor) or [" << x.shape[axis] << "] (per axis "
      << axis << " of input " << shape_str(x.shape) << ")";
}

// The scale and the zero point (when given, of type zp_type) of a call on x.
void check_params(const std::vector<Type>& args, const TensorTypeNode& x, int64_t axis, DataType zp_type) {
  check_param(tensor_arg(args, 1, "scale"), "scale", x, axis);
  if (args.size() < 3) return;
  const TensorTypeNode& zp = tensor_arg(args, 2, "zero point");
  KILN_USER_CHECK(zp.dtype == zp_type) << "zero point must be " << zp_type.str() << ", got " << zp.dtype.str();
  check_param(zp, "zero point", x, axis);
}

Type quantize_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "input");
  const TensorTypeNode& scale = tensor_arg(args, 1, "scale");
  DataType out = DataType::parse(attrs.get_str("out_dtype"));
  KILN_USER_CHECK(quantized(out)) << "out_dtype must be int8, uint8, int16 or uint16, got " << out.str();
  check_floating(x, "input");
  KILN_USER_CHECK(scale.dtype == x.dtype) << "scale must have the input's type " << x.dtype.str() << ", got "
                                          << scale.dtype.str();
  check_params(args, x, attrs.get_int("axis"), out);
  return tensor_type(out, x.shape);
}

Type dequantize_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "input");
  const TensorTypeNode& scale = tensor_arg(args, 1, "scale");
  KILN_USER_CHECK(quantized(x.dtype) || x.dtype == DataType::i32())
      << "input must be int8, uint8, int16, uint16 or int32, got " << x.dtype.str();
  check_floating(scale, "scale");
  check_params(args, x, attrs.get_int("axis"), x.dtype);
  return tensor_type(scale.dtype, x.shape);
}

}  // namespace

void register_quantize_ops() {
  // Broadcast: they fuse into a conv's or dense's output and with elementwise neighbours.
  register_op("quantize", 2, 3, OpPattern::Broadcast, quantize_rel,
              "quantize(x float, scale of x's type, zero_point of out_dtype (optional: 0)): "
              "clamp(round_half_to_even(x / scale) + zero_point) to out_dtype's range. "
              "out_dtype (string: int8, uint8, int16, uint16); axis (int, in [0, rank)): the axis a 1-d scale "
              "and zero point run along (per axis); scalar ones (per tensor) ignore it");
  register_op("dequantize", 2, 3, OpPattern::Broadcast, dequantize_rel,
              "dequantize(x int8/uint8/int16/uint16/int32, scale float, zero_point of x's type (optional: 0)): "
              "(x - zero_point) * scale, of the scale's type. axis (int, in [0, rank)): the axis a 1-d scale "
              "and zero point run along (per axis); scalar ones (per tensor) ignore it");
}

}  // namespace kiln::relay
