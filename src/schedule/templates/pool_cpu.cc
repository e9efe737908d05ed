#include "kiln/schedule/templates/pool_cpu.h"

#include <string>

#include "kiln/schedule/templates/anchor_cpu.h"
#include "kiln/te/ops/nn_conv.h"

namespace kiln::schedule {

namespace {
te::Tensor input_named(const te::Tensor& t, const std::string& name) {
  for (const te::Tensor& in : t.op().input_tensors()) {
    if (in.op().name() == name) return in;
  }
  return te::Tensor();
}

// Global pooling read in partial blocks (te::ops::GlobalPartial): per (image, channel) task,
// "<red>.part" accumulates its chains x lanes block in registers (chains unrolled, lanes one
// vector), "<red>.lane" folds the chains, `red` the lanes.
void schedule_global_partial(Schedule& s, const te::Tensor& tiled, const te::Tensor& pool, const te::Tensor& red,
                             const te::Tensor& lane) {
  te::Tensor part = input_named(lane, red.op().name() + ".part");
  if (!pool.same_as(tiled) && !pool.op().as<te::ComputeOpNode>()->is_reduction()) s[pool].compute_inline();
  Stage out = s[tiled];
  auto ax = out.op_axis();
  ir::IterVar plane = fuse_parallel(out, {ax[0], ax[1]});
  if (!red.same_as(tiled)) s[red].compute_at(out, plane);
  for (const te::Tensor& t : {lane, part}) {
    Stage st = s[t];
    st.set_scope("local");
    st.compute_at(out, plane);
    auto d = st.op_axis();
    std::vector<ir::IterVar> order = {d[0], d[1], st.reduce_axis()[0]};
    order.insert(order.end(), d.begin() + 2, d.end());
    st.reorder(order);
    if (d.size() == 4) st.unroll(d[2]);
    st.vectorize(d.back());
  }
}
}  // namespace

void schedule_pool_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& pool, const Target& target, Config& cfg) {
  const int64_t lanes = target.lanes(32);
  const auto* pc = pool.op().as<te::ComputeOpNode>();
  // The window reduction: the pool itself (max) or the sum an average / lp norm divides.
  te::Tensor red = pc->is_reduction() ? pool : input_named(pool, pool.op().name() + ".sum");
  te::Tensor pad = red.defined() ? input_named(red, pool.op().name() + ".pad") : te::Tensor();
  if (te::Tensor lane = red.defined() ? input_named(red, red.op().name() + ".lane") : te::Tensor(); lane.defined()) {
    schedule_global_partial(s, tiled, pool, red, lane);
    return;
  }
  int64_t vec = cfg.define_knob("vec_ow", {0, 1}, 1);

  if (!pool.same_as(tiled) && !pc->is_reduction()) s[pool].compute_inline();
  // A window reduction that is itself the output accumulates in a local tile instead, so the
  // row can be vectorized with the window loops outside the lanes (a reduction stage's own
  // axes cannot be: its reduce loops are innermost).
  bool windowed = red.defined() && tiled.ndim() > 2;
  if (vec && windowed && red.same_as(tiled)) red = s.cache_write(tiled, "local");
  Stage out = s[tiled];
  auto ax = out.op_axis();
  ir::IterVar plane = fuse_parallel(out, {ax[0], ax[1]});
  int64_t ow = tiled.shape().back();
  int64_t v = vector_width(ow, lanes);
  bool out_reduces = out->op.as<te::ComputeOpNode>()->is_reduction();  // the stage's op: after cache_write, a copy
  ir::IterVar row = plane;
  if (vec && v >= 4 && ax.size() > 2 && !out_reduces) {
    auto [wo, wi] = out.split(ax.back(), v);
    out.vectorize(wi);
    row = wo;
  }
  if (red.defined() && !red.same_as(tiled)) {
    Stage r = s[red];
    r.compute_at(out, row.same_as(plane) ? plane : row);
    if (!row.same_as(plane)) {
      // Window loops outside, the row's lanes inside: strided (stride-2) reads of the padded
      // row become vector loads plus shuffles in codegen.
      std::vector<ir::IterVar> order = r.op_axis();
      order.pop_back();
      auto rx = r.reduce_axis();
      order.insert(order.end(), rx.begin(), rx.end());
      order.push_back(r.op_axis().back());
      r.reorder(order);
      r.vectorize(r.op_axis().back());
    }
  }
  if (pad.defined()) {
    s[pad].compute_at(out, plane);
    vectorize_innermost(s[pad], lanes);
  }
}

}  // namespace kiln::schedule
