// Nodes whose values are known at compile time: constants, and everything computed from static
// shapes (Shape, Size, ConstantOfShape, Range, EyeLike).
#include <algorithm>
#include <cmath>

#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

std::vector<Expr> constant(NodeContext& c) {
  if (c.has_attr("value")) return {c.constant(c.attr_tensor("value"))};
  if (c.has_attr("value_float")) return {c.constant(HostTensor::scalar(DataType::f32(), c.attr_float("value_float", 0)))};
  if (c.has_attr("value_int")) return {c.constant(HostTensor::from_int64s(DataType::i64(), {}, {c.attr_int("value_int")}))};
  if (c.has_attr("value_floats")) {
    auto v = c.attr_floats("value_floats", {});
    return {c.constant(HostTensor::from_doubles(DataType::f32(), {static_cast<int64_t>(v.size())}, v))};
  }
  if (c.has_attr("value_ints")) {
    auto v = c.attr_ints("value_ints");
    return {c.constant(HostTensor::from_int64s(DataType::i64(), {static_cast<int64_t>(v.size())}, v))};
  }
  KILN_SUPPORTED(!c.has_attr("value_string") && !c.has_attr("value_strings")) << "string constants are not supported";
  KILN_SUPPORTED(!c.has_attr("sparse_value")) << "sparse constants are not supported";
  KILN_THROW() << "a Constant needs one of value, value_float(s), value_int(s)";
  return {};
}

// Shape (with opset 15's start/end slicing) and Size: the input's static type answers them.
std::vector<Expr> shape(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "data");
  int64_t r = x.rank();
  int64_t start = c.attr_int("start", 0), end = c.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(x.shape[i]);
  return {c.constant(HostTensor::from_int64s(DataType::i64(), {static_cast<int64_t>(dims.size())}, dims))};
}

std::vector<Expr> size(NodeContext& c) {
  return {c.constant(HostTensor::from_int64s(DataType::i64(), {}, {c.input_type(0).num_elements()}))};
}

std::vector<Expr> constant_of_shape(NodeContext& c) {
  std::vector<int64_t> shape = c.const_ints(0, "input");
  HostTensor value = c.has_attr("value") ? c.attr_tensor("value") : HostTensor::scalar(DataType::f32(), 0.0);
  KILN_USER_CHECK(value.numel() == 1) << "attribute 'value' must hold one element, got " << value.str(4);
  return {c.call("full", {}, Attrs().set_ints("shape", shape).set_tensor("value", value.reshaped({})))};
}

std::vector<Expr> range(NodeContext& c) {
  HostTensor start = c.require_const(0, "start"), limit = c.require_const(1, "limit"), delta = c.require_const(2, "delta");
  DataType t = start.dtype();
  KILN_USER_CHECK(limit.dtype() == t && delta.dtype() == t) << "start, limit and delta must have one type";
  KILN_USER_CHECK(start.numel() == 1 && limit.numel() == 1 && delta.numel() == 1) << "start, limit and delta must be scalars";
  if (t.is_floating()) {
    double s = start.double_at(0), l = limit.double_at(0), d = delta.double_at(0);
    KILN_USER_CHECK(d != 0) << "delta must not be 0";
    int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((l - s) / d)));
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[i] = s + static_cast<double>(i) * d;
    return {c.constant(HostTensor::from_doubles(t, {n}, v))};
  }
  int64_t s = start.int64_at(0), l = limit.int64_at(0), d = delta.int64_at(0);
  KILN_USER_CHECK(d != 0) << "delta must not be 0";
  int64_t n = std::max<int64_t>(0, d > 0 ? (l - s + d - 1) / d : (s - l - d - 1) / (-d));
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = s + i * d;
  return {c.constant(HostTensor::from_int64s(t, {n}, v))};
}

std::vector<Expr> eye_like(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  KILN_USER_CHECK(x.rank() == 2) << "input must be 2-D, got " << shape_str(x.shape);
  DataType t = c.has_attr("dtype") ? dtype_from_onnx(static_cast<int>(c.attr_int("dtype")), "attribute 'dtype'") : x.dtype;
  int64_t k = c.attr_int("k", 0);
  std::vector<int64_t> v(static_cast<size_t>(x.num_elements()), 0);
  for (int64_t i = 0; i < x.shape[0]; ++i)
    if (i + k >= 0 && i + k < x.shape[1]) v[i * x.shape[1] + i + k] = 1;
  return {c.constant(HostTensor::from_int64s(t, x.shape, v))};
}

}  // namespace

void register_const_converters(ConverterTable& t) {
  t["Constant"] = constant;
  t["Shape"] = shape;
  t["Size"] = size;
  t["ConstantOfShape"] = constant_of_shape;
  t["Range"] = range;
  t["EyeLike"] = eye_like;
}

}  // namespace kiln::relay::onnx_frontend
