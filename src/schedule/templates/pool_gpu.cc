#include "schedule/templates/pool_gpu.h"

#include <algorithm>

#include "schedule/templates/generic_gpu.h"
#include "kiln/support/error.h"

namespace kiln::schedule {

namespace {

bool is_reduction(const te::Tensor& t) {
  const auto* c = t.op().as<te::ComputeOpNode>();
  return c && c->is_reduction();
}

// The window reduction: the pool itself (max) or the sum an average or lp norm finishes.
te::Tensor window_reduction(const te::Tensor& pool) {
  if (is_reduction(pool)) return pool;
  for (const te::Tensor& in : pool.op().input_tensors())
    if (is_reduction(in)) return in;
  return te::Tensor();
}

}  // namespace

void schedule_pool_gpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& pool, const Target& target,
                       Config& cfg) {
  const te::Tensor red = window_reduction(pool);
  KILN_USER_CHECK(red.defined() && red.ndim() >= 3 && red.shape() == pool.shape())
      << "pool_gpu: '" << pool.op().name() << "' is not a windowed pool over NC[D]HW data";
  const int64_t threads = define_threads_knob(cfg, target, 64, 256);
  const int64_t width = pool.shape().back();
  const int64_t per_thread = std::min(cfg.define_knob("outputs_per_thread", {1, 2, 4, 8}, 1), pow2_at_least(width, 8));

  // The average's divide (or lp's root) goes into the tail's thread; the sum stays in registers.
  if (!pool.same_as(red) && !pool.same_as(tiled)) s[pool].compute_inline();
  te::Tensor acc = red;
  if (red.same_as(tiled)) acc = s.cache_write(red, "local");
  else s[red].set_scope("local");

  Stage out = s[tiled];
  std::vector<ir::IterVar> ax = out.op_axis();
  auto [wo, wi] = out.split(ax.back(), per_thread);
  ir::IterVar flat = ax[0];
  for (size_t d = 1; d + 1 < ax.size(); ++d) flat = out.fuse(flat, ax[d]);
  flat = out.fuse(flat, wo);
  int64_t groups = (width + per_thread - 1) / per_thread;
  for (size_t d = 0; d + 1 < ax.size(); ++d) groups *= pool.shape()[d];
  const int64_t warp = std::max(1, target.gpu.warp_size);
  auto [bx, tx] = out.split(flat, std::min(threads, (groups + warp - 1) / warp * warp));
  out.bind(bx, "blockIdx.x");
  out.bind(tx, "threadIdx.x");
  out.unroll(wi);

  Stage a = s[acc];
  a.compute_at(out, tx);
  std::vector<ir::IterVar> order = a.reduce_axis();
  const ir::IterVar column = a.op_axis().back();
  order.push_back(column);
  a.reorder(order);
  a.unroll(column);
}

}  // namespace kiln::schedule
