// Pooling over 1 to 3 spatial dims of NC[D]HW data, and global pooling over all of them.
#include "kiln/support/error.h"
#include "op_families.h"
#include "op_util.h"

namespace kiln::relay {

namespace {

TypeRelation pool_rel(size_t d, bool numeric_only) {
  return [=](const std::vector<Type>& args, const Attrs& attrs) -> Type {
    const TensorTypeNode& x = tensor_arg(args, 0, "data");
    if (numeric_only) check_floating(x, "data");
    // layout NCHW<x>c (alter_layout): blocked data [N, C/x, spatial..., x].
    const int64_t block = parse_layout(attrs.get_str("layout", "NCHW"));
    const bool blocked = block > 0;
    KILN_USER_CHECK(x.rank() == static_cast<int64_t>(d + 2 + blocked) && (!blocked || x.shape.back() == block))
        << "data must have rank " << d + 2 + blocked << " (N, C" << (blocked ? " blocks" : "") << " and " << d
        << " spatial dims" << (blocked ? ", " + std::to_string(block) + " channels of a block" : "") << "), got "
        << shape_str(x.shape);
    const auto& kernel = attrs.get_ints("kernel");
    const auto& strides = attrs.get_ints("strides");
    const auto& padding = attrs.get_ints("padding");
    const auto& dilation = attrs.get_ints("dilation");
    check_count(kernel, d, "kernel");
    check_count(strides, d, "strides");
    check_count(padding, 2 * d, "padding");
    check_count(dilation, d, "dilation");
    bool ceil_mode = attrs.get_int("ceil_mode") != 0;
    Shape out = {x.shape[0], x.shape[1]};
    for (size_t i = 0; i < d; ++i) {
      KILN_USER_CHECK(kernel[i] >= 1 && strides[i] >= 1 && dilation[i] >= 1)
          << "kernel, strides and dilation must be positive";
      int64_t padded = x.shape[2 + i] + padding[i] + padding[d + i];
      int64_t ext = dilation[i] * (kernel[i] - 1) + 1;
      KILN_USER_CHECK(padded >= ext) << "window of extent " << ext << " is larger than the padded input (" << padded
                                     << ") on spatial axis " << i;
      int64_t o = (padded - ext + (ceil_mode ? strides[i] - 1 : 0)) / strides[i] + 1;
      // A window that would start in the end padding is dropped (ONNX Runtime, PyTorch).
      if (ceil_mode && (o - 1) * strides[i] >= x.shape[2 + i] + padding[i]) --o;
      out.push_back(o);
    }
    if (blocked) out.push_back(x.shape.back());
    return tensor_type(x.dtype, out);
  };
}

Type global_pool_rel(const std::vector<Type>& args, const Attrs&) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  KILN_USER_CHECK(x.rank() >= 3) << "data must have rank >= 3 (N, C, spatial dims), got " << shape_str(x.shape);
  Shape out = x.shape;
  for (size_t i = 2; i < out.size(); ++i) out[i] = 1;
  return tensor_type(x.dtype, out);
}

}  // namespace

void register_pool_ops() {
  const std::string doc =
      "kernel (ints, d), strides (ints, d), padding (ints, 2d: begins then ends), dilation (ints, d), ceil_mode (int), "
      "layout (str, optional: \"NCHW<x>c\" for blocked data [N, C/x, spatial..., x])";
  for (size_t d = 1; d <= 3; ++d) {
    std::string dim = std::to_string(d) + "d";
    register_op("nn.max_pool" + dim, 1, 1, OpPattern::OutElementwiseFusable, pool_rel(d, false),
                doc + "; padding never wins the max");
    register_op("nn.avg_pool" + dim, 1, 1, OpPattern::OutElementwiseFusable, pool_rel(d, true),
                doc + ", count_include_pad (int)");
    register_op("nn.lp_pool" + dim, 1, 1, OpPattern::OutElementwiseFusable, pool_rel(d, true),
                doc + ", p (int): (sum |x|^p)^(1/p)");
  }
  register_op("nn.global_avg_pool", 1, 1, OpPattern::OutElementwiseFusable, global_pool_rel, "mean over spatial dims");
  register_op("nn.global_max_pool", 1, 1, OpPattern::OutElementwiseFusable, global_pool_rel, "max over spatial dims");
}

}  // namespace kiln::relay
