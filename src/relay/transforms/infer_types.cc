// infer_types: re-derive every node's type from the op relations, bottom-up.
//
// make_call already types each call as it is built, so on a module built through the checking
// constructors this returns the very same module. It matters when types may be stale: nodes built
// by hand around the constructors, or relations that changed; and it is the one place that
// proves a whole module type-checks.
#include "kiln/relay/op.h"
#include "kiln/relay/transforms.h"

namespace kiln::relay {

namespace {

class TypeInferencer : public ExprMutator {
 protected:
  Expr rewrite_call(const CallNode* op, const Expr& self, std::vector<Expr> args) override {
    bool same_args = true;
    for (size_t i = 0; i < args.size(); ++i) same_args = same_args && args[i].same_as(op->args[i]);
    Expr fresh = make_call(*op->op, std::move(args), op->attrs, op->name);
    return same_args && fresh.type() == self.type() ? self : fresh;
  }
  Expr rewrite_tuple(const TupleNode* op, const Expr& self, std::vector<Expr> fields) override {
    Expr fresh = make_tuple(std::move(fields));
    bool same = fresh.type() == self.type();
    for (size_t i = 0; same && i < op->fields.size(); ++i) same = fresh.as<TupleNode>()->fields[i].same_as(op->fields[i]);
    return same ? self : fresh;
  }
  Expr rewrite_tuple_get_item(const TupleGetItemNode* op, const Expr& self, Expr tuple) override {
    Expr fresh = make_tuple_get_item(tuple, op->index);
    return tuple.same_as(op->tuple) && fresh.type() == self.type() ? self : fresh;
  }
};

}  // namespace

Module infer_types(const Module& m) {
  TypeInferencer inferencer;
  Expr body = inferencer.mutate(m.body);
  return body.same_as(m.body) ? m : m.with_body(body);
}

}  // namespace kiln::relay
