// Injective data movement: every output element is one input element (or a fill value).
// All shapes and positions are static and normalized by the importer (no -1, no negative axes).
#include <algorithm>

#include "kiln/support/error.h"
#include "op_families.h"
#include "op_util.h"

namespace kiln::relay {

namespace {

Type reshape_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const auto& shape = attrs.get_ints("newshape");
  for (int64_t d : shape) KILN_USER_CHECK(d >= 0) << "newshape " << shape_str(shape) << " must be fully resolved";
  KILN_USER_CHECK(num_elements(shape) == x.num_elements())
      << "cannot reshape " << shape_str(x.shape) << " (" << x.num_elements() << " elements) to " << shape_str(shape);
  return tensor_type(x.dtype, shape);
}

Type transpose_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const auto& axes = attrs.get_ints("axes");
  check_count(axes, x.shape.size(), "axes");
  check_axes(axes, x.rank());
  Shape out;
  for (int64_t a : axes) out.push_back(x.shape[a]);
  return tensor_type(x.dtype, out);
}

Type concatenate_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& first = tensor_arg(args, 0, "input 0");
  int64_t axis = attrs.get_int("axis");
  check_axes({axis}, first.rank(), "axis");
  Shape out = first.shape;
  out[axis] = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorTypeNode& t = tensor_arg(args, i, "input");
    check_same_dtype(first, t, "all inputs");
    bool ok = t.rank() == first.rank();
    for (int64_t d = 0; ok && d < t.rank(); ++d) ok = d == axis || t.shape[d] == first.shape[d];
    KILN_USER_CHECK(ok) << "input " << i << " of shape " << shape_str(t.shape) << " does not match input 0 of shape "
                        << shape_str(first.shape) << " outside axis " << axis;
    out[axis] += t.shape[axis];
  }
  return tensor_type(first.dtype, out);
}

Type split_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  int64_t axis = attrs.get_int("axis");
  check_axes({axis}, x.rank(), "axis");
  const auto& sizes = attrs.get_ints("sizes");
  int64_t total = 0;
  std::vector<Type> fields;
  for (int64_t s : sizes) {
    KILN_USER_CHECK(s >= 0) << "split sizes " << shape_str(sizes) << " must be non-negative";
    total += s;
    Shape part = x.shape;
    part[axis] = s;
    fields.push_back(tensor_type(x.dtype, part));
  }
  KILN_USER_CHECK(!sizes.empty() && total == x.shape[axis])
      << "split sizes " << shape_str(sizes) << " must add up to dim " << axis << " of " << shape_str(x.shape);
  return tuple_type(fields);
}

Type strided_slice_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const auto& begin = attrs.get_ints("begin");
  const auto& end = attrs.get_ints("end");
  const auto& strides = attrs.get_ints("strides");
  for (const auto* v : {&begin, &end, &strides}) check_count(*v, x.shape.size(), "begin, end and strides");
  Shape out;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    int64_t d = x.shape[i], b = begin[i], e = end[i], s = strides[i];
    KILN_USER_CHECK(s != 0) << "stride 0 on axis " << i;
    // Normalized bounds: forward b, e in [0, d]; backward b in [0, d-1] and e in [-1, d-1].
    bool ok = s > 0 ? (b >= 0 && b <= d && e >= 0 && e <= d) : (b >= 0 && b <= std::max<int64_t>(d - 1, 0) && e >= -1 && e < std::max<int64_t>(d, 1));
    KILN_USER_CHECK(ok) << "slice " << b << ":" << e << ":" << s << " is not normalized for dim " << d << " (axis " << i
                        << ")";
    int64_t n = s > 0 ? (e - b + s - 1) / s : (b - e + (-s) - 1) / (-s);
    out.push_back(std::max<int64_t>(n, 0));
  }
  return tensor_type(x.dtype, out);
}

Type broadcast_to_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const auto& shape = attrs.get_ints("shape");
  KILN_USER_CHECK(broadcast_shapes(x.shape, shape) == shape)
      << shape_str(x.shape) << " does not broadcast to " << shape_str(shape);
  return tensor_type(x.dtype, shape);
}

Type tile_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const auto& reps = attrs.get_ints("reps");
  check_count(reps, x.shape.size(), "reps");
  Shape out;
  for (size_t i = 0; i < reps.size(); ++i) {
    KILN_USER_CHECK(reps[i] >= 0) << "reps " << shape_str(reps) << " must be non-negative";
    out.push_back(x.shape[i] * reps[i]);
  }
  return tensor_type(x.dtype, out);
}

Type pad_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const auto& pads = attrs.get_ints("pad_width");
  const std::string& mode = attrs.get_str("mode");
  attrs.get_float("pad_value");
  KILN_USER_CHECK(mode == "constant" || mode == "reflect" || mode == "edge" || mode == "wrap")
      << "unknown pad mode '" << mode << "'";
  size_t r = x.shape.size();
  check_count(pads, 2 * r, "pad_width");
  Shape out;
  for (size_t i = 0; i < r; ++i) {
    int64_t o = x.shape[i] + pads[i] + pads[r + i];
    KILN_USER_CHECK(o >= 0) << "pads " << shape_str(pads) << " crop axis " << i << " below zero";
    if (mode != "constant" && (pads[i] > 0 || pads[r + i] > 0)) {
      KILN_USER_CHECK(x.shape[i] > 0) << mode << " padding of an empty axis " << i;
      if (mode == "reflect") {
        KILN_USER_CHECK(pads[i] < x.shape[i] && pads[r + i] < x.shape[i])
            << "reflect pads " << shape_str(pads) << " must be smaller than dim " << i << " (" << x.shape[i] << ")";
      }
    }
    out.push_back(o);
  }
  return tensor_type(x.dtype, out);
}

TypeRelation space_rel(bool to_space) {
  return [to_space](const std::vector<Type>& args, const Attrs& attrs) -> Type {
    const TensorTypeNode& x = tensor_arg(args, 0, "data");
    KILN_USER_CHECK(x.rank() == 4) << "data must be NCHW, got " << shape_str(x.shape);
    int64_t b = attrs.get_int("block_size");
    KILN_USER_CHECK(b >= 1) << "block_size must be positive";
    if (to_space) {
      const std::string& mode = attrs.get_str("mode");
      KILN_USER_CHECK(mode == "DCR" || mode == "CRD") << "mode must be DCR or CRD, got '" << mode << "'";
      KILN_USER_CHECK(x.shape[1] % (b * b) == 0) << "channels " << x.shape[1] << " not divisible by block_size^2";
      return tensor_type(x.dtype, {x.shape[0], x.shape[1] / (b * b), x.shape[2] * b, x.shape[3] * b});
    }
    KILN_USER_CHECK(x.shape[2] % b == 0 && x.shape[3] % b == 0)
        << "spatial dims " << shape_str(x.shape) << " not divisible by block_size " << b;
    return tensor_type(x.dtype, {x.shape[0], x.shape[1] * b * b, x.shape[2] / b, x.shape[3] / b});
  };
}

Type full_rel(const std::vector<Type>&, const Attrs& attrs) {
  const HostTensor& v = attrs.get_tensor("value");
  KILN_USER_CHECK(v.numel() == 1) << "fill value must be a single element, got " << v.str(4);
  return tensor_type(v.dtype(), attrs.get_ints("shape"));
}

Type trilu_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  KILN_USER_CHECK(x.rank() >= 2) << "data must have rank >= 2, got " << shape_str(x.shape);
  attrs.get_int("upper");
  attrs.get_int("k");
  return args[0];
}

}  // namespace

void register_transform_ops() {
  register_op("reshape", 1, 1, OpPattern::Injective, reshape_rel, "newshape (ints, fully resolved)");
  register_op("transpose", 1, 1, OpPattern::Injective, transpose_rel, "axes (ints, a permutation)");
  register_op("concatenate", 1, -1, OpPattern::Injective, concatenate_rel, "axis (int, normalized)");
  register_op("split", 1, 1, OpPattern::Injective, split_rel,
              "axis (int, normalized), sizes (ints, adding up to the dim); returns a tuple");
  register_op("strided_slice", 1, 1, OpPattern::Injective, strided_slice_rel,
              "begin, end, strides (ints, one per axis, normalized: forward 0 <= b, e <= d; backward 0 <= b < d, "
              "-1 <= e < d)");
  register_op("broadcast_to", 1, 1, OpPattern::Broadcast, broadcast_to_rel, "shape (ints)");
  register_op("tile", 1, 1, OpPattern::Injective, tile_rel, "reps (ints, one per axis)");
  register_op("nn.pad", 1, 1, OpPattern::Injective, pad_rel,
              "pad_width (ints, 2*rank: begins then ends; negative crops), mode (\"constant\", \"reflect\", "
              "\"edge\", \"wrap\"), pad_value (float)");
  register_op("nn.depth_to_space", 1, 1, OpPattern::Injective, space_rel(true), "block_size (int), mode (DCR or CRD)");
  register_op("nn.space_to_depth", 1, 1, OpPattern::Injective, space_rel(false), "block_size (int)");
  register_op("full", 0, 0, OpPattern::Elementwise, full_rel, "shape (ints), value (scalar tensor: dtype and fill)");
  register_op("trilu", 1, 1, OpPattern::Injective, trilu_rel,
              "upper (int), k (int): keeps the upper/lower triangle of the last two dims, zeroes the rest");
}

}  // namespace kiln::relay
