// Small tensor operators, each decomposed into graph ops where that is exact: Hardmax,
// BitCast, CenterCropPad, the Hann / Hamming / Blackman windows, ReverseSequence, Det and
// MaxUnpool.
#include <cmath>

#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

Expr reshape_to(NodeContext& c, const Expr& x, const Shape& shape) {
  return c.call("reshape", {x}, Attrs().set_ints("newshape", shape));
}

// Hardmax: 1 at the first largest element along the axis, 0 elsewhere: one_hot of argmax. Before
// opset 13 the input is seen as 2-D [prod(dims < axis), prod(dims >= axis)], as for Softmax.
std::vector<Expr> hardmax(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  KILN_USER_CHECK(x.rank() >= 1) << "input must have rank >= 1, got a scalar";
  Expr in = c.input(0);
  int64_t axis;
  if (c.opset() >= 13) {
    axis = normalize_axis_for(c.attr_int("axis", -1), x.rank(), c);
  } else {
    int64_t outer = 1, coerce = normalize_axis_for(c.attr_int("axis", 1), x.rank(), c);
    for (int64_t i = 0; i < coerce; ++i) outer *= x.shape[i];
    in = reshape_to(c, in, {outer, x.num_elements() / std::max<int64_t>(outer, 1)});
    axis = 1;
  }
  int64_t depth = in.tensor_type().shape[axis];
  Expr idx = c.call("argmax", {in},
                    Attrs().set_int("axis", axis).set_int("keepdims", 0).set_int("select_last_index", 0));
  Expr on_off = c.constant(HostTensor::from_doubles(x.dtype, {2}, {0.0, 1.0}));
  Expr y = c.call("one_hot", {idx, on_off}, Attrs().set_int("depth", depth).set_int("axis", axis));
  return {c.opset() >= 13 ? y : reshape_to(c, y, x.shape)};
}

// BitCast: the same bits read as another type of the same width.
std::vector<Expr> bitcast(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  DataType to = dtype_from_onnx(static_cast<int>(c.attr_int("to")), "attribute 'to'");
  KILN_USER_CHECK(to.bytes() == x.dtype.bytes())
      << "BitCast from " << x.dtype.str() << " (" << x.dtype.bytes() << " bytes) to " << to.str() << " (" << to.bytes()
      << " bytes) changes the element width";
  return {c.call("reinterpret", {c.input(0)}, Attrs().set_str("dtype", to.str()))};
}

// CenterCropPad: each listed axis cropped or zero-padded to the given size around its center
// (the extra element of an odd difference goes to the end). nn.pad does both: a negative pad
// crops.
std::vector<Expr> center_crop_pad(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "input_data");
  std::vector<int64_t> sizes = c.const_ints(1, "shape");
  std::vector<int64_t> axes;
  if (c.has_attr("axes")) {
    axes = c.attr_ints("axes");
    for (auto& a : axes) a = normalize_axis_for(a, x.rank(), c);
  } else {
    for (int64_t i = 0; i < x.rank(); ++i) axes.push_back(i);
  }
  KILN_USER_CHECK(sizes.size() == axes.size()) << "shape has " << sizes.size() << " sizes for " << axes.size()
                                               << " axes";
  std::vector<int64_t> pads(2 * x.rank(), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    KILN_USER_CHECK(sizes[i] >= 0) << "shape " << shape_str(sizes) << " has a negative size";
    int64_t diff = sizes[i] - x.shape[axes[i]];
    int64_t before = diff >= 0 ? diff / 2 : -((-diff) / 2);
    pads[axes[i]] += before;
    pads[x.rank() + axes[i]] += diff - before;
  }
  Attrs a = Attrs().set_ints("pad_width", pads).set_str("mode", "constant").set_float("pad_value", 0.0);
  return {c.call("nn.pad", {c.input(0)}, a)};
}

// The cosine windows: w[n] = a0 - a1 cos(2 pi n / M) + a2 cos(4 pi n / M), M = N (periodic) or
// N - 1 (symmetric). A constant: the size must be known at compile time.
Converter window(double a0, double a1, double a2) {
  return [=](NodeContext& c) -> std::vector<Expr> {
    // Not a constant: CompileTimeInputError names the graph inputs to bind (kiln's static shapes).
    HostTensor size = c.require_const(0, "size");
    KILN_USER_CHECK(size.numel() == 1 && size.dtype().is_integer()) << "size must be an integer scalar, got "
                                                                    << size.dtype().str() << shape_str(size.shape());
    int64_t n = size.int64_at(0);
    KILN_USER_CHECK(n >= 0) << "size must not be negative, got " << n;
    DataType t = dtype_from_onnx(static_cast<int>(c.attr_int("output_datatype", 1)), "attribute 'output_datatype'");
    double m = static_cast<double>(c.attr_int("periodic", 1) ? n : n - 1);
    std::vector<double> w(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      double p = 2.0 * M_PI * static_cast<double>(i) / m;
      // A symmetric window of one element has M = 0: 1, as numpy's and torch's windows (the
      // formula would divide 0 by 0).
      w[i] = m == 0 ? 1.0 : a0 - a1 * std::cos(p) + a2 * std::cos(2.0 * p);
    }
    return {c.constant(HostTensor::from_doubles(t, {n}, w))};
  };
}

// ReverseSequence: along time_axis, the first sequence_lens[b] elements of each batch entry b
// reversed, the rest kept: a gather along the time axis of index len-1-t (t < len) or t.
std::vector<Expr> reverse_sequence(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  const TensorTypeNode& lens_t = c.input_type(1, "sequence_lens");
  int64_t batch = c.attr_int("batch_axis", 1), time = c.attr_int("time_axis", 0);
  KILN_USER_CHECK(x.rank() >= 2) << "input must have rank >= 2, got " << shape_str(x.shape);
  KILN_USER_CHECK((batch == 0 && time == 1) || (batch == 1 && time == 0))
      << "batch_axis " << batch << " and time_axis " << time << " must be 0 and 1 in some order";
  KILN_USER_CHECK(lens_t.shape == Shape{x.shape[batch]} && lens_t.dtype.is_integer())
      << "sequence_lens must be an integer [" << x.shape[batch] << "], got " << lens_t.dtype.str()
      << shape_str(lens_t.shape);
  int64_t steps = x.shape[time];
  Shape tshape(x.rank(), 1), bshape(x.rank(), 1);
  tshape[time] = steps;
  bshape[batch] = x.shape[batch];
  std::vector<int64_t> ts(static_cast<size_t>(steps));
  for (int64_t i = 0; i < steps; ++i) ts[i] = i;
  Expr t = c.constant(HostTensor::from_int64s(DataType::i64(), tshape, ts));
  Expr len = reshape_to(c, cast_to(c, c.input(1), DataType::i64()), bshape);
  Expr rev = c.call("subtract", {c.call("subtract", {len, c.scalar(DataType::i64(), 1)}), t});
  Expr idx = c.call("where", {c.call("less", {t, len}), rev, t});
  idx = c.call("broadcast_to", {idx}, Attrs().set_ints("shape", x.shape));
  return {c.call("gather_elements", {c.input(0), idx}, Attrs().set_int("axis", time))};
}

// Det of [..., M, M] in closed form (cofactor expansion) for M <= 3.
std::vector<Expr> det(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  KILN_USER_CHECK(x.rank() >= 2 && x.shape[x.rank() - 1] == x.shape[x.rank() - 2])
      << "input must be [..., M, M], got " << shape_str(x.shape);
  KILN_USER_CHECK(x.dtype.is_floating()) << "input must be floating, got " << x.dtype.str();
  int64_t m = x.shape.back(), r = x.rank();
  KILN_SUPPORTED(m >= 1 && m <= 3) << "Det of " << m << "x" << m << " matrices is not supported (only up to 3x3)";
  Shape batch(x.shape.begin(), x.shape.end() - 2);
  auto at = [&](int64_t i, int64_t j) {
    std::vector<int64_t> begin(r, 0), end(x.shape.begin(), x.shape.end()), strides(r, 1);
    begin[r - 2] = i, end[r - 2] = i + 1, begin[r - 1] = j, end[r - 1] = j + 1;
    Attrs a = Attrs().set_ints("begin", begin).set_ints("end", end).set_ints("strides", strides);
    return reshape_to(c, c.call("strided_slice", {c.input(0)}, a), batch);
  };
  auto mul = [&](const Expr& a, const Expr& b) { return c.call("multiply", {a, b}); };
  auto sub = [&](const Expr& a, const Expr& b) { return c.call("subtract", {a, b}); };
  auto det2 = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    return sub(mul(at(r0, c0), at(r1, c1)), mul(at(r0, c1), at(r1, c0)));
  };
  if (m == 1) return {at(0, 0)};
  if (m == 2) return {det2(0, 1, 0, 1)};
  Expr y = sub(mul(at(0, 0), det2(1, 2, 1, 2)), mul(at(0, 1), det2(1, 2, 0, 2)));
  return {c.call("add", {y, mul(at(0, 2), det2(1, 2, 0, 1))})};
}

// MaxUnpool: X's values written at their flat indices (over the whole [N, C, d..] tensor, as
// MaxPool's Indices count) into zeros of the unpooled shape, then zero-padded at the end of each
// dim to output_shape when that is given.
std::vector<Expr> max_unpool(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "X");
  const TensorTypeNode& idx = c.input_type(1, "I");
  KILN_USER_CHECK(x.rank() >= 3) << "X must be [N, C, d1..dk], got " << shape_str(x.shape);
  KILN_USER_CHECK(idx.shape == x.shape) << "I " << shape_str(idx.shape) << " must have the shape of X "
                                        << shape_str(x.shape);
  size_t k = static_cast<size_t>(x.rank() - 2);
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape");
  std::vector<int64_t> strides = c.attr_ints("strides", std::vector<int64_t>(k, 1));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
  KILN_USER_CHECK(kernel.size() == k && strides.size() == k && pads.size() == 2 * k)
      << "kernel_shape, strides and pads must have " << k << ", " << k << " and " << 2 * k << " values for X "
      << shape_str(x.shape);
  Shape inferred = x.shape;
  for (size_t d = 0; d < k; ++d) inferred[2 + d] = (x.shape[2 + d] - 1) * strides[d] - pads[d] - pads[k + d] + kernel[d];
  int64_t total = 1;
  for (int64_t v : inferred) total *= v;
  Expr zeros = c.call("full", {}, Attrs().set_ints("shape", {total}).set_tensor("value", HostTensor::scalar(x.dtype, 0)));
  Expr flat_i = reshape_to(c, c.input(1), {x.num_elements()});
  Expr flat_x = reshape_to(c, c.input(0), {x.num_elements()});
  Attrs sa = Attrs().set_int("axis", 0).set_str("reduction", "none");
  Expr y = reshape_to(c, c.call("scatter_elements", {zeros, flat_i, flat_x}, sa), inferred);
  if (!c.has_input(2)) return {y};
  std::vector<int64_t> out = c.const_ints(2, "output_shape");
  KILN_USER_CHECK(static_cast<int64_t>(out.size()) == x.rank()) << "output_shape " << shape_str(out)
                                                                 << " must have the rank of X " << shape_str(x.shape);
  std::vector<int64_t> pad_width(2 * out.size(), 0);
  for (size_t d = 0; d < out.size(); ++d) {
    KILN_USER_CHECK(out[d] >= inferred[d]) << "output_shape " << shape_str(out) << " is smaller than the unpooled shape "
                                           << shape_str(inferred);
    pad_width[out.size() + d] = out[d] - inferred[d];
  }
  Attrs pa = Attrs().set_ints("pad_width", pad_width).set_str("mode", "constant").set_float("pad_value", 0.0);
  return {c.call("nn.pad", {y}, pa)};
}

}  // namespace

void register_misc_converters(ConverterTable& t) {
  t["Hardmax"] = hardmax;
  t["BitCast"] = bitcast;
  t["CenterCropPad"] = center_crop_pad;
  t["HannWindow"] = window(0.5, 0.5, 0.0);
  t["HammingWindow"] = window(25.0 / 46.0, 21.0 / 46.0, 0.0);
  t["BlackmanWindow"] = window(0.42, 0.5, 0.08);
  t["ReverseSequence"] = reverse_sequence;
  t["Det"] = det;
  t["MaxUnpool"] = max_unpool;
}

}  // namespace kiln::relay::onnx_frontend
