// Structural equality and hashing of loop-level IR trees.
//
// Equality walks both trees in lockstep. With map_free_vars, the first time a variable (or a
// buffer) of one tree meets one of the other they are paired, and every later meeting must
// repeat the same pairing both ways; without it they must be the very same object. Hashing
// numbers variables and buffers by order of first appearance, so it agrees with equality
// under renaming and never depends on addresses.
#include "kiln/ir/structural.h"

#include <cstring>
#include <unordered_map>

namespace kiln::ir {

namespace {

class EqualChecker {
 public:
  explicit EqualChecker(bool map_free_vars) : map_(map_free_vars) {}

  bool expr(const Expr& a, const Expr& b) {
    // Under map_free_vars a shared subtree still has to agree with the pairing so far.
    if (!map_ && a.same_as(b)) return true;
    if (!a.defined() || !b.defined()) return false;
    if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
    switch (a.kind()) {
      case ExprKind::IntImm: return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
      case ExprKind::FloatImm: {
        double x = a.as<FloatImmNode>()->value, y = b.as<FloatImmNode>()->value;
        return x == y || (x != x && y != y);  // NaN equals NaN structurally
      }
      case ExprKind::StringImm: return a.as<StringImmNode>()->value == b.as<StringImmNode>()->value;
      case ExprKind::Var: return var(a.as<VarNode>(), b.as<VarNode>());
      case ExprKind::Not: return expr(a.as<NotNode>()->a, b.as<NotNode>()->a);
      case ExprKind::Select: {
        const auto *x = a.as<SelectNode>(), *y = b.as<SelectNode>();
        return expr(x->condition, y->condition) && expr(x->true_value, y->true_value) &&
               expr(x->false_value, y->false_value);
      }
      case ExprKind::Cast: return expr(a.as<CastNode>()->value, b.as<CastNode>()->value);
      case ExprKind::Ramp: {
        const auto *x = a.as<RampNode>(), *y = b.as<RampNode>();
        return x->lanes == y->lanes && expr(x->base, y->base) && expr(x->stride, y->stride);
      }
      case ExprKind::Broadcast: {
        const auto *x = a.as<BroadcastNode>(), *y = b.as<BroadcastNode>();
        return x->lanes == y->lanes && expr(x->value, y->value);
      }
      case ExprKind::Let: {
        const auto *x = a.as<LetNode>(), *y = b.as<LetNode>();
        return expr(x->value, y->value) && var(x->var.get(), y->var.get()) && expr(x->body, y->body);
      }
      case ExprKind::Call: {
        const auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
        return x->name == y->name && x->call_kind == y->call_kind && list(x->args, y->args);
      }
      case ExprKind::BufferLoad: {
        const auto *x = a.as<BufferLoadNode>(), *y = b.as<BufferLoadNode>();
        return buffer(x->buffer, y->buffer) && list(x->indices, y->indices);
      }
      case ExprKind::ProducerLoad: {
        const auto *x = a.as<ProducerLoadNode>(), *y = b.as<ProducerLoadNode>();
        bool same = x->producer == y->producer ||
                    (x->producer && y->producer && x->producer->same_as(*y->producer));
        return same && list(x->indices, y->indices);
      }
      case ExprKind::Reduce: return reduce(a.as<ReduceNode>(), b.as<ReduceNode>());
      default: break;
    }
    const auto *x = a.as<BinaryNode>(), *y = b.as<BinaryNode>();
    return x && y && expr(x->a, y->a) && expr(x->b, y->b);
  }

  bool stmt(const Stmt& a, const Stmt& b) {
    if (!map_ && a.same_as(b)) return true;
    if (!a.defined() || !b.defined() || a.kind() != b.kind()) return false;
    switch (a.kind()) {
      case StmtKind::LetStmt: {
        const auto *x = a.as<LetStmtNode>(), *y = b.as<LetStmtNode>();
        return expr(x->value, y->value) && var(x->var.get(), y->var.get()) && stmt(x->body, y->body);
      }
      case StmtKind::AttrStmt: {
        const auto *x = a.as<AttrStmtNode>(), *y = b.as<AttrStmtNode>();
        return x->key == y->key && expr(x->node, y->node) && expr(x->value, y->value) &&
               stmt(x->body, y->body);
      }
      case StmtKind::BufferStore: {
        const auto *x = a.as<BufferStoreNode>(), *y = b.as<BufferStoreNode>();
        return buffer(x->buffer, y->buffer) && expr(x->value, y->value) && list(x->indices, y->indices);
      }
      case StmtKind::Allocate: {
        const auto *x = a.as<AllocateNode>(), *y = b.as<AllocateNode>();
        return buffer(x->buffer, y->buffer) && stmt(x->body, y->body);
      }
      case StmtKind::For: {
        const auto *x = a.as<ForNode>(), *y = b.as<ForNode>();
        return x->for_kind == y->for_kind && x->thread_tag == y->thread_tag && expr(x->min, y->min) &&
               expr(x->extent, y->extent) && var(x->loop_var.get(), y->loop_var.get()) &&
               stmt(x->body, y->body);
      }
      case StmtKind::IfThenElse: {
        const auto *x = a.as<IfThenElseNode>(), *y = b.as<IfThenElseNode>();
        return expr(x->condition, y->condition) && stmt(x->then_case, y->then_case) &&
               (x->else_case.defined() == y->else_case.defined()) &&
               (!x->else_case.defined() || stmt(x->else_case, y->else_case));
      }
      case StmtKind::Seq: {
        const auto &x = a.as<SeqStmtNode>()->seq, &y = b.as<SeqStmtNode>()->seq;
        if (x.size() != y.size()) return false;
        for (size_t i = 0; i < x.size(); ++i) {
          if (!stmt(x[i], y[i])) return false;
        }
        return true;
      }
      case StmtKind::Evaluate: return expr(a.as<EvaluateNode>()->value, b.as<EvaluateNode>()->value);
    }
    return false;
  }

 private:
  bool var(const VarNode* a, const VarNode* b) {
    if (a == b && !map_) return true;
    if (!map_) return false;
    if (a->dtype != b->dtype) return false;
    auto ia = fwd_.find(a);
    auto ib = bwd_.find(b);
    if (ia == fwd_.end() && ib == bwd_.end()) {
      fwd_[a] = b;
      bwd_[b] = a;
      return true;
    }
    return ia != fwd_.end() && ib != bwd_.end() && ia->second == b && ib->second == a;
  }

  bool buffer(const Buffer& a, const Buffer& b) {
    if (!map_) return a.same_as(b);
    if (!a.defined() || !b.defined()) return a.defined() == b.defined();
    auto ia = bfwd_.find(a.get());
    auto ib = bbwd_.find(b.get());
    if (ia != bfwd_.end() || ib != bbwd_.end()) {
      return ia != bfwd_.end() && ib != bbwd_.end() && ia->second == b.get() && ib->second == a.get();
    }
    if (a->dtype != b->dtype || a->scope != b->scope || !list(a->shape, b->shape)) return false;
    if (!var(a->data.get(), b->data.get())) return false;
    bfwd_[a.get()] = b.get();
    bbwd_[b.get()] = a.get();
    return true;
  }

  bool list(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!expr(a[i], b[i])) return false;
    }
    return true;
  }

  bool iter_var(const IterVar& a, const IterVar& b) {
    return a->iter_kind == b->iter_kind && a->thread_tag == b->thread_tag &&
           expr(a->dom.min, b->dom.min) && expr(a->dom.extent, b->dom.extent) &&
           var(a->var.get(), b->var.get());
  }

  bool reduce(const ReduceNode* a, const ReduceNode* b) {
    if (a->value_index != b->value_index || a->axis.size() != b->axis.size()) return false;
    const CommReducerNode &ca = *a->combiner, &cb = *b->combiner;
    if (ca.lhs.size() != cb.lhs.size() || ca.rhs.size() != cb.rhs.size()) return false;
    for (size_t i = 0; i < ca.lhs.size(); ++i) {
      if (!var(ca.lhs[i].get(), cb.lhs[i].get())) return false;
    }
    for (size_t i = 0; i < ca.rhs.size(); ++i) {
      if (!var(ca.rhs[i].get(), cb.rhs[i].get())) return false;
    }
    if (!list(ca.result, cb.result) || !list(ca.identity, cb.identity)) return false;
    for (size_t i = 0; i < a->axis.size(); ++i) {
      if (!iter_var(a->axis[i], b->axis[i])) return false;
    }
    return list(a->source, b->source) && expr(a->condition, b->condition);
  }

  bool map_;
  std::unordered_map<const VarNode*, const VarNode*> fwd_, bwd_;
  std::unordered_map<const BufferNode*, const BufferNode*> bfwd_, bbwd_;
};

class Hasher {
 public:
  size_t expr(const Expr& e) {
    if (!e.defined()) return 0x9e3779b9;
    size_t h = mix(static_cast<size_t>(e.kind()) + 1, dtype(e.dtype()));
    switch (e.kind()) {
      case ExprKind::IntImm: return mix(h, std::hash<int64_t>()(e.as<IntImmNode>()->value));
      case ExprKind::FloatImm: {
        double v = e.as<FloatImmNode>()->value;
        if (v == 0) v = 0;  // -0.0 == 0.0
        uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        return mix(h, v != v ? 0x7ff8 : bits);
      }
      case ExprKind::StringImm: return mix(h, std::hash<std::string>()(e.as<StringImmNode>()->value));
      case ExprKind::Var: return mix(h, var(e.as<VarNode>()));
      case ExprKind::Not: return mix(h, expr(e.as<NotNode>()->a));
      case ExprKind::Select: {
        const auto* x = e.as<SelectNode>();
        return mix(mix(mix(h, expr(x->condition)), expr(x->true_value)), expr(x->false_value));
      }
      case ExprKind::Cast: return mix(h, expr(e.as<CastNode>()->value));
      case ExprKind::Ramp: {
        const auto* x = e.as<RampNode>();
        return mix(mix(mix(h, expr(x->base)), expr(x->stride)), x->lanes);
      }
      case ExprKind::Broadcast: {
        const auto* x = e.as<BroadcastNode>();
        return mix(mix(h, expr(x->value)), x->lanes);
      }
      case ExprKind::Let: {
        const auto* x = e.as<LetNode>();
        h = mix(h, expr(x->value));
        h = mix(h, var(x->var.get()));
        return mix(h, expr(x->body));
      }
      case ExprKind::Call: {
        const auto* x = e.as<CallNode>();
        h = mix(mix(h, std::hash<std::string>()(x->name)), static_cast<size_t>(x->call_kind));
        return mix(h, list(x->args));
      }
      case ExprKind::BufferLoad: {
        const auto* x = e.as<BufferLoadNode>();
        return mix(mix(h, buffer(x->buffer)), list(x->indices));
      }
      case ExprKind::ProducerLoad: {
        const auto* x = e.as<ProducerLoadNode>();
        return mix(mix(h, x->producer ? x->producer->hash() : 0), list(x->indices));
      }
      case ExprKind::Reduce: {
        const auto* x = e.as<ReduceNode>();
        for (const Var& v : x->combiner->lhs) h = mix(h, var(v.get()));
        for (const Var& v : x->combiner->rhs) h = mix(h, var(v.get()));
        h = mix(mix(h, list(x->combiner->result)), list(x->combiner->identity));
        for (const IterVar& iv : x->axis) {
          h = mix(h, static_cast<size_t>(iv->iter_kind));
          h = mix(mix(h, expr(iv->dom.min)), expr(iv->dom.extent));
          h = mix(h, var(iv->var.get()));
        }
        h = mix(mix(h, list(x->source)), expr(x->condition));
        return mix(h, x->value_index);
      }
      default: break;
    }
    const auto* b = e.as<BinaryNode>();
    return mix(mix(h, expr(b->a)), expr(b->b));
  }

  size_t stmt(const Stmt& s) {
    if (!s.defined()) return 0x51ed27;
    size_t h = static_cast<size_t>(s.kind()) + 101;
    switch (s.kind()) {
      case StmtKind::LetStmt: {
        const auto* x = s.as<LetStmtNode>();
        h = mix(h, expr(x->value));
        h = mix(h, var(x->var.get()));
        return mix(h, stmt(x->body));
      }
      case StmtKind::AttrStmt: {
        const auto* x = s.as<AttrStmtNode>();
        h = mix(h, std::hash<std::string>()(x->key));
        h = mix(mix(h, expr(x->node)), expr(x->value));
        return mix(h, stmt(x->body));
      }
      case StmtKind::BufferStore: {
        const auto* x = s.as<BufferStoreNode>();
        return mix(mix(mix(h, buffer(x->buffer)), expr(x->value)), list(x->indices));
      }
      case StmtKind::Allocate: {
        const auto* x = s.as<AllocateNode>();
        return mix(mix(h, buffer(x->buffer)), stmt(x->body));
      }
      case StmtKind::For: {
        const auto* x = s.as<ForNode>();
        h = mix(mix(h, static_cast<size_t>(x->for_kind)), std::hash<std::string>()(x->thread_tag));
        h = mix(mix(h, expr(x->min)), expr(x->extent));
        h = mix(h, var(x->loop_var.get()));
        return mix(h, stmt(x->body));
      }
      case StmtKind::IfThenElse: {
        const auto* x = s.as<IfThenElseNode>();
        return mix(mix(mix(h, expr(x->condition)), stmt(x->then_case)), stmt(x->else_case));
      }
      case StmtKind::Seq:
        for (const Stmt& c : s.as<SeqStmtNode>()->seq) h = mix(h, stmt(c));
        return h;
      case StmtKind::Evaluate: return mix(h, expr(s.as<EvaluateNode>()->value));
    }
    return h;
  }

 private:
  static size_t mix(size_t h, size_t v) {
    // boost::hash_combine's 64-bit variant.
    return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 12) + (h >> 4));
  }
  static size_t dtype(DataType t) {
    return (static_cast<size_t>(t.code) << 24) ^ (static_cast<size_t>(t.bits) << 16) ^ t.lanes;
  }
  size_t var(const VarNode* v) {
    auto it = vars_.find(v);
    size_t id = it != vars_.end() ? it->second : (vars_[v] = vars_.size());
    return mix(dtype(v->dtype), id + 1);
  }
  size_t buffer(const Buffer& b) {
    auto it = bufs_.find(b.get());
    if (it != bufs_.end()) return it->second;
    // Hash the definition on first sight; later uses hash the same number.
    size_t h = mix(dtype(b->dtype), std::hash<std::string>()(b->scope));
    h = mix(h, list(b->shape));
    h = mix(h, var(b->data.get()));
    h = mix(h, bufs_.size() + 7);
    bufs_[b.get()] = h;
    return h;
  }
  size_t list(const std::vector<Expr>& es) {
    size_t h = es.size();
    for (const Expr& e : es) h = mix(h, expr(e));
    return h;
  }

  std::unordered_map<const VarNode*, size_t> vars_;
  std::unordered_map<const BufferNode*, size_t> bufs_;
};

}  // namespace

bool structural_equal(const Expr& a, const Expr& b, bool map_free_vars) {
  return EqualChecker(map_free_vars).expr(a, b);
}
bool structural_equal(const Stmt& a, const Stmt& b, bool map_free_vars) {
  return EqualChecker(map_free_vars).stmt(a, b);
}
size_t structural_hash(const Expr& e) { return Hasher().expr(e); }
size_t structural_hash(const Stmt& s) { return Hasher().stmt(s); }

}  // namespace kiln::ir
