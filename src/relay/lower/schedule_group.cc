// schedule_group: the default CPU schedule of a fused group.
//
// A stand-in until the op library's templates (anchor_cpu.h, injective_cpu.h, reduction_cpu.h)
// land: correct for any group, fast for elementwise/injective ones, plain for anchors. Stages
// without a reduction are inlined into their readers (padding into a conv, bias and relu into one
// loop nest); what remains (outputs, reductions) gets its outer axes fused into one parallel loop
// and, for stages without a reduction, the innermost axis split by the vector width and
// vectorized when the width divides it (a guarded tail would keep the loop scalar).
#include "kiln/relay/lower_graph.h"

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

}  // namespace

schedule::Schedule schedule_group(const GroupProgram& p, const FusedGroup&) {
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

}  // namespace kiln::relay
