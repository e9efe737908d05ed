#include "kiln/ir/functor.h"

#include "kiln/support/error.h"

namespace kiln::ir {

// ---------------------------------------------------------------------------------------------
// ExprVisitor

void ExprVisitor::visit(const Expr& e) {
  if (!e.defined()) return;
  switch (e.kind()) {
    case ExprKind::IntImm: return visit_int_imm(e.as<IntImmNode>());
    case ExprKind::FloatImm: return visit_float_imm(e.as<FloatImmNode>());
    case ExprKind::StringImm: return visit_string_imm(e.as<StringImmNode>());
    case ExprKind::Var: return visit_var(e.as<VarNode>());
    case ExprKind::Not: return visit_not(e.as<NotNode>());
    case ExprKind::Select: return visit_select(e.as<SelectNode>());
    case ExprKind::Cast: return visit_cast(e.as<CastNode>());
    case ExprKind::Ramp: return visit_ramp(e.as<RampNode>());
    case ExprKind::Broadcast: return visit_broadcast(e.as<BroadcastNode>());
    case ExprKind::Let: return visit_let(e.as<LetNode>());
    case ExprKind::Call: return visit_call(e.as<CallNode>());
    case ExprKind::BufferLoad: return visit_buffer_load(e.as<BufferLoadNode>());
    case ExprKind::ProducerLoad: return visit_producer_load(e.as<ProducerLoadNode>());
    case ExprKind::Reduce: return visit_reduce(e.as<ReduceNode>());
    default:
      KILN_CHECK(is_binary(e.kind())) << "unhandled expression kind " << kind_name(e.kind());
      return visit_binary(e.as<BinaryNode>());
  }
}

void ExprVisitor::visit_binary(const BinaryNode* op) { visit(op->a); visit(op->b); }
void ExprVisitor::visit_not(const NotNode* op) { visit(op->a); }
void ExprVisitor::visit_select(const SelectNode* op) {
  visit(op->condition); visit(op->true_value); visit(op->false_value);
}
void ExprVisitor::visit_cast(const CastNode* op) { visit(op->value); }
void ExprVisitor::visit_ramp(const RampNode* op) { visit(op->base); visit(op->stride); }
void ExprVisitor::visit_broadcast(const BroadcastNode* op) { visit(op->value); }
void ExprVisitor::visit_let(const LetNode* op) { visit(op->value); visit(op->body); }
void ExprVisitor::visit_call(const CallNode* op) { for (const Expr& a : op->args) visit(a); }
void ExprVisitor::visit_buffer_load(const BufferLoadNode* op) { for (const Expr& i : op->indices) visit(i); }
void ExprVisitor::visit_producer_load(const ProducerLoadNode* op) { for (const Expr& i : op->indices) visit(i); }
void ExprVisitor::visit_reduce(const ReduceNode* op) {
  for (const IterVar& iv : op->axis) { visit(iv->dom.min); visit(iv->dom.extent); }
  for (const Expr& s : op->source) visit(s);
  visit(op->condition);
}

// ---------------------------------------------------------------------------------------------
// ExprMutator

Expr ExprMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  switch (e.kind()) {
    case ExprKind::IntImm: return visit_int_imm(e.as<IntImmNode>(), e);
    case ExprKind::FloatImm: return visit_float_imm(e.as<FloatImmNode>(), e);
    case ExprKind::StringImm: return visit_string_imm(e.as<StringImmNode>(), e);
    case ExprKind::Var: return visit_var(e.as<VarNode>(), e);
    case ExprKind::Not: return visit_not(e.as<NotNode>(), e);
    case ExprKind::Select: return visit_select(e.as<SelectNode>(), e);
    case ExprKind::Cast: return visit_cast(e.as<CastNode>(), e);
    case ExprKind::Ramp: return visit_ramp(e.as<RampNode>(), e);
    case ExprKind::Broadcast: return visit_broadcast(e.as<BroadcastNode>(), e);
    case ExprKind::Let: return visit_let(e.as<LetNode>(), e);
    case ExprKind::Call: return visit_call(e.as<CallNode>(), e);
    case ExprKind::BufferLoad: return visit_buffer_load(e.as<BufferLoadNode>(), e);
    case ExprKind::ProducerLoad: return visit_producer_load(e.as<ProducerLoadNode>(), e);
    case ExprKind::Reduce: return visit_reduce(e.as<ReduceNode>(), e);
    default:
      KILN_CHECK(is_binary(e.kind())) << "unhandled expression kind " << kind_name(e.kind());
      return visit_binary(e.as<BinaryNode>(), e);
  }
}

bool ExprMutator::mutate_all(const std::vector<Expr>& in, std::vector<Expr>* out) {
  bool changed = false;
  out->clear();
  out->reserve(in.size());
  for (const Expr& e : in) {
    out->push_back(mutate(e));
    changed |= !out->back().same_as(e);
  }
  return changed;
}

Expr ExprMutator::visit_binary(const BinaryNode* op, const Expr& self) {
  Expr a = mutate(op->a), b = mutate(op->b);
  if (a.same_as(op->a) && b.same_as(op->b)) return self;
  return make_binary(op->kind, a, b);
}
Expr ExprMutator::visit_not(const NotNode* op, const Expr& self) {
  Expr a = mutate(op->a);
  return a.same_as(op->a) ? self : logical_not(a);
}
Expr ExprMutator::visit_select(const SelectNode* op, const Expr& self) {
  Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
  return select(c, t, f);
}
Expr ExprMutator::visit_cast(const CastNode* op, const Expr& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : cast(op->dtype, v);
}
Expr ExprMutator::visit_ramp(const RampNode* op, const Expr& self) {
  Expr b = mutate(op->base), s = mutate(op->stride);
  if (b.same_as(op->base) && s.same_as(op->stride)) return self;
  return ramp(b, s, op->lanes);
}
Expr ExprMutator::visit_broadcast(const BroadcastNode* op, const Expr& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : broadcast(v, op->lanes);
}
Expr ExprMutator::visit_let(const LetNode* op, const Expr& self) {
  Expr v = mutate(op->value), b = mutate(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return self;
  return let(op->var, v, b);
}
Expr ExprMutator::visit_call(const CallNode* op, const Expr& self) {
  std::vector<Expr> args;
  if (!mutate_all(op->args, &args)) return self;
  return Expr(std::make_shared<CallNode>(op->dtype, op->name, std::move(args), op->call_kind));
}
Expr ExprMutator::visit_buffer_load(const BufferLoadNode* op, const Expr& self) {
  std::vector<Expr> idx;
  if (!mutate_all(op->indices, &idx)) return self;
  return buffer_load(op->buffer, std::move(idx));
}
Expr ExprMutator::visit_producer_load(const ProducerLoadNode* op, const Expr& self) {
  std::vector<Expr> idx;
  if (!mutate_all(op->indices, &idx)) return self;
  return producer_load(op->producer, std::move(idx));
}
Expr ExprMutator::visit_reduce(const ReduceNode* op, const Expr& self) {
  std::vector<Expr> src;
  bool changed = mutate_all(op->source, &src);
  Expr cond = mutate(op->condition);
  if (!changed && cond.same_as(op->condition)) return self;
  return make_reduce(op->combiner, std::move(src), op->axis, cond, op->value_index);
}

// ---------------------------------------------------------------------------------------------
// StmtVisitor

void StmtVisitor::visit_stmt(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::LetStmt: return visit_let_stmt(s.as<LetStmtNode>());
    case StmtKind::AttrStmt: return visit_attr(s.as<AttrStmtNode>());
    case StmtKind::BufferStore: return visit_buffer_store(s.as<BufferStoreNode>());
    case StmtKind::Allocate: return visit_allocate(s.as<AllocateNode>());
    case StmtKind::For: return visit_for(s.as<ForNode>());
    case StmtKind::IfThenElse: return visit_if(s.as<IfThenElseNode>());
    case StmtKind::Seq: return visit_seq(s.as<SeqStmtNode>());
    case StmtKind::Evaluate: return visit_evaluate(s.as<EvaluateNode>());
  }
}

void StmtVisitor::visit_let_stmt(const LetStmtNode* op) { visit(op->value); visit_stmt(op->body); }
void StmtVisitor::visit_attr(const AttrStmtNode* op) { visit(op->node); visit(op->value); visit_stmt(op->body); }
void StmtVisitor::visit_buffer_store(const BufferStoreNode* op) {
  visit(op->value);
  for (const Expr& i : op->indices) visit(i);
}
void StmtVisitor::visit_allocate(const AllocateNode* op) {
  for (const Expr& e : op->buffer->shape) visit(e);
  visit_stmt(op->body);
}
void StmtVisitor::visit_for(const ForNode* op) { visit(op->min); visit(op->extent); visit_stmt(op->body); }
void StmtVisitor::visit_if(const IfThenElseNode* op) {
  visit(op->condition); visit_stmt(op->then_case); visit_stmt(op->else_case);
}
void StmtVisitor::visit_seq(const SeqStmtNode* op) { for (const Stmt& s : op->seq) visit_stmt(s); }
void StmtVisitor::visit_evaluate(const EvaluateNode* op) { visit(op->value); }

// ---------------------------------------------------------------------------------------------
// StmtMutator

Stmt StmtMutator::mutate_stmt(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s.kind()) {
    case StmtKind::LetStmt: return visit_let_stmt(s.as<LetStmtNode>(), s);
    case StmtKind::AttrStmt: return visit_attr(s.as<AttrStmtNode>(), s);
    case StmtKind::BufferStore: return visit_buffer_store(s.as<BufferStoreNode>(), s);
    case StmtKind::Allocate: return visit_allocate(s.as<AllocateNode>(), s);
    case StmtKind::For: return visit_for(s.as<ForNode>(), s);
    case StmtKind::IfThenElse: return visit_if(s.as<IfThenElseNode>(), s);
    case StmtKind::Seq: return visit_seq(s.as<SeqStmtNode>(), s);
    case StmtKind::Evaluate: return visit_evaluate(s.as<EvaluateNode>(), s);
  }
  return s;
}

Stmt StmtMutator::visit_let_stmt(const LetStmtNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  Stmt b = mutate_stmt(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return self;
  return let_stmt(op->var, v, b);
}
Stmt StmtMutator::visit_attr(const AttrStmtNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  Stmt b = mutate_stmt(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return self;
  return attr_stmt(op->key, op->node, v, b);
}
Stmt StmtMutator::visit_buffer_store(const BufferStoreNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  std::vector<Expr> idx;
  bool changed = mutate_all(op->indices, &idx);
  if (!changed && v.same_as(op->value)) return self;
  return buffer_store(op->buffer, v, std::move(idx));
}
Stmt StmtMutator::visit_allocate(const AllocateNode* op, const Stmt& self) {
  Stmt b = mutate_stmt(op->body);
  return b.same_as(op->body) ? self : allocate(op->buffer, b);
}
Stmt StmtMutator::visit_for(const ForNode* op, const Stmt& self) {
  Expr mn = mutate(op->min), ext = mutate(op->extent);
  Stmt b = mutate_stmt(op->body);
  if (mn.same_as(op->min) && ext.same_as(op->extent) && b.same_as(op->body)) return self;
  return for_loop(op->loop_var, mn, ext, op->for_kind, b, op->thread_tag);
}
Stmt StmtMutator::visit_if(const IfThenElseNode* op, const Stmt& self) {
  Expr c = mutate(op->condition);
  Stmt t = mutate_stmt(op->then_case), e = mutate_stmt(op->else_case);
  if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self;
  return if_then_else(c, t, e);
}
Stmt StmtMutator::visit_seq(const SeqStmtNode* op, const Stmt& self) {
  std::vector<Stmt> out;
  bool changed = false;
  for (const Stmt& s : op->seq) {
    out.push_back(mutate_stmt(s));
    changed |= !out.back().same_as(s);
  }
  return changed ? seq(std::move(out)) : self;
}
Stmt StmtMutator::visit_evaluate(const EvaluateNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : evaluate(v);
}

// ---------------------------------------------------------------------------------------------
// Utilities

namespace {
class Substituter : public StmtMutator {
 public:
  explicit Substituter(const VarMap<Expr>& vmap) : vmap_(vmap) {}

 protected:
  Expr visit_var(const VarNode* op, const Expr& self) override {
    auto it = vmap_.find(op);
    return it == vmap_.end() ? self : it->second;
  }

 private:
  const VarMap<Expr>& vmap_;
};

class PostOrder : public ExprVisitor {
 public:
  explicit PostOrder(const std::function<void(const Expr&)>& f) : f_(f) {}
  void visit(const Expr& e) override {
    ExprVisitor::visit(e);
    if (e.defined()) f_(e);
  }

 private:
  const std::function<void(const Expr&)>& f_;
};

class VarUseFinder : public StmtVisitor {
 public:
  explicit VarUseFinder(const std::function<bool(const VarNode*)>& pred) : pred_(pred) {}
  bool found = false;

 protected:
  void visit_var(const VarNode* op) override { found = found || pred_(op); }
  void visit_buffer_load(const BufferLoadNode* op) override {
    found = found || pred_(op->buffer->data.get());
    StmtVisitor::visit_buffer_load(op);
  }
  void visit_buffer_store(const BufferStoreNode* op) override {
    found = found || pred_(op->buffer->data.get());
    StmtVisitor::visit_buffer_store(op);
  }

 private:
  const std::function<bool(const VarNode*)>& pred_;
};
}  // namespace

Expr substitute(const Expr& e, const VarMap<Expr>& vmap) {
  if (vmap.empty()) return e;
  return Substituter(vmap).mutate(e);
}
Stmt substitute(const Stmt& s, const VarMap<Expr>& vmap) {
  if (vmap.empty()) return s;
  return Substituter(vmap).mutate_stmt(s);
}

void post_order_visit(const Expr& e, const std::function<void(const Expr&)>& f) { PostOrder(f).visit(e); }

bool uses_var(const Expr& e, const std::function<bool(const VarNode*)>& pred) {
  VarUseFinder v(pred);
  v.visit(e);
  return v.found;
}
bool uses_var(const Stmt& s, const std::function<bool(const VarNode*)>& pred) {
  VarUseFinder v(pred);
  v.visit_stmt(s);
  return v.found;
}

}  // namespace kiln::ir
