// prepack_weights: constant conv/dense weights packed once, at compile time.
//
// The op library's conv and dense kernels read their weight in a blocked layout; lowered as is,
// each kernel repacks the weight on every run (tens of MB per resnet18 inference). A constant
// weight read by one call only is packed here instead, and the packed constant replaces it in
// its group's inputs, so the memory plan and the weights blob carry the packed bytes.
#include "kiln/relay/lower_graph.h"
#include "kiln/te/ops/register_b.h"

namespace kiln::relay {

PrepackedWeights prepack_weights(FusedModule* m, bool winograd) {
  // A weight shared by several calls (equal constants merged) or also a model output stays as is.
  std::unordered_map<const ExprNode*, int> uses;
  for (const FusedGroup& g : m->groups)
    for (const Expr& c : g.calls)
      for (const Expr& a : c.as<CallNode>()->args) ++uses[a.get()];
  for (const Expr& out : m->module.outputs()) uses[out.get()] += 2;

  PrepackedWeights packed;
  for (FusedGroup& g : m->groups) {
    for (const Expr& c : g.calls) {
      const auto* call = c.as<CallNode>();
      std::optional<te::ops::WeightPrepack> p = te::ops::weight_prepack(*call, winograd);
      if (!p || p->input >= call->args.size()) continue;
      const Expr& w = call->args[p->input];
      const auto* k = w.as<ConstantNode>();
      if (!k || is_inlined_constant(w) || uses[w.get()] != 1) continue;
      Expr replacement = make_constant(p->pack(k->value));
      for (Expr& in : g.inputs)
        if (in.same_as(w)) in = replacement;
      packed[c.get()] = PrepackedWeight{p->input, replacement, p->lower};
    }
  }
  return packed;
}

}  // namespace kiln::relay
