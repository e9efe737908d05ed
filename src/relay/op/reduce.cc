// Reductions over a set of axes, and arg-reductions along one axis.
#include <algorithm>

#include "kiln/support/error.h"
#include "op_families.h"
#include "op_util.h"

namespace kiln::relay {

namespace {

Shape reduced_shape(const Shape& in, const std::vector<int64_t>& axes, bool keepdims) {
  Shape out;
  for (int64_t i = 0; i < static_cast<int64_t>(in.size()); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) {
      out.push_back(in[i]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

TypeRelation reduce_rel(bool numeric_only) {
  return [=](const std::vector<Type>& args, const Attrs& attrs) -> Type {
    const TensorTypeNode& x = tensor_arg(args, 0, "input");
    if (numeric_only) {
      KILN_USER_CHECK(!x.dtype.is_bool()) << "input must be numeric, got bool";
    }
    const std::vector<int64_t>& axes = attrs.get_ints("axes");
    check_axes(axes, x.rank());
    return tensor_type(x.dtype, reduced_shape(x.shape, axes, attrs.get_int("keepdims") != 0));
  };
}

Type arg_reduce_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "input");
  int64_t axis = attrs.get_int("axis");
  check_axes({axis}, x.rank(), "axis");
  KILN_USER_CHECK(x.shape[axis] > 0) << "arg-reduction over the empty axis " << axis;
  attrs.get_int("select_last_index");
  return tensor_type(DataType::i64(), reduced_shape(x.shape, {axis}, attrs.get_int("keepdims") != 0));
}

}  // namespace

void register_reduce_ops() {
  const std::string doc = "axes (ints, normalized, distinct; [] reduces nothing), keepdims (int)";
  register_op("sum", 1, 1, OpPattern::CommReduce, reduce_rel(true), doc);
  register_op("mean", 1, 1, OpPattern::CommReduce, reduce_rel(true), doc);
  register_op("prod", 1, 1, OpPattern::CommReduce, reduce_rel(true), doc);
  register_op("max", 1, 1, OpPattern::CommReduce, reduce_rel(false), doc);
  register_op("min", 1, 1, OpPattern::CommReduce, reduce_rel(false), doc);
  const std::string arg_doc = "axis (int, normalized), keepdims (int), select_last_index (int); int64 result";
  register_op("argmax", 1, 1, OpPattern::CommReduce, arg_reduce_rel, arg_doc);
  register_op("argmin", 1, 1, OpPattern::CommReduce, arg_reduce_rel, arg_doc);
}

}  // namespace kiln::relay
