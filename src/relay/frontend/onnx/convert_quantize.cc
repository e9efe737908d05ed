// QDQ quantization nodes: QuantizeLinear, DequantizeLinear (opsets 10 to 25, integer types)
// and DynamicQuantizeLinear, onto the graph ops quantize and dequantize. The numerics follow
// ONNX's reference implementation, which the node suite's outputs come from.
//
// In scope: int8, uint8, int16, uint16 (and int32 into DequantizeLinear), per tensor or per
// axis. Refused as unsupported, naming the node and what: float8/float4/int4/int2 types (graph
// values of those types are refused where they enter: inputs, initializers, Cast) and blocked
// quantization (block_size).
#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

using TP = ::onnx::TensorProto;

// The quantized type an output_dtype attribute names. The types after bfloat16 (16) are the
// float8, int4, float4 and int2 ones ONNX added for quantization: valid, refused as unsupported;
// any other (int32, float) is not a quantized type at all.
DataType quantized_type(int code) {
  switch (code) {
    case TP::INT8: return DataType::i8();
    case TP::UINT8: return DataType::u8();
    case TP::INT16: return DataType::i16();
    case TP::UINT16: return DataType::u16();
    default: break;
  }
  KILN_SUPPORTED(code <= TP::BFLOAT16) << "output_dtype " << onnx_dtype_name(code)
                                       << " is not supported: kiln quantizes to int8, uint8, int16 and uint16";
  KILN_THROW() << "output_dtype " << onnx_dtype_name(code) << " is not a quantized type";
  return {};
}

void refuse_blocked(const NodeContext& c) {
  int64_t block = c.attr_int("block_size", 0);
  KILN_SUPPORTED(block == 0) << "blocked quantization (block_size=" << block << ") is not supported";
}

// The type numpy divides x by the scale in (the reference computes x / y_scale): the common
// type of two floating types (float16 with bfloat16: float32), float64 when either is an
// integer (int32 x, or an int32 scale from opset 23 on).
DataType division_type(DataType x, DataType scale) {
  if (!x.is_floating() || !scale.is_floating()) return DataType::f64();
  if (x == scale) return x;
  if (x.bits == 16 && scale.bits == 16) return DataType::f32();
  return x.bits > scale.bits ? x : scale;
}

std::vector<Expr> quantize_linear(NodeContext& c) {
  refuse_blocked(c);
  Expr x = c.input(0, "x"), scale = c.input(1, "y_scale");
  Expr zp = c.has_input(2) ? c.input(2) : Expr();
  DataType out = DataType::u8();
  int64_t code = c.attr_int("output_dtype", 0);
  if (code != 0) out = quantized_type(static_cast<int>(code));
  if (zp.defined()) {
    // A zero point of a type kiln does not compute in is refused where it is read; one of
    // another type (int32) by the quantize op's relation.
    out = zp.tensor_type().dtype;
    KILN_USER_CHECK(code == 0 || dtype_to_onnx(out) == code)
        << "output_dtype " << onnx_dtype_name(static_cast<int>(code)) << " differs from y_zero_point's type "
        << onnx_dtype_name(dtype_to_onnx(out));
  }
  // The attribute `precision` (opset 23) names the division's type; without it, numpy's.
  DataType div = division_type(x.tensor_type().dtype, scale.tensor_type().dtype);
  if (int64_t p = c.attr_int("precision", 0); p != 0) {
    div = dtype_from_onnx(static_cast<int>(p), "precision");
    KILN_USER_CHECK(div.is_floating()) << "precision " << onnx_dtype_name(static_cast<int>(p))
                                       << " is not a floating type";
  }
  Expr xd = cast_to(c, x, div), sd = cast_to(c, scale, div);
  return {quantize_of(c, xd, sd, zp, c.attr_int("axis", 1), out)};
}

std::vector<Expr> dequantize_linear(NodeContext& c) {
  refuse_blocked(c);
  Expr x = c.input(0, "x"), scale = c.input(1, "x_scale");
  Expr zp = c.has_input(2) ? c.input(2) : Expr();
  KILN_USER_CHECK(!zp.defined() || zp.tensor_type().dtype == x.tensor_type().dtype)
      << "x_zero_point is " << zp.tensor_type().dtype.str() << ", x is " << x.tensor_type().dtype.str()
      << ": they must have one type";
  int64_t code = c.attr_int("output_dtype", 0);
  if (code == 0) return {dequantize_of(c, x, scale, zp, c.attr_int("axis", 1))};
  // output_dtype (opset 23): the reference multiplies in float32 whatever the scale's type, then
  // converts the product.
  DataType out = dtype_from_onnx(static_cast<int>(code), "output_dtype");
  KILN_USER_CHECK(out.is_floating()) << "output_dtype " << onnx_dtype_name(static_cast<int>(code))
                                     << " is not a floating type";
  Expr y = dequantize_of(c, x, cast_to(c, scale, DataType::f32()), zp, c.attr_int("axis", 1));
  return {cast_to(c, y, out)};
}

// The ONNX function of DynamicQuantizeLinear, in float32: the range [min(x, 0), max(x, 0)] onto
// uint8 [0, 255]. An all-zero x (an empty range) takes the scale 1/255 as ONNX's reference does
// (ONNX Runtime takes 1), rather than the function body's 0, whose zero point would be 0/0.
std::vector<Expr> dynamic_quantize_linear(NodeContext& c) {
  Expr x = c.input(0, "x");
  const TensorTypeNode& xt = x.tensor_type();
  KILN_USER_CHECK(xt.dtype == DataType::f32()) << "x must be float32, got " << xt.dtype.str();
  std::vector<int64_t> all;
  for (int64_t i = 0; i < xt.rank(); ++i) all.push_back(i);
  Attrs r = Attrs().set_ints("axes", all).set_int("keepdims", 0);
  Expr zero = c.scalar(xt.dtype, 0);
  Expr lo = c.call("minimum", {c.call("min", {x}, r), zero});
  Expr hi = c.call("maximum", {c.call("max", {x}, r), zero});
  Expr range = c.call("subtract", {hi, lo});
  range = c.call("where", {c.call("equal", {range, zero}), c.scalar(xt.dtype, 1), range});
  Expr scale = c.call("divide", {range, c.scalar(xt.dtype, 255)});
  Expr zp = c.call("subtract", {zero, c.call("divide", {lo, scale})});
  zp = c.call("round", {c.call("clip", {zp}, Attrs().set_float("a_min", 0).set_float("a_max", 255))});
  zp = cast_to(c, zp, DataType::u8());
  return {quantize_of(c, x, scale, zp, 0, DataType::u8()), scale, zp};
}

// A scale or zero point of one element as a scalar: ONNX (and its reference) read a 1-element
// 1-d tensor as per tensor whatever the axis.
Expr per_tensor_if_one(NodeContext& c, const Expr& p) {
  const TensorTypeNode& t = p.tensor_type();
  if (t.rank() == 0 || t.num_elements() != 1) return p;
  return c.call("reshape", {p}, Attrs().set_ints("newshape", {}));
}

// The axis attribute of a call on x with scale and zero point: normalized where some parameter
// runs along it, 0 (unused) where both are per tensor.
int64_t call_axis(const NodeContext& c, const Expr& x, const Expr& scale, const Expr& zp, int64_t axis) {
  bool along = scale.tensor_type().rank() != 0 || (zp.defined() && zp.tensor_type().rank() != 0);
  return along ? normalize_axis_for(axis, x.tensor_type().rank(), c) : 0;
}

}  // namespace

Expr cast_to(NodeContext& c, const Expr& v, DataType t) {
  if (v.tensor_type().dtype == t) return v;
  return c.call("cast", {v}, Attrs().set_str("dtype", t.str()));
}

Expr quantize_of(NodeContext& c, const Expr& x, const Expr& scale, const Expr& zero_point, int64_t axis, DataType out) {
  std::vector<Expr> args = {x, per_tensor_if_one(c, scale)};
  if (zero_point.defined()) args.push_back(per_tensor_if_one(c, zero_point));
  Attrs a = Attrs().set_int("axis", call_axis(c, x, args[1], zero_point.defined() ? args[2] : Expr(), axis));
  return c.call("quantize", args, a.set_str("out_dtype", out.str()));
}

Expr dequantize_of(NodeContext& c, const Expr& x, const Expr& scale, const Expr& zero_point, int64_t axis) {
  std::vector<Expr> args = {x, per_tensor_if_one(c, scale)};
  if (zero_point.defined()) args.push_back(per_tensor_if_one(c, zero_point));
  int64_t a = call_axis(c, x, args[1], zero_point.defined() ? args[2] : Expr(), axis);
  return c.call("dequantize", args, Attrs().set_int("axis", a));
}

void register_quantize_converters(ConverterTable& t) {
  t["QuantizeLinear"] = quantize_linear;
  t["DequantizeLinear"] = dequantize_linear;
  t["DynamicQuantizeLinear"] = dynamic_quantize_linear;
}

}  // namespace kiln::relay::onnx_frontend
