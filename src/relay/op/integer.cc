// Integer convolution and dense of quantized models (and the blocked-layout conv that
// alter_layout makes of the conv): int8/uint8 data x int8 weights summed in
// int32, ONNX's ConvInteger / MatMulInteger with a per-tensor data zero point and symmetric
// weights (te/ops/nn_int8.h computes them; relay::realize_integer_ops makes them from
// dequantize -> conv / dense).
//
//   nn.conv2d_integer(data [N,C,H,W], weight [OC,C,KY,KX], data_zero_point [], weight_sums [OC])
//     -> int32 [N,OC,OY,OX] = sum (data - data_zero_point) * weight, the border padded with the
//        zero point (a real 0); groups 1, or depthwise: groups C, weight [OC,1,KY,KX]
//   nn.dense_integer(data [...,M,K], weight [N,K], data_zero_point [], weight_sums [N])
//     -> int32 [...,M,N]
//
// weight_sums holds each output's sum of weights: a kernel subtracts the zero point's share
// once per output with it; it is an argument so that a constant weight's sums are computed
// once, at compile time, not per run.
#include "kiln/support/error.h"
#include "op_families.h"
#include "op_util.h"

namespace kiln::relay {

namespace {

// data, weight, zero point and sums of an integer op with `outputs` outputs per weight row.
void check_integer_operands(const std::vector<Type>& args, int64_t weight_rank) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const TensorTypeNode& w = tensor_arg(args, 1, "weight");
  const TensorTypeNode& zp = tensor_arg(args, 2, "data zero point");
  const TensorTypeNode& sums = tensor_arg(args, 3, "weight sums");
  KILN_USER_CHECK(x.dtype == DataType::i8() || x.dtype == DataType::u8())
      << "data must be int8 or uint8, got " << x.dtype.str();
  KILN_USER_CHECK(w.dtype == DataType::i8()) << "weight must be int8, got " << w.dtype.str();
  KILN_USER_CHECK(w.rank() == weight_rank) << "weight must have rank " << weight_rank << ", got " << shape_str(w.shape);
  KILN_USER_CHECK(zp.dtype == x.dtype && zp.rank() == 0)
      << "data zero point must be a " << x.dtype.str() << " scalar, got " << zp.dtype.str() << " " << shape_str(zp.shape);
  KILN_USER_CHECK(sums.dtype == DataType::i32() && sums.rank() == 1 && sums.shape[0] == w.shape[0])
      << "weight sums must be int32 [" << w.shape[0] << "], got " << sums.dtype.str() << " " << shape_str(sums.shape);
}

Type conv2d_integer_rel(const std::vector<Type>& args, const Attrs& attrs) {
  check_integer_operands(args, 4);
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const TensorTypeNode& w = tensor_arg(args, 1, "weight");
  const int64_t groups = attrs.get_int("groups");
  KILN_USER_CHECK(x.rank() == 4) << "data " << shape_str(x.shape) << " is not [N,C,H,W]";
  KILN_USER_CHECK(groups == 1 || (groups == x.shape[1] && w.shape[1] == 1 && w.shape[0] % groups == 0))
      << "integer convolutions of one group or depthwise (groups = C = " << x.shape[1]
      << ", one input channel per group) only, got groups " << groups << " with weight " << shape_str(w.shape);
  KILN_USER_CHECK(w.shape[1] * groups == x.shape[1])
      << "data " << shape_str(x.shape) << " and weight " << shape_str(w.shape) << " are not [N,C,H,W] and [OC,C,KY,KX]";
  std::vector<int64_t> strides = attrs.get_ints("strides"), padding = attrs.get_ints("padding"),
                       dilation = attrs.get_ints("dilation");
  check_count(strides, 2, "strides");
  check_count(padding, 4, "padding");
  check_count(dilation, 2, "dilation");
  Shape out = {x.shape[0], w.shape[0]};
  for (size_t i = 0; i < 2; ++i) {
    KILN_USER_CHECK(strides[i] >= 1 && dilation[i] >= 1) << "strides and dilation must be positive";
    int64_t padded = x.shape[2 + i] + padding[i] + padding[2 + i];
    int64_t ext = dilation[i] * (w.shape[2 + i] - 1) + 1;
    KILN_USER_CHECK(padded >= ext) << "kernel of extent " << ext << " is larger than the padded input (" << padded
                                   << ") on spatial axis " << i;
    out.push_back((padded - ext) / strides[i] + 1);
  }
  return tensor_type(DataType::i32(), out);
}

// conv2d_integer with data in data_layout (NCHW or NCHW<x>c) and its result in out_layout
// NCHW<y>c: the NCHW relation on the data's channels, its output cut into blocks.
Type conv2d_integer_nchwc_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const int64_t ib = parse_layout(attrs.get_str("data_layout")), ob = parse_layout(attrs.get_str("out_layout"));
  KILN_USER_CHECK(ob > 0) << "out_layout must be blocked (NCHW<y>c), got " << attrs.get_str("out_layout");
  Shape nchw = x.shape;
  if (ib > 0) {
    KILN_USER_CHECK(x.rank() == 5 && x.shape[4] == ib) << "data " << shape_str(x.shape) << " is not NCHW" << ib << "c";
    nchw = {x.shape[0], x.shape[1] * ib, x.shape[2], x.shape[3]};
  }
  std::vector<Type> plain = args;
  plain[0] = tensor_type(x.dtype, nchw);
  const Shape out = conv2d_integer_rel(plain, attrs).as<TensorTypeNode>()->shape;
  KILN_USER_CHECK(out[1] % ob == 0) << out[1] << " output channels are not whole blocks of " << ob;
  KILN_USER_CHECK(attrs.get_int("groups") == 1 || ib == ob)
      << "a depthwise conv's data and output must share one block, got " << attrs.get_str("data_layout") << " and "
      << attrs.get_str("out_layout");
  return tensor_type(DataType::i32(), {out[0], out[1] / ob, out[2], out[3], ob});
}

Type dense_integer_rel(const std::vector<Type>& args, const Attrs&) {
  check_integer_operands(args, 2);
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const TensorTypeNode& w = tensor_arg(args, 1, "weight");
  KILN_USER_CHECK(x.rank() >= 2 && x.shape.back() == w.shape[1])
      << "data " << shape_str(x.shape) << " and weight " << shape_str(w.shape) << " are not [..., M, K] and [N, K]";
  Shape out = x.shape;
  out.back() = w.shape[0];
  return tensor_type(DataType::i32(), out);
}

}  // namespace

void register_integer_ops() {
  register_op("nn.conv2d_integer", 4, 4, OpPattern::OutElementwiseFusable, conv2d_integer_rel,
              "conv2d_integer(data int8/uint8 [N,C,H,W], weight int8 [OC,C,KY,KX], data_zero_point scalar of "
              "data's type, weight_sums int32 [OC]) -> int32: sum (data - zero point) * weight. strides (ints, 2), "
              "padding (ints, 4: begins then ends), dilation (ints, 2), groups (int: 1, or C with weight [OC,1,KY,KX])");
  register_op("nn.conv2d_integer_NCHWc", 4, 4, OpPattern::OutElementwiseFusable, conv2d_integer_nchwc_rel,
              "conv2d_integer with data in data_layout (\"NCHW\" or \"NCHW<x>c\": [N, C/x, H, W, x]) and the "
              "result in out_layout (\"NCHW<y>c\": int32 [N, OC/y, OY, OX, y]); weight, zero point, sums and the "
              "other attributes as conv2d_integer's (a depthwise conv's x = y). Made by alter_layout");
  register_op("nn.dense_integer", 4, 4, OpPattern::OutElementwiseFusable, dense_integer_rel,
              "dense_integer(data int8/uint8 [...,M,K], weight int8 [N,K], data_zero_point scalar, weight_sums "
              "int32 [N]) -> int32 [...,M,N]: sum_k (data - zero point) * weight");
}

}  // namespace kiln::relay
