#include "kiln/schedule/templates/conv2d_cpu.h"

#include <string>

#include "kiln/schedule/templates/anchor_cpu.h"
#include "kiln/support/error.h"
#include "kiln/te/ops/nn_conv.h"

namespace kiln::schedule {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

te::Tensor input_named(const te::Tensor& t, const char* suffix) {
  for (const te::Tensor& in : t.op().input_tensors()) {
    if (ends_with(in.op().name(), suffix)) return in;
  }
  return te::Tensor();
}

// Pad or pack stages: computed once at the root, parallel over their two outer axes; a pad's
// rows are vectorized (masked loads at the borders).
void schedule_prologue(Schedule& s, const te::Tensor& t, bool vectorize) {
  if (!t.defined() || !t.op().as<te::ComputeOpNode>()) return;
  Stage st = s[t];
  st.compute_root();
  auto ax = st.op_axis();
  if (vectorize && ax.size() > 2) vectorize_innermost(st);
  fuse_parallel(st, {ax[0], ax[1]});
}

}  // namespace

void schedule_conv_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, Config& cfg) {
  te::Tensor blocked = input_named(conv, te::ops::kBlockedSuffix);
  KILN_CHECK(blocked.defined()) << "schedule_conv_cpu: '" << conv.name() << "' is not a conv_nd result";
  KILN_CHECK(tiled.shape() == conv.shape()) << "schedule_conv_cpu: the tiled stage must have the conv's shape";
  te::Tensor wpack = input_named(blocked, te::ops::kPackSuffix);
  te::Tensor pad = input_named(blocked, te::ops::kPadSuffix);
  int d = conv.ndim() - 2;
  int64_t co = blocked.shape().back(), nblk = blocked.shape()[1], ow = conv.shape().back();

  int64_t pref = largest_divisor(ow, 14);
  int64_t owr = cfg.define_split("tile_ow", ow, 2, {ow / pref, pref}, 16)[1];
  bool pair_fits = nblk % 2 == 0 && owr <= 12 && co >= 8;
  int64_t ocp = cfg.define_knob("oc_blocks", {1, 2}, pair_fits ? 2 : 1);
  if (ocp == 2 && nblk % 2 != 0) ocp = 1;  // a tuned choice for another shape: fall back
  int64_t vec_out = cfg.define_knob("vec_out", {0, 1}, 0);

  if (!conv.same_as(tiled)) s[conv].compute_inline();
  Stage out = s[tiled];
  auto ax = out.op_axis();
  auto [oco, oci] = out.split(ax[1], co * ocp);
  auto [owo, owi] = out.split(ax.back(), owr);
  std::vector<ir::IterVar> order = {ax[0], oco};
  for (int i = 0; i + 1 < d; ++i) order.push_back(ax[2 + i]);
  order.push_back(owo);
  order.push_back(oci);
  order.push_back(owi);
  out.reorder(order);
  if (vec_out) out.vectorize(owi);
  else out.unroll(owi);
  std::vector<ir::IterVar> outer = {ax[0], oco};
  for (int i = 0; i + 1 < d; ++i) outer.push_back(ax[2 + i]);
  fuse_parallel(out, outer);

  Stage b = s[blocked];
  b.set_scope("local");
  b.compute_at(out, owo);
  auto bx = b.op_axis();     // n, block, o..., lane
  auto rx = b.reduce_axis();  // rc, r...
  std::vector<ir::IterVar> border = {bx[0]};
  for (int i = 0; i + 1 < d; ++i) border.push_back(bx[2 + i]);
  border.insert(border.end(), rx.begin(), rx.end());
  border.push_back(bx[1]);
  border.push_back(bx[1 + d]);
  border.push_back(bx.back());
  b.reorder(border);
  b.unroll(bx[1]);
  b.unroll(bx[1 + d]);
  b.vectorize(bx.back());

  schedule_prologue(s, wpack, false);
  schedule_prologue(s, pad, true);
}

void schedule_conv_nchwc_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, Config& cfg) {
  KILN_CHECK(conv.ndim() == 5 && tiled.shape() == conv.shape()) << "schedule_conv_nchwc_cpu: not a blocked conv";
  te::Tensor pad = input_named(conv, te::ops::kPadSuffix);
  int64_t nblk = conv.shape()[1], ow = conv.shape()[3], co = conv.shape()[4];
  int64_t pref = largest_divisor(ow, 14);
  int64_t owr = cfg.define_split("tile_ow", ow, 2, {ow / pref, pref}, 16)[1];
  bool pair_fits = nblk % 2 == 0 && owr <= 12 && co >= 8;
  int64_t ocp = cfg.define_knob("oc_blocks", {1, 2}, pair_fits ? 2 : 1);
  if (nblk % ocp != 0) ocp = 1;

  te::Tensor core = conv;
  if (conv.same_as(tiled)) {
    core = s.cache_write(conv, "local");
  } else {
    s[conv].set_scope("local");
  }
  Stage out = s[tiled];
  auto ax = out.op_axis();  // n, block, oh, ow, lane
  auto [bo, bi] = out.split(ax[1], ocp);
  auto [owo, owi] = out.split(ax[3], owr);
  out.reorder({ax[0], bo, ax[2], owo, bi, owi, ax[4]});
  out.unroll(bi);
  out.unroll(owi);
  out.vectorize(ax[4]);
  fuse_parallel(out, {ax[0], bo, ax[2]});

  Stage c = s[core];
  c.compute_at(out, owo);
  auto cx = c.op_axis();
  auto r = c.reduce_axis();  // channel blocks, ry, rx, channel lanes
  c.reorder({cx[0], cx[2], r[0], r[1], r[2], r[3], cx[1], cx[3], cx[4]});
  c.unroll(cx[1]);
  c.unroll(cx[3]);
  c.vectorize(cx[4]);
  schedule_prologue(s, pad, true);
}

}  // namespace kiln::schedule
