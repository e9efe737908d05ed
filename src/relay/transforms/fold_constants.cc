// fold_constants: evaluate calls on constants at compile time.
#include "kiln/relay/evaluate.h"
#include "kiln/relay/op.h"
#include "kiln/relay/transforms.h"

namespace kiln::relay {

namespace {

// Results bigger than this that are also bigger than their inputs stay calls: folding them
// would trade a cheap kernel for megabytes of weights.
constexpr int64_t kGrowthLimit = 1 << 16;

class ConstantFolder : public ExprMutator {
 protected:
  Expr rewrite_call(const CallNode* op, const Expr& self, std::vector<Expr> args) override {
    Expr call = ExprMutator::rewrite_call(op, self, args);
    const auto* c = call.as<CallNode>();
    const auto* t = call.type().as<TensorTypeNode>();
    if (!t || !can_evaluate(*c->op)) return call;
    std::vector<HostTensor> values;
    int64_t input_elems = 0;
    for (const Expr& a : c->args) {
      const auto* k = a.as<ConstantNode>();
      if (!k) return call;
      values.push_back(k->value);
      input_elems += k->value.numel();
    }
    if (t->num_elements() > kGrowthLimit && t->num_elements() > input_elems) return call;
    auto v = evaluate_call(*c, values);
    return v ? make_constant(*v) : call;
  }
};

}  // namespace

Module fold_constants(const Module& m) {
  Expr body = ConstantFolder().mutate(m.body);
  return body.same_as(m.body) ? m : m.with_body(body);
}

}  // namespace kiln::relay
