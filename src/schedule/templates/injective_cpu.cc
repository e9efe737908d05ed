#include "schedule/templates/injective_cpu.h"

#include <algorithm>
#include <limits>

#include "kiln/ir/functor.h"
#include "kiln/support/error.h"

namespace kiln::schedule {

namespace {
constexpr int64_t kNever = int64_t{1} << 62;
// Parallel iterations per core a parallel loop needs so that uneven chunks still balance.
constexpr int64_t kTasksPerCore = 8;

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// The largest power of two <= cap that divides n (1 if none above 1).
int64_t pow2_divisor(int64_t n, int64_t cap) {
  int64_t v = 1;
  while (v * 2 <= cap && n % (v * 2) == 0) v *= 2;
  return v;
}

// Whether every load in c's body that reads axis `outer` or `inner` reads them as its last two
// indices, in that order, and so on through the stages inlined into c: then the two fused are
// one contiguous run in every tensor the stage reads.
bool trailing_pair_contiguous(const Schedule& s, const te::ComputeOpNode& c, const ir::VarNode* o,
                              const ir::VarNode* i) {
  bool ok = true;
  for (const ir::Expr& body : c.body) {
    ir::post_order_visit(body, [&](const ir::Expr& e) {
      const auto* load = e.as<ir::ProducerLoadNode>();
      if (!load || !ok) return;
      const auto& idx = load->indices;
      bool uses = false;
      for (const ir::Expr& x : idx)
        ir::post_order_visit(x, [&](const ir::Expr& y) { uses = uses || y.get() == o || y.get() == i; });
      if (!uses) return;
      ok = idx.size() >= 2 && idx[idx.size() - 2].get() == o && idx.back().get() == i;
      te::Tensor t = te::Tensor::from_producer(load->producer);
      const auto* producer = t.op().as<te::ComputeOpNode>();
      if (ok && producer && s[t]->attach == AttachKind::Inline) {
        const auto& ax = producer->axis;
        ok = ax.size() >= 2 && trailing_pair_contiguous(s, *producer, ax[ax.size() - 2]->var.get(), ax.back()->var.get());
      }
    });
  }
  return ok;
}
}  // namespace

void inline_injective_stages(Schedule& s) {
  for (const Stage& st : s.stages()) {
    const auto* c = st->op.as<te::ComputeOpNode>();
    if (!c || st->is_output || c->is_reduction() || c->num_outputs() != 1) continue;
    if (st->attach != AttachKind::Root) continue;
    Stage(st).compute_inline();
  }
}

std::vector<int64_t> vector_byte_choices(const Target& target) {
  int64_t native = target.facts.vector_bits / 8;
  return {native / 2, native, native * 2};
}

void schedule_injective_stage(Schedule& s, const te::Tensor& t, const Target& target, Config& cfg) {
  // Vectors of the target's width by default; half and double widths for the tuner (a double
  // width is two instructions per operation, more loads in flight).
  int64_t vector_bytes = cfg.define_knob("vector_bytes", vector_byte_choices(target), target.facts.vector_bits / 8);
  int64_t parallel_min = cfg.define_knob("parallel_min", {0, 2048, 8192, 32768, 262144, kNever}, 8192);
  Stage st = s[t];
  const auto* c = st->op.as<te::ComputeOpNode>();
  if (!c || st->attach != AttachKind::Root) return;
  KILN_USER_CHECK(!c->is_reduction()) << "injective schedule: stage '" << st.name()
                                      << "' is a reduction (use reduction_cpu)";
  std::vector<ir::IterVar> axes = st.op_axis();
  // Only a stage still in its default loop nest: a template must not undo another's choices.
  if (st.leaf_axes().size() != axes.size()) return;
  // The vector axis: the innermost one of extent > 1 (trailing 1s, e.g. [N, C, 1, 1], have
  // nothing to vectorize).
  size_t v = axes.size() - 1;
  while (v > 0 && c->shape[v] == 1) --v;
  const int64_t max_lanes = std::max<int64_t>(vector_bytes / c->dtypes[0].bytes(), 1);
  int64_t lanes = pow2_divisor(c->shape[v], max_lanes);
  std::vector<ir::IterVar> prefix(axes.begin(), axes.begin() + v), suffix(axes.begin() + v + 1, axes.end());
  ir::IterVar vec_axis = axes[v];
  // A short row (a 14x14 plane: 2 lanes) fills few lanes: the row and the one above it fuse
  // into one contiguous run when every load reads them as its last two indices, and the run is
  // vectorized by its largest power-of-two divisor, or an even one of at least half a register,
  // when that is wider (196: 14 lanes on AVX-512, 4 on AVX2). Measured (densenet121, 1 thread,
  // Zen 4, AVX-512): its concatenate + batch_norm + relu groups on 14x14 planes took 44.7 of 98
  // ms with 2-lane vectors; the model 155 -> 108 ms with 4 lanes, -> 76 with 14. Odd widths (9
  // lanes for a 27x27 run) ran 100x slower than scalars under a concatenation's masked loads.
  if (lanes < max_lanes && v >= 1 && c->shape[v - 1] > 1) {
    const int64_t run = c->shape[v - 1] * c->shape[v];
    int64_t wide = pow2_divisor(run, max_lanes);
    for (int64_t w = max_lanes; w * 2 >= max_lanes && w > wide; w -= 2)
      if (run % w == 0) {
        wide = w;
        break;
      }
    if (wide > lanes && trailing_pair_contiguous(s, *c, c->axis[v - 1]->var.get(), c->axis[v]->var.get())) {
      lanes = wide;
      prefix.pop_back();
      vec_axis = st.fuse(axes[v - 1], axes[v]);
    }
  }
  std::vector<ir::IterVar> order = prefix;
  if (lanes >= 2) {
    auto [o, i] = st.split(vec_axis, lanes);
    order.push_back(o);
    order.insert(order.end(), suffix.begin(), suffix.end());
    order.push_back(i);
    st.reorder(order);
    st.vectorize(i);
    order.pop_back();  // everything outside the vector loop fuses into the parallel loop
  } else if (prefix.empty()) {
    order.push_back(vec_axis);
  }
  // Without a vector loop (an odd inner extent, e.g. 55), the inner axes stay plain loops:
  // no per-element div/mod to recover them, and LLVM vectorizes and unswitches them itself.
  // Only the outer axes the threads need (kTasksPerCore per core, for balance) fuse into the
  // parallel loop; the others stay nested loops, whose indices LLVM steps by additions: every
  // axis of a fully fused loop costs a div and a mod per iteration. convnext_tiny's NCHW -> NHWC
  // transpose [1, 96, 56, 56] (16-lane gathers) 0.106 -> 0.084 ms, its 24 transposes 2.16 -> 1.72
  // (kiln bench --profile, 2 threads, AMD EPYC Zen 4).
  size_t np = 0;
  int64_t outer_extent = 1;
  const int64_t tasks = kTasksPerCore * std::max(1, target.facts.cores);
  while (np < order.size() && outer_extent < tasks) outer_extent *= *ir::as_const_int(order[np++]->dom.extent);
  if (np == 0) return;
  ir::IterVar outer = order[np - 1];
  for (size_t d = np - 1; d-- > 0;) outer = st.fuse(order[d], outer);
  if (numel(c->shape) >= parallel_min && outer_extent >= 2) st.parallel(outer);
}

void injective_cpu(Schedule& s, const std::vector<te::Tensor>& outputs, const Target& target, Config& cfg) {
  for (const Stage& st : s.stages()) {
    const auto* c = st->op.as<te::ComputeOpNode>();
    KILN_USER_CHECK(!c || !c->is_reduction()) << "injective_cpu: stage '" << st.name()
                                              << "' is a reduction; schedule its group with reduction_cpu";
  }
  inline_injective_stages(s);
  for (const te::Tensor& t : outputs) schedule_injective_stage(s, t, target, cfg);
}

}  // namespace kiln::schedule
