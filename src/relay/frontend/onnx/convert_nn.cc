// Convolution, pooling, normalization and softmax nodes. Padding is resolved here (auto_pad,
// output_shape) so that the graph ops carry explicit pads.
#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;
};

// Kernel, strides, dilations and explicit pads of a conv or pool node over `d` spatial dims.
// auto_pad SAME_* pads so that out = ceil(in / stride), the odd pixel at the end (UPPER) or the
// beginning (LOWER); VALID pads nothing.
Window read_window(const NodeContext& c, const Shape& in, size_t d, std::vector<int64_t> kernel) {
  Window w;
  w.kernel = std::move(kernel);
  w.strides = c.attr_ints("strides", std::vector<int64_t>(d, 1));
  w.dilations = c.attr_ints("dilations", std::vector<int64_t>(d, 1));
  w.pads = c.attr_ints("pads", std::vector<int64_t>(2 * d, 0));
  // The first exporters (PyTorch 0.2, IR version 1, opset 1) gave one symmetric pad per axis.
  if (c.opset() < 7 && w.pads.size() == d) {
    std::vector<int64_t> begin = w.pads;
    w.pads.insert(w.pads.end(), begin.begin(), begin.end());
  }
  KILN_USER_CHECK(w.kernel.size() == d && w.strides.size() == d && w.dilations.size() == d && w.pads.size() == 2 * d)
      << "kernel_shape " << shape_str(w.kernel) << ", strides " << shape_str(w.strides) << ", dilations "
      << shape_str(w.dilations) << " and pads " << shape_str(w.pads) << " do not fit " << d << " spatial dims";
  std::string auto_pad = c.attr_str("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < d; ++i) {
      KILN_USER_CHECK(w.strides[i] >= 1) << "strides " << shape_str(w.strides) << " must be positive";
      int64_t out = (in[i] + w.strides[i] - 1) / w.strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + w.dilations[i] * (w.kernel[i] - 1) + 1 - in[i]);
      int64_t small = total / 2, big = total - small;
      w.pads[i] = auto_pad == "SAME_UPPER" ? small : big;
      w.pads[d + i] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad == "VALID") {
    w.pads.assign(2 * d, 0);
  } else {
    KILN_USER_CHECK(auto_pad == "NOTSET") << "unknown auto_pad '" << auto_pad << "'";
  }
  return w;
}

size_t spatial_dims(const TensorTypeNode& x, const char* what) {
  KILN_USER_CHECK(x.rank() >= 3 && x.rank() <= 5) << what << " supports 1 to 3 spatial dims, input is "
                                                  << shape_str(x.shape);
  return static_cast<size_t>(x.rank() - 2);
}

Shape spatial(const Shape& s) { return Shape(s.begin() + 2, s.end()); }

std::vector<Expr> conv(NodeContext& c) {
  Expr y = conv_of(c, c.input(0, "X"), c.input(1, "W"));
  if (c.has_input(2)) y = c.call("nn.bias_add", {y, c.input(2)}, Attrs().set_int("axis", 1));
  return {y};
}

std::vector<Expr> conv_transpose(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "X");
  const TensorTypeNode& w = c.input_type(1, "W");
  size_t d = spatial_dims(x, "ConvTranspose");
  KILN_USER_CHECK(w.rank() == x.rank()) << "weight " << shape_str(w.shape) << " must have the rank of the input";
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape", spatial(w.shape));
  std::vector<int64_t> strides = c.attr_ints("strides", std::vector<int64_t>(d, 1));
  std::vector<int64_t> dil = c.attr_ints("dilations", std::vector<int64_t>(d, 1));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * d, 0));
  std::vector<int64_t> out_pad = c.attr_ints("output_padding", std::vector<int64_t>(d, 0));
  KILN_USER_CHECK(kernel.size() == d && strides.size() == d && dil.size() == d && pads.size() == 2 * d &&
                  out_pad.size() == d)
      << "kernel_shape, strides, dilations, pads or output_padding do not fit " << d << " spatial dims";
  std::string auto_pad = c.attr_str("auto_pad", "NOTSET");
  std::vector<int64_t> out_shape = c.attr_ints("output_shape", {});
  if (out_shape.size() == d + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (out_shape.empty() && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")) {
    for (size_t i = 0; i < d; ++i) out_shape.push_back(x.shape[2 + i] * strides[i]);
  }
  if (auto_pad == "VALID") pads.assign(2 * d, 0);
  if (!out_shape.empty()) {
    // The pads that give the requested size; SAME_UPPER puts the odd one at the beginning (spec).
    KILN_USER_CHECK(out_shape.size() == d) << "output_shape " << shape_str(out_shape) << " does not fit " << d
                                           << " spatial dims";
    for (size_t i = 0; i < d; ++i) {
      int64_t full = strides[i] * (x.shape[2 + i] - 1) + out_pad[i] + dil[i] * (kernel[i] - 1) + 1;
      int64_t total = full - out_shape[i];
      if (total < 0) {  // a bigger output than the full one: extra zero rows at the end
        out_pad[i] += -total;
        total = 0;
      }
      int64_t half = total / 2;
      pads[i] = auto_pad == "SAME_UPPER" ? half : total - half;
      pads[d + i] = total - pads[i];
    }
  }
  Attrs a;
  a.set_ints("strides", strides).set_ints("padding", pads).set_ints("dilation", dil);
  a.set_int("groups", c.attr_int("group", 1)).set_ints("output_padding", out_pad);
  Expr y = c.call("nn.conv" + std::to_string(d) + "d_transpose", {c.input(0), c.input(1)}, a);
  if (c.has_input(2)) y = c.call("nn.bias_add", {y, c.input(2)}, Attrs().set_int("axis", 1));
  return {y};
}

Converter pool(const std::string& kind) {
  return [kind](NodeContext& c) -> std::vector<Expr> {
    const TensorTypeNode& x = c.input_type(0, "X");
    size_t d = spatial_dims(x, kind.c_str());
    KILN_SUPPORTED(!c.output_used(1)) << "the Indices output of MaxPool is not supported";
    Window win = read_window(c, spatial(x.shape), d, c.attr_ints("kernel_shape"));
    Attrs a;
    a.set_ints("kernel", win.kernel).set_ints("strides", win.strides).set_ints("padding", win.pads);
    a.set_ints("dilation", win.dilations).set_int("ceil_mode", c.attr_int("ceil_mode", 0));
    if (kind == "avg") a.set_int("count_include_pad", c.attr_int("count_include_pad", 0));
    if (kind == "lp") a.set_int("p", c.attr_int("p", 2));
    return {c.call("nn." + kind + "_pool" + std::to_string(d) + "d", {c.input(0)}, a)};
  };
}

std::vector<Expr> batch_norm(NodeContext& c) {
  KILN_SUPPORTED(c.attr_int("training_mode", 0) == 0 && !c.output_used(1) && !c.output_used(2))
      << "training-mode batch normalization is not supported (kiln compiles inference graphs)";
  // Opsets 1 to 6's is_test and consumed_inputs are hints that change nothing in inference.
  // spatial=0 (per-feature statistics) exists up to opset 8.
  if (c.attr_int("spatial", 1) == 0) {
    KILN_SUPPORTED(c.opset() < 9) << "attribute 'spatial'=0 is not part of opset " << c.opset()
                                  << " (BatchNormalization dropped it in opset 9)";
    return {batch_norm_per_feature(c)};
  }
  std::vector<Expr> args;
  const char* roles[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 0; i < 5; ++i) args.push_back(c.input(i, roles[i]));
  Attrs a;
  a.set_float("epsilon", c.attr_float("epsilon", 1e-5)).set_int("axis", 1);
  return {c.call("nn.batch_norm", args, a)};
}

std::vector<Expr> layer_norm(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "X");
  int64_t axis = normalize_axis_for(c.attr_int("axis", -1), x.rank(), c);
  double eps = c.attr_float("epsilon", 1e-5);
  std::vector<Expr> args = {c.input(0), c.input(1, "Scale")};
  if (c.has_input(2)) args.push_back(c.input(2));
  std::vector<Expr> outs = {c.call("nn.layer_norm", args, Attrs().set_int("axis", axis).set_float("epsilon", eps))};
  if (c.output_used(1) || c.output_used(2)) {
    // The statistics outputs, spelled out: mean and 1/sqrt(var + eps) over the normalized dims.
    std::vector<int64_t> axes;
    for (int64_t i = axis; i < x.rank(); ++i) axes.push_back(i);
    Attrs r = Attrs().set_ints("axes", axes).set_int("keepdims", 1);
    Expr mean = c.call("mean", {c.input(0)}, r);
    Expr centered = c.call("subtract", {c.input(0), mean});
    Expr var = c.call("mean", {c.call("multiply", {centered, centered})}, r);
    outs.push_back(mean);
    outs.push_back(c.call("rsqrt", {c.call("add", {var, c.scalar(x.dtype, eps)})}));
  }
  return outs;
}

std::vector<Expr> group_norm(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "X");
  int64_t groups = c.attr_int("num_groups");
  KILN_USER_CHECK(x.rank() >= 3 && groups >= 1 && x.shape[1] % groups == 0)
      << "num_groups " << groups << " must divide the channels of " << shape_str(x.shape);
  Expr scale = c.input(1, "scale"), bias = c.input(2, "bias");
  if (c.opset() < 21) {
    // Opset 18 gave one scale per group; repeat each for the group's channels.
    int64_t per = x.shape[1] / groups;
    std::vector<int64_t> idx;
    for (int64_t ch = 0; ch < x.shape[1]; ++ch) idx.push_back(ch / per);
    Expr index = c.constant(HostTensor::from_int64s(DataType::i64(), {x.shape[1]}, idx));
    scale = c.call("take", {scale, index}, Attrs().set_int("axis", 0));
    bias = c.call("take", {bias, index}, Attrs().set_int("axis", 0));
  }
  Attrs a;
  a.set_int("num_groups", groups).set_float("epsilon", c.attr_float("epsilon", 1e-5));
  return {c.call("nn.group_norm", {c.input(0), scale, bias}, a)};
}

Converter softmax(const std::string& op) {
  return [op](NodeContext& c) -> std::vector<Expr> {
    const TensorTypeNode& x = c.input_type(0);
    if (c.opset() >= 13) {
      int64_t axis = normalize_axis_for(c.attr_int("axis", -1), x.rank(), c);
      return {c.call(op, {c.input(0)}, Attrs().set_int("axis", axis))};
    }
    // Before opset 13 the input is seen as 2-D [prod(dims < axis), prod(dims >= axis)].
    int64_t axis = normalize_axis_for(c.attr_int("axis", 1), std::max<int64_t>(x.rank(), 1), c);
    int64_t outer = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= x.shape[i];
    Expr flat = c.call("reshape", {c.input(0)}, Attrs().set_ints("newshape", {outer, x.num_elements() / std::max<int64_t>(outer, 1)}));
    Expr y = c.call(op, {flat}, Attrs().set_int("axis", 1));
    return {c.call("reshape", {y}, Attrs().set_ints("newshape", x.shape))};
  };
}

std::vector<Expr> mean_variance_norm(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  auto axes = normalize_axes_for(c.attr_ints("axes", {0, 2, 3}), x.rank(), c);
  Attrs r = Attrs().set_ints("axes", axes).set_int("keepdims", 1);
  Expr centered = c.call("subtract", {c.input(0), c.call("mean", {c.input(0)}, r)});
  Expr var = c.call("mean", {c.call("multiply", {centered, centered})}, r);
  Expr std = c.call("sqrt", {c.call("add", {var, c.scalar(x.dtype, 1e-9)})});
  return {c.call("divide", {centered, std})};
}

std::vector<Expr> lp_norm(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  int64_t axis = normalize_axis_for(c.attr_int("axis", -1), x.rank(), c);
  int64_t p = c.attr_int("p", 2);
  KILN_USER_CHECK(p == 1 || p == 2) << "attribute 'p' must be 1 or 2, got " << p;
  Attrs r = Attrs().set_ints("axes", {axis}).set_int("keepdims", 1);
  Expr norm = p == 1 ? c.call("sum", {c.call("abs", {c.input(0)})}, r)
                     : c.call("sqrt", {c.call("sum", {c.call("multiply", {c.input(0), c.input(0)})}, r)});
  // A zero norm means an all-zero slice, which stays zero (as in onnxruntime and the ONNX
  // reference outputs): dividing by 1 there instead of 0 avoids 0/0 = NaN.
  Expr zero = c.scalar(x.dtype, 0), one = c.scalar(x.dtype, 1);
  Expr safe = c.call("where", {c.call("equal", {norm, zero}), one, norm});
  return {c.call("divide", {c.input(0), safe})};
}

}  // namespace

Expr conv_of(NodeContext& c, const Expr& data, const Expr& weight) {
  const TensorTypeNode& x = data.tensor_type();
  const TensorTypeNode& w = weight.tensor_type();
  size_t d = spatial_dims(x, c.node().op_type().c_str());
  KILN_USER_CHECK(w.rank() == x.rank()) << "weight " << shape_str(w.shape) << " must have the rank of the input";
  Window win = read_window(c, spatial(x.shape), d, c.attr_ints("kernel_shape", spatial(w.shape)));
  KILN_USER_CHECK(win.kernel == spatial(w.shape)) << "kernel_shape " << shape_str(win.kernel)
                                                  << " does not match the weight " << shape_str(w.shape);
  Attrs a;
  a.set_ints("strides", win.strides).set_ints("padding", win.pads).set_ints("dilation", win.dilations);
  a.set_int("groups", c.attr_int("group", 1));
  return c.call("nn.conv" + std::to_string(d) + "d", {data, weight}, a);
}

void register_nn_converters(ConverterTable& t) {
  t["Conv"] = conv;
  t["ConvTranspose"] = conv_transpose;
  t["MaxPool"] = pool("max");
  t["AveragePool"] = pool("avg");
  t["LpPool"] = pool("lp");
  t["GlobalAveragePool"] = [](NodeContext& c) -> std::vector<Expr> { return {c.call("nn.global_avg_pool", {c.input(0)})}; };
  t["GlobalMaxPool"] = [](NodeContext& c) -> std::vector<Expr> { return {c.call("nn.global_max_pool", {c.input(0)})}; };
  t["BatchNormalization"] = batch_norm;
  t["LayerNormalization"] = layer_norm;
  t["InstanceNormalization"] = [](NodeContext& c) -> std::vector<Expr> {
    return {c.call("nn.instance_norm", {c.input(0), c.input(1, "scale"), c.input(2, "B")},
                   Attrs().set_float("epsilon", c.attr_float("epsilon", 1e-5)))};
  };
  t["GroupNormalization"] = group_norm;
  t["LRN"] = [](NodeContext& c) -> std::vector<Expr> {
    Attrs a;
    a.set_int("size", c.attr_int("size")).set_float("alpha", c.attr_float("alpha", 1e-4));
    a.set_float("beta", c.attr_float("beta", 0.75)).set_float("bias", c.attr_float("bias", 1.0));
    return {c.call("nn.lrn", {c.input(0)}, a)};
  };
  t["Softmax"] = softmax("nn.softmax");
  t["LogSoftmax"] = softmax("nn.log_softmax");
  t["MeanVarianceNormalization"] = mean_variance_norm;
  t["LpNormalization"] = lp_norm;
}

}  // namespace kiln::relay::onnx_frontend
