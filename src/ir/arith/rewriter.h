// Private to src/ir/arith: the rewriting simplifier. It simplifies bottom-up: children first,
// then the rules for the node at hand, which see the children already simplified. The rule
// families live in separate files (rewrite_*.cc) by the node kinds they handle.
#pragma once

#include "arith_internal.h"
#include "kiln/ir/functor.h"

namespace kiln::ir::arith {

class Rewriter : public ExprMutator {
 public:
  explicit Rewriter(const AnalyzerState& st) : st_(st) {}

  // Rules for one node whose operands are already simplified (rewrite_simplify.cc).
  Expr rw_binary(ExprKind k, const Expr& a, const Expr& b);
  // + - * on scalar signed integers through linear forms (rewrite_simplify.cc).
  Expr rw_linear(ExprKind k, const Expr& a, const Expr& b);
  Expr canonical(LinearForm f);
  // rewrite_divmod.cc
  Expr rw_floordiv(const Expr& a, const Expr& b);
  Expr rw_floormod(const Expr& a, const Expr& b);
  Expr rw_truncdiv(const Expr& a, const Expr& b);
  Expr rw_truncmod(const Expr& a, const Expr& b);
  // rewrite_compare.cc
  Expr rw_min_max(ExprKind k, const Expr& a, const Expr& b);
  Expr rw_compare(ExprKind k, const Expr& a, const Expr& b);
  Expr rw_logic(ExprKind k, const Expr& a, const Expr& b);
  Expr rw_not(const Expr& a);
  // rewrite_vector.cc: Ramp/Broadcast arithmetic (undefined when no rule applies), floats,
  // casts of constants.
  Expr rw_vector(ExprKind k, const Expr& a, const Expr& b);
  Expr rw_vector_compare(ExprKind k, const Expr& a, const Expr& b);
  Expr rw_float(ExprKind k, const Expr& a, const Expr& b);
  Expr rw_cast(DataType t, const Expr& v);

  IntBound bound(const Expr& e) const { return compute_bound(st_, &local_, e); }
  IntBound bound(const LinearForm& f) const { return bound(from_linear(f)); }

 protected:
  Expr visit_var(const VarNode* op, const Expr& self) override;
  Expr visit_binary(const BinaryNode* op, const Expr& self) override;
  Expr visit_not(const NotNode* op, const Expr& self) override;
  Expr visit_select(const SelectNode* op, const Expr& self) override;
  Expr visit_cast(const CastNode* op, const Expr& self) override;
  Expr visit_ramp(const RampNode* op, const Expr& self) override;
  Expr visit_broadcast(const BroadcastNode* op, const Expr& self) override;
  Expr visit_let(const LetNode* op, const Expr& self) override;
  Expr visit_reduce(const ReduceNode* op, const Expr& self) override;

 private:
  // Folds floordiv/floormod pairs back into their dividend and x - floordiv(x, c)*c into
  // floormod(x, c) (fused loop index recovery).
  void recover_divmod(LinearForm* f);

  const AnalyzerState& st_;
  VarMap<IntBound> local_;  // let-bound vars of the expression being simplified
};

// True for a scalar signed integer type: the types the linear and bound rules reason about
// (unsigned wrap-around makes those rules unsound, so they are left alone).
inline bool is_index_type(DataType t) { return t.is_int() && t.is_scalar(); }
inline const IntImmNode* as_int_imm(const Expr& e) { return e.as<IntImmNode>(); }

}  // namespace kiln::ir::arith
