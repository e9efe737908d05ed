// The ops of blocked layouts, made by alter_layout: layout_transform, nn.conv2d_NCHWc and
// nn.depthwise_conv2d_NCHWc.
#include "kiln/support/error.h"
#include "op_families.h"
#include "op_util.h"

namespace kiln::relay {

namespace {

// The NCHW shape behind a tensor of layout `block` (0: it is NCHW already).
Shape nchw_of(const Shape& s, int64_t block, const char* role) {
  if (block == 0) {
    KILN_USER_CHECK(s.size() == 4) << role << " " << shape_str(s) << " is not 4-d NCHW";
    return s;
  }
  KILN_USER_CHECK(s.size() == 5 && s[4] == block)
      << role << " " << shape_str(s) << " is not NCHW" << block << "c (5-d, last dim " << block << ")";
  return {s[0], s[1] * block, s[2], s[3]};
}
Shape in_layout(const Shape& nchw, int64_t block) {
  if (block == 0) return nchw;
  return {nchw[0], nchw[1] / block, nchw[2], nchw[3], block};
}

Type layout_transform_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto* x = args[0].as<TensorTypeNode>();
  KILN_USER_CHECK(x != nullptr) << "data must be a tensor";
  int64_t src = parse_layout(attrs.get_str("src_layout")), dst = parse_layout(attrs.get_str("dst_layout"));
  Shape n = nchw_of(x->shape, src, "data");
  KILN_USER_CHECK(dst == 0 || n[1] % dst == 0) << "channels " << n[1] << " are not a multiple of block " << dst;
  return tensor_type(x->dtype, in_layout(n, dst));
}

// Output spatial dims of a 2-d window over the NCHW shape n, weight spatial dims at w[k0], w[k0+1].
void window_out(const Shape& n, const Shape& w, size_t k0, const Attrs& attrs, Shape* out) {
  const auto& st = attrs.get_ints("strides");
  const auto& pad = attrs.get_ints("padding");
  const auto& dil = attrs.get_ints("dilation");
  KILN_USER_CHECK(st.size() == 2 && pad.size() == 4 && dil.size() == 2) << "strides, padding, dilation must be 2, 4, 2 ints";
  for (int i = 0; i < 2; ++i) {
    int64_t padded = n[2 + i] + pad[i] + pad[2 + i], ext = dil[i] * (w[k0 + i] - 1) + 1;
    KILN_USER_CHECK(st[i] >= 1 && padded >= ext) << "kernel larger than the padded input on spatial axis " << i;
    (*out)[2 + i] = (padded - ext) / st[i] + 1;
  }
}

Type conv2d_nchwc_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto* x = args[0].as<TensorTypeNode>();
  const auto* w = args[1].as<TensorTypeNode>();
  KILN_USER_CHECK(x && w) << "data and weight must be tensors";
  KILN_USER_CHECK(x->dtype == w->dtype && x->dtype.is_floating()) << "data and weight must share a float dtype";
  int64_t ib = parse_layout(attrs.get_str("data_layout")), ob = parse_layout(attrs.get_str("out_layout"));
  KILN_USER_CHECK(ib > 0 && ob > 0) << "data_layout and out_layout must be blocked";
  Shape n = nchw_of(x->shape, ib, "data");
  KILN_USER_CHECK(w->rank() == 6 && w->shape[1] * ib == n[1] && w->shape[4] == ib && w->shape[5] == ob)
      << "weight " << shape_str(w->shape) << " is not [O/" << ob << ", " << n[1] / ib << ", KH, KW, " << ib << ", "
      << ob << "]";
  KILN_USER_CHECK(attrs.get_int("groups") == 1) << "only groups=1 is blocked";
  Shape out = {n[0], w->shape[0], 0, 0, ob};
  window_out(n, w->shape, 2, attrs, &out);
  return tensor_type(x->dtype, out);
}

Type depthwise_conv2d_nchwc_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto* x = args[0].as<TensorTypeNode>();
  const auto* w = args[1].as<TensorTypeNode>();
  KILN_USER_CHECK(x && w) << "data and weight must be tensors";
  KILN_USER_CHECK(x->dtype == w->dtype && x->dtype.is_floating()) << "data and weight must share a float dtype";
  int64_t b = parse_layout(attrs.get_str("data_layout"));
  KILN_USER_CHECK(b > 0 && parse_layout(attrs.get_str("out_layout")) == b) << "data_layout and out_layout must be one blocked layout";
  Shape n = nchw_of(x->shape, b, "data");
  KILN_USER_CHECK(w->rank() == 4 && w->shape[0] * b == n[1] && w->shape[3] == b)
      << "weight " << shape_str(w->shape) << " is not [" << n[1] / b << ", KH, KW, " << b << "]";
  KILN_USER_CHECK(attrs.get_int("groups") == n[1]) << "groups must equal the channels (" << n[1] << ")";
  Shape out = {n[0], x->shape[1], 0, 0, b};
  window_out(n, w->shape, 1, attrs, &out);
  return tensor_type(x->dtype, out);
}

}  // namespace

void register_layout_ops() {
  register_op("nn.depthwise_conv2d_NCHWc", 2, 2, OpPattern::OutElementwiseFusable, depthwise_conv2d_nchwc_rel,
              "depthwise conv(data [N, C/b, H, W, b], weight [C/b, KH, KW, b]) -> [N, C/b, OH, OW, b]: strides, "
              "padding, dilation as nn.conv2d_NCHWc, groups (C), data_layout and out_layout (\"NCHW<b>c\")");
  register_op("layout_transform", 1, 1, OpPattern::Injective, layout_transform_rel,
              "src_layout, dst_layout (str: \"NCHW\" or \"NCHW<x>c\", data [N, C/x, H, W, x])");
  register_op("nn.conv2d_NCHWc", 2, 2, OpPattern::OutElementwiseFusable, conv2d_nchwc_rel,
              "conv(data [N, C/x, H, W, x], weight [O/y, C/x, KH, KW, x, y]) -> [N, O/y, OH, OW, y]: strides "
              "(2 ints), padding (4 ints: top, left, bottom, right), dilation (2 ints), groups (1), data_layout "
              "(\"NCHW<x>c\"), kernel_layout (\"OIHW<x>i<y>o\"), out_layout (\"NCHW<y>c\")");
}

}  // namespace kiln::relay
