// Indexed reads and writes: take (ONNX Gather), gather_elements, gather_nd, scatter_elements,
// scatter_nd, one_hot. Negative indices count from the end, as in ONNX; out-of-range indices are
// the user's problem at run time.
#include <algorithm>

#include "kiln/support/error.h"
#include "op_families.h"
#include "op_util.h"

namespace kiln::relay {

namespace {

void check_indices(const TensorTypeNode& i) {
  KILN_USER_CHECK(i.dtype == DataType::i32() || i.dtype == DataType::i64())
      << "indices must be int32 or int64, got " << i.dtype.str();
}

Type take_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const TensorTypeNode& idx = tensor_arg(args, 1, "indices");
  check_indices(idx);
  int64_t axis = attrs.get_int("axis");
  check_axes({axis}, x.rank(), "axis");
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  return tensor_type(x.dtype, out);
}

Type gather_elements_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const TensorTypeNode& idx = tensor_arg(args, 1, "indices");
  check_indices(idx);
  check_axes({attrs.get_int("axis")}, x.rank(), "axis");
  KILN_USER_CHECK(idx.rank() == x.rank()) << "indices " << shape_str(idx.shape) << " must have the rank of data "
                                          << shape_str(x.shape);
  return tensor_type(x.dtype, idx.shape);
}

Type gather_nd_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const TensorTypeNode& idx = tensor_arg(args, 1, "indices");
  KILN_USER_CHECK(idx.dtype == DataType::i64()) << "indices must be int64, got " << idx.dtype.str();
  int64_t b = attrs.get_int("batch_dims");
  KILN_USER_CHECK(idx.rank() >= 1 && b >= 0 && b < std::min(x.rank(), idx.rank()))
      << "batch_dims " << b << " must be below the ranks of data and indices";
  for (int64_t i = 0; i < b; ++i)
    KILN_USER_CHECK(x.shape[i] == idx.shape[i]) << "batch dims of data " << shape_str(x.shape) << " and indices "
                                                << shape_str(idx.shape) << " differ";
  int64_t last = idx.shape.back();
  KILN_USER_CHECK(last >= 1 && b + last <= x.rank())
      << "indices' last dim " << last << " indexes beyond data of rank " << x.rank();
  Shape out(idx.shape.begin(), idx.shape.end() - 1);
  out.insert(out.end(), x.shape.begin() + b + last, x.shape.end());
  return tensor_type(x.dtype, out);
}

Type scatter_elements_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const TensorTypeNode& idx = tensor_arg(args, 1, "indices");
  const TensorTypeNode& upd = tensor_arg(args, 2, "updates");
  check_indices(idx);
  check_same_dtype(x, upd, "data and updates");
  check_axes({attrs.get_int("axis")}, x.rank(), "axis");
  KILN_USER_CHECK(idx.rank() == x.rank() && idx.shape == upd.shape)
      << "indices " << shape_str(idx.shape) << " and updates " << shape_str(upd.shape)
      << " must have one shape, of the rank of data " << shape_str(x.shape);
  attrs.get_str("reduction");
  return args[0];
}

Type scatter_nd_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const TensorTypeNode& idx = tensor_arg(args, 1, "indices");
  const TensorTypeNode& upd = tensor_arg(args, 2, "updates");
  KILN_USER_CHECK(idx.dtype == DataType::i64()) << "indices must be int64, got " << idx.dtype.str();
  check_same_dtype(x, upd, "data and updates");
  KILN_USER_CHECK(idx.rank() >= 1 && idx.shape.back() <= x.rank())
      << "indices " << shape_str(idx.shape) << " index beyond data of rank " << x.rank();
  Shape want(idx.shape.begin(), idx.shape.end() - 1);
  want.insert(want.end(), x.shape.begin() + idx.shape.back(), x.shape.end());
  KILN_USER_CHECK(upd.shape == want) << "updates must be " << shape_str(want) << ", got " << shape_str(upd.shape);
  attrs.get_str("reduction");
  return args[0];
}

Type one_hot_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& idx = tensor_arg(args, 0, "indices");
  const TensorTypeNode& values = tensor_arg(args, 1, "values");
  KILN_USER_CHECK(!idx.dtype.is_bool()) << "indices must be numeric";
  KILN_USER_CHECK(values.rank() == 1 && values.shape[0] == 2) << "values must be [off, on], got "
                                                              << shape_str(values.shape);
  int64_t depth = attrs.get_int("depth"), axis = attrs.get_int("axis");
  KILN_USER_CHECK(depth >= 1) << "depth must be positive, got " << depth;
  KILN_USER_CHECK(axis >= 0 && axis <= idx.rank()) << "axis " << axis << " is out of range for rank " << idx.rank() + 1;
  Shape out = idx.shape;
  out.insert(out.begin() + axis, depth);
  return tensor_type(values.dtype, out);
}

}  // namespace

void register_gather_ops() {
  register_op("take", 2, 2, OpPattern::Injective, take_rel, "take(data, indices): axis (int, normalized)");
  register_op("gather_elements", 2, 2, OpPattern::Injective, gather_elements_rel, "axis (int, normalized)");
  register_op("gather_nd", 2, 2, OpPattern::Injective, gather_nd_rel, "batch_dims (int)");
  register_op("scatter_elements", 3, 3, OpPattern::Opaque, scatter_elements_rel,
              "scatter_elements(data, indices, updates): axis (int, normalized), reduction (none|add|mul|max|min)");
  register_op("scatter_nd", 3, 3, OpPattern::Opaque, scatter_nd_rel,
              "scatter_nd(data, indices, updates): reduction (none|add|mul|max|min)");
  register_op("one_hot", 2, 2, OpPattern::Injective, one_hot_rel,
              "one_hot(indices, values [off, on]): depth (int), axis (int, normalized, in the output)");
}

}  // namespace kiln::relay
