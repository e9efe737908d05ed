// Resizing of the trailing dims (ONNX Resize / Upsample semantics) and sampling at given
// coordinates (ONNX GridSample), pooling of regions (ONNX RoiAlign).
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

Type grid_sample_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const TensorTypeNode& g = tensor_arg(args, 1, "grid");
  size_t k = x.shape.size() >= 2 ? x.shape.size() - 2 : 0;
  KILN_USER_CHECK(k >= 1) << "grid_sample data " << shape_str(x.shape) << " must be [N, C, D1..Dk] with k >= 1";
  KILN_USER_CHECK(g.shape.size() == k + 2 && g.shape[0] == x.shape[0] && g.shape.back() == static_cast<int64_t>(k))
      << "grid_sample grid " << shape_str(g.shape) << " must be [N, O1..O" << k << ", " << k << "] for data "
      << shape_str(x.shape);
  check_floating(g, "grid");
  const std::string& mode = attrs.get_str("mode");
  KILN_USER_CHECK(mode == "nearest" || mode == "linear" || mode == "cubic") << "unknown grid_sample mode '" << mode
                                                                            << "'";
  if (mode != "nearest") check_floating(x, "data");
  const std::string& pad = attrs.get_str("padding_mode");
  KILN_USER_CHECK(pad == "zeros" || pad == "border" || pad == "reflection") << "unknown grid_sample padding_mode '"
                                                                            << pad << "'";
  attrs.get_int("align_corners");
  Shape out = {x.shape[0], x.shape[1]};
  out.insert(out.end(), g.shape.begin() + 1, g.shape.end() - 1);
  return tensor_type(x.dtype, out);
}

Type roi_align_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const TensorTypeNode& rois = tensor_arg(args, 1, "rois");
  const TensorTypeNode& idx = tensor_arg(args, 2, "batch_indices");
  KILN_USER_CHECK(x.shape.size() == 4) << "roi_align data " << shape_str(x.shape) << " must be [N, C, H, W]";
  KILN_USER_CHECK(rois.shape.size() == 2 && rois.shape[1] == 4) << "roi_align rois " << shape_str(rois.shape)
                                                                << " must be [R, 4]";
  KILN_USER_CHECK(idx.shape == Shape({rois.shape[0]})) << "roi_align batch_indices " << shape_str(idx.shape)
                                                       << " must be [" << rois.shape[0] << "]";
  check_floating(x, "data");
  check_same_dtype(x, rois, "data and rois");
  KILN_USER_CHECK(idx.dtype.is_int() || idx.dtype.is_uint()) << "roi_align batch_indices must be integers";
  const std::string& mode = attrs.get_str("mode");
  KILN_USER_CHECK(mode == "avg" || mode == "max") << "unknown roi_align mode '" << mode << "'";
  int64_t oh = attrs.get_int("output_height"), ow = attrs.get_int("output_width");
  KILN_USER_CHECK(oh >= 1 && ow >= 1) << "roi_align output size " << oh << " x " << ow << " must be positive";
  KILN_USER_CHECK(attrs.get_int("sampling_ratio") >= 1) << "roi_align sampling_ratio must be positive";
  attrs.get_float("spatial_scale");
  attrs.get_int("half_pixel");
  return tensor_type(x.dtype, {rois.shape[0], x.shape[1], oh, ow});
}

}  // namespace

void register_image_ops() {
  register_op("image.resize", 1, 1, OpPattern::Injective, resize_rel,
              "sizes (ints, the full output shape), scales (floats per axis, as the coordinate transform uses "
              "them), mode (nearest|linear|cubic), coordinate_transformation_mode, nearest_mode, cubic_coeff_a, "
              "exclude_outside, extrapolation_value, roi (floats, 2*rank, for tf_crop_and_resize)");
  register_op("image.grid_sample", 2, 2, OpPattern::Injective, grid_sample_rel,
              "grid_sample(data [N, C, D1..Dk], grid [N, O1..Ok, k] of normalized coordinates, innermost axis "
              "first) -> [N, C, O1..Ok]: mode (nearest|linear|cubic), padding_mode (zeros|border|reflection), "
              "align_corners (int)");
  register_op("image.roi_align", 3, 3, OpPattern::Injective, roi_align_rel,
              "roi_align(data [N, C, H, W], rois [R, 4], batch_indices [R] int) -> [R, C, output_height, "
              "output_width]: mode (avg|max), output_height, output_width, sampling_ratio (ints, > 0), "
              "spatial_scale (float), half_pixel (int)");
}

}  // namespace kiln::relay
