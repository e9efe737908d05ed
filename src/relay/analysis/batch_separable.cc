// check_batch_separable (relay/batch_separable.h): compares the graph at one and at two samples
// node by node. A value whose leading dim doubles (and nothing else changes) holds its samples
// as consecutive row blocks, row-major, exactly as the runtime lays them out; the op rules
// below reject the ops that would still read across those blocks.
#include "relay/batch_separable.h"

#include <set>

#include "kiln/relay/op.h"
#include "kiln/support/error.h"

namespace kiln::relay {
namespace {

std::string where(const Expr& e) {
  if (const auto* c = e.as<CallNode>()) return c->op_name() + (c->name.empty() ? "" : " (node '" + c->name + "')");
  if (const auto* v = e.as<VarNode>()) return "input '" + v->name + "'";
  return kind_name(e.kind());
}

// Tensor types of a node's value (a tuple's fields in order).
std::vector<const TensorTypeNode*> tensor_types(const Type& t) {
  if (const auto* tt = t.as<TensorTypeNode>()) return {tt};
  std::vector<const TensorTypeNode*> out;
  for (const Type& f : t.as<TupleTypeNode>()->fields)
    for (const TensorTypeNode* x : tensor_types(f)) out.push_back(x);
  return out;
}

// Leading dim doubled, the rest equal.
bool doubles(const TensorTypeNode& a, const TensorTypeNode& b) {
  if (a.shape.empty() || a.shape.size() != b.shape.size() || a.dtype != b.dtype) return false;
  if (b.shape[0] != 2 * a.shape[0] || a.shape[0] == 0) return false;
  for (size_t d = 1; d < a.shape.size(); ++d)
    if (a.shape[d] != b.shape[d]) return false;
  return true;
}

// Ops that keep samples apart whenever every batched value's leading dim doubles: they map
// leading-axis rows to rows (convs, pools, dense layers, reshapes, transposes: a transpose that
// moved the leading axis would break the doubling) or work on other axes only.
const std::set<std::string>& row_wise_ops() {
  static const std::set<std::string> ops = {
      "nn.conv1d", "nn.conv2d", "nn.conv3d", "nn.conv2d_transpose", "nn.conv2d_integer", "nn.conv2d_winograd",
      "nn.max_pool1d", "nn.max_pool2d", "nn.max_pool3d", "nn.avg_pool1d", "nn.avg_pool2d", "nn.avg_pool3d",
      "nn.global_avg_pool", "nn.global_max_pool", "nn.lp_pool2d", "nn.dense", "nn.dense_integer", "nn.matmul",
      "nn.batch_matmul", "reshape", "transpose", "layout_transform", "nn.batch_norm", "nn.bias_add", "nn.prelu",
      "nn.pad", "nn.depth_to_space", "nn.space_to_depth", "image.resize", "nn.instance_norm", "nn.group_norm",
      "nn.lrn", "one_hot", "broadcast_to", "where", "sum", "mean", "prod", "max", "min", "argmax", "argmin",
      "quantize", "dequantize"};
  return ops;
}

// The reason `c` (batched) reads across samples, or "" when it keeps them apart. Reductions
// over the leading axis fail the doubling check before they get here.
std::string axis_problem(const CallNode& c, const TensorTypeNode& in, const TensorTypeNode& out) {
  const std::string& op = c.op_name();
  const OpDef& def = *c.op;
  if (def.pattern == OpPattern::Elementwise || def.pattern == OpPattern::Broadcast || row_wise_ops().count(op))
    return "";
  auto axis0 = [&](const char* key) { return c.attrs.has(key) && c.attrs.get_int(key) == 0; };
  if (op == "concatenate" || op == "split" || op == "take" || op == "gather_elements" || op == "cumsum" ||
      op == "topk" || op == "nn.softmax" || op == "nn.log_softmax" || op == "nn.layer_norm" || op == "sort" ||
      op == "argsort" || op == "reverse") {
    // take(data, indices) along axis 0 of a constant table (an embedding) reads rows by the
    // batched indices: per sample.
    if (op == "take" && c.args[0].kind() == ExprKind::Constant) return "";
    return axis0("axis") ? "works along the batch axis (axis 0)" : "";
  }
  if (op == "strided_slice") {
    std::vector<int64_t> begin = c.attrs.get_ints("begin"), strides = c.attrs.get_ints("strides");
    bool whole = !begin.empty() && begin[0] == 0 && !strides.empty() && strides[0] == 1 && in.shape[0] == out.shape[0];
    return whole ? "" : "slices the batch axis (axis 0)";
  }
  if (op == "tile") return c.attrs.get_ints("reps").at(0) == 1 ? "" : "repeats the batch axis (axis 0)";
  if (op == "trilu") return in.shape.size() >= 3 ? "" : "works on the batch axis of a 2-d value";
  return "is not known to keep the samples of a batch apart";
}

[[noreturn]] void refuse(const Expr& e, const std::string& why) {
  KILN_SUPPORTED(false) << "dynamic batch: " << where(e) << " " << why
                        << "; compile this model for a fixed batch (--input-shape NAME=N,...)";
  throw InternalError("unreachable");
}

}  // namespace

void check_batch_separable(const Module& one, const Module& two) {
  std::vector<Expr> a = post_order(one.outputs()), b = post_order(two.outputs());
  if (a.size() != b.size()) {
    KILN_SUPPORTED(false) << "dynamic batch: the graph at batch 2 has " << b.size() << " nodes, at batch 1 "
                          << a.size() << " (shape arithmetic depends on the batch); compile for a fixed batch";
  }
  std::set<const ExprNode*> batched;
  for (size_t i = 0; i < a.size(); ++i) {
    const Expr& x = a[i];
    const Expr& y = b[i];
    bool same_kind = x.kind() == y.kind();
    if (same_kind && x.kind() == ExprKind::Call)
      same_kind = x.as<CallNode>()->op == y.as<CallNode>()->op;
    if (!same_kind) refuse(x, "differs at batch 2 (" + where(y) + ")");
    if (const auto* k = x.as<ConstantNode>()) {
      if (!k->value.bitwise_equal(y.as<ConstantNode>()->value)) refuse(x, "is a constant that depends on the batch");
      continue;
    }
    bool is_batched = x.kind() == ExprKind::Var;
    for (const Expr& in : children(x)) is_batched = is_batched || batched.count(in.get());
    std::vector<const TensorTypeNode*> tx = tensor_types(x.type()), ty = tensor_types(y.type());
    if (tx.size() != ty.size()) refuse(x, "differs at batch 2");
    for (size_t t = 0; t < tx.size(); ++t) {
      if (!is_batched) {
        if (tx[t]->shape != ty[t]->shape) refuse(x, "has a shape that depends on the batch");
      } else if (!doubles(*tx[t], *ty[t])) {
        refuse(x, "mixes the samples of a batch: its value is " + x.type().str() + " at batch 1 and " +
                      y.type().str() + " at batch 2, not the same rows per sample");
      }
    }
    if (!is_batched) continue;
    batched.insert(x.get());
    if (const auto* c = x.as<CallNode>()) {
      const TensorTypeNode* in = nullptr;
      for (const Expr& arg : c->args)
        if (batched.count(arg.get())) {
          in = tensor_types(arg.type()).front();
          break;
        }
      std::string why = axis_problem(*c, *in, *tx.front());
      if (!why.empty()) refuse(x, why);
    }
  }
}

}  // namespace kiln::relay
