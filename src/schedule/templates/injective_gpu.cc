#include "schedule/templates/injective_gpu.h"

#include <algorithm>
#include <tuple>

#include "schedule/templates/generic_gpu.h"
#include "schedule/templates/injective_cpu.h"
#include "kiln/support/error.h"

namespace kiln::schedule {

namespace {

// The loops of one output as the header describes: contiguous vectorized lanes when asked and
// the innermost axis divides by `vector`, else `vector` unrolled elements threads apart.
void bind_injective_gpu(Stage st, int64_t threads, int64_t vector, bool contiguous, int64_t max_blocks,
                        const Target& target) {
  std::vector<ir::IterVar> axes = st.op_axis();
  if (axes.empty()) return;  // a 0-d output: its one element on one thread
  // Lanes split off the innermost axis (not the fused one) keep every access's lane index a
  // ramp: an operand broadcast along the outer axes is indexed by that axis alone.
  const bool vectorized = contiguous && vector > 1 && *ir::as_const_int(axes.back()->dom.extent) % vector == 0;
  ir::IterVar lanes;
  if (vectorized) std::tie(axes.back(), lanes) = st.split(axes.back(), vector);
  int64_t numel = 1;  // the fused index's extent
  for (const ir::IterVar& a : axes) numel *= *ir::as_const_int(a->dom.extent);
  ir::IterVar fused = axes[0];
  for (size_t i = 1; i < axes.size(); ++i) fused = st.fuse(fused, axes[i]);
  const int64_t warp = std::max(1, target.gpu.warp_size);
  const int64_t t = std::min(threads, ceil_div(numel, warp) * warp);
  ir::IterVar blocks, tx;
  std::tie(blocks, tx) = st.split(fused, t);
  int64_t per_block = t;  // fused indices a block covers per grid step
  if (!vectorized) {
    const int64_t v = std::min(vector, pow2_at_least(ceil_div(numel, t), vector));
    std::tie(blocks, lanes) = st.split(blocks, v);
    st.reorder({tx, lanes});
    per_block *= v;
  }
  ir::IterVar bx = blocks;
  if (ceil_div(numel, per_block) > max_blocks) bx = st.split(blocks, max_blocks).second;
  st.bind(bx, "blockIdx.x");
  st.bind(tx, "threadIdx.x");
  if (vectorized)
    st.vectorize(lanes);
  else
    st.unroll(lanes);
}

}  // namespace

void schedule_injective_gpu(Schedule& s, const std::vector<te::Tensor>& outputs, const Target& target, Config& cfg) {
  for (const Stage& st : s.stages()) {
    const auto* c = st->op.as<te::ComputeOpNode>();
    KILN_USER_CHECK(!c || !c->is_reduction()) << "injective_gpu: stage '" << st.name()
                                              << "' is a reduction; the generic GPU schedule computes such groups";
  }
  const int64_t threads = define_threads_knob(cfg, target, 64, 256);
  // The defaults follow the largest output: 16-byte runs per thread while the grid still has
  // two blocks per multiprocessor.
  int64_t numel = 1, bytes = 4;
  for (const te::Tensor& o : outputs) {
    int64_t n = 1;
    for (int64_t d : o.shape()) n *= d;
    if (n >= numel) numel = n, bytes = o.dtype().bytes();
  }
  const int64_t sms = std::max(1, target.gpu.multiprocessors);
  int64_t v0 = std::clamp<int64_t>(16 / bytes, 1, 8);
  while (v0 > 1 && ceil_div(numel, threads * v0) < 2 * sms) v0 /= 2;
  const int64_t vector = cfg.define_knob("vector", {1, 2, 4, 8}, v0);
  const bool contiguous = cfg.define_knob("contiguous", {0, 1}, 1) != 0;
  std::vector<int64_t> block_caps;
  for (int64_t waves : {1, 2, 4, 8, 16, 32}) block_caps.push_back(waves * sms);
  const int64_t max_blocks = cfg.define_knob("max_blocks", block_caps, 16 * sms);
  inline_injective_stages(s);
  // The outputs, and any multi-output stage (not inlined): each a kernel of its own.
  for (const Stage& st : s.stages())
    if (st->op.as<te::ComputeOpNode>() && st->attach == AttachKind::Root)
      bind_injective_gpu(st, threads, vector, contiguous, max_blocks, target);
}

}  // namespace kiln::schedule
