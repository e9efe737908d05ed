// prepack_weights: constant weights packed once, at compile time (see prepack_weights.h).
//
// The conv and dense kernels read their weight in a blocked layout; lowered as is, each kernel
// repacks the weight on every run (tens of MB per resnet18 inference). A constant weight read by
// one call only is packed here instead, and the packed constant replaces it in its group's
// inputs, so the memory plan and the weights blob carry the packed bytes.
#include "kiln/lower/prepack_weights.h"

namespace kiln::lower {

PrepackedWeights prepack_weights(relay::FusedModule* m, const Target& target, const StrategyOptions& options) {
  using namespace relay;  // NOLINT(google-build-using-namespace)
  // A weight shared by several calls (equal constants merged) or also a model output stays as is.
  std::unordered_map<const ExprNode*, int> uses;
  for (const FusedGroup& g : m->groups)
    for (const Expr& c : g.calls)
      for (const Expr& a : c.as<CallNode>()->args) ++uses[a.get()];
  for (const Expr& out : m->module.outputs()) uses[out.get()] += 2;

  PrepackedWeights packed;
  for (FusedGroup& g : m->groups) {
    if (!g.anchor.defined()) continue;
    Strategy st = select_strategy(g, target, options);
    const auto* call = g.anchor.as<CallNode>();
    if (!st.packing || st.packing->arg >= call->args.size()) continue;
    const Expr& w = call->args[st.packing->arg];
    const auto* k = w.as<ConstantNode>();
    if (!k || is_inlined_constant(w) || uses[w.get()] != 1) continue;
    Expr replacement = make_constant(st.packing->pack(k->value));
    for (Expr& in : g.inputs)
      if (in.same_as(w)) in = replacement;
    packed[g.anchor.get()] = PrepackedWeight{st.packing->arg, replacement};
  }
  return packed;
}

}  // namespace kiln::lower
