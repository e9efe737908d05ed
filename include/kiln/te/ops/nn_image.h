// Resizing of the op library (ONNX Resize semantics, the relay op image.resize): every axis
// whose size or scale changes is resampled; the others are copied.
//
// Output coordinate x maps to input coordinate x_in by coordinate_transformation_mode (scale
// as given, length_resized = scale * length_in as the ONNX reference computes it):
//   half_pixel            (x + 0.5) / scale - 0.5
//   pytorch_half_pixel    length_resized > 1 ? (x + 0.5) / scale - 0.5 : 0
//   align_corners         length_resized > 1 ? x * (length_in - 1) / (length_resized - 1) : 0
//   asymmetric            x / scale
//   tf_half_pixel_for_nn  (x + 0.5) / scale
//   half_pixel_symmetric  the half_pixel mapping centred on the input
//   tf_crop_and_resize    roi-relative; outside the input: extrapolation_value
// nearest picks floor / ceil / round with ties down (round_prefer_floor) or up
// (round_prefer_ceil); linear interpolates the two neighbours of each resampled axis; cubic uses
// the four neighbours with coefficient a (exclude_outside renormalizes inside weights).
// Neighbours clamp to the edge. One stage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/te/operation.h"

namespace kiln::te::ops {

struct ResizeAttrs {
  std::vector<int64_t> sizes;   // the full output shape
  std::vector<double> scales;   // per axis, as the coordinate transform uses them
  std::string mode = "nearest";  // nearest | linear | cubic
  std::string coordinate_transformation_mode = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0.0;
  std::vector<double> roi;  // 2 * rank (starts, then ends) for tf_crop_and_resize
};

Tensor resize(const Tensor& x, const ResizeAttrs& a, const std::string& name = "resize");

}  // namespace kiln::te::ops
