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

// Sampling at computed coordinates (ONNX GridSample, the relay op image.grid_sample): x is
// [N, C, D1..Dk], grid [N, O1..Ok, k] holds normalized coordinates in [-1, 1], innermost axis
// last (grid[..., 0] indexes Dk). Output [N, C, O1..Ok]. A coordinate g on an axis of length d
// maps to (g + 1) / 2 * (d - 1) with align_corners, else ((g + 1) * d - 1) / 2 (in float64);
// nearest rounds it half to even; coordinates beyond the borders ([0, d - 1] with
// align_corners, else [-0.5, d - 0.5]) are clamped to [0, d - 1] (border) or reflected into
// them (reflection). linear / cubic then read 2 / 4 neighbours per axis (cubic: Keys, a =
// -0.75), each neighbour outside the input reading 0 (zeros), the nearest edge (border) or its
// reflection (reflection). One stage.
struct GridSampleAttrs {
  std::string mode = "linear";          // nearest | linear | cubic
  std::string padding_mode = "zeros";   // zeros | border | reflection
  bool align_corners = false;
};

Tensor grid_sample(const Tensor& x, const Tensor& grid, const GridSampleAttrs& a,
                   const std::string& name = "grid_sample");

// Pooling of regions (ONNX RoiAlign, the relay op image.roi_align; nn_roi_align.cc): x [N, C,
// H, W], rois [R, 4] (x1, y1, x2, y2 in x's pixels / spatial_scale), batch_indices [R] (int)
// -> [R, C, output_height, output_width]. Each output bin averages (avg) or takes the largest
// weighted tap (max) of sampling_ratio^2 bilinear samples on a regular grid inside the bin,
// exactly as the ONNX reference (samples beyond [-1, H] x [-1, W] read 0, the rest clamp to
// the edge); half_pixel shifts the roi by -0.5 pixel, otherwise rois are at least 1 x 1.
struct RoiAlignAttrs {
  std::string mode = "avg";  // avg | max
  int64_t output_height = 1, output_width = 1;
  int64_t sampling_ratio = 1;  // samples per bin and axis (> 0)
  double spatial_scale = 1.0;
  bool half_pixel = true;
};

Tensor roi_align(const Tensor& x, const Tensor& rois, const Tensor& batch_indices, const RoiAlignAttrs& a,
                 const std::string& name = "roi_align");

}  // namespace kiln::te::ops
