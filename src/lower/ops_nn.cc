// Lowerings of the nn ops: convolutions, pooling, dense / matmul / einsum, normalizations and
// softmax, resize, grid_sample, roi_align, cumsum, cumprod, topk, scatter. Their relay
// attributes (each op's attrs_doc, src/relay/op/*.cc) turned into the op library's compute
// definitions. The convolutions and dense here are their target-independent forms (blocks of
// one channel); on a CPU target the strategy (lower/strategy.h) lowers a group's conv or dense
// with the target's blocks instead.
#include <string>

#include "kiln/support/error.h"
#include "kiln/te/ops/nn_conv.h"
#include "kiln/te/ops/nn_dense.h"
#include "kiln/te/ops/nn_image.h"
#include "kiln/te/ops/nn_norm.h"
#include "kiln/te/ops/nn_pool.h"
#include "kiln/te/ops/nn_scan.h"
#include "op_table.h"

namespace kiln::lower::detail {

namespace {

using relay::Attrs;
using Inputs = std::vector<Tensor>;
using Lowered = std::vector<Tensor>;

// A one-output lowering: the wrapper (set_lowering) checks arity and the result's type.
void set_single(const std::string& op, std::function<Tensor(const Inputs&, const Attrs&)> f) {
  set_lowering(op, [f](const Inputs& in, const Attrs& attrs, const relay::Type&) -> Lowered { return {f(in, attrs)}; });
}

}  // namespace

ConvNdAttrs conv_attrs(const Attrs& a, bool transpose) {
  ConvNdAttrs c;
  c.strides = a.get_ints("strides");
  c.padding = a.get_ints("padding");
  c.dilation = a.get_ints("dilation");
  c.groups = a.get_int("groups");
  if (transpose) c.output_padding = a.get_ints("output_padding");
  return c;
}

namespace {

PoolNdAttrs pool_attrs(const Attrs& a) {
  PoolNdAttrs p;
  p.kernel = a.get_ints("kernel");
  p.strides = a.get_ints("strides");
  p.padding = a.get_ints("padding");
  p.dilation = a.get_ints("dilation");
  p.ceil_mode = a.get_int("ceil_mode") != 0;
  p.count_include_pad = a.get_int("count_include_pad", 0) != 0;
  p.p = a.get_int("p", 2);
  p.blocked = a.get_str("layout", "NCHW") != "NCHW";
  return p;
}

void register_convs() {
  for (int d = 1; d <= 3; ++d) {
    std::string base = "conv" + std::to_string(d) + "d";
    set_single("nn." + base, [base](const Inputs& in, const Attrs& a) {
      ConvNdAttrs c = conv_attrs(a, false);
      // One input channel per group: a block of output channels would span groups.
      if (c.groups > 1 && in[1].shape()[1] == 1) return depthwise_conv_nd(in[0], in[1], c, 1, "dw" + base);
      return conv_nd(in[0], in[1], c, ConvLayout{}, base);
    });
    set_single("nn." + base + "_transpose", [base](const Inputs& in, const Attrs& a) {
      return conv_transpose_nd(in[0], in[1], conv_attrs(a, true), base + "_transpose");
    });
  }
}

void register_blocked_conv() {
  set_single("nn.conv2d_NCHWc", [](const Inputs& in, const Attrs& a) { return conv2d_nchwc(in[0], in[1], conv_attrs(a, false)); });
  set_single("nn.depthwise_conv2d_NCHWc", [](const Inputs& in, const Attrs& a) {
    return depthwise_conv2d_nchwc(in[0], in[1], conv_attrs(a, false));
  });
}

void register_pools() {
  for (int d = 1; d <= 3; ++d) {
    std::string dim = std::to_string(d) + "d";
    set_single("nn.max_pool" + dim, [dim](const Inputs& in, const Attrs& a) {
      return max_pool_nd(in[0], pool_attrs(a), "max_pool" + dim);
    });
    set_single("nn.avg_pool" + dim, [dim](const Inputs& in, const Attrs& a) {
      return avg_pool_nd(in[0], pool_attrs(a), "avg_pool" + dim);
    });
    set_single("nn.lp_pool" + dim, [dim](const Inputs& in, const Attrs& a) {
      return lp_pool_nd(in[0], pool_attrs(a), "lp_pool" + dim);
    });
  }
  set_single("nn.global_avg_pool", [](const Inputs& in, const Attrs&) { return global_avg_pool(in[0]); });
  set_single("nn.global_max_pool", [](const Inputs& in, const Attrs&) { return global_max_pool(in[0]); });
}

void register_products() {
  set_single("nn.dense", [](const Inputs& in, const Attrs&) { return dense(in[0], in[1], DenseBlocks{}); });
  set_single("nn.matmul", [](const Inputs& in, const Attrs&) { return batch_matmul(in[0], in[1]); });
  set_single("einsum", [](const Inputs& in, const Attrs& a) { return einsum(a.get_str("equation"), in); });
}

void register_norms() {
  set_single("nn.batch_norm", [](const Inputs& in, const Attrs& a) {
    return batch_norm_inference(in[0], in[1], in[2], in[3], in[4], a.get_int("axis"), a.get_float("epsilon"));
  });
  set_single("nn.layer_norm", [](const Inputs& in, const Attrs& a) {
    return layer_norm(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), a.get_int("axis"), a.get_float("epsilon"));
  });
  set_single("nn.instance_norm", [](const Inputs& in, const Attrs& a) {
    return instance_norm(in[0], in[1], in[2], a.get_float("epsilon"));
  });
  set_single("nn.group_norm", [](const Inputs& in, const Attrs& a) {
    return group_norm(in[0], in[1], in[2], a.get_int("num_groups"), a.get_float("epsilon"));
  });
  set_single("nn.lrn", [](const Inputs& in, const Attrs& a) {
    return lrn(in[0], a.get_int("size"), a.get_float("alpha"), a.get_float("beta"), a.get_float("bias"));
  });
  set_single("nn.softmax", [](const Inputs& in, const Attrs& a) { return softmax(in[0], a.get_int("axis")); });
  set_single("nn.log_softmax",
             [](const Inputs& in, const Attrs& a) { return log_softmax(in[0], a.get_int("axis")); });
}

void register_image() {
  set_single("image.resize", [](const Inputs& in, const Attrs& a) {
    ResizeAttrs r;
    r.sizes = a.get_ints("sizes");
    r.scales = a.get_floats("scales");
    r.mode = a.get_str("mode");
    r.coordinate_transformation_mode = a.get_str("coordinate_transformation_mode");
    r.nearest_mode = a.get_str("nearest_mode");
    r.cubic_coeff_a = a.get_float("cubic_coeff_a");
    r.exclude_outside = a.get_int("exclude_outside") != 0;
    r.extrapolation_value = a.get_float("extrapolation_value");
    r.roi = a.get_floats("roi");
    return resize(in[0], r);
  });
  set_single("image.grid_sample", [](const Inputs& in, const Attrs& a) {
    GridSampleAttrs g;
    g.mode = a.get_str("mode");
    g.padding_mode = a.get_str("padding_mode");
    g.align_corners = a.get_int("align_corners") != 0;
    return grid_sample(in[0], in[1], g);
  });
  set_single("image.roi_align", [](const Inputs& in, const Attrs& a) {
    RoiAlignAttrs r;
    r.mode = a.get_str("mode");
    r.output_height = a.get_int("output_height");
    r.output_width = a.get_int("output_width");
    r.sampling_ratio = a.get_int("sampling_ratio");
    r.spatial_scale = a.get_float("spatial_scale");
    r.half_pixel = a.get_int("half_pixel") != 0;
    return roi_align(in[0], in[1], in[2], r);
  });
}

void register_opaque() {
  set_single("cumsum", [](const Inputs& in, const Attrs& a) {
    return cumsum(in[0], a.get_int("axis"), a.get_int("exclusive") != 0, a.get_int("reverse") != 0);
  });
  set_single("cumprod", [](const Inputs& in, const Attrs& a) {
    return cumprod(in[0], a.get_int("axis"), a.get_int("exclusive") != 0, a.get_int("reverse") != 0);
  });
  set_lowering("topk", [](const Inputs& in, const Attrs& a, const relay::Type&) -> Lowered {
    return topk(in[0], a.get_int("k"), a.get_int("axis"), a.get_int("largest") != 0);
  });
  set_single("scatter_elements", [](const Inputs& in, const Attrs& a) {
    return scatter_elements(in[0], in[1], in[2], a.get_int("axis"), a.get_str("reduction", "none"));
  });
  set_single("scatter_nd", [](const Inputs& in, const Attrs& a) {
    return scatter_nd(in[0], in[1], in[2], a.get_str("reduction", "none"));
  });
}

}  // namespace

void add_nn_lowerings() {
  register_convs();
  register_blocked_conv();
  register_pools();
  register_products();
  register_norms();
  register_image();
  register_opaque();
}

}  // namespace kiln::lower::detail
