// The rewriting simplifier: node dispatch, variables, let, select, and the canonical linear
// form of + - * on index integers.
#include "kiln/ir/structural.h"
#include "rewriter.h"

namespace kiln::ir::arith {

Expr Rewriter::visit_var(const VarNode* op, const Expr& self) {
  if (local_.count(op)) return self;
  const VarInfo* info = st_.find(op);
  if (!info) return self;
  // A let value that is a constant or another variable is always at least as simple.
  if (info->value.defined() && (info->value.as<IntImmNode>() || info->value.as<FloatImmNode>() ||
                                info->value.as<VarNode>())) {
    return info->value;
  }
  // A variable confined to a single value (a loop of extent 1) is that value.
  if (op->dtype.is_integer() && op->dtype.is_scalar() && info->bound.is_const()) {
    return make_int(op->dtype, info->bound.min_value);
  }
  return self;
}

Expr Rewriter::visit_binary(const BinaryNode* op, const Expr& self) {
  Expr a = mutate(op->a), b = mutate(op->b);
  return rw_binary(self.kind(), a, b);
}

Expr Rewriter::rw_binary(ExprKind k, const Expr& a, const Expr& b) {
  const DataType t = a.dtype();
  if (t.is_vector()) {
    Expr r = rw_vector(k, a, b);
    return r.defined() ? r : make_binary(k, a, b);
  }
  if (is_comparison(k)) return rw_compare(k, a, b);
  if (k == ExprKind::And || k == ExprKind::Or) return rw_logic(k, a, b);
  if (t.is_floating()) return rw_float(k, a, b);
  if (!is_index_type(t)) return make_binary(k, a, b);
  switch (k) {
    case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul: return rw_linear(k, a, b);
    case ExprKind::FloorDiv: return rw_floordiv(a, b);
    case ExprKind::FloorMod: return rw_floormod(a, b);
    case ExprKind::Div: return rw_truncdiv(a, b);
    case ExprKind::Mod: return rw_truncmod(a, b);
    case ExprKind::Min: case ExprKind::Max: return rw_min_max(k, a, b);
    default: return make_binary(k, a, b);
  }
}

namespace {

// The single term and coefficient of a form c*t (no constant), if that is what f is.
bool single_term(const LinearForm& f, Expr* t, int64_t* c) {
  if (f.terms.size() != 1 || f.constant != 0) return false;
  *t = f.terms[0].term;
  *c = f.terms[0].coeff;
  return true;
}

}  // namespace

Expr Rewriter::rw_linear(ExprKind k, const Expr& a, const Expr& b) {
  LinearForm f;
  f.dtype = a.dtype();
  if (k == ExprKind::Mul) {
    const IntImmNode* ca = as_int_imm(a);
    const IntImmNode* cb = as_int_imm(b);
    if (!ca && !cb) {
      // A product of two non-constants is a term; constant factors move out of it and the
      // factors are ordered so that x*y and y*x are the same term.
      LinearForm fa = to_linear(a), fb = to_linear(b);
      Expr ta = a, tb = b;
      int64_t c = 1, c1, c2;
      if (!fa.overflow && !fb.overflow && single_term(fa, &ta, &c1) && single_term(fb, &tb, &c2) &&
          !__builtin_mul_overflow(c1, c2, &c)) {
      } else {
        ta = a, tb = b, c = 1;
      }
      if (compare_expr(ta, tb) > 0) std::swap(ta, tb);
      f.add_term(mul(ta, tb), c);
      return canonical(f);
    }
    if (ca) {
      f.add(b, ca->value);
    } else {
      f.add(a, cb->value);
    }
  } else {
    f.add(a, 1);
    f.add(b, k == ExprKind::Sub ? -1 : 1);
  }
  if (f.overflow) return make_binary(k, a, b);
  return canonical(f);
}

Expr Rewriter::canonical(LinearForm f) {
  if (f.overflow) return Expr();
  recover_divmod(&f);
  return from_linear(f);
}

void Rewriter::recover_divmod(LinearForm* f) {
  // Each step removes a floordiv term, so a handful of rounds always suffices; the cap only
  // guards termination.
  for (int round = 0; round < 16; ++round) {
    bool changed = false;
    for (size_t i = 0; i < f->terms.size() && !changed; ++i) {
      const auto* fd = f->terms[i].term.as<BinaryNode>();
      if (!fd || fd->kind != ExprKind::FloorDiv) continue;
      const IntImmNode* c = as_int_imm(fd->b);
      if (!c || c->value <= 0) continue;
      const int64_t m = f->terms[i].coeff;
      if (m % c->value != 0) continue;
      const int64_t k = m / c->value;  // the term is k * floordiv(x, c) * c
      Expr x = fd->a;
      Expr fm = make_binary(ExprKind::FloorMod, x, fd->b);
      // floordiv(x, c)*c*k + floormod(x, c)*k -> x*k. The floormod may be in its rewritten
      // form: floormod(rk*64 + l, 56) is floormod(rk*8 + l, 56) by then.
      int j = f->find(fm);
      if (j < 0) {
        fm = rw_floormod(x, fd->b);
        j = f->find(fm);
      }
      if (j >= 0 && f->terms[j].coeff == k) {
        LinearForm g = *f;
        g.add_term(fm, -k);
        g.add_term(f->terms[i].term, -m);
        g.add(x, k);
        if (!g.overflow) {
          *f = g;
          changed = true;
        }
        continue;
      }
      // x*(-k) + floordiv(x, c)*c*k -> floormod(x, c)*(-k), when all of x's terms are there.
      LinearForm lx = to_linear(x);
      if (lx.overflow || lx.terms.empty()) continue;
      LinearForm g = *f;
      g.add_form(lx, k);
      if (g.overflow || g.terms.size() + lx.terms.size() != f->terms.size()) continue;
      g.add_term(f->terms[i].term, -m);
      g.add(rw_floormod(x, fd->b), -k);
      if (!g.overflow) {
        *f = g;
        changed = true;
      }
    }
    if (!changed) return;
  }
}

Expr Rewriter::visit_not(const NotNode* op, const Expr& self) { return rw_not(mutate(op->a)); }

Expr Rewriter::visit_select(const SelectNode* op, const Expr& self) {
  Expr c = mutate(op->condition);
  if (auto v = as_const_int(c)) return mutate(*v ? op->true_value : op->false_value);
  Expr t = mutate(op->true_value), f = mutate(op->false_value);
  if (structural_equal(t, f)) return t;
  return select(c, t, f);
}

Expr Rewriter::visit_cast(const CastNode* op, const Expr& self) {
  return rw_cast(self.dtype(), mutate(op->value));
}

Expr Rewriter::visit_ramp(const RampNode* op, const Expr& self) {
  Expr base = mutate(op->base), stride = mutate(op->stride);
  if (is_zero(stride)) return broadcast(base, op->lanes);
  return ramp(base, stride, op->lanes);
}

Expr Rewriter::visit_broadcast(const BroadcastNode* op, const Expr& self) {
  return broadcast(mutate(op->value), op->lanes);
}

Expr Rewriter::visit_let(const LetNode* op, const Expr& self) {
  Expr value = mutate(op->value);
  // Trivial values are inlined; a dead binding goes away.
  if (value.as<IntImmNode>() || value.as<FloatImmNode>() || value.as<VarNode>()) {
    VarMap<Expr> vmap{{op->var.get(), value}};
    return mutate(substitute(op->body, vmap));
  }
  const VarNode* v = op->var.get();
  if (!uses_var(op->body, [v](const VarNode* u) { return u == v; })) return mutate(op->body);
  auto saved = local_.find(v) != local_.end() ? std::optional<IntBound>(local_[v]) : std::nullopt;
  local_[v] = bound(value);
  Expr body = mutate(op->body);
  if (saved) {
    local_[v] = *saved;
  } else {
    local_.erase(v);
  }
  return let(op->var, value, body);
}

Expr Rewriter::visit_reduce(const ReduceNode* op, const Expr& self) {
  // Reduction axes range over their domains inside the reduction.
  VarMap<IntBound> saved = local_;
  for (const IterVar& iv : op->axis) {
    IntBound lo = bound(iv->dom.min);
    IntBound hi = bound(rw_linear(ExprKind::Sub, rw_linear(ExprKind::Add, iv->dom.min, iv->dom.extent),
                                  make_int(iv->dom.min.dtype(), 1)));
    IntBound b;
    b.min_value = lo.min_value;
    b.max_value = hi.max_value;
    local_[iv->var.get()] = b;
  }
  Expr r = ExprMutator::visit_reduce(op, self);
  local_ = saved;
  return r;
}

namespace {

Expr simplify_rounds(Rewriter& rw, const Expr& e) {
  Expr cur = rw.mutate(e);
  // A rule can expose work for another one above it (a term that cancels after a division
  // folded); a couple of extra rounds reach the fixpoint in practice, and the cap keeps it
  // terminating.
  for (int round = 0; round < 3; ++round) {
    Expr next = rw.mutate(cur);
    if (structural_equal(next, cur)) break;
    cur = next;
  }
  return cur;
}

size_t node_count(const Expr& e) {
  size_t n = 0;
  post_order_visit(e, [&n](const Expr&) { ++n; });
  return n;
}

}  // namespace

Expr rewrite_simplify(const AnalyzerState& st, const Expr& e) {
  if (!e.defined()) return e;
  Rewriter rw(st);
  Expr cur = simplify_rounds(rw, e);
  // Let-bound variables with non-trivial values: inlining them helps when the result gets
  // smaller (let t = io*8 + ii: floordiv(t, 8) -> io), and only then.
  VarMap<Expr> values;
  post_order_visit(cur, [&](const Expr& x) {
    const VarInfo* info = x.as<VarNode>() ? st.find(x.as<VarNode>()) : nullptr;
    if (info && info->value.defined()) values[x.as<VarNode>()] = info->value;
  });
  if (values.empty()) return cur;
  Expr inlined = simplify_rounds(rw, substitute(cur, values));
  return node_count(inlined) < node_count(cur) ? inlined : cur;
}

}  // namespace kiln::ir::arith
