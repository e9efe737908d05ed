// The forms of opsets 1 to 6 that later opsets changed, shared by the converters that read them
// (old PyTorch and Caffe2 exports still use them): the explicit broadcast of binary ops, Cast's
// type name, per-feature batch normalization, Tile along one axis, Upsample's two scales; and
// ConstantFill, an experimental op of those opsets (PyTorch 0.4 made RNN initial states with it).
#include <algorithm>
#include <cctype>

#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

// Before opset 7 a binary op broadcasts only with broadcast=1, and then only B, whose shape must
// match a contiguous run of A's dims starting at `axis` (by default its trailing dims): B's dims
// are aligned to A's by appending ones, after which numpy broadcasting does the rest.
Expr legacy_binary_operand(NodeContext& c) {
  const TensorTypeNode& a = c.input_type(0, "A");
  const TensorTypeNode& b = c.input_type(1, "B");
  if (c.attr_int("broadcast", 0) == 0) {
    KILN_USER_CHECK(a.shape == b.shape) << "A " << shape_str(a.shape) << " and B " << shape_str(b.shape)
                                        << " differ in shape and broadcast=0 (opset " << c.opset()
                                        << " broadcasts only with broadcast=1)";
    return c.input(1);
  }
  KILN_USER_CHECK(b.rank() <= a.rank()) << "B " << shape_str(b.shape) << " has a higher rank than A "
                                        << shape_str(a.shape) << " (broadcast=1 broadcasts B to A)";
  int64_t axis = a.rank() - b.rank();
  if (c.has_attr("axis")) {
    axis = c.attr_int("axis");
    if (axis < 0) axis += a.rank();
    KILN_USER_CHECK(axis >= 0 && axis + b.rank() <= a.rank())
        << "axis " << c.attr_int("axis") << " does not place B " << shape_str(b.shape) << " within A "
        << shape_str(a.shape);
  }
  Shape aligned = b.shape;
  for (int64_t i = 0; i < b.rank(); ++i)
    KILN_USER_CHECK(b.shape[i] == a.shape[axis + i] || b.shape[i] == 1)
        << "B " << shape_str(b.shape) << " does not match A " << shape_str(a.shape) << " from axis " << axis;
  aligned.resize(static_cast<size_t>(a.rank() - axis), 1);
  if (aligned == b.shape) return c.input(1);
  return c.call("reshape", {c.input(1)}, Attrs().set_ints("newshape", aligned));
}

// PRelu before opset 7 (Caffe2's): a slope of C values applies per channel (axis 1), not along
// the last axis as numpy broadcasting would have it; one value, or one per element, as now.
Expr legacy_prelu_slope(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "X");
  const TensorTypeNode& s = c.input_type(1, "slope");
  if (s.num_elements() == 1 || s.shape == x.shape) return c.input(1);
  KILN_USER_CHECK(x.rank() >= 2 && s.rank() == 1 && s.shape[0] == x.shape[1])
      << "slope " << shape_str(s.shape) << " must hold one value, one per channel of X " << shape_str(x.shape)
      << " or one per element (opset " << c.opset() << ")";
  Shape per_channel(static_cast<size_t>(x.rank() - 1), 1);
  per_channel[0] = s.shape[0];
  return c.call("reshape", {c.input(1)}, Attrs().set_ints("newshape", per_channel));
}

DataType cast_target(NodeContext& c) {
  // Cast-1 names the type ("FLOAT"); opset 6 made it the TensorProto.DataType code. Old exporters
  // are trusted over the opset: the attribute's kind tells which it is.
  const auto& attrs = c.node().attribute();
  auto it = std::find_if(attrs.begin(), attrs.end(), [](const ::onnx::AttributeProto& a) { return a.name() == "to"; });
  bool is_string = it != attrs.end() && (it->type() == ::onnx::AttributeProto::STRING ||
                                         (it->type() == ::onnx::AttributeProto::UNDEFINED && it->has_s()));
  if (!is_string) return dtype_from_onnx(static_cast<int>(c.attr_int("to")), "attribute 'to'");
  std::string name = c.attr_str("to", "");
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char ch) { return std::toupper(ch); });
  ::onnx::TensorProto_DataType code = ::onnx::TensorProto_DataType_UNDEFINED;
  KILN_USER_CHECK(::onnx::TensorProto_DataType_Parse(upper, &code) && code != ::onnx::TensorProto_DataType_UNDEFINED)
      << "attribute 'to' names no ONNX element type: '" << name << "'";
  return dtype_from_onnx(code, "attribute 'to' ('" + name + "')");
}

// BatchNormalization with spatial=0 (opsets 1 to 7): scale, B, mean and var hold one value per
// feature, i.e. have the input's shape without the batch dim; in inference it is elementwise.
Expr batch_norm_per_feature(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "X");
  Shape feature(x.shape.begin() + std::min<int64_t>(1, x.rank()), x.shape.end());
  const char* roles[] = {"scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i)
    KILN_USER_CHECK(c.input_type(i, roles[i - 1]).shape == feature)
        << roles[i - 1] << " " << shape_str(c.input_type(i, roles[i - 1]).shape) << " must have the shape "
        << shape_str(feature) << " of one sample of X " << shape_str(x.shape) << " (spatial=0)";
  Expr eps = c.scalar(x.dtype, c.attr_float("epsilon", 1e-5));
  // y = (x - mean) * scale / sqrt(var + eps) + B; the per-feature factor folds when constant.
  Expr factor = c.call("divide", {c.input(1), c.call("sqrt", {c.call("add", {c.input(4), eps})})});
  Expr y = c.call("multiply", {c.call("subtract", {c.input(0), c.input(3)}), factor});
  return c.call("add", {y, c.input(2)});
}

// Tile-1: `tiles` copies along one `axis`, both scalar inputs.
std::vector<int64_t> legacy_tile_reps(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  HostTensor tiles = c.require_const(1, "tiles"), axis = c.require_const(2, "axis");
  KILN_USER_CHECK(tiles.numel() == 1 && axis.numel() == 1) << "tiles " << shape_str(tiles.shape()) << " and axis "
                                                           << shape_str(axis.shape()) << " must be scalars";
  std::vector<int64_t> reps(static_cast<size_t>(x.rank()), 1);
  reps[normalize_axis_for(axis.int64_at(0), x.rank(), c)] = tiles.int64_at(0);
  return reps;
}

// Upsample-1: height_scale and width_scale of an NCHW input.
std::vector<double> legacy_upsample_scales(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  KILN_USER_CHECK(x.rank() == 4) << "Upsample-1 takes an NCHW input, got " << shape_str(x.shape);
  KILN_USER_CHECK(c.has_attr("height_scale") && c.has_attr("width_scale"))
      << "attributes 'height_scale' and 'width_scale' are required";
  return {1.0, 1.0, c.attr_float("height_scale", 1.0), c.attr_float("width_scale", 1.0)};
}

namespace {
// ConstantFill (experimental, opsets 1 to 8): `value` of type `dtype` in the shape given by the
// `shape` attribute, by the input's values (input_as_shape=1) or by the input's shape, followed
// by extra_shape.
std::vector<Expr> constant_fill(NodeContext& c) {
  Shape shape;
  if (c.has_input(0)) {
    KILN_USER_CHECK(!c.has_attr("shape")) << "attribute 'shape' and an input cannot both give the shape";
    shape = c.attr_int("input_as_shape", 0) ? c.const_ints(0, "shape") : c.input_type(0).shape;
  } else {
    shape = c.attr_ints("shape", {});
  }
  for (int64_t d : c.attr_ints("extra_shape", {})) shape.push_back(d);
  for (int64_t d : shape) KILN_USER_CHECK(d >= 0) << "shape " << shape_str(shape) << " has a negative dim";
  DataType t = dtype_from_onnx(static_cast<int>(c.attr_int("dtype", ::onnx::TensorProto_DataType_FLOAT)), "attribute 'dtype'");
  HostTensor value = HostTensor::scalar(t, c.attr_float("value", 0.0));
  return {c.call("full", {}, Attrs().set_ints("shape", shape).set_tensor("value", value))};
}
}  // namespace

void register_legacy_converters(ConverterTable& t) { t["ConstantFill"] = constant_fill; }

}  // namespace kiln::relay::onnx_frontend
