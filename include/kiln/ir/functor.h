// Visitors and mutators over the loop-level IR. Mutators share unchanged subtrees: when no
// child changes, they return the very node they were given (same_as holds).
#pragma once

#include <functional>

#include "kiln/ir/expr.h"
#include "kiln/ir/stmt.h"

namespace kiln::ir {

class ExprVisitor {
 public:
  virtual ~ExprVisitor() = default;
  virtual void visit(const Expr& e);

 protected:
  virtual void visit_int_imm(const IntImmNode*) {}
  virtual void visit_float_imm(const FloatImmNode*) {}
  virtual void visit_string_imm(const StringImmNode*) {}
  virtual void visit_var(const VarNode*) {}
  virtual void visit_binary(const BinaryNode* op);
  virtual void visit_not(const NotNode* op);
  virtual void visit_select(const SelectNode* op);
  virtual void visit_cast(const CastNode* op);
  virtual void visit_ramp(const RampNode* op);
  virtual void visit_broadcast(const BroadcastNode* op);
  virtual void visit_let(const LetNode* op);
  virtual void visit_call(const CallNode* op);
  virtual void visit_buffer_load(const BufferLoadNode* op);
  virtual void visit_producer_load(const ProducerLoadNode* op);
  virtual void visit_reduce(const ReduceNode* op);
};

class ExprMutator {
 public:
  virtual ~ExprMutator() = default;
  virtual Expr mutate(const Expr& e);

 protected:
  // `self` is the Expr holding `op`; return it when nothing changed.
  virtual Expr visit_int_imm(const IntImmNode*, const Expr& self) { return self; }
  virtual Expr visit_float_imm(const FloatImmNode*, const Expr& self) { return self; }
  virtual Expr visit_string_imm(const StringImmNode*, const Expr& self) { return self; }
  virtual Expr visit_var(const VarNode*, const Expr& self) { return self; }
  virtual Expr visit_binary(const BinaryNode* op, const Expr& self);
  virtual Expr visit_not(const NotNode* op, const Expr& self);
  virtual Expr visit_select(const SelectNode* op, const Expr& self);
  virtual Expr visit_cast(const CastNode* op, const Expr& self);
  virtual Expr visit_ramp(const RampNode* op, const Expr& self);
  virtual Expr visit_broadcast(const BroadcastNode* op, const Expr& self);
  virtual Expr visit_let(const LetNode* op, const Expr& self);
  virtual Expr visit_call(const CallNode* op, const Expr& self);
  virtual Expr visit_buffer_load(const BufferLoadNode* op, const Expr& self);
  virtual Expr visit_producer_load(const ProducerLoadNode* op, const Expr& self);
  virtual Expr visit_reduce(const ReduceNode* op, const Expr& self);

  // Mutates each element; returns true if any changed.
  bool mutate_all(const std::vector<Expr>& in, std::vector<Expr>* out);
};

class StmtVisitor : public ExprVisitor {
 public:
  virtual void visit_stmt(const Stmt& s);
  using ExprVisitor::visit;

 protected:
  virtual void visit_let_stmt(const LetStmtNode* op);
  virtual void visit_attr(const AttrStmtNode* op);
  virtual void visit_buffer_store(const BufferStoreNode* op);
  virtual void visit_allocate(const AllocateNode* op);
  virtual void visit_for(const ForNode* op);
  virtual void visit_if(const IfThenElseNode* op);
  virtual void visit_seq(const SeqStmtNode* op);
  virtual void visit_evaluate(const EvaluateNode* op);
};

class StmtMutator : public ExprMutator {
 public:
  virtual Stmt mutate_stmt(const Stmt& s);
  using ExprMutator::mutate;

 protected:
  virtual Stmt visit_let_stmt(const LetStmtNode* op, const Stmt& self);
  virtual Stmt visit_attr(const AttrStmtNode* op, const Stmt& self);
  virtual Stmt visit_buffer_store(const BufferStoreNode* op, const Stmt& self);
  virtual Stmt visit_allocate(const AllocateNode* op, const Stmt& self);
  virtual Stmt visit_for(const ForNode* op, const Stmt& self);
  virtual Stmt visit_if(const IfThenElseNode* op, const Stmt& self);
  virtual Stmt visit_seq(const SeqStmtNode* op, const Stmt& self);
  virtual Stmt visit_evaluate(const EvaluateNode* op, const Stmt& self);
};

// Replaces variables by expressions (by identity); returns the input when nothing matched.
Expr substitute(const Expr& e, const VarMap<Expr>& vmap);
Stmt substitute(const Stmt& s, const VarMap<Expr>& vmap);

// Calls f on every node of e in post-order (children first).
void post_order_visit(const Expr& e, const std::function<void(const Expr&)>& f);
// True if e mentions any variable for which pred holds.
bool uses_var(const Expr& e, const std::function<bool(const VarNode*)>& pred);
bool uses_var(const Stmt& s, const std::function<bool(const VarNode*)>& pred);

}  // namespace kiln::ir
