// The Stmt-level simplify pass: simplifies every expression with the loop ranges and let
// bindings in scope, and removes the control flow that this makes trivial (loops of extent 0
// or 1, ifs with a provable condition, such as the guard `io*8 + ii < 64` that an exact split
// leaves behind).
//
// Internally an undefined Stmt means "nothing left"; parents that end up empty vanish too, and
// the pass returns `evaluate(0)` if the whole statement does.
#include "ir/arith.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/structural.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"

namespace kiln::ir {

namespace {

bool is_trivial_value(const Expr& e) {
  return e.as<IntImmNode>() || e.as<FloatImmNode>() || e.as<VarNode>();
}

bool has_side_effect(const Expr& e) {
  bool found = false;
  post_order_visit(e, [&found](const Expr& x) {
    if (const auto* c = x.as<CallNode>()) found |= c->call_kind == CallKind::Extern;
  });
  return found;
}

class StmtSimplifier : public StmtMutator {
 public:
  Expr mutate(const Expr& e) override {
    if (!e.defined()) return e;
    Expr s = ana_.simplify(e);
    // Hand back the original when nothing changed, so unchanged subtrees stay shared.
    return structural_equal(s, e) ? e : s;
  }

 protected:
  Stmt visit_for(const ForNode* op, const Stmt& self) override {
    Expr mn = mutate(op->min), ext = mutate(op->extent);
    if (ana_.const_int_bound(ext).max_value <= 0) return Stmt();
    // A single iteration is its body with the loop variable fixed. Thread-bound loops stay:
    // codegen reads the launch dimensions from them.
    if (is_one(ext) && op->for_kind != ForKind::ThreadBinding) {
      return mutate_stmt(substitute(op->body, VarMap<Expr>{{op->loop_var.get(), mn}}));
    }
    arith::Analyzer saved = ana_;
    ana_.bind(op->loop_var, Range(mn, ext));
    Stmt body = mutate_stmt(op->body);
    ana_ = saved;
    if (!body.defined()) return Stmt();
    if (mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body)) return self;
    return for_loop(op->loop_var, mn, ext, op->for_kind, body, op->thread_tag);
  }

  Stmt visit_if(const IfThenElseNode* op, const Stmt& self) override {
    Expr c = apply_facts(mutate(op->condition));
    if (auto v = as_const_int(c)) return mutate_stmt(*v ? op->then_case : op->else_case);
    // Inside the branches the condition (or its negation) is known: a nested copy of the same
    // guard folds away.
    size_t depth = facts_.size();
    add_fact(c);
    Stmt t = mutate_stmt(op->then_case);
    facts_.resize(depth);
    add_fact(ana_.simplify(logical_not(c)));
    Stmt e = mutate_stmt(op->else_case);
    facts_.resize(depth);
    if (!t.defined() && !e.defined() && !has_side_effect(c)) return Stmt();
    if (!t.defined()) return if_then_else(ana_.simplify(logical_not(c)), e);
    if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self;
    return if_then_else(c, t, e);
  }

  Stmt visit_let_stmt(const LetStmtNode* op, const Stmt& self) override {
    Expr v = mutate(op->value);
    if (is_trivial_value(v)) {
      return mutate_stmt(substitute(op->body, VarMap<Expr>{{op->var.get(), v}}));
    }
    arith::Analyzer saved = ana_;
    ana_.bind_value(op->var, v);
    Stmt body = mutate_stmt(op->body);
    ana_ = saved;
    const VarNode* var = op->var.get();
    bool used = body.defined() && uses_var(body, [var](const VarNode* u) { return u == var; });
    if (!used && !has_side_effect(v)) return body;
    if (!body.defined()) return evaluate(v);  // keep the value's side effect
    if (v.same_as(op->value) && body.same_as(op->body)) return self;
    return let_stmt(op->var, v, body);
  }

  Stmt visit_attr(const AttrStmtNode* op, const Stmt& self) override {
    Expr v = mutate(op->value);
    arith::Analyzer saved = ana_;
    // A thread extent annotation bounds its thread variable within the body.
    if (op->key == "thread_extent" && op->node.defined() && op->node.as<VarNode>() &&
        op->node.dtype().is_integer() && as_const_int(v)) {
      ana_.bind(Var(std::static_pointer_cast<const VarNode>(op->node.node())),
                Range(make_zero(op->node.dtype()), cast(op->node.dtype(), v)));
    }
    Stmt body = mutate_stmt(op->body);
    ana_ = saved;
    if (!body.defined()) return Stmt();
    if (v.same_as(op->value) && body.same_as(op->body)) return self;
    return attr_stmt(op->key, op->node, v, body);
  }

  Stmt visit_allocate(const AllocateNode* op, const Stmt& self) override {
    Stmt body = mutate_stmt(op->body);
    if (!body.defined()) return Stmt();
    return body.same_as(op->body) ? self : allocate(op->buffer, body);
  }

  Stmt visit_seq(const SeqStmtNode* op, const Stmt& self) override {
    std::vector<Stmt> out;
    bool changed = false;
    for (const Stmt& s : op->seq) {
      Stmt r = mutate_stmt(s);
      changed |= !r.same_as(s);
      if (r.defined()) out.push_back(r);
    }
    if (out.empty()) return Stmt();
    return changed ? seq(std::move(out)) : self;
  }

  Stmt visit_evaluate(const EvaluateNode* op, const Stmt& self) override {
    Expr v = mutate(op->value);
    if (as_const_int(v) || as_const_float(v)) return Stmt();  // a constant does nothing
    return v.same_as(op->value) ? self : evaluate(v);
  }

 private:
  void add_fact(const Expr& c) {
    const auto* b = c.as<BinaryNode>();
    if (b && b->kind == ExprKind::And) {
      add_fact(b->a);
      add_fact(b->b);
    } else {
      facts_.push_back(c);
    }
  }

  // Replaces conjuncts of c known true (or known false) by the enclosing ifs.
  Expr apply_facts(const Expr& c) {
    if (facts_.empty() || as_const_int(c)) return c;
    if (const auto* b = c.as<BinaryNode>(); b && (b->kind == ExprKind::And || b->kind == ExprKind::Or)) {
      Expr x = apply_facts(b->a), y = apply_facts(b->b);
      if (x.same_as(b->a) && y.same_as(b->b)) return c;
      return ana_.simplify(make_binary(b->kind, x, y));
    }
    for (const Expr& f : facts_) {
      if (structural_equal(f, c)) return make_const(DataType::boolean(), 1);
    }
    Expr neg = ana_.simplify(logical_not(c));
    for (const Expr& f : facts_) {
      if (structural_equal(f, neg)) return make_const(DataType::boolean(), 0);
    }
    return c;
  }

  arith::Analyzer ana_;
  std::vector<Expr> facts_;  // conditions known to hold here (conjuncts of enclosing ifs)
};

}  // namespace

Stmt simplify(const Stmt& s) {
  KILN_USER_CHECK(s.defined()) << "simplify: undefined statement";
  Stmt r = StmtSimplifier().mutate_stmt(s);
  return r.defined() ? r : evaluate(0);
}

PrimFunc simplify(const PrimFunc& f) {
  PrimFunc out = f;
  out.body = simplify(f.body);
  return out;
}

}  // namespace kiln::ir
