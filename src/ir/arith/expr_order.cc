// A total order on expressions that never looks at addresses, so the simplifier's canonical
// term order (and hence its output) is the same from run to run.
#include "arith_internal.h"

namespace kiln::ir::arith {

namespace {

template <typename T>
int cmp(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

int compare_type(DataType a, DataType b) {
  if (int c = cmp(static_cast<int>(a.code), static_cast<int>(b.code))) return c;
  if (int c = cmp(a.bits, b.bits)) return c;
  return cmp(a.lanes, b.lanes);
}

int compare_list(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (int c = cmp(a.size(), b.size())) return c;
  for (size_t i = 0; i < a.size(); ++i) {
    if (int c = compare_expr(a[i], b[i])) return c;
  }
  return 0;
}

}  // namespace

int compare_expr(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return 0;
  if (!a.defined() || !b.defined()) return cmp(a.defined(), b.defined());
  if (int c = cmp(static_cast<int>(a.kind()), static_cast<int>(b.kind()))) return c;
  if (int c = compare_type(a.dtype(), b.dtype())) return c;
  switch (a.kind()) {
    case ExprKind::IntImm: return cmp(a.as<IntImmNode>()->value, b.as<IntImmNode>()->value);
    case ExprKind::FloatImm: return cmp(a.as<FloatImmNode>()->value, b.as<FloatImmNode>()->value);
    case ExprKind::StringImm: return cmp(a.as<StringImmNode>()->value, b.as<StringImmNode>()->value);
    case ExprKind::Var: return cmp(a.as<VarNode>()->name, b.as<VarNode>()->name);
    case ExprKind::Not: return compare_expr(a.as<NotNode>()->a, b.as<NotNode>()->a);
    case ExprKind::Cast: return compare_expr(a.as<CastNode>()->value, b.as<CastNode>()->value);
    case ExprKind::Broadcast:
      return compare_expr(a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value);
    case ExprKind::Ramp: {
      const auto *x = a.as<RampNode>(), *y = b.as<RampNode>();
      if (int c = compare_expr(x->base, y->base)) return c;
      return compare_expr(x->stride, y->stride);
    }
    case ExprKind::Select: {
      const auto *x = a.as<SelectNode>(), *y = b.as<SelectNode>();
      if (int c = compare_expr(x->condition, y->condition)) return c;
      if (int c = compare_expr(x->true_value, y->true_value)) return c;
      return compare_expr(x->false_value, y->false_value);
    }
    case ExprKind::Let: {
      const auto *x = a.as<LetNode>(), *y = b.as<LetNode>();
      if (int c = cmp(x->var.name(), y->var.name())) return c;
      if (int c = compare_expr(x->value, y->value)) return c;
      return compare_expr(x->body, y->body);
    }
    case ExprKind::Call: {
      const auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
      if (int c = cmp(x->name, y->name)) return c;
      return compare_list(x->args, y->args);
    }
    case ExprKind::BufferLoad: {
      const auto *x = a.as<BufferLoadNode>(), *y = b.as<BufferLoadNode>();
      if (int c = cmp(x->buffer->name, y->buffer->name)) return c;
      return compare_list(x->indices, y->indices);
    }
    case ExprKind::ProducerLoad: {
      const auto *x = a.as<ProducerLoadNode>(), *y = b.as<ProducerLoadNode>();
      if (int c = cmp(x->producer->name(), y->producer->name())) return c;
      return compare_list(x->indices, y->indices);
    }
    case ExprKind::Reduce: {
      const auto *x = a.as<ReduceNode>(), *y = b.as<ReduceNode>();
      if (int c = cmp(x->value_index, y->value_index)) return c;
      if (int c = compare_list(x->source, y->source)) return c;
      return compare_expr(x->condition, y->condition);
    }
    default: break;
  }
  if (const auto* x = a.as<BinaryNode>()) {
    const auto* y = b.as<BinaryNode>();
    if (int c = compare_expr(x->a, y->a)) return c;
    return compare_expr(x->b, y->b);
  }
  return 0;
}

}  // namespace kiln::ir::arith
