// te lowerings of the two ops alter_layout introduces: layout_transform and nn.conv2d_NCHWc.
//
// They live with the graph lowering, not in the op library, because only alter_layout makes
// these ops. The conv is a plain direct convolution over blocked data (schedule_anchor_cpu gives
// it its generic schedule): correct, so alter_layout can be switched on and checked end to end,
// but not yet the fast blocked kernel the layout is for.
#include "kiln/relay/lower_graph.h"
#include "kiln/support/error.h"
#include "kiln/te/ops/lowering.h"
#include "kiln/te/ops/nn.h"

namespace kiln::relay {

namespace {

using ir::Expr;
using ir::Var;

int64_t block_of(const std::string& layout) { return layout == "NCHW" ? 0 : std::stoll(layout.substr(4)); }

std::vector<te::Tensor> lower_layout_transform(const std::vector<te::Tensor>& in, const Attrs& attrs, const Type& type) {
  const te::Tensor& x = in[0];
  int64_t from = block_of(attrs.get_str("src_layout")), to = block_of(attrs.get_str("dst_layout"));
  const Shape& out = type.as<TensorTypeNode>()->shape;
  return {te::compute(out, [&](const std::vector<Var>& i) {
    // The NCHW channel of this output element, then where it lives in the input.
    Expr c = to ? i[1] * static_cast<int>(to) + i[4] : Expr(i[1]);
    if (from == 0) return x(i[0], c, i[2], i[3]);
    return x(i[0], c / static_cast<int>(from), i[2], i[3], c % static_cast<int>(from));
  }, "layout_transform")};
}

std::vector<te::Tensor> lower_conv2d_nchwc(const std::vector<te::Tensor>& in, const Attrs& a, const Type& type) {
  const te::Tensor &x = in[0], &w = in[1];
  const auto& st = a.get_ints("strides");
  const auto& pad = a.get_ints("padding");
  const auto& dil = a.get_ints("dilation");
  KILN_SUPPORTED(a.get_int("groups") == 1) << "nn.conv2d_NCHWc: only groups=1";
  bool padded = pad[0] || pad[1] || pad[2] || pad[3];
  te::Tensor xp = padded ? te::ops::pad(x, {0, 0, pad[0], pad[1], 0}, {0, 0, pad[2], pad[3], 0}, 0.0, "conv2d_NCHWc.pad") : x;
  auto ib = te::reduce_axis(w.shape()[1], "ib");
  auto ky = te::reduce_axis(w.shape()[2], "ky");
  auto kx = te::reduce_axis(w.shape()[3], "kx");
  auto ic = te::reduce_axis(w.shape()[4], "ic");
  const Shape& out = type.as<TensorTypeNode>()->shape;
  int sy = static_cast<int>(st[0]), sx = static_cast<int>(st[1]), dy = static_cast<int>(dil[0]), dx = static_cast<int>(dil[1]);
  return {te::compute(out, [&](Var n, Var ob, Var oy, Var ox, Var oc) {
    return te::sum(xp(n, ib, oy * sy + ky * dy, ox * sx + kx * dx, ic) * w(ob, ib, ky, kx, ic, oc), {ib, ky, kx, ic});
  }, "conv2d_NCHWc", {"n", "ob", "oy", "ox", "oc"})};
}

}  // namespace

void register_layout_lowerings() {
  register_layout_ops();
  // Slots the op library filled keep its lowering.
  if (!get_op("layout_transform").has_lowering())
    set_op_lowering("layout_transform", te::ops::FLower(lower_layout_transform));
  if (!get_op("nn.conv2d_NCHWc").has_lowering()) set_op_lowering("nn.conv2d_NCHWc", te::ops::FLower(lower_conv2d_nchwc));
}

}  // namespace kiln::relay
