#include "schedule/templates/generic_gpu.h"

#include <algorithm>

#include "kiln/ir/functor.h"
#include "kiln/ir/transforms.h"
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

namespace {

// How `consumer` reads `target`, looking through the stages inlined into it: not at all, only
// elementwise (each load indexes by the reader's own axes, in order, at every step of the
// chain: relu(add(conv, bias)) reads conv elementwise), or otherwise.
enum class Reads { kNo, kElementwise, kOther };

Reads reads_of(const Schedule& s, const te::ComputeOpNode& consumer, const te::Operation& target) {
  Reads result = Reads::kNo;
  auto merge = [&](Reads r) {
    if (r == Reads::kOther || (r == Reads::kElementwise && result == Reads::kNo)) result = r;
  };
  for (const ir::Expr& body : consumer.body)
    ir::post_order_visit(body, [&](const ir::Expr& e) {
      const auto* load = e.as<ir::ProducerLoadNode>();
      if (!load) return;
      te::Operation op = te::Tensor::from_producer(load->producer).op();
      // The reader's own index: its axis var, or 0 on an axis of extent 1 (broadcasting reads
      // a batch of one at 0).
      bool own_index = load->indices.size() == consumer.axis.size();
      for (size_t d = 0; own_index && d < load->indices.size(); ++d)
        own_index = load->indices[d].get() == consumer.axis[d]->var.get() ||
                    (ir::is_zero(load->indices[d]) && ir::is_one(consumer.axis[d]->dom.extent));
      if (op.same_as(target)) {
        merge(own_index ? Reads::kElementwise : Reads::kOther);
        return;
      }
      const auto* inner = op.as<te::ComputeOpNode>();
      if (!inner || s[op]->attach != AttachKind::Inline) return;
      Reads via = reads_of(s, *inner, target);
      if (via != Reads::kNo) merge(own_index ? via : Reads::kOther);
    });
  return result;
}

// Reductions over this many points or more are computed across the threads of a block.
constexpr int64_t kCrossThreadExtent = 64;

int64_t reduce_extent(const te::ComputeOpNode& c) {
  int64_t n = 1;
  for (const ir::IterVar& iv : c.reduce_axis) n *= ir::as_const_int(iv->dom.extent).value_or(1);
  return n;
}

// One block per output element: its `threads` threads each reduce every threads-th point into
// shared memory (Schedule::rfactor), then the block combines the partials and every thread
// stores the same value. Coalesced: neighbouring threads read neighbouring points. The combine,
// a loop over the partials in a register, is marked for ir::lower_cross_thread_reduction, which
// turns it into a tree across the threads (shuffles within a CUDA warp).
void cross_thread_reduction(Schedule& s, const Stage& st, int64_t threads) {
  te::Tensor t = st->origin_op.output(0);
  te::Tensor partial = s.rfactor(t, threads);
  te::Tensor local = s.cache_write(t, "local");
  Stage combine = s[local];
  for (const ir::IterVar& iv : combine->leaf_iter_vars)
    if (iv->iter_kind == ir::IterKind::Reduce) combine.pragma(iv, ir::kCrossThreadReductionPragma);
  Stage out = s[t];
  std::vector<ir::IterVar> axes = out.op_axis();
  ir::IterVar f = axes[0];
  for (size_t i = 1; i < axes.size(); ++i) f = out.fuse(f, axes[i]);
  out.bind(f, "blockIdx.x");
  s[local].compute_at(out, f);
  Stage p = s[partial];
  p.set_scope("shared");
  p.compute_at(out, f);
  p.bind(p.op_axis().back(), "threadIdx.x");
}

}  // namespace

void schedule_generic_gpu(Schedule& s, const std::vector<te::Tensor>& outputs, const Target& target, Config& cfg) {
  const int64_t threads = define_threads_knob(cfg, target, 64, 256);
  for (const Stage& st : s.stages()) {
    const auto* c = st->op.as<te::ComputeOpNode>();
    if (c && !c->is_reduction() && !st->is_output) Stage(st).compute_inline();
  }
  // A reduction that only an output reads, elementwise (conv + bias + relu, the output after
  // inlining): computed in a register inside that output's thread, in the same kernel. Any
  // other reduction (a softmax's max, read by a whole row) stays a kernel of its own, summing in
  // a register (cache_write to local) and storing once.
  std::vector<Stage> stages = s.stages();
  for (const Stage& st : stages) {
    const auto* c = st->op.as<te::ComputeOpNode>();
    if (!c || !c->is_reduction() || st->is_output || st->attach != AttachKind::Root) continue;
    if (reduce_extent(*c) >= kCrossThreadExtent) continue;  // a kernel of its own, across threads
    std::vector<Stage> readers;
    bool elementwise = true;
    for (const Stage& r : stages) {
      const auto* rc = r->op.as<te::ComputeOpNode>();
      if (!rc || r.same_as(st) || r->attach == AttachKind::Inline) continue;
      Reads how = reads_of(s, *rc, st->op);
      if (how == Reads::kNo) continue;
      readers.push_back(r);
      elementwise = elementwise && how == Reads::kElementwise;
    }
    if (readers.size() != 1 || !readers[0]->is_output || !elementwise) continue;
    Stage out = readers[0];
    bind_elementwise_gpu(out, threads, target);
    Stage(st).set_scope("local");
    Stage(st).compute_at(out, out.leaf_axes().back());
  }
  // A copy: cache_write adds stages to the schedule.
  const std::vector<Stage> all = s.stages();
  for (const Stage& st : all) {
    const auto* c = st->op.as<te::ComputeOpNode>();
    if (!c || st->attach != AttachKind::Root || !st->relations.empty()) continue;
    if (c->is_reduction() && reduce_extent(*c) >= kCrossThreadExtent && !c->axis.empty()) {
      cross_thread_reduction(s, st, std::min(threads, pow2_at_least(reduce_extent(*c), threads)));
      continue;
    }
    if (c->is_reduction()) {
      te::Tensor local = s.cache_write(st->origin_op.output(0), "local");
      bind_elementwise_gpu(st, threads, target);
      s[local].compute_at(st, st.leaf_axes().back());
      continue;
    }
    bind_elementwise_gpu(st, threads, target);
  }
  (void)outputs;
}

int64_t define_threads_knob(Config& cfg, const Target& target, int64_t least, int64_t preferred) {
  std::vector<int64_t> choices;
  for (int64_t t = least; t <= target.gpu.max_threads_per_block; t *= 2) choices.push_back(t);
  KILN_USER_CHECK(!choices.empty()) << "target '" << target.str() << "' allows fewer than " << least
                                    << " threads per block";
  return cfg.define_knob("threads", choices, std::min(preferred, choices.back()));
}

int64_t pow2_at_least(int64_t n, int64_t cap) {
  int64_t p = 1;
  while (p < n && p < cap) p *= 2;
  return p;
}

Schedule schedule_anchor_gpu(const std::vector<te::Tensor>& outputs, const te::Tensor& anchor, GpuAnchorTemplate tmpl,
                             const Target& target, Config& cfg) {
  Schedule s = create(outputs);
  // The output tiles when it covers the anchor's index space or a corner of it (a product
  // padded to whole tiles, sliced back: te::ops::ProductPad).
  auto within = [&](const te::Tensor& out) {
    if (out.ndim() != anchor.ndim()) return false;
    for (int d = 0; d < out.ndim(); ++d)
      if (out.shape()[d] > anchor.shape()[d]) return false;
    return true;
  };
  const te::Tensor tiled = outputs.size() == 1 && within(outputs[0]) ? outputs[0] : anchor;
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
