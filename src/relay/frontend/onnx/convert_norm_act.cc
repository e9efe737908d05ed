// Normalization and gated-activation nodes of the newer opsets (RMSNormalization, SwiGLU,
// CausalConvWithState), decomposed into graph ops as the ONNX reference computes them.
#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

// Y = X / sqrt(mean(X^2 over the dims from `axis` on) + epsilon) * Scale. The statistics are
// computed in stash_type (float32 by default): an fp16 sum of squares would lose the small
// values and overflow on the large ones.
std::vector<Expr> rms_norm(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "X");
  const TensorTypeNode& w = c.input_type(1, "scale");
  KILN_USER_CHECK(x.dtype.is_floating() && w.dtype == x.dtype)
      << "X " << x.dtype.str() << " and scale " << w.dtype.str() << " must be floating-point tensors of one type";
  int64_t axis = normalize_axis_for(c.attr_int("axis", -1), x.rank(), c);
  DataType stash = dtype_from_onnx(static_cast<int>(c.attr_int("stash_type", 1)), "attribute 'stash_type'");
  KILN_USER_CHECK(stash.is_floating()) << "stash_type must be a floating-point type, got " << stash.str();
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < x.rank(); ++i) axes.push_back(i);
  Expr xs = cast_to(c, c.input(0), stash);
  Expr ms = c.call("mean", {c.call("multiply", {xs, xs})}, Attrs().set_ints("axes", axes).set_int("keepdims", 1));
  Expr rms = c.call("sqrt", {c.call("add", {ms, c.scalar(stash, c.attr_float("epsilon", 1e-5))})});
  Expr y = c.call("multiply", {xs, c.call("divide", {c.scalar(stash, 1), rms})});
  return {c.call("multiply", {cast_to(c, y, x.dtype), c.input(1)})};
}

// SwiGLU(A, B) = A * sigmoid(alpha * A) * B, on equal shapes (the op does not broadcast).
std::vector<Expr> swiglu(NodeContext& c) {
  const TensorTypeNode& a = c.input_type(0, "A");
  const TensorTypeNode& b = c.input_type(1, "B");
  KILN_USER_CHECK(a.dtype.is_floating() && a.dtype == b.dtype && a.shape == b.shape)
      << "A " << a.dtype.str() << shape_str(a.shape) << " and B " << b.dtype.str() << shape_str(b.shape)
      << " must be floating-point tensors of one type and one shape (SwiGLU does not broadcast)";
  double alpha = c.attr_float("alpha", 1.0);
  Expr in = alpha == 1.0 ? c.input(0) : c.call("multiply", {c.input(0), c.scalar(a.dtype, alpha)});
  Expr swish = c.call("multiply", {c.input(0), c.call("sigmoid", {in})});
  return {c.call("multiply", {swish, c.input(1)})};
}

// A depthwise causal conv1d over [B, C, L] whose left context is past_state (zeros when absent):
// output = act(conv(past ++ input) + bias), present_state = the last k-1 steps of past ++ input.
std::vector<Expr> causal_conv_with_state(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "input");
  const TensorTypeNode& w = c.input_type(1, "weight");
  KILN_USER_CHECK(x.rank() == 3 && x.dtype.is_floating())
      << "input " << x.dtype.str() << shape_str(x.shape) << " must be a floating-point [batch, channels, length]";
  int64_t batch = x.shape[0], ch = x.shape[1], len = x.shape[2];
  KILN_USER_CHECK(w.rank() == 3 && w.shape[0] == ch && w.shape[1] == 1 && w.shape[2] >= 1 && w.dtype == x.dtype)
      << "weight " << w.dtype.str() << shape_str(w.shape) << " must be " << x.dtype.str() << "[" << ch << ",1,k]";
  int64_t k = w.shape[2];
  std::string act = c.attr_str("activation", "none");
  KILN_USER_CHECK(act == "none" || act == "silu" || act == "swish")
      << "attribute 'activation' must be 'none', 'silu' or 'swish', got '" << act << "'";
  Expr padded = c.input(0);
  if (k > 1) {
    Expr past;
    if (c.has_input(3)) {
      const TensorTypeNode& p = c.input_type(3, "past_state");
      KILN_USER_CHECK(p.dtype == x.dtype && p.shape == Shape({batch, ch, k - 1}))
          << "past_state " << p.dtype.str() << shape_str(p.shape) << " must be " << x.dtype.str() << "[" << batch << ","
          << ch << "," << k - 1 << "]";
      past = c.input(3);
    } else {
      past = c.constant(HostTensor::zeros(x.dtype, {batch, ch, k - 1}));
    }
    padded = c.call("concatenate", {past, c.input(0)}, Attrs().set_int("axis", 2));
  }
  Attrs a;
  a.set_ints("strides", {1}).set_ints("padding", {0, 0}).set_ints("dilation", {1}).set_int("groups", ch);
  Expr y = c.call("nn.conv1d", {padded, c.input(1)}, a);
  if (c.has_input(2)) {
    const TensorTypeNode& b = c.input_type(2, "bias");
    KILN_USER_CHECK(b.dtype == x.dtype && b.shape == Shape({ch}))
        << "bias " << b.dtype.str() << shape_str(b.shape) << " must be " << x.dtype.str() << "[" << ch << "]";
    y = c.call("nn.bias_add", {y, c.input(2)}, Attrs().set_int("axis", 1));
  }
  if (act != "none") {
    // SiLU in float32 (as the reference), then back to the input type.
    Expr yf = cast_to(c, y, DataType::f32());
    y = cast_to(c, c.call("multiply", {yf, c.call("sigmoid", {yf})}), x.dtype);
  }
  Expr present;
  if (k > 1) {
    int64_t total = len + k - 1;
    Attrs s;
    s.set_ints("begin", {0, 0, total - (k - 1)}).set_ints("end", {batch, ch, total}).set_ints("strides", {1, 1, 1});
    present = c.call("strided_slice", {padded}, s);
  } else {
    present = c.constant(HostTensor::zeros(x.dtype, {batch, ch, 0}));
  }
  return {y, present};
}

}  // namespace

void register_norm_act_converters(ConverterTable& t) {
  t["RMSNormalization"] = rms_norm;
  t["SwiGLU"] = swiglu;
  t["CausalConvWithState"] = causal_conv_with_state;
}

}  // namespace kiln::relay::onnx_frontend
