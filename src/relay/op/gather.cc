// Indexed reads: take (ONNX Gather), gather_elements, gather_nd. Negative indices count from
// the end, as in ONNX; out-of-range indices are the user's problem at run time.
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

}  // namespace

void register_gather_ops() {
  register_op("take", 2, 2, OpPattern::Injective, take_rel, "take(data, indices): axis (int, normalized)");
  register_op("gather_elements", 2, 2, OpPattern::Injective, gather_elements_rel, "axis (int, normalized)");
  register_op("gather_nd", 2, 2, OpPattern::Injective, gather_nd_rel, "batch_dims (int)");
}

}  // namespace kiln::relay
