// QOperator quantized nodes: QLinearConv, QLinearMatMul, MatMulInteger, ConvInteger and the
// com.microsoft contrib ops ONNX Runtime's quantizer emits (QLinearAdd, QLinearMul,
// QLinearGlobalAveragePool).
//
// The QLinear* nodes become dequantize -> float op -> quantize: the same graph a QDQ model
// imports to, so one graph pass can rewrite both into integer kernels. Until such a pass runs,
// they compute in float32. ONNX's reference (and ONNX Runtime) sums in int32 and requantizes
// with one multiplier: the two round alike except where the exact result lies within float32
// rounding of a tie (x.5), where they can differ by one (the node suite has no such case). The
// *Integer nodes compute in int32: the operands widened, the zero points subtracted, then an
// int32 matmul or conv.
#include "convert.h"
#include "kiln/relay/transforms.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

// Input i when given, else undefined (an optional zero point).
Expr optional_input(const NodeContext& c, size_t i) { return c.has_input(i) ? c.input(i) : Expr(); }

// A float16/bfloat16 scale (QLinearMatMul from opset 21) in float32: the float op between
// dequantize and quantize computes in float32, as integer kernels requantize in float32.
Expr scale_input(NodeContext& c, size_t i, const std::string& role) {
  Expr s = c.input(i, role.c_str());
  KILN_USER_CHECK(s.tensor_type().dtype.is_floating()) << role << " must be floating-point, got "
                                                       << s.tensor_type().dtype.str();
  return cast_to(c, s, DataType::f32());
}

// The dequantized value of x = input xi with scale si and zero point zi along `axis`.
Expr dequantized(NodeContext& c, size_t xi, size_t si, size_t zi, int64_t axis, const char* role) {
  return dequantize_of(c, c.input(xi, role), scale_input(c, si, std::string(role) + "_scale"), optional_input(c, zi),
                       axis);
}

// y quantized with scale si and zero point zi; without a zero point, to `fallback`'s type (the
// reference's rule).
Expr requantized(NodeContext& c, const Expr& y, size_t si, size_t zi, int64_t axis, DataType fallback) {
  Expr zp = optional_input(c, zi);
  DataType out = zp.defined() ? zp.tensor_type().dtype : fallback;
  return quantize_of(c, y, scale_input(c, si, "y_scale"), zp, axis, out);
}

// x: input xi widened to int32, minus its zero point zi (when given). A zero point with one
// entry per `per_entry_dim` of x (rows of MatMulInteger's A, output channels of ConvInteger's
// weight) is reshaped to run along that dim; other shapes broadcast as they are.
Expr shifted(NodeContext& c, size_t xi, size_t zi, const char* role, int64_t per_entry_dim) {
  Expr x = c.input(xi, role);
  const TensorTypeNode& xt = x.tensor_type();
  KILN_USER_CHECK(xt.dtype == DataType::i8() || xt.dtype == DataType::u8())
      << role << " must be int8 or uint8, got " << xt.dtype.str();
  Expr wide = cast_to(c, x, DataType::i32());
  if (!c.has_input(zi)) return wide;
  Expr zp = c.input(zi);
  const TensorTypeNode& zt = zp.tensor_type();
  KILN_USER_CHECK(zt.dtype == xt.dtype) << role << "'s zero point is " << zt.dtype.str() << ", " << role << " is "
                                        << xt.dtype.str() << ": they must have one type";
  Expr z = cast_to(c, zp, DataType::i32());
  if (zt.rank() == 1 && zt.shape[0] > 1 && per_entry_dim >= 0 && per_entry_dim < xt.rank() &&
      zt.shape[0] == xt.shape[per_entry_dim]) {
    Shape s(static_cast<size_t>(xt.rank() - per_entry_dim), 1);
    s[0] = zt.shape[0];
    z = c.call("reshape", {z}, Attrs().set_ints("newshape", s));
  }
  return c.call("subtract", {wide, z});
}

// MatMulInteger with a constant int8 B [K, N] whose zero point is absent or 0 and a per-tensor
// A zero point (DynamicQuantizeLinear's, or a constant): nn.dense_integer, which CPU targets
// tensorize onto their int8 dot product (a dynamically quantized transformer's projections).
std::optional<Expr> dense_integer_of(NodeContext& c) {
  const TensorTypeNode& a = c.input_type(0, "A");
  std::optional<HostTensor> b = c.const_input(1);
  if (!b || b->dtype() != DataType::i8() || b->rank() != 2 || a.rank() < 2) return std::nullopt;
  if (a.dtype != DataType::i8() && a.dtype != DataType::u8()) return std::nullopt;
  if (c.has_input(3)) {
    std::optional<HostTensor> bz = c.const_input(3);
    if (!bz) return std::nullopt;
    for (double z : bz->to_doubles())
      if (z != 0) return std::nullopt;
  }
  Expr azp = c.scalar(a.dtype, 0);
  if (c.has_input(2)) {
    const TensorTypeNode& zt = c.input_type(2);
    std::optional<HostTensor> zk = c.const_input(2);
    if (zt.dtype != a.dtype) return std::nullopt;
    if (zk && zk->numel() == 1) azp = c.scalar(a.dtype, zk->double_at(0));
    else if (zt.rank() == 0) azp = c.input(2);
    else return std::nullopt;
  }
  IntegerWeight w = integer_weight(*b, 1);
  return c.call("nn.dense_integer", {c.input(0), c.constant(w.weight), azp, c.constant(w.sums)});
}

std::vector<Expr> matmul_integer(NodeContext& c) {
  if (std::optional<Expr> d = dense_integer_of(c)) return {*d};
  int64_t a_rank = c.input_type(0, "A").rank();
  // A's zero point may hold one value per row: [M] for A [M, K].
  Expr a = shifted(c, 0, 2, "A", a_rank >= 2 ? a_rank - 2 : -1);
  Expr b = shifted(c, 1, 3, "B", -1);  // per column: [N] broadcasts along B [K, N] as it is
  return {c.call("nn.matmul", {a, b})};
}

std::vector<Expr> conv_integer(NodeContext& c) {
  Expr x = shifted(c, 0, 2, "x", -1);
  Expr w = shifted(c, 1, 3, "w", 0);  // one zero point per output channel of w [M, C, k...]
  return {conv_of(c, x, w)};
}

std::vector<Expr> qlinear_conv(NodeContext& c) {
  Expr x = dequantized(c, 0, 1, 2, 1, "x");
  Expr w = dequantized(c, 3, 4, 5, 0, "w");  // w_scale: per tensor or per output channel
  Expr y = conv_of(c, x, w);
  if (c.has_input(8)) {
    // The int32 bias is in units of x_scale * w_scale (per output channel with w_scale).
    Expr bias_scale = c.call("multiply", {scale_input(c, 1, "x_scale"), scale_input(c, 4, "w_scale")});
    Expr bias = dequantize_of(c, c.input(8, "B"), bias_scale, Expr(), 0);
    y = c.call("nn.bias_add", {y, bias}, Attrs().set_int("axis", 1));
  }
  return {requantized(c, y, 6, 7, 1, c.input_type(0).dtype)};
}

std::vector<Expr> qlinear_matmul(NodeContext& c) {
  int64_t a_rank = c.input_type(0, "a").rank(), b_rank = c.input_type(3, "b").rank();
  // a_scale per row of a, b_scale per column of b.
  Expr a = dequantized(c, 0, 1, 2, a_rank >= 2 ? a_rank - 2 : 0, "a");
  Expr b = dequantized(c, 3, 4, 5, b_rank - 1, "b");
  Expr y = c.call("nn.matmul", {a, b});
  return {requantized(c, y, 6, 7, -1, c.input_type(0).dtype)};
}

// com.microsoft QLinearAdd / QLinearMul: (A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp),
// per tensor, numpy broadcasting.
Converter qlinear_binary(const std::string& op) {
  return [op](NodeContext& c) -> std::vector<Expr> {
    Expr a = dequantized(c, 0, 1, 2, 0, "A");
    Expr b = dequantized(c, 3, 4, 5, 0, "B");
    return {requantized(c, c.call(op, {a, b}), 6, 7, 0, c.input_type(0).dtype)};
  };
}

// com.microsoft QLinearGlobalAveragePool: (X, x_scale, x_zp, y_scale, y_zp), NCHW or, with
// channels_last, NHWC (the mean over the dims between batch and channels).
std::vector<Expr> qlinear_global_average_pool(NodeContext& c) {
  Expr x = dequantized(c, 0, 1, 2, 1, "X");
  int64_t rank = x.tensor_type().rank();
  KILN_USER_CHECK(rank >= 3) << "X must have a batch, a channel and spatial dims, got "
                             << shape_str(x.tensor_type().shape);
  Expr y;
  if (c.attr_int("channels_last", 0)) {
    std::vector<int64_t> axes;
    for (int64_t i = 1; i < rank - 1; ++i) axes.push_back(i);
    y = c.call("mean", {x}, Attrs().set_ints("axes", axes).set_int("keepdims", 1));
  } else {
    y = c.call("nn.global_avg_pool", {x});
  }
  return {requantized(c, y, 3, 4, 0, c.input_type(0).dtype)};
}

}  // namespace

void register_qlinear_converters(ConverterTable& t) {
  t["MatMulInteger"] = matmul_integer;
  t["ConvInteger"] = conv_integer;
  t["QLinearConv"] = qlinear_conv;
  t["QLinearMatMul"] = qlinear_matmul;
  t["com.microsoft.QLinearAdd"] = qlinear_binary("add");
  t["com.microsoft.QLinearMul"] = qlinear_binary("multiply");
  t["com.microsoft.QLinearGlobalAveragePool"] = qlinear_global_average_pool;
}

}  // namespace kiln::relay::onnx_frontend
