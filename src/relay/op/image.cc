// Resizing of the trailing dims (ONNX Resize / Upsample semantics).
#include "kiln/support/error.h"
#include "op_families.h"
#include "op_util.h"

namespace kiln::relay {

namespace {

Type resize_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const auto& sizes = attrs.get_ints("sizes");
  const auto scales = attrs.get_floats("scales");
  check_count(sizes, x.shape.size(), "sizes");
  KILN_USER_CHECK(scales.size() == x.shape.size()) << "scales must have one entry per axis";
  for (int64_t s : sizes) KILN_USER_CHECK(s >= 0) << "sizes " << shape_str(sizes) << " must be non-negative";
  const std::string& mode = attrs.get_str("mode");
  KILN_USER_CHECK(mode == "nearest" || mode == "linear" || mode == "cubic") << "unknown resize mode '" << mode << "'";
  if (mode != "nearest") check_floating(x, "data");
  attrs.get_str("coordinate_transformation_mode");
  attrs.get_str("nearest_mode");
  attrs.get_float("cubic_coeff_a");
  attrs.get_int("exclude_outside");
  attrs.get_float("extrapolation_value");
  attrs.get_floats("roi");
  return tensor_type(x.dtype, sizes);
}

}  // namespace

void register_image_ops() {
  register_op("image.resize", 1, 1, OpPattern::Injective, resize_rel,
              "sizes (ints, the full output shape), scales (floats per axis, as the coordinate transform uses "
              "them), mode (nearest|linear|cubic), coordinate_transformation_mode, nearest_mode, cubic_coeff_a, "
              "exclude_outside, extrapolation_value, roi (floats, 2*rank, for tf_crop_and_resize)");
}

}  // namespace kiln::relay
