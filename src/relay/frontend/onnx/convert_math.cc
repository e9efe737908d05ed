// Matrix products and reductions.
#include <algorithm>

#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

Expr transpose2d(NodeContext& c, const Expr& x) { return c.call("transpose", {x}, Attrs().set_ints("axes", {1, 0})); }

// Gemm: alpha * A' B' + beta * C, as dense (whose weight is [N,K], i.e. B with transB=1).
std::vector<Expr> gemm(NodeContext& c) {
  const TensorTypeNode& a = c.input_type(0, "A");
  const TensorTypeNode& b = c.input_type(1, "B");
  KILN_USER_CHECK(a.rank() == 2 && b.rank() == 2) << "A " << shape_str(a.shape) << " and B " << shape_str(b.shape)
                                                  << " must be matrices";
  double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  Expr A = c.attr_int("transA", 0) ? transpose2d(c, c.input(0)) : c.input(0);
  Expr B = c.attr_int("transB", 0) ? c.input(1) : transpose2d(c, c.input(1));
  Expr y = c.call("nn.dense", {A, B});
  if (alpha != 1.0) y = c.call("multiply", {y, c.scalar(a.dtype, alpha)});
  if (c.has_input(2) && beta != 0.0) {
    Expr bias = c.input(2);
    if (beta != 1.0) bias = c.call("multiply", {bias, c.scalar(a.dtype, beta)});
    y = c.call("add", {y, bias});
  }
  return {y};
}

std::vector<Expr> einsum(NodeContext& c) {
  std::string eq;
  for (char ch : c.attr_str("equation", "")) {
    if (ch != ' ') eq += ch;
  }
  KILN_USER_CHECK(!eq.empty()) << "attribute 'equation' is required";
  std::vector<Expr> args;
  for (size_t i = 0; i < c.num_inputs(); ++i) args.push_back(c.input(i));
  return {c.call("einsum", args, Attrs().set_str("equation", eq))};
}

// The axes of a Reduce* node: an attribute before the opset that made them an input (13 for
// ReduceSum, 18 for the others); none means all axes, or no reduction with noop_with_empty_axes.
std::optional<std::vector<int64_t>> reduce_axes(NodeContext& c, int input_since) {
  const TensorTypeNode& x = c.input_type(0, "data");
  std::vector<int64_t> axes;
  if (c.opset() >= input_since) {
    if (c.has_input(1)) axes = c.const_ints(1, "axes");
  } else {
    axes = c.attr_ints("axes", {});
  }
  if (axes.empty()) {
    if (c.attr_int("noop_with_empty_axes", 0)) return std::nullopt;
    for (int64_t i = 0; i < x.rank(); ++i) axes.push_back(i);
  }
  return normalize_axes_for(axes, x.rank(), c);
}

// kind: the relay reduction; pre/post: what surrounds it (ReduceL2 = sqrt(sum(x*x)), ...).
Converter reduce(const std::string& kind, int input_since, const std::string& pre = "", const std::string& post = "") {
  return [=](NodeContext& c) -> std::vector<Expr> {
    auto axes = reduce_axes(c, input_since);
    if (!axes) return {c.call("identity", {c.input(0)})};
    Attrs a = Attrs().set_ints("axes", *axes).set_int("keepdims", c.attr_int("keepdims", 1));
    Expr x = c.input(0);
    if (pre == "square") x = c.call("multiply", {x, x});
    if (pre == "abs") x = c.call("abs", {x});
    if (pre == "exp") x = c.call("exp", {x});
    Expr y = c.call(kind, {x}, a);
    if (!post.empty()) y = c.call(post, {y});
    return {y};
  };
}

// log(sum(exp(x))) computed as m + log(sum(exp(x - m))), m = max(x), so large x do not overflow.
std::vector<Expr> reduce_log_sum_exp(NodeContext& c) {
  auto axes = reduce_axes(c, 18);
  if (!axes) return {c.call("identity", {c.input(0)})};
  int64_t keep = c.attr_int("keepdims", 1);
  Expr m = c.call("max", {c.input(0)}, Attrs().set_ints("axes", *axes).set_int("keepdims", 1));
  Expr s = c.call("sum", {c.call("exp", {c.call("subtract", {c.input(0), m})})},
                  Attrs().set_ints("axes", *axes).set_int("keepdims", keep));
  if (!keep) m = c.call("reshape", {m}, Attrs().set_ints("newshape", s.tensor_type().shape));
  return {c.call("add", {c.call("log", {s}), m})};
}

Converter arg_reduce(const std::string& op) {
  return [op](NodeContext& c) -> std::vector<Expr> {
    const TensorTypeNode& x = c.input_type(0, "data");
    Attrs a;
    a.set_int("axis", normalize_axis_for(c.attr_int("axis", 0), x.rank(), c));
    a.set_int("keepdims", c.attr_int("keepdims", 1)).set_int("select_last_index", c.attr_int("select_last_index", 0));
    return {c.call(op, {c.input(0)}, a)};
  };
}

}  // namespace

void register_math_converters(ConverterTable& t) {
  t["Gemm"] = gemm;
  t["MatMul"] = [](NodeContext& c) -> std::vector<Expr> { return {c.call("nn.matmul", {c.input(0, "A"), c.input(1, "B")})}; };
  t["Einsum"] = einsum;
  t["ReduceSum"] = reduce("sum", 13);
  t["ReduceMean"] = reduce("mean", 18);
  t["ReduceMax"] = reduce("max", 18);
  t["ReduceMin"] = reduce("min", 18);
  t["ReduceProd"] = reduce("prod", 18);
  t["ReduceL1"] = reduce("sum", 18, "abs");
  t["ReduceL2"] = reduce("sum", 18, "square", "sqrt");
  t["ReduceSumSquare"] = reduce("sum", 18, "square");
  t["ReduceLogSum"] = reduce("sum", 18, "", "log");
  t["ReduceLogSumExp"] = reduce_log_sum_exp;
  t["ArgMax"] = arg_reduce("argmax");
  t["ArgMin"] = arg_reduce("argmin");
}

}  // namespace kiln::relay::onnx_frontend
