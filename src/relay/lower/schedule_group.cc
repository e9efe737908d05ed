// schedule_group: the CPU schedule of a fused group.
//
// The op library's templates pick the schedule when they are part of the build: the anchor
// template (conv, dense, pooling, softmax, ... with their epilogues) for groups with an
// out-elementwise-fusable or opaque op, the reduction template for reductions with their
// producers, the injective template for everything else. __has_include switches to them as soon
// as their headers are merged, so the graph compiler needs no change when they land.
//
// Without them, a default that is correct for any group and fast for elementwise/injective
// ones: stages without a reduction are inlined into their readers (padding into a conv, bias and
// relu into one loop nest); what remains (outputs, reductions) gets its outer axes fused into
// one parallel loop and, for stages without a reduction, the innermost axis split by the vector
// width and vectorized when the width divides it (a guarded tail would keep the loop scalar).
#include "kiln/relay/lower_graph.h"
#include "kiln/schedule/config.h"

#if __has_include("kiln/schedule/templates/anchor_cpu.h")
#include "kiln/schedule/templates/anchor_cpu.h"
#define KILN_HAVE_ANCHOR_CPU 1
#endif
#if __has_include("kiln/schedule/templates/injective_cpu.h") && __has_include("kiln/schedule/templates/reduction_cpu.h")
#include "kiln/schedule/templates/injective_cpu.h"
#include "kiln/schedule/templates/reduction_cpu.h"
#define KILN_HAVE_INJECTIVE_CPU 1
#endif

namespace kiln::relay {

namespace {

// Lanes of a 512-bit vector of `t`, at most 16 (the widest the LLVM backend emits well).
int64_t vector_lanes(DataType t) {
  int64_t bytes = std::max<int64_t>(1, t.bytes());
  return std::min<int64_t>(16, 64 / bytes);
}

bool is_output(const schedule::Stage& st, const GroupProgram& p) {
  for (const te::Tensor& o : p.outputs)
    if (o.op().same_as(st->op)) return true;
  return false;
}

void schedule_root(schedule::Stage st) {
  const auto* c = st->op.as<te::ComputeOpNode>();
  std::vector<ir::IterVar> axes = st.op_axis();
  bool reduction = c->is_reduction();
  // The innermost data axis of an elementwise stage is the vector loop; of a reduction, it stays
  // with the other data axes (the reduce axes come after them).
  int64_t lanes = vector_lanes(c->dtypes[0]);
  ir::IterVar inner;
  if (!reduction && axes.size() >= 1) {
    int64_t extent = c->shape.back();
    int64_t v = lanes;
    while (v > 1 && extent % v != 0) v /= 2;
    if (v > 1 && extent > v) {
      auto [outer, in] = st.split(axes.back(), v);
      axes.back() = outer;
      inner = in;
    } else if (v > 1 && extent == v) {
      inner = axes.back();
      axes.pop_back();
    }
  }
  if (!axes.empty()) {
    ir::IterVar fused = axes[0];
    for (size_t i = 1; i < axes.size(); ++i) fused = st.fuse(fused, axes[i]);
    st.parallel(fused);
  }
  if (inner.defined()) st.vectorize(inner);
}

schedule::Schedule default_schedule(const GroupProgram& p) {
  schedule::Schedule s = schedule::create(p.outputs);
  for (const schedule::Stage& st : s.stages()) {
    const auto* c = st->op.as<te::ComputeOpNode>();
    if (c == nullptr) continue;  // a placeholder
    if (!is_output(st, p) && !c->is_reduction()) {
      schedule::Stage(st).compute_inline();
      continue;
    }
    schedule_root(st);
  }
  return s;
}

// The tensor the group's anchor call lowered to.
[[maybe_unused]] te::Tensor anchor_tensor(const GroupProgram& p, const FusedGroup& g) {
  for (size_t i = 0; i < g.calls.size(); ++i)
    if (g.calls[i].same_as(g.anchor)) return p.member_outputs[i][0];
  return p.outputs[0];
}

}  // namespace

schedule::Schedule schedule_group(const GroupProgram& p, const FusedGroup& group) {
  schedule::Config cfg;  // the templates' defaults (tuning logs are not applied yet)
  (void)cfg;
#ifdef KILN_HAVE_ANCHOR_CPU
  if (group.pattern >= OpPattern::OutElementwiseFusable)
    return schedule::schedule_anchor_cpu(p.outputs, anchor_tensor(p, group), cfg);
#endif
#ifdef KILN_HAVE_INJECTIVE_CPU
  if (group.pattern <= OpPattern::CommReduce) {
    schedule::Schedule s = schedule::create(p.outputs);
    if (group.pattern == OpPattern::CommReduce) {
      schedule::reduction_cpu(s, p.outputs, cfg);
    } else {
      schedule::injective_cpu(s, p.outputs, cfg);
    }
    return s;
  }
#endif
  return default_schedule(p);
}

}  // namespace kiln::relay
