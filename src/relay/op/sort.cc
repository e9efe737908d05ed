// Order-dependent ops: running sums and products along an axis and the k largest/smallest elements.
#include "kiln/support/error.h"
#include "op_families.h"
#include "op_util.h"

namespace kiln::relay {

namespace {

Type cumsum_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  KILN_USER_CHECK(!x.dtype.is_bool()) << "data must be numeric, got bool";
  check_axes({attrs.get_int("axis")}, x.rank(), "axis");
  attrs.get_int("exclusive");
  attrs.get_int("reverse");
  return args[0];
}

Type topk_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  int64_t axis = attrs.get_int("axis"), k = attrs.get_int("k");
  check_axes({axis}, x.rank(), "axis");
  KILN_USER_CHECK(k >= 0 && k <= x.shape[axis]) << "k " << k << " is out of range for axis " << axis << " of size "
                                                << x.shape[axis];
  attrs.get_int("largest");
  attrs.get_int("sorted");
  Shape out = x.shape;
  out[axis] = k;
  return tuple_type({tensor_type(x.dtype, out), tensor_type(DataType::i64(), out)});
}

}  // namespace

void register_sort_ops() {
  register_op("cumsum", 1, 1, OpPattern::Opaque, cumsum_rel, "axis (int, normalized), exclusive (int), reverse (int)");
  register_op("cumprod", 1, 1, OpPattern::Opaque, cumsum_rel,
              "axis (int, normalized), exclusive (int), reverse (int); an empty (exclusive) product is 1");
  register_op("topk", 1, 1, OpPattern::Opaque, topk_rel,
              "k (int), axis (int, normalized), largest (int), sorted (int); returns (values, int64 indices)");
}

}  // namespace kiln::relay
