// Loss functions: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, decomposed into graph
// ops as the ONNX function bodies of both ops do:
//
//   loss[n, d..] = -weight[t] * input[n, t, d..]   with t = target[n, d..], and 0 where t is
//                                                   ignore_index (weight 1 without weights)
//   reduction none: loss;  sum: sum(loss);  mean: sum(loss) / sum(weight[t] over the
//                                            elements not ignored), the spec's weighted mean
//
// Ignored targets may lie outside [0, C) (ignore_index is often -1 or -100), so they are
// replaced by class 0 before they index anything, and their terms are zeroed after.
#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

// The shapes a loss node accepts: input [N, C, d1..dk] (floating), target [N, d1..dk] (int32 or
// int64), weight [C] of the input's type.
void check_loss_inputs(const NodeContext& c, const char* input_role) {
  const TensorTypeNode& x = c.input_type(0, input_role);
  const TensorTypeNode& t = c.input_type(1, "target");
  KILN_USER_CHECK(x.dtype.is_floating()) << input_role << " must be floating, got "
                                         << x.dtype.str();
  KILN_USER_CHECK(x.rank() >= 2) << input_role << " must be [N, C, d1..dk], got "
                                 << shape_str(x.shape);
  KILN_USER_CHECK(t.dtype == DataType::i32() || t.dtype == DataType::i64())
      << "target must be int32 or int64, got " << t.dtype.str();
  Shape want = x.shape;
  want.erase(want.begin() + 1);
  KILN_USER_CHECK(t.shape == want) << "target must be " << shape_str(want) << " for " << input_role << " "
                                   << shape_str(x.shape) << ", got " << shape_str(t.shape);
  if (c.has_input(2)) {
    const TensorTypeNode& w = c.input_type(2, "weight");
    KILN_USER_CHECK(w.dtype == x.dtype && w.rank() == 1 && w.shape[0] == x.shape[1])
        << "weight must be " << x.dtype.str() << "[" << x.shape[1] << "], got " << w.dtype.str()
        << shape_str(w.shape);
  }
}

std::string loss_reduction(const NodeContext& c) {
  std::string r = c.attr_str("reduction", "mean");
  KILN_USER_CHECK(r == "none" || r == "sum" || r == "mean")
      << "reduction must be none, sum or mean, got '" << r << "'";
  return r;
}

// The negative log likelihood of log-probabilities `logp` [N, C, d..] (NLL's input, or SCE's
// log_softmax) at the node's target (input 1), with its optional weight (input 2).
Expr nll_of(NodeContext& c, const Expr& logp) {
  const TensorTypeNode& x = logp.tensor_type();
  const TensorTypeNode& tt = c.input_type(1, "target");
  std::string reduction = loss_reduction(c);
  Expr target = c.input(1, "target");
  Expr ignored;  // bool [N, d..] where target is ignore_index
  if (c.has_attr("ignore_index")) {
    ignored = c.call("equal", {target, c.scalar(tt.dtype, static_cast<double>(c.attr_int("ignore_index")))});
    target = c.call("where", {ignored, c.scalar(tt.dtype, 0), target});
  }
  // -logp[n, target[n, d..], d..]: gather along the class axis with indices [N, 1, d..].
  Shape idx_shape = tt.shape;
  idx_shape.insert(idx_shape.begin() + 1, 1);
  Expr idx = c.call("reshape", {target}, Attrs().set_ints("newshape", idx_shape));
  Expr picked = c.call("gather_elements", {logp, idx}, Attrs().set_int("axis", 1));
  Expr loss = c.call("neg", {c.call("reshape", {picked}, Attrs().set_ints("newshape", tt.shape))});

  Expr weight;  // the weight of each term [N, d..], 0 where ignored; undefined when all are 1
  if (c.has_input(2)) weight = c.call("take", {c.input(2), target}, Attrs().set_int("axis", 0));
  if (ignored.defined()) weight = c.call("where", {ignored, c.scalar(x.dtype, 0), weight.defined() ? weight : c.scalar(x.dtype, 1)});
  if (weight.defined()) loss = c.call("multiply", {loss, weight});

  if (reduction == "none") return loss;
  std::vector<int64_t> all;
  for (int64_t i = 0; i < tt.rank(); ++i) all.push_back(i);
  Attrs over_all = Attrs().set_ints("axes", all).set_int("keepdims", 0);
  if (reduction == "sum") return c.call("sum", {loss}, over_all);
  if (!weight.defined()) return c.call("mean", {loss}, over_all);
  return c.call("divide", {c.call("sum", {loss}, over_all), c.call("sum", {weight}, over_all)});
}

std::vector<Expr> negative_log_likelihood_loss(NodeContext& c) {
  check_loss_inputs(c, "input");
  return {nll_of(c, c.input(0))};
}

// log_softmax over the classes, then NLL; the second output (log_prob) is that log_softmax.
std::vector<Expr> softmax_cross_entropy_loss(NodeContext& c) {
  check_loss_inputs(c, "scores");
  Expr logp = c.call("nn.log_softmax", {c.input(0)}, Attrs().set_int("axis", 1));
  return {nll_of(c, logp), logp};
}

}  // namespace

void register_loss_converters(ConverterTable& t) {
  t["NegativeLogLikelihoodLoss"] = negative_log_likelihood_loss;
  t["SoftmaxCrossEntropyLoss"] = softmax_cross_entropy_loss;
}

}  // namespace kiln::relay::onnx_frontend
