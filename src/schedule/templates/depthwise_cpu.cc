#include "kiln/schedule/templates/depthwise_cpu.h"

#include "kiln/schedule/templates/anchor_cpu.h"
#include "kiln/te/ops/nn_conv.h"

namespace kiln::schedule {

void schedule_depthwise_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, Config& cfg) {
  te::Tensor pad;
  for (const te::Tensor& in : conv.op().input_tensors()) {
    if (in.op().name() == conv.op().name() + te::ops::kPadSuffix) pad = in;
  }
  int d = conv.ndim() - 2;
  int64_t ow = conv.shape().back();
  int64_t pref = ow % 16 == 0 ? 16 : largest_divisor(ow, 16);
  int64_t owv = cfg.define_split("tile_ow", ow, 2, {ow / pref, pref}, 16)[1];

  te::Tensor core = conv;
  if (conv.same_as(tiled)) {
    core = s.cache_write(conv, "local");
  } else {
    s[conv].set_scope("local");
  }
  Stage out = s[tiled];
  auto ax = out.op_axis();
  auto [owo, owi] = out.split(ax.back(), owv);
  out.vectorize(owi);
  ir::IterVar plane = fuse_parallel(out, {ax[0], ax[1]});

  Stage c = s[core];
  c.compute_at(out, owo);
  auto cx = c.op_axis();
  auto r = c.reduce_axis();
  std::vector<ir::IterVar> order(cx.begin(), cx.end() - 1);
  order.insert(order.end(), r.begin(), r.end());
  order.push_back(cx.back());
  c.reorder(order);
  for (const ir::IterVar& rv : r) c.unroll(rv);
  c.vectorize(cx.back());
  (void)d;

  if (pad.defined()) s[pad].compute_at(out, plane);
}

}  // namespace kiln::schedule
