// vectorize_loops: each ForKind::Vectorized loop of constant extent L -> vector IR.
//
// The loop var becomes ramp(min, 1, L) and lanes propagate upward: an expression that does not
// depend on the lane stays scalar (and is broadcast where it meets a vector), one that does
// becomes an L-lane vector. Index arithmetic is kept in ramp form by a few local rules
// (ramp + scalar, ramp * scalar, broadcast op broadcast) so that the backend sees contiguous
// accesses such as ramp(i*16, 1, 16) instead of a gather; these rules live here because this
// pass must not depend on the arith simplifier.
//
// Vectorizing runs every statement for all lanes before the next statement, where the serial
// loop interleaves them; the schedule promises lane independence, but the pass still keeps the
// loop serial (with a note) wherever it can see that promise broken or cannot express the body:
// a reduction into an invariant location, a buffer read at other elements than written, a
// nested loop, an allocation, a lane-dependent condition it cannot turn into a select.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>

#include "kiln/ir/functor.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"

namespace kiln::ir {
namespace {

// ---- scalar folding and the ramp rules --------------------------------------------------------

Expr sadd(const Expr& a, const Expr& b) { return is_zero(a) ? b : is_zero(b) ? a : add(a, b); }
Expr ssub(const Expr& a, const Expr& b) { return is_zero(b) ? a : sub(a, b); }
Expr smul(const Expr& a, const Expr& b) {
  if (is_one(a) || is_zero(b)) return b;
  if (is_one(b) || is_zero(a)) return a;
  return mul(a, b);
}

Expr lift(const Expr& e, int lanes) { return e.dtype().lanes == lanes ? e : broadcast(e, lanes); }

// A ramp of stride 0 is a broadcast: keeping that form lets the backend splat one scalar.
Expr make_ramp(const Expr& base, const Expr& stride, int lanes) {
  return is_zero(stride) ? broadcast(base, lanes) : ramp(base, stride, lanes);
}

// k(a, b) for a, b of equal lanes, keeping ramps and broadcasts in closed form where it can.
Expr vector_binary(ExprKind k, const Expr& a, const Expr& b) {
  const auto* ra = a.as<RampNode>();
  const auto* rb = b.as<RampNode>();
  const auto* ba = a.as<BroadcastNode>();
  const auto* bb = b.as<BroadcastNode>();
  int lanes = a.dtype().lanes;
  if (ba && bb) return broadcast(make_binary(k, ba->value, bb->value), lanes);
  switch (k) {
    case ExprKind::Add:
      if (ra && bb) return make_ramp(sadd(ra->base, bb->value), ra->stride, lanes);
      if (ba && rb) return make_ramp(sadd(ba->value, rb->base), rb->stride, lanes);
      if (ra && rb) return make_ramp(sadd(ra->base, rb->base), sadd(ra->stride, rb->stride), lanes);
      break;
    case ExprKind::Sub:
      if (ra && bb) return make_ramp(ssub(ra->base, bb->value), ra->stride, lanes);
      if (ba && rb)
        return make_ramp(ssub(ba->value, rb->base), ssub(make_zero(rb->stride.dtype()), rb->stride), lanes);
      if (ra && rb) return make_ramp(ssub(ra->base, rb->base), ssub(ra->stride, rb->stride), lanes);
      break;
    case ExprKind::Mul:
      if (ra && bb) return make_ramp(smul(ra->base, bb->value), smul(ra->stride, bb->value), lanes);
      if (ba && rb) return make_ramp(smul(ba->value, rb->base), smul(ba->value, rb->stride), lanes);
      break;
    default:
      break;
  }
  return make_binary(k, a, b);
}

// ---- constant interval bounds (to prove a masked access in bounds) -----------------------------

struct Interval { int64_t lo, hi; };
using Env = VarMap<Interval>;

std::optional<Interval> mul_iv(Interval a, Interval b) {
  int64_t c[4];
  if (__builtin_mul_overflow(a.lo, b.lo, &c[0]) || __builtin_mul_overflow(a.lo, b.hi, &c[1]) ||
      __builtin_mul_overflow(a.hi, b.lo, &c[2]) || __builtin_mul_overflow(a.hi, b.hi, &c[3]))
    return std::nullopt;
  return Interval{*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

std::optional<Interval> add_iv(Interval a, Interval b) {
  Interval r;
  if (__builtin_add_overflow(a.lo, b.lo, &r.lo) || __builtin_add_overflow(a.hi, b.hi, &r.hi)) return std::nullopt;
  return r;
}

// Range of an integer expression over all its lanes, or nullopt when unknown.
std::optional<Interval> bound(const Expr& e, const Env& env) {
  if (auto c = as_const_int(e)) return Interval{*c, *c};
  if (const auto* v = e.as<VarNode>()) return env.count(v) ? std::optional<Interval>(env.at(v)) : std::nullopt;
  if (const auto* b = e.as<BroadcastNode>()) return bound(b->value, env);
  if (const auto* r = e.as<RampNode>()) {
    auto base = bound(r->base, env), stride = bound(r->stride, env);
    if (!base || !stride) return std::nullopt;
    auto span = mul_iv(*stride, Interval{0, r->lanes - 1});
    return span ? add_iv(*base, *span) : std::nullopt;
  }
  if (const auto* c = e.as<CastNode>()) {
    DataType from = c->value.dtype();
    if (!from.is_integer() || !c->dtype.is_integer() || c->dtype.bits < from.bits) return std::nullopt;
    return bound(c->value, env);
  }
  if (const auto* s = e.as<SelectNode>()) {
    auto t = bound(s->true_value, env), f = bound(s->false_value, env);
    if (!t || !f) return std::nullopt;
    return Interval{std::min(t->lo, f->lo), std::max(t->hi, f->hi)};
  }
  const auto* op = e.as<BinaryNode>();
  if (!op || !e.dtype().is_integer()) return std::nullopt;
  auto a = bound(op->a, env), b = bound(op->b, env);
  auto divisor = as_const_int(op->b);
  if (op->kind == ExprKind::FloorMod && divisor && *divisor > 0) return Interval{0, *divisor - 1};
  if (!a || !b) return std::nullopt;
  switch (op->kind) {
    case ExprKind::Add: return add_iv(*a, *b);
    case ExprKind::Sub: {
      Interval r;
      if (__builtin_sub_overflow(a->lo, b->hi, &r.lo) || __builtin_sub_overflow(a->hi, b->lo, &r.hi)) return std::nullopt;
      return r;
    }
    case ExprKind::Mul: return mul_iv(*a, *b);
    case ExprKind::Min: return Interval{std::min(a->lo, b->lo), std::min(a->hi, b->hi)};
    case ExprKind::Max: return Interval{std::max(a->lo, b->lo), std::max(a->hi, b->hi)};
    case ExprKind::FloorDiv:
      if (divisor && *divisor > 0) {
        auto fdiv = [&](int64_t x) { return x >= 0 ? x / *divisor : -((-x + *divisor - 1) / *divisor); };
        return Interval{fdiv(a->lo), fdiv(a->hi)};
      }
      return std::nullopt;
    default: return std::nullopt;
  }
}

// ---- small structural equality for index expressions (conservative: false when unsure) ------

bool same_expr(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  if (const auto* x = a.as<IntImmNode>()) return x->value == b.as<IntImmNode>()->value;
  if (const auto* x = a.as<BinaryNode>()) return same_expr(x->a, b.as<BinaryNode>()->a) && same_expr(x->b, b.as<BinaryNode>()->b);
  if (const auto* x = a.as<RampNode>())  // equal dtypes imply equal lanes
    return same_expr(x->base, b.as<RampNode>()->base) && same_expr(x->stride, b.as<RampNode>()->stride);
  if (const auto* x = a.as<BroadcastNode>()) return same_expr(x->value, b.as<BroadcastNode>()->value);
  if (const auto* x = a.as<CastNode>()) return same_expr(x->value, b.as<CastNode>()->value);
  return false;  // Vars compare by identity (same_as above); other nodes are not index forms
}

bool same_indices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), same_expr);
}

bool is_lane(const Expr& e) { return e.dtype().lanes > 1; }
bool any_lane(const std::vector<Expr>& v) { return std::any_of(v.begin(), v.end(), is_lane); }

// ---- the vectorizer of one loop body ------------------------------------------------------------

class Vectorizer : public StmtMutator {
 public:
  Vectorizer(const Var& var, const Expr& min, int lanes, Env env)
      : var_(var.get()), lanes_(lanes), env_(std::move(env)) {
    ramp_ = ramp(min, make_int(min.dtype(), 1), lanes);
  }

  // The vector body, or an undefined Stmt with reason() set when the loop must stay serial.
  Stmt run(const Stmt& body) {
    try {
      Stmt out = mutate_stmt(body);
      check_dependences(out);
      return out;
    } catch (const KeepSerial& k) {
      reason_ = k.why;
      return Stmt();
    }
  }
  const std::string& reason() const { return reason_; }

 protected:
  Expr visit_var(const VarNode* op, const Expr& self) override {
    if (op == var_) return ramp_;
    if (auto it = remap_.find(op); it != remap_.end()) return it->second;
    if (op->dtype.is_vector()) fail("the body already holds vector expressions");
    return self;
  }

  Expr visit_binary(const BinaryNode* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    if (!is_lane(a) && !is_lane(b)) return make_binary(op->kind, a, b);
    return vector_binary(op->kind, lift(a, lanes_), lift(b, lanes_));
  }

  Expr visit_not(const NotNode* op, const Expr& self) override {
    Expr a = mutate(op->a);
    if (a.same_as(op->a)) return self;
    if (const auto* b = a.as<BroadcastNode>()) return broadcast(logical_not(b->value), lanes_);
    return logical_not(a);
  }

  Expr visit_select(const SelectNode* op, const Expr& self) override {
    Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
    if (!is_lane(c) && !is_lane(t) && !is_lane(f)) return select(c, t, f);
    return select(lift(c, lanes_), lift(t, lanes_), lift(f, lanes_));
  }

  Expr visit_cast(const CastNode* op, const Expr& self) override {
    Expr v = mutate(op->value);
    if (v.same_as(op->value)) return self;
    if (!is_lane(v)) return cast(op->dtype, v);
    if (const auto* b = v.as<BroadcastNode>()) return broadcast(cast(op->dtype, b->value), lanes_);
    return cast(op->dtype.with_lanes(lanes_), v);
  }

  // Vectors already in the body (an inner vectorized loop): lanes of lanes have no IR form.
  Expr visit_ramp(const RampNode*, const Expr&) override { fail("the body already holds vector expressions"); }
  Expr visit_broadcast(const BroadcastNode*, const Expr&) override { fail("the body already holds vector expressions"); }

  Expr visit_let(const LetNode* op, const Expr& self) override {
    Expr value = mutate(op->value);
    Var v = bind(op->var, value);
    Expr body = mutate(op->body);
    if (value.same_as(op->value) && body.same_as(op->body)) return self;
    return let(v, value, body);
  }

  Expr visit_call(const CallNode* op, const Expr& self) override {
    if (op->call_kind == CallKind::Extern) {
      // Its side effects would run once per vector instead of once per lane.
      fail("it calls extern function '" + op->name + "'");
    }
    std::vector<Expr> args;
    if (!mutate_all(op->args, &args)) return self;
    if (!any_lane(args)) return make_intrinsic(op->dtype, op->name, args);
    if (op->dtype.is_handle()) {
      // An address has no vector form ("address_of" of a lane-dependent load, as tensorize
      // builds) the backend could use.
      fail("intrinsic '" + op->name + "' yields a handle from a lane-dependent argument");
    }
    for (Expr& a : args) a = lift(a, lanes_);
    return make_intrinsic(op->dtype.with_lanes(lanes_), op->name, args);
  }

  Expr visit_buffer_load(const BufferLoadNode* op, const Expr& self) override {
    std::vector<Expr> indices;
    if (!mutate_all(op->indices, &indices)) return self;
    DataType t = op->dtype;
    if (any_lane(indices)) {
      if (indices.size() != 1) not_flat(op->buffer);
      t = t.with_lanes(lanes_);
    }
    return Expr(std::make_shared<BufferLoadNode>(t, op->buffer, std::move(indices)));
  }

  Expr visit_producer_load(const ProducerLoadNode*, const Expr&) override { fail("it reads an unlowered tensor"); }
  Expr visit_reduce(const ReduceNode*, const Expr&) override { fail("it holds an unlowered reduction"); }

  Stmt visit_buffer_store(const BufferStoreNode* op, const Stmt& self) override {
    std::vector<Expr> indices;
    bool changed = mutate_all(op->indices, &indices);
    Expr value = mutate(op->value);
    const std::string& name = op->buffer->name;
    if (!any_lane(indices)) {
      if (is_lane(value))
        fail("store to '" + name + "' at an index invariant in the loop var takes a lane-dependent value (a reduction)");
      // Runs once instead of L times: the same only if the value does not read what it writes.
      if (reads(value, op->buffer))
        fail("store to '" + name + "' at an index invariant in the loop var reads '" + name + "' (a loop-carried update)");
      if (!changed && value.same_as(op->value)) return self;
      return buffer_store(op->buffer, value, indices);
    }
    if (indices.size() != 1) not_flat(op->buffer);
    return buffer_store(op->buffer, lift(value, lanes_), indices);
  }

  Stmt visit_let_stmt(const LetStmtNode* op, const Stmt& self) override {
    Expr value = mutate(op->value);
    Var v = bind(op->var, value);
    Stmt body = mutate_stmt(op->body);
    if (value.same_as(op->value) && body.same_as(op->body)) return self;
    return let_stmt(v, value, body);
  }

  Stmt visit_attr(const AttrStmtNode* op, const Stmt& self) override {
    if (is_lane(mutate(op->value))) fail("attribute '" + op->key + "' depends on the lane");
    Stmt body = mutate_stmt(op->body);
    return body.same_as(op->body) ? self : attr_stmt(op->key, op->node, op->value, body);
  }

  Stmt visit_allocate(const AllocateNode* op, const Stmt&) override {
    fail("it allocates '" + op->buffer->name + "' inside");
  }
  Stmt visit_for(const ForNode* op, const Stmt&) override {
    fail("it contains a nested loop '" + op->loop_var.name() + "'");
  }

  Stmt visit_if(const IfThenElseNode* op, const Stmt& self) override {
    Expr cond = mutate(op->condition);
    if (is_lane(cond)) return if_to_select(op, cond);
    Stmt then_case = mutate_stmt(op->then_case);
    Stmt else_case = op->else_case.defined() ? mutate_stmt(op->else_case) : Stmt();
    if (cond.same_as(op->condition) && then_case.same_as(op->then_case) && else_case.same_as(op->else_case))
      return self;
    return if_then_else(cond, then_case, else_case);
  }

 private:
  // Unwinds to run(): once the loop stays serial, nothing half-built is worth keeping.
  struct KeepSerial {
    std::string why;
  };
  [[noreturn]] void fail(const std::string& why) { throw KeepSerial{why}; }
  [[noreturn]] void not_flat(const Buffer& b) {
    fail("access to '" + b->name + "' is not flattened (run flatten_storage first)");
  }

  // A vector value gives the let a new vector-typed var; its bound covers every lane.
  Var bind(const Var& old, const Expr& value) {
    Var v = old;
    if (is_lane(value)) {
      v = Var(old.name(), old.dtype().with_lanes(lanes_));
      remap_[old.get()] = v;
    }
    if (auto b = bound(value, env_)) env_[v.get()] = *b;
    return v;
  }

  static bool reads(const Expr& e, const Buffer& b) {
    bool found = false;
    post_order_visit(e, [&](const Expr& x) {
      if (const auto* l = x.as<BufferLoadNode>()) found = found || l->buffer->data.same_as(b->data);
    });
    return found;
  }

  // if (lane-dependent cond) A[idx] = new [else A[idx] = other]  ->  A[idx] = select(cond, new, old).
  // Without an else, old is A[idx] itself, and the backend emits that form as a masked store
  // that leaves the masked-off lanes alone (codegen_memory.cc); the select's true side runs
  // under the lane mask too (its loads are masked). So only the lets, which run for every lane,
  // need in-bounds accesses. With an else, every lane stores: safe only when that cannot fault
  // or change what others see (every access in bounds, no other thread writing the masked-off
  // elements meanwhile). Neither form may divide by a lane value that could be zero.
  Stmt if_to_select(const IfThenElseNode* op, const Expr& cond) {
    const std::string why = "an if condition depends on the lane and ";
    // Lets around the store run for every lane too; their values get the same checks.
    std::vector<const LetStmtNode*> lets;
    Stmt inner = op->then_case;
    for (; inner.as<LetStmtNode>(); inner = inner.as<LetStmtNode>()->body) lets.push_back(inner.as<LetStmtNode>());
    const auto* st = inner.as<BufferStoreNode>();
    const auto* el = op->else_case.defined() ? op->else_case.as<BufferStoreNode>() : nullptr;
    if (!st || (op->else_case.defined() &&
                (!el || !el->buffer.same_as(st->buffer) || !same_indices(el->indices, st->indices))))
      fail(why + "its branches are not one store to one location");
    bool masked = el == nullptr;
    std::vector<std::pair<Var, Expr>> bindings;
    std::vector<Expr> values;
    for (const LetStmtNode* l : lets) {
      values.push_back(mutate(l->value));
      bindings.emplace_back(bind(l->var, values.back()), values.back());
    }
    std::vector<Expr> indices;
    mutate_all(st->indices, &indices);
    if (indices.size() != 1 || !is_lane(indices[0]))
      fail(why + "the store to '" + st->buffer->name + "' is not at a lane-dependent flat index");
    Expr new_value = mutate(st->value);
    Expr old_value = el ? mutate(el->value)
                        : Expr(std::make_shared<BufferLoadNode>(st->buffer->dtype.with_lanes(lanes_), st->buffer, indices));
    values.insert(values.end(), {new_value, old_value});
    auto check_access = [&](const Buffer& b, const std::vector<Expr>& idx) {
      if (idx.size() != 1 || !in_bounds(b, idx[0])) fail(why + "'" + b->name + "' may be accessed out of bounds");
    };
    if (!masked) check_access(st->buffer, indices);
    for (size_t vi = 0; vi < values.size(); ++vi) {
      bool under_mask = masked && vi >= lets.size();  // the select's sides, not a let
      post_order_visit(values[vi], [&](const Expr& x) {
        if (const auto* l = x.as<BufferLoadNode>(); l && !under_mask) check_access(l->buffer, l->indices);
        const auto* b = x.as<BinaryNode>();
        bool divides = b && b->dtype.is_integer() &&
                       (b->kind == ExprKind::Div || b->kind == ExprKind::Mod || b->kind == ExprKind::FloorDiv ||
                        b->kind == ExprKind::FloorMod);
        auto d = divides ? bound(b->b, env_) : std::nullopt;
        if (divides && !(d && (d->lo > 0 || d->hi < 0))) fail(why + "an integer division may divide by zero");
      });
    }
    Stmt out = buffer_store(st->buffer, select(cond, lift(new_value, lanes_), lift(old_value, lanes_)), indices);
    for (auto it = bindings.rbegin(); it != bindings.rend(); ++it) out = let_stmt(it->first, it->second, out);
    return out;
  }

  bool in_bounds(const Buffer& b, const Expr& index) const {
    auto n = b->shape.size() == 1 ? as_const_int(b->shape[0]) : std::nullopt;
    auto r = bound(index, env_);
    return n && r && r->lo >= 0 && r->hi < *n;
  }

  // Vector statements run one after the other for all lanes; the serial loop interleaved them.
  // That is the same program only if no lane reads an element another lane writes: each load of
  // a buffer the body stores to must read exactly the elements of every such store, and lanes
  // of a read-modify-write store must be distinct elements.
  void check_dependences(const Stmt& body) {
    using Access = std::pair<const BufferNode*, std::vector<Expr>>;
    struct Collector : StmtVisitor {
      std::vector<Access> stores, loads;
      void visit_buffer_store(const BufferStoreNode* op) override {
        stores.emplace_back(op->buffer.get(), op->indices);
        StmtVisitor::visit_buffer_store(op);
      }
      void visit_buffer_load(const BufferLoadNode* op) override {
        loads.emplace_back(op->buffer.get(), op->indices);
        StmtVisitor::visit_buffer_load(op);
      }
    } c;
    c.visit_stmt(body);
    for (const auto& [buffer, indices] : c.stores) {
      const auto* r = indices.size() == 1 ? indices[0].as<RampNode>() : nullptr;
      bool distinct_lanes = r && as_const_int(r->stride) && !is_zero(r->stride);
      for (const auto& [loaded, load_indices] : c.loads) {
        if (loaded != buffer && !loaded->data.same_as(buffer->data)) continue;
        if (!same_indices(indices, load_indices))
          fail("'" + buffer->name + "' is read at other elements than a store writes (a dependence across lanes)");
        if (any_lane(indices) && !distinct_lanes)
          fail("store to '" + buffer->name + "' reads it at lanes that may alias (a reduction)");
      }
    }
  }

  const VarNode* var_;
  int lanes_;
  Env env_;

  Expr ramp_;
  VarMap<Expr> remap_;
  std::string reason_;
};

// ---- the driver: finds vectorized loops, innermost first -----------------------------------------

class LoopVectorizer : public StmtMutator {
 public:
  explicit LoopVectorizer(std::vector<std::string>* notes) : notes_(notes) {}

 protected:
  Stmt visit_for(const ForNode* op, const Stmt& self) override {
    auto mn = as_const_int(op->min), ext = as_const_int(op->extent);
    if (mn && ext && *ext > 0) env_[op->loop_var.get()] = Interval{*mn, *mn + *ext - 1};
    Stmt body = mutate_stmt(op->body);
    env_.erase(op->loop_var.get());
    if (op->for_kind != ForKind::Vectorized) {
      if (body.same_as(op->body)) return self;
      return for_loop(op->loop_var, op->min, op->extent, op->for_kind, body, op->thread_tag);
    }
    auto serial = [&](const std::string& why) {
      if (notes_) notes_->push_back("vectorize: loop '" + op->loop_var.name() + "' kept serial: " + why);
      return for_loop(op->loop_var, op->min, op->extent, ForKind::Serial, body, op->thread_tag);
    };
    if (!ext) return serial("its extent is not a constant");
    if (*ext <= 0) return evaluate(make_int(DataType::i32(), 0));  // runs nothing
    if (*ext == 1) return substitute(body, VarMap<Expr>{{op->loop_var.get(), op->min}});
    if (*ext > 65535) return serial("its extent " + std::to_string(*ext) + " exceeds the vector lanes a type can hold");
    Env env = env_;
    if (auto b = bound(op->min, env_)) env[op->loop_var.get()] = Interval{b->lo, b->hi + *ext - 1};
    Vectorizer vectorizer(op->loop_var, op->min, static_cast<int>(*ext), std::move(env));
    Stmt out = vectorizer.run(body);
    return out.defined() ? out : serial(vectorizer.reason());
  }

  Stmt visit_let_stmt(const LetStmtNode* op, const Stmt& self) override {
    if (auto b = bound(op->value, env_)) env_[op->var.get()] = *b;
    Stmt out = StmtMutator::visit_let_stmt(op, self);
    env_.erase(op->var.get());
    return out;
  }

 private:
  std::vector<std::string>* notes_;
  Env env_;
};

}  // namespace

Stmt vectorize_loops(const Stmt& s, std::vector<std::string>* notes) {
  return LoopVectorizer(notes).mutate_stmt(s);
}

PrimFunc vectorize_loops(const PrimFunc& f, std::vector<std::string>* notes) {
  PrimFunc out = f;
  out.body = vectorize_loops(f.body, notes);
  return out;
}

}  // namespace kiln::ir
