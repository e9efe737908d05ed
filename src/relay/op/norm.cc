// Normalizations and softmax: per-channel or per-row statistics, each its own kernel.
#include "kiln/support/error.h"
#include "op_families.h"
#include "op_util.h"

namespace kiln::relay {

namespace {

void check_vector(const TensorTypeNode& x, const TensorTypeNode& v, int64_t n, const char* role) {
  check_same_dtype(x, v, role);
  KILN_USER_CHECK(v.rank() == 1 && v.shape[0] == n) << role << " must be [" << n << "], got " << shape_str(v.shape);
}

Type batch_norm_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  check_floating(x, "data");
  int64_t axis = attrs.get_int("axis");
  attrs.get_float("epsilon");
  KILN_USER_CHECK(axis >= 0 && axis < x.rank()) << "axis " << axis << " is out of range for rank " << x.rank();
  const char* roles[] = {"data", "gamma", "beta", "moving_mean", "moving_var"};
  for (size_t i = 1; i < 5; ++i) check_vector(x, tensor_arg(args, i, roles[i]), x.shape[axis], roles[i]);
  return args[0];
}

Type layer_norm_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  check_floating(x, "data");
  int64_t axis = attrs.get_int("axis");
  attrs.get_float("epsilon");
  KILN_USER_CHECK(axis >= 0 && axis < x.rank()) << "axis " << axis << " is out of range for rank " << x.rank();
  Shape norm(x.shape.begin() + axis, x.shape.end());
  for (size_t i = 1; i < args.size(); ++i) {
    const TensorTypeNode& p = tensor_arg(args, i, i == 1 ? "gamma" : "beta");
    check_same_dtype(x, p, "data and its scale/bias");
    KILN_USER_CHECK(broadcast_shapes(norm, p.shape) == norm)
        << (i == 1 ? "gamma " : "beta ") << shape_str(p.shape) << " does not broadcast to the normalized shape "
        << shape_str(norm);
  }
  return args[0];
}

Type instance_norm_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  check_floating(x, "data");
  attrs.get_float("epsilon");
  KILN_USER_CHECK(x.rank() >= 3) << "data must have rank >= 3 (N, C, spatial dims), got " << shape_str(x.shape);
  check_vector(x, tensor_arg(args, 1, "gamma"), x.shape[1], "gamma");
  check_vector(x, tensor_arg(args, 2, "beta"), x.shape[1], "beta");
  return args[0];
}

Type group_norm_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  check_floating(x, "data");
  attrs.get_float("epsilon");
  int64_t groups = attrs.get_int("num_groups");
  KILN_USER_CHECK(x.rank() >= 3) << "data must have rank >= 3 (N, C, spatial dims), got " << shape_str(x.shape);
  KILN_USER_CHECK(groups >= 1 && x.shape[1] % groups == 0)
      << "num_groups " << groups << " must divide the channels " << x.shape[1];
  check_vector(x, tensor_arg(args, 1, "gamma"), x.shape[1], "gamma");
  check_vector(x, tensor_arg(args, 2, "beta"), x.shape[1], "beta");
  return args[0];
}

Type lrn_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  check_floating(x, "data");
  KILN_USER_CHECK(x.rank() >= 3) << "data must have rank >= 3 (N, C, spatial dims), got " << shape_str(x.shape);
  KILN_USER_CHECK(attrs.get_int("size") >= 1) << "size must be positive";
  attrs.get_float("alpha");
  attrs.get_float("beta");
  attrs.get_float("bias");
  return args[0];
}

Type softmax_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  check_floating(x, "data");
  check_axes({attrs.get_int("axis")}, x.rank(), "axis");
  return args[0];
}

}  // namespace

void register_norm_ops() {
  register_op("nn.batch_norm", 5, 5, OpPattern::Broadcast, batch_norm_rel,
              "batch_norm(x, gamma, beta, mean, var) in inference: axis (int), epsilon (float)");
  register_op("nn.layer_norm", 2, 3, OpPattern::Opaque, layer_norm_rel,
              "layer_norm(x, gamma[, beta]) over dims axis..rank-1: axis (int, normalized), epsilon (float)");
  register_op("nn.instance_norm", 3, 3, OpPattern::Opaque, instance_norm_rel,
              "instance_norm(x, gamma[C], beta[C]): epsilon (float)");
  register_op("nn.group_norm", 3, 3, OpPattern::Opaque, group_norm_rel,
              "group_norm(x, gamma[C], beta[C]): num_groups (int), epsilon (float)");
  register_op("nn.lrn", 1, 1, OpPattern::Opaque, lrn_rel,
              "size (int), alpha, beta, bias (float): x / (bias + alpha/size * sum of squares over channels)^beta");
  register_op("nn.softmax", 1, 1, OpPattern::Opaque, softmax_rel, "axis (int, normalized)");
  register_op("nn.log_softmax", 1, 1, OpPattern::Opaque, softmax_rel, "axis (int, normalized)");
}

}  // namespace kiln::relay
