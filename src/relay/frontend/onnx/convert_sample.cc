// Spatial sampling: GridSample (the graph op image.grid_sample), AffineGrid (a matmul of a
// constant base grid by theta), Col2Im (a grouped transposed convolution by one-hot kernels),
// DeformConv (grid_sample at the offset taps, then a grouped matmul), RoiAlign (the graph op
// image.roi_align).
#include <cmath>

#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

std::vector<Expr> grid_sample(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "X");
  const TensorTypeNode& grid = c.input_type(1, "grid");
  // Opset 16 spells the modes bilinear / bicubic; opset 20 renamed them linear / cubic.
  std::string mode = c.attr_str("mode", c.opset() >= 20 ? "linear" : "bilinear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  KILN_USER_CHECK(mode == "nearest" || mode == "linear" || mode == "cubic") << "unknown mode '" << mode << "'";
  std::string pad = c.attr_str("padding_mode", "zeros");
  KILN_USER_CHECK(pad == "zeros" || pad == "border" || pad == "reflection") << "unknown padding_mode '" << pad << "'";
  int64_t align = c.attr_int("align_corners", 0);
  KILN_USER_CHECK(align == 0 || align == 1) << "align_corners must be 0 or 1, not " << align;
  size_t k = x.shape.size() >= 2 ? x.shape.size() - 2 : 0;
  KILN_USER_CHECK(k >= 1) << "X " << shape_str(x.shape) << " must have rank >= 3 (N, C, spatial axes)";
  KILN_USER_CHECK(grid.shape.size() == k + 2 && grid.shape.back() == static_cast<int64_t>(k))
      << "grid " << shape_str(grid.shape) << " must be [N, O1..O" << k << ", " << k << "] for X " << shape_str(x.shape);
  KILN_USER_CHECK(grid.dtype.is_floating()) << "grid must be floating-point";
  KILN_USER_CHECK(mode == "nearest" || x.dtype.is_floating()) << mode << " interpolation needs a floating-point X";
  Attrs a;
  a.set_str("mode", mode).set_str("padding_mode", pad).set_int("align_corners", align);
  return {c.call("image.grid_sample", {c.input(0), c.input(1)}, a)};
}

// Normalized coordinates of the centres of n pixels in [-1, 1]: at the extremes with
// align_corners, else half a pixel in (torch.linspace, as the reference builds them).
std::vector<double> base_coords(int64_t n, bool align) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) {
    double fi = static_cast<double>(i), fn = static_cast<double>(n);
    if (align) v.push_back(n == 1 ? -1.0 : -1.0 + 2.0 * fi / (fn - 1.0));
    else v.push_back(-1.0 + (2.0 * fi + 1.0) / fn);
  }
  return v;
}

// AffineGrid: theta [N, k, k + 1] times the homogeneous base grid [O1 * .. * Ok, k + 1]
// (innermost coordinate first, then 1): [N, O1..Ok, k].
std::vector<Expr> affine_grid(NodeContext& c) {
  const TensorTypeNode& theta = c.input_type(0, "theta");
  std::vector<int64_t> size = c.const_ints(1, "size");
  int64_t align = c.attr_int("align_corners", 0);
  KILN_USER_CHECK(align == 0 || align == 1) << "align_corners must be 0 or 1, not " << align;
  KILN_USER_CHECK(size.size() == 4 || size.size() == 5)
      << "size " << shape_str(size) << " must be [N, C, H, W] or [N, C, D, H, W]";
  int64_t k = static_cast<int64_t>(size.size()) - 2;
  KILN_USER_CHECK(theta.shape.size() == 3 && theta.shape[0] == size[0] && theta.shape[1] == k &&
                  theta.shape[2] == k + 1)
      << "theta " << shape_str(theta.shape) << " must be [" << size[0] << ", " << k << ", " << k + 1 << "] for size "
      << shape_str(size);
  KILN_USER_CHECK(theta.dtype.is_floating()) << "theta must be floating-point";
  Shape spatial(size.begin() + 2, size.end());
  for (int64_t d : spatial) KILN_USER_CHECK(d >= 1) << "size " << shape_str(size) << " must be positive";
  std::vector<std::vector<double>> coords;
  for (int64_t d : spatial) coords.push_back(base_coords(d, align != 0));
  int64_t points = num_elements(spatial);
  std::vector<double> base;
  for (int64_t p = 0; p < points; ++p) {
    // Point p's index on each axis, innermost first as the grid lists them.
    int64_t rest = p;
    std::vector<double> h(static_cast<size_t>(k + 1), 1.0);
    for (int64_t a = k - 1; a >= 0; --a) {
      h[static_cast<size_t>(k - 1 - a)] = coords[static_cast<size_t>(a)][static_cast<size_t>(rest % spatial[a])];
      rest /= spatial[a];
    }
    base.insert(base.end(), h.begin(), h.end());
  }
  Expr b = c.constant(HostTensor::from_doubles(theta.dtype, {points, k + 1}, base));
  Expr tt = c.call("transpose", {c.input(0)}, Attrs().set_ints("axes", {0, 2, 1}));
  Expr g = c.call("nn.matmul", {b, tt});  // [N, points, k]
  Shape out = {size[0]};
  out.insert(out.end(), spatial.begin(), spatial.end());
  out.push_back(k);
  return {c.call("reshape", {g}, Attrs().set_ints("newshape", out))};
}

// Col2Im: the sum of sliding blocks back into an image is a transposed convolution of the
// blocks [N, C * K, B1..Bd] by one-hot kernels, one group per channel: block element kidx of
// channel c lands at kernel position kidx.
std::vector<Expr> col2im(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "input");
  std::vector<int64_t> image = c.const_ints(1, "image_shape");
  std::vector<int64_t> block = c.const_ints(2, "block_shape");
  size_t d = image.size();
  KILN_USER_CHECK(d >= 1 && block.size() == d) << "image_shape " << shape_str(image) << " and block_shape "
                                               << shape_str(block) << " must have one entry per spatial axis";
  KILN_SUPPORTED(d <= 3) << d << " spatial axes: kiln has transposed convolutions of 1 to 3 axes";
  std::vector<int64_t> dil = c.attr_ints("dilations", std::vector<int64_t>(d, 1));
  std::vector<int64_t> strides = c.attr_ints("strides", std::vector<int64_t>(d, 1));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * d, 0));
  KILN_USER_CHECK(dil.size() == d && strides.size() == d && pads.size() == 2 * d)
      << "dilations " << shape_str(dil) << ", strides " << shape_str(strides) << " and pads " << shape_str(pads)
      << " must have " << d << ", " << d << " and " << 2 * d << " entries";
  KILN_USER_CHECK(x.shape.size() == 3) << "input " << shape_str(x.shape) << " must be [N, C * prod(block_shape), L]";
  int64_t kernel = 1, blocks = 1;
  Shape xs = {x.shape[0], x.shape[1]};
  std::vector<int64_t> out_pad;
  for (size_t i = 0; i < d; ++i) {
    KILN_USER_CHECK(block[i] >= 1 && dil[i] >= 1 && strides[i] >= 1 && pads[i] >= 0 && pads[d + i] >= 0)
        << "block_shape, dilations and strides must be positive and pads non-negative";
    int64_t ext = dil[i] * (block[i] - 1) + 1;
    int64_t span = image[i] + pads[i] + pads[d + i] - ext;
    KILN_USER_CHECK(span >= 0) << "block " << block[i] << " (dilated " << ext << ") does not fit axis " << i
                               << " of image " << shape_str(image) << " padded by " << shape_str(pads);
    int64_t b = span / strides[i] + 1;
    kernel *= block[i];
    blocks *= b;
    xs.push_back(b);
    // The transposed convolution covers (b - 1) * stride + ext - pads; the rest of the image
    // (a stride's remainder) only receives zeros.
    out_pad.push_back(image[i] + pads[i] + pads[d + i] - ((b - 1) * strides[i] + ext));
  }
  KILN_USER_CHECK(x.shape[1] % kernel == 0)
      << "input channels " << x.shape[1] << " must be a multiple of prod(block_shape) = " << kernel;
  KILN_USER_CHECK(x.shape[2] == blocks) << "input has " << x.shape[2] << " blocks, image_shape " << shape_str(image)
                                        << " with these strides, pads and dilations makes " << blocks;
  int64_t channels = x.shape[1] / kernel;
  Shape ws = {x.shape[1], 1};
  ws.insert(ws.end(), block.begin(), block.end());
  std::vector<double> w(static_cast<size_t>(x.shape[1] * kernel), 0.0);
  for (int64_t ci = 0; ci < x.shape[1]; ++ci) w[static_cast<size_t>(ci * kernel + ci % kernel)] = 1.0;
  Expr y = c.call("reshape", {c.input(0)}, Attrs().set_ints("newshape", xs));
  Attrs a;
  a.set_ints("strides", strides).set_ints("padding", pads).set_ints("dilation", dil).set_int("groups", channels);
  a.set_ints("output_padding", out_pad);
  Expr weight = c.constant(HostTensor::from_doubles(x.dtype, ws, w));
  return {c.call("nn.conv" + std::to_string(d) + "d_transpose", {y, weight}, a)};
}

// DeformConv (2-d), as the ONNX reference computes it: every kernel tap of every output
// position samples X bilinearly (image.grid_sample, align_corners, zeros) at its offset
// position, scaled by the mask; a grouped matmul by the weights sums the samples.
std::vector<Expr> deform_conv(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "X");
  const TensorTypeNode& w = c.input_type(1, "W");
  const TensorTypeNode& off = c.input_type(2, "offset");
  KILN_SUPPORTED(x.shape.size() == 4) << "X " << shape_str(x.shape) << ": only 2-d DeformConv (X [N, C, H, W]) is supported";
  KILN_USER_CHECK(x.dtype.is_floating() && w.dtype == x.dtype && off.dtype == x.dtype)
      << "X, W and offset must share one floating-point type";
  int64_t n = x.shape[0], ic = x.shape[1], ih = x.shape[2], iw = x.shape[3];
  KILN_USER_CHECK(w.shape.size() == 4 && off.shape.size() == 4 && off.shape[0] == n)
      << "W " << shape_str(w.shape) << " and offset " << shape_str(off.shape) << " must be 4-d, offset [" << n << ", ...]";
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape", {w.shape[2], w.shape[3]});
  std::vector<int64_t> strides = c.attr_ints("strides", {1, 1}), dil = c.attr_ints("dilations", {1, 1});
  std::vector<int64_t> pads = c.attr_ints("pads", {0, 0, 0, 0});
  int64_t group = c.attr_int("group", 1), og = c.attr_int("offset_group", 1);
  KILN_USER_CHECK(kernel.size() == 2 && strides.size() == 2 && dil.size() == 2 && pads.size() == 4)
      << "kernel_shape, strides and dilations need 2 entries, pads 4";
  KILN_USER_CHECK(kernel[0] == w.shape[2] && kernel[1] == w.shape[3])
      << "kernel_shape " << shape_str(kernel) << " differs from W " << shape_str(w.shape);
  int64_t oc = w.shape[0], kk = kernel[0] * kernel[1];
  KILN_USER_CHECK(group >= 1 && ic == w.shape[1] * group && oc % group == 0)
      << "group " << group << " does not fit X " << shape_str(x.shape) << " and W " << shape_str(w.shape);
  KILN_USER_CHECK(og >= 1 && ic % og == 0 && off.shape[1] == og * kk * 2)
      << "offset " << shape_str(off.shape) << " must have offset_group * kH * kW * 2 = " << og * kk * 2
      << " channels, and offset_group " << og << " must divide the " << ic << " input channels";
  int64_t oh = off.shape[2], ow = off.shape[3];
  for (int a = 0; a < 2; ++a) {
    int64_t in = x.shape[2 + a], ext = (kernel[a] - 1) * dil[a] + 1;
    int64_t o = (in + pads[a] + pads[2 + a] - ext) / strides[a] + 1;
    KILN_USER_CHECK(o == off.shape[2 + a]) << "offset " << shape_str(off.shape) << ": output axis " << a << " must be "
                                           << o << " for these pads, strides and dilations";
  }
  // Normalized coordinates divide by the length - 1 (align_corners), as the reference's do.
  KILN_SUPPORTED(ih > 1 && iw > 1) << "X " << shape_str(x.shape) << ": a spatial axis of length 1 is not supported";
  // grid = (base + offset) * 2 / (len - 1) - 1 per (y, x): base [kk, 2, oh, ow] is the tap's
  // position without offset.
  std::vector<double> scale = {2.0 / static_cast<double>(ih - 1), 2.0 / static_cast<double>(iw - 1)};
  std::vector<double> bias;
  for (int64_t ki = 0; ki < kernel[0]; ++ki)
    for (int64_t kj = 0; kj < kernel[1]; ++kj)
      for (int a = 0; a < 2; ++a)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            int64_t pos = a == 0 ? i * strides[0] - pads[0] + ki * dil[0] : j * strides[1] - pads[1] + kj * dil[1];
            bias.push_back(static_cast<double>(pos) * scale[a] - 1.0);
          }
  Expr g = c.call("reshape", {c.input(2)}, Attrs().set_ints("newshape", {n, og, kk, 2, oh, ow}));
  g = c.call("multiply", {g, c.constant(HostTensor::from_doubles(x.dtype, {2, 1, 1}, scale))});
  g = c.call("add", {g, c.constant(HostTensor::from_doubles(x.dtype, {kk, 2, oh, ow}, bias))});
  // grid_sample lists x before y, last.
  g = c.call("take", {g, c.constant(HostTensor::from_doubles(DataType::i64(), {2}, {1, 0}))}, Attrs().set_int("axis", 3));
  g = c.call("transpose", {g}, Attrs().set_ints("axes", {0, 1, 2, 4, 5, 3}));
  g = c.call("reshape", {g}, Attrs().set_ints("newshape", {n * og, kk * oh, ow, 2}));
  Expr xs = c.call("reshape", {c.input(0)}, Attrs().set_ints("newshape", {n * og, ic / og, ih, iw}));
  Attrs ga;
  ga.set_str("mode", "linear").set_str("padding_mode", "zeros").set_int("align_corners", 1);
  Expr s = c.call("image.grid_sample", {xs, g}, ga);  // [n * og, ic / og, kk * oh, ow]
  if (c.has_input(4)) {
    const TensorTypeNode& m = c.input_type(4, "mask");
    KILN_USER_CHECK(m.shape == Shape({n, og * kk, oh, ow}))
        << "mask " << shape_str(m.shape) << " must be " << shape_str(Shape({n, og * kk, oh, ow}));
    s = c.call("reshape", {s}, Attrs().set_ints("newshape", {n, og, ic / og, kk, oh * ow}));
    Expr mk = c.call("reshape", {c.input(4)}, Attrs().set_ints("newshape", {n, og, 1, kk, oh * ow}));
    s = c.call("multiply", {s, mk});
  }
  int64_t icg = ic / group, ocg = oc / group;
  s = c.call("reshape", {s}, Attrs().set_ints("newshape", {n, group, icg * kk, oh * ow}));
  Expr wr = c.call("reshape", {c.input(1)}, Attrs().set_ints("newshape", {group, ocg, icg * kk}));
  Expr y = c.call("nn.matmul", {wr, s});  // [n, group, ocg, oh * ow]
  y = c.call("reshape", {y}, Attrs().set_ints("newshape", {n, oc, oh, ow}));
  if (c.has_input(3)) {
    const TensorTypeNode& b = c.input_type(3, "B");
    KILN_USER_CHECK(b.shape == Shape({oc})) << "B " << shape_str(b.shape) << " must be [" << oc << "]";
    y = c.call("add", {y, c.call("reshape", {c.input(3)}, Attrs().set_ints("newshape", {oc, 1, 1}))});
  }
  return {y};
}

// RoiAlign (opsets 10, 16): the graph op image.roi_align. The adaptive sampling grid
// (sampling_ratio 0) is sized by each roi's extent at run time: not supported.
std::vector<Expr> roi_align(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "X");
  const TensorTypeNode& rois = c.input_type(1, "rois");
  const TensorTypeNode& idx = c.input_type(2, "batch_indices");
  KILN_USER_CHECK(x.shape.size() == 4) << "X " << shape_str(x.shape) << " must be [N, C, H, W]";
  KILN_USER_CHECK(rois.shape.size() == 2 && rois.shape[1] == 4 && idx.shape == Shape({rois.shape[0]}))
      << "rois " << shape_str(rois.shape) << " must be [R, 4] and batch_indices " << shape_str(idx.shape) << " [R]";
  std::string mode = c.attr_str("mode", "avg");
  KILN_USER_CHECK(mode == "avg" || mode == "max") << "unknown mode '" << mode << "'";
  // Opset 16 added the transform; opset 10 behaves as output_half_pixel.
  std::string coord = c.opset() >= 16 ? c.attr_str("coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
  KILN_USER_CHECK(coord == "half_pixel" || coord == "output_half_pixel")
      << "unknown coordinate_transformation_mode '" << coord << "'";
  int64_t oh = c.attr_int("output_height", 1), ow = c.attr_int("output_width", 1);
  int64_t ratio = c.attr_int("sampling_ratio", 0);
  KILN_USER_CHECK(oh >= 1 && ow >= 1) << "output_height " << oh << " and output_width " << ow << " must be positive";
  KILN_USER_CHECK(ratio >= 0) << "sampling_ratio " << ratio << " must not be negative";
  KILN_SUPPORTED(ratio > 0) << "sampling_ratio=0 (a sampling grid sized by each roi at run time) is not supported";
  Attrs a;
  a.set_str("mode", mode).set_int("output_height", oh).set_int("output_width", ow).set_int("sampling_ratio", ratio);
  a.set_float("spatial_scale", c.attr_float("spatial_scale", 1.0)).set_int("half_pixel", coord == "half_pixel");
  return {c.call("image.roi_align", {c.input(0), c.input(1), c.input(2)}, a)};
}

}  // namespace

void register_sample_converters(ConverterTable& t) {
  t["GridSample"] = grid_sample;
  t["AffineGrid"] = affine_grid;
  t["Col2Im"] = col2im;
  t["DeformConv"] = deform_conv;
  t["RoiAlign"] = roi_align;
}

}  // namespace kiln::relay::onnx_frontend
