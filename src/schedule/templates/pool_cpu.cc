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
}  // namespace

void schedule_pool_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& pool, Config& cfg) {
  const auto* pc = pool.op().as<te::ComputeOpNode>();
  // The window reduction: the pool itself (max) or the sum an average / lp norm divides.
  te::Tensor red = pc->is_reduction() ? pool : input_named(pool, pool.op().name() + ".sum");
  te::Tensor pad = red.defined() ? input_named(red, pool.op().name() + ".pad") : te::Tensor();
  int64_t vec = cfg.define_knob("vec_ow", {0, 1}, 1);

  if (!pool.same_as(tiled) && !pc->is_reduction()) s[pool].compute_inline();
  Stage out = s[tiled];
  auto ax = out.op_axis();
  ir::IterVar plane = fuse_parallel(out, {ax[0], ax[1]});
  int64_t ow = tiled.shape().back();
  int64_t v = ow % 16 == 0 ? 16 : largest_divisor(ow, 16);
  bool out_reduces = tiled.op().as<te::ComputeOpNode>()->is_reduction();
  if (vec && v >= 4 && ax.size() > 2 && !out_reduces) {
    auto [wo, wi] = out.split(ax.back(), v);
    out.vectorize(wi);
  }
  if (red.defined() && !red.same_as(tiled)) s[red].compute_at(out, plane);
  if (pad.defined()) s[pad].compute_at(out, plane);
}

}  // namespace kiln::schedule
