// eliminate_common_subexpr: one node per distinct computation.
#include <unordered_map>

#include "kiln/relay/op.h"
#include "kiln/relay/transforms.h"

namespace kiln::relay {

namespace {

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)); }

// Rewritten bottom-up, equal computations already have identical argument nodes, so comparing
// arguments by identity is enough.
class CommonSubexprEliminator : public ExprMutator {
 protected:
  Expr rewrite_constant(const ConstantNode* op, const Expr& self) override {
    size_t h = op->value.hash();
    for (const Expr& seen : constants_[h])
      if (seen.as<ConstantNode>()->value.bitwise_equal(op->value)) return seen;
    constants_[h].push_back(self);
    return self;
  }

  Expr rewrite_call(const CallNode* op, const Expr& self, std::vector<Expr> args) override {
    Expr call = ExprMutator::rewrite_call(op, self, std::move(args));
    const auto* c = call.as<CallNode>();
    size_t h = mix(std::hash<const void*>()(c->op), c->attrs.hash());
    for (const Expr& a : c->args) h = mix(h, std::hash<const void*>()(a.get()));
    for (const Expr& seen : calls_[h]) {
      const auto* s = seen.as<CallNode>();
      if (s->op == c->op && same_args(s->args, c->args) && s->attrs == c->attrs) return seen;
    }
    calls_[h].push_back(call);
    return call;
  }

  Expr rewrite_tuple_get_item(const TupleGetItemNode* op, const Expr& self, Expr tuple) override {
    Expr item = ExprMutator::rewrite_tuple_get_item(op, self, std::move(tuple));
    const auto* g = item.as<TupleGetItemNode>();
    auto key = std::make_pair(g->tuple.get(), g->index);
    auto it = items_.find(key);
    if (it != items_.end()) return it->second;
    items_.emplace(key, item);
    return item;
  }

 private:
  static bool same_args(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!a[i].same_as(b[i])) return false;
    return true;
  }
  struct PairHash {
    size_t operator()(const std::pair<const ExprNode*, int>& p) const {
      return mix(std::hash<const void*>()(p.first), static_cast<size_t>(p.second));
    }
  };
  std::unordered_map<size_t, std::vector<Expr>> constants_, calls_;
  std::unordered_map<std::pair<const ExprNode*, int>, Expr, PairHash> items_;
};

}  // namespace

Module eliminate_common_subexpr(const Module& m) {
  Expr body = CommonSubexprEliminator().mutate(m.body);
  return body.same_as(m.body) ? m : m.with_body(body);
}

}  // namespace kiln::relay
