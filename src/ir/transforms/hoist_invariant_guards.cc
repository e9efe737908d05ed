// hoist_invariant_guards: conjuncts of a loop body's guard that do not depend on the loop move
// outside it (transforms.h).
//
//   for (i) { if (x(i) < 112 && k < 4) S }   ->   if (k < 4) { for (i) { if (x(i) < 112) S } }
//
// Why: bound checks put every axis's test on the innermost statement, so a K-tail test sits in
// each register-tile nest of each unrolled K step. PoCL 3.1's kernel compiler on a Zen 3 did not
// finish resnet18's stem conv with those (docs/gpu.md, "Pipeline"), and every GPU compiler gains
// from testing once what does not change. Only serial and unrolled loops whose whole body is
// one guard without an else; only pure conjuncts (no loads, no calls): a test that is false
// for one iteration is false for all, so the loop did nothing then, and skipping it does nothing.
#include "kiln/ir/functor.h"
#include "kiln/ir/structural.h"
#include "kiln/ir/transforms.h"

namespace kiln::ir {
namespace {

void conjuncts(const Expr& e, std::vector<Expr>* out) {
  const auto* b = e.as<BinaryNode>();
  if (b && b->kind == ExprKind::And) {
    conjuncts(b->a, out);
    conjuncts(b->b, out);
    return;
  }
  for (const Expr& seen : *out)
    if (structural_equal(seen, e)) return;  // (k < 4) && (k < 4): once
  out->push_back(e);
}

Expr all_of(const std::vector<Expr>& terms) {
  Expr e = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) e = logical_and(e, terms[i]);
  return e;
}

bool pure(const Expr& e) {
  bool ok = true;
  post_order_visit(e, [&](const Expr& x) { ok &= !x.as<BufferLoadNode>() && !x.as<CallNode>(); });
  return ok;
}

class Hoister : public StmtMutator {
 protected:
  Stmt visit_for(const ForNode* op, const Stmt& self) override {
    Stmt s = StmtMutator::visit_for(op, self);  // inner loops first: conjuncts rise level by level
    const auto* loop = s.as<ForNode>();
    if (!loop || (loop->for_kind != ForKind::Serial && loop->for_kind != ForKind::Unrolled)) return s;
    const auto* guard = loop->body.as<IfThenElseNode>();
    if (!guard || guard->else_case.defined()) return s;
    std::vector<Expr> all, inside, outside;
    conjuncts(guard->condition, &all);
    const VarNode* v = loop->loop_var.get();
    for (const Expr& c : all)
      (pure(c) && !uses_var(c, [v](const VarNode* x) { return x == v; }) ? outside : inside).push_back(c);
    if (outside.empty()) return s;
    Stmt body = inside.empty() ? guard->then_case : if_then_else(all_of(inside), guard->then_case);
    return if_then_else(all_of(outside), for_loop(loop->loop_var, loop->min, loop->extent, loop->for_kind, body,
                                                  loop->thread_tag));
  }
};

}  // namespace

PrimFunc hoist_invariant_guards(const PrimFunc& f) {
  PrimFunc out = f;
  out.body = Hoister().mutate_stmt(f.body);
  return out;
}

}  // namespace kiln::ir
