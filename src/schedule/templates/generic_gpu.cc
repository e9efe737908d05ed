#include "kiln/schedule/templates/generic_gpu.h"

#include <algorithm>

#include "kiln/support/error.h"

namespace kiln::schedule {

void bind_elementwise_gpu(Stage st, int64_t threads, const Target& target) {
  std::vector<ir::IterVar> axes = st.op_axis();
  int64_t numel = 1;
  for (const ir::IterVar& a : axes) numel *= ir::as_const_int(a->dom.extent).value_or(1);
  // A 0-d stage has no axis to bind: its one element is computed by a block of one thread.
  if (axes.empty()) return;
  ir::IterVar fused = axes[0];
  for (size_t i = 1; i < axes.size(); ++i) fused = st.fuse(fused, axes[i]);
  const int64_t warp = std::max(1, target.gpu.warp_size);
  const int64_t n = std::min(threads, (numel + warp - 1) / warp * warp);
  auto [bx, tx] = st.split(fused, n);
  st.bind(bx, "blockIdx.x");
  st.bind(tx, "threadIdx.x");
}

void schedule_generic_gpu(Schedule& s, const std::vector<te::Tensor>& outputs, const Target& target, Config& cfg) {
  std::vector<int64_t> choices;
  for (int64_t t = 64; t <= target.gpu.max_threads_per_block; t *= 2) choices.push_back(t);
  KILN_USER_CHECK(!choices.empty()) << "target '" << target.str() << "' allows fewer than 64 threads per block";
  const int64_t threads = cfg.define_knob("threads", choices, std::min<int64_t>(256, choices.back()));
  for (const Stage& st : s.stages()) {
    const auto* c = st->op.as<te::ComputeOpNode>();
    if (c && !c->is_reduction() && !st->is_output) Stage(st).compute_inline();
  }
  for (const Stage& st : s.stages()) {
    if (!st->op.as<te::ComputeOpNode>() || st->attach != AttachKind::Root) continue;
    bind_elementwise_gpu(st, threads, target);
  }
  (void)outputs;
}

Schedule schedule_anchor_gpu(const std::vector<te::Tensor>& outputs, const te::Tensor& anchor, GpuAnchorTemplate tmpl,
                             const Target& target, Config& cfg) {
  Schedule s = create(outputs);
  const te::Tensor tiled = outputs.size() == 1 && outputs[0].shape() == anchor.shape() ? outputs[0] : anchor;
  for (const Stage& st : s.stages()) {
    const auto* c = st->op.as<te::ComputeOpNode>();
    if (c && !c->is_reduction() && !st->is_output && !st->op.same_as(anchor.op())) Stage(st).compute_inline();
  }
  tmpl(s, tiled, anchor, target, cfg);
  for (const Stage& st : s.stages()) {
    if (!st->op.as<te::ComputeOpNode>() || st->attach != AttachKind::Root) continue;
    if (!st->relations.empty() || !st->attrs.empty()) continue;
    bind_elementwise_gpu(st, 256, target);
  }
  return s;
}

}  // namespace kiln::schedule
