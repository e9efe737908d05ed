// Resize (opsets 10 to 19) and Upsample (7 to 9): the output size is computed here, and the
// scales the coordinate transform uses are kept next to it (ONNX maps coordinates with the given
// scales, not with out/in, when scales are given).
#include <cmath>

#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

Attrs resize_attrs(const Shape& sizes, const std::vector<double>& scales, const std::string& mode,
                   const std::string& coord, const std::string& nearest) {
  Attrs a;
  a.set_ints("sizes", sizes).set_floats("scales", scales).set_str("mode", mode);
  a.set_str("coordinate_transformation_mode", coord).set_str("nearest_mode", nearest);
  a.set_float("cubic_coeff_a", -0.75).set_int("exclude_outside", 0).set_float("extrapolation_value", 0.0);
  a.set_floats("roi", {});
  return a;
}

std::string resize_mode(NodeContext& c) {
  std::string mode = c.attr_str("mode", "nearest");
  if (mode == "bilinear" || mode == "trilinear") mode = "linear";  // Upsample-7 spellings
  KILN_USER_CHECK(mode == "nearest" || mode == "linear" || mode == "cubic") << "unknown mode '" << mode << "'";
  return mode;
}

// Output sizes from scales: floor(in * scale), as the spec says.
Shape sizes_from_scales(const Shape& in, const std::vector<double>& scales) {
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    KILN_USER_CHECK(scales[i] > 0) << "scales must be positive";
    out.push_back(static_cast<int64_t>(std::floor(static_cast<double>(in[i]) * scales[i])));
  }
  return out;
}

std::vector<Expr> upsample(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  std::vector<double> scales;
  if (c.opset() >= 9) {
    scales = c.require_const(1, "scales").to_doubles();
  } else if (c.opset() < 7) {
    scales = legacy_upsample_scales(c);
  } else {
    scales = c.attr_floats("scales", {});
  }
  KILN_USER_CHECK(scales.size() == x.shape.size()) << "scales must have one entry per axis of " << shape_str(x.shape);
  // Upsample indexes asymmetrically and picks the floor neighbour: plain repetition.
  Attrs a = resize_attrs(sizes_from_scales(x.shape, scales), scales, resize_mode(c), "asymmetric", "floor");
  return {c.call("image.resize", {c.input(0)}, a)};
}

std::vector<Expr> resize(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "X");
  size_t r = x.shape.size();
  KILN_SUPPORTED(c.attr_int("antialias", 0) == 0) << "antialias=1 is not supported";
  std::string mode = resize_mode(c);
  std::string coord = c.attr_str("coordinate_transformation_mode", c.opset() >= 11 ? "half_pixel" : "asymmetric");
  std::string nearest = c.attr_str("nearest_mode", c.opset() >= 11 ? "round_prefer_floor" : "floor");
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (c.opset() < 11) {
    scales = c.require_const(1, "scales").to_doubles();
  } else {
    if (c.has_input(1)) roi = c.require_const(1, "roi").to_doubles();
    if (c.has_input(2)) scales = c.require_const(2, "scales").to_doubles();
    if (c.has_input(3)) sizes = c.const_ints(3, "sizes");
  }
  KILN_USER_CHECK(scales.empty() != sizes.empty()) << "exactly one of scales and sizes must be given";
  // Opset 18: scales/sizes may name only some axes; the others keep their size.
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < static_cast<int64_t>(r); ++i) axes.push_back(i);
  if (c.has_attr("axes")) {
    axes = c.attr_ints("axes");
    for (auto& a : axes) a = normalize_axis_for(a, static_cast<int64_t>(r), c);
  }
  size_t given = scales.empty() ? sizes.size() : scales.size();
  KILN_USER_CHECK(given == axes.size()) << "scales/sizes have " << given << " entries for " << axes.size() << " axes";
  std::vector<double> full_scales(r, 1.0);
  Shape out = x.shape;
  if (!scales.empty()) {
    for (size_t i = 0; i < axes.size(); ++i) full_scales[axes[i]] = scales[i];
    out = sizes_from_scales(x.shape, full_scales);
  } else {
    std::string policy = c.attr_str("keep_aspect_ratio_policy", "stretch");
    double keep = policy == "not_larger" ? INFINITY : 0.0;
    for (size_t i = 0; i < axes.size(); ++i) {
      double s = static_cast<double>(sizes[i]) / static_cast<double>(x.shape[axes[i]]);
      if (policy == "not_larger") keep = std::min(keep, s);
      if (policy == "not_smaller") keep = std::max(keep, s);
      full_scales[axes[i]] = s;
      out[axes[i]] = sizes[i];
    }
    if (policy != "stretch") {
      KILN_USER_CHECK(policy == "not_larger" || policy == "not_smaller") << "unknown keep_aspect_ratio_policy '"
                                                                        << policy << "'";
      for (int64_t a : axes) {
        full_scales[a] = keep;
        out[a] = static_cast<int64_t>(std::round(keep * static_cast<double>(x.shape[a])));
      }
    }
  }
  if (coord == "tf_crop_and_resize") {
    KILN_USER_CHECK(roi.size() == 2 * axes.size()) << "tf_crop_and_resize needs an roi of 2 entries per axis";
    std::vector<double> full_roi(2 * r, 0.0);
    for (size_t i = 0; i < r; ++i) full_roi[r + i] = 1.0;
    for (size_t i = 0; i < axes.size(); ++i) {
      full_roi[axes[i]] = roi[i];
      full_roi[r + axes[i]] = roi[axes.size() + i];
    }
    roi = full_roi;
  } else {
    roi.clear();
  }
  Attrs a = resize_attrs(out, full_scales, mode, coord, nearest);
  a.set_float("cubic_coeff_a", c.attr_float("cubic_coeff_a", -0.75));
  a.set_int("exclude_outside", c.attr_int("exclude_outside", 0));
  a.set_float("extrapolation_value", c.attr_float("extrapolation_value", 0.0));
  a.set_floats("roi", roi);
  return {c.call("image.resize", {c.input(0)}, a)};
}

}  // namespace

void register_resize_converters(ConverterTable& t) {
  t["Resize"] = resize;
  t["Upsample"] = upsample;
}

}  // namespace kiln::relay::onnx_frontend
