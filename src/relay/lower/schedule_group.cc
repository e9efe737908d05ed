// schedule_group: the CPU schedule of a fused group, by the op library's template for its kind.
//
// Groups with an out-elementwise-fusable or opaque op (conv, dense, pooling, softmax, norms, ...)
// go to schedule_anchor_cpu with the tensor their anchor lowered to (it computes the anchor in
// tiles inside the epilogue's loops); reductions with their producers to reduction_cpu; all
// other groups (elementwise, broadcast, injective) to injective_cpu. Each template reads its knobs
// from the caller's Config: defaults, a tuning record's choices, or a recording one (the space).
#include "kiln/relay/lower_graph.h"
#include "kiln/schedule/config.h"
#include "kiln/schedule/templates/anchor_cpu.h"
#include "kiln/schedule/templates/injective_cpu.h"
#include "kiln/schedule/templates/reduction_cpu.h"
#include "kiln/support/error.h"

namespace kiln::relay {

te::Tensor anchor_tensor(const GroupProgram& p, const FusedGroup& g) {
  for (size_t i = 0; i < g.calls.size(); ++i)
    if (g.calls[i].same_as(g.anchor)) return p.member_outputs[i][0];
  KILN_CHECK(false) << "the anchor of group " << g.label() << " is not one of its calls";
  return {};
}

const char* group_template_name(const GroupProgram& p, const FusedGroup& group) {
  if (group.pattern >= OpPattern::OutElementwiseFusable) return schedule::anchor_template_name(anchor_tensor(p, group));
  return group.pattern == OpPattern::CommReduce ? "reduction" : "injective";
}

schedule::Schedule schedule_group(const GroupProgram& p, const FusedGroup& group, schedule::Config& cfg) {
  if (group.pattern >= OpPattern::OutElementwiseFusable)
    return schedule::schedule_anchor_cpu(p.outputs, anchor_tensor(p, group), cfg);
  schedule::Schedule s = schedule::create(p.outputs);
  if (group.pattern == OpPattern::CommReduce) {
    schedule::reduction_cpu(s, p.outputs, cfg);
  } else {
    schedule::injective_cpu(s, p.outputs, cfg);
  }
  return s;
}

}  // namespace kiln::relay
