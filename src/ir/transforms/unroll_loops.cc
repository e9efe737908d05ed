// unroll_loops: each ForKind::Unrolled loop of constant extent -> a Seq of body copies.
//
// Inner loops are unrolled first, so nested unrolled loops unroll fully. Every copy after the
// first gets fresh variables (and fresh buffers) for what the body itself defines (lets,
// inner loops, allocations): the IR requires each Var to be defined once (see verify.h), and
// two copies sharing one definition would break that.
#include <unordered_map>

#include "kiln/ir/functor.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"

namespace kiln::ir {
namespace {

// Replaces the variables and buffers that a statement defines by fresh ones (same names and
// types), and their uses accordingly; free variables map through `subst`.
class DefinitionRenewer : public StmtMutator {
 public:
  explicit DefinitionRenewer(VarMap<Expr> subst) : vmap_(std::move(subst)) {}

 protected:
  Expr visit_var(const VarNode* op, const Expr& self) override {
    auto it = vmap_.find(op);
    return it == vmap_.end() ? self : it->second;
  }

  Expr visit_let(const LetNode* op, const Expr& self) override {
    Expr value = mutate(op->value);
    Var v = renew(op->var);
    return let(v, value, mutate(op->body));
  }

  Stmt visit_let_stmt(const LetStmtNode* op, const Stmt& self) override {
    Expr value = mutate(op->value);
    Var v = renew(op->var);
    return let_stmt(v, value, mutate_stmt(op->body));
  }

  Stmt visit_for(const ForNode* op, const Stmt& self) override {
    Expr mn = mutate(op->min);
    Expr ext = mutate(op->extent);
    Var v = renew(op->loop_var);
    return for_loop(v, mn, ext, op->for_kind, mutate_stmt(op->body), op->thread_tag);
  }

  Stmt visit_allocate(const AllocateNode* op, const Stmt& self) override {
    auto node = std::make_shared<BufferNode>(*op->buffer.get());
    node->data = renew(op->buffer->data);
    Buffer nb(std::move(node));
    buffers_[op->buffer.get()] = nb;
    return allocate(nb, mutate_stmt(op->body));
  }

  Expr visit_buffer_load(const BufferLoadNode* op, const Expr& self) override {
    std::vector<Expr> indices;
    bool changed = mutate_all(op->indices, &indices);
    Buffer b = buffer(op->buffer);
    if (!changed && b.same_as(op->buffer)) return self;
    return Expr(std::make_shared<BufferLoadNode>(op->dtype, b, std::move(indices)));
  }

  Stmt visit_buffer_store(const BufferStoreNode* op, const Stmt& self) override {
    std::vector<Expr> indices;
    bool changed = mutate_all(op->indices, &indices);
    Expr value = mutate(op->value);
    Buffer b = buffer(op->buffer);
    if (!changed && value.same_as(op->value) && b.same_as(op->buffer)) return self;
    return buffer_store(b, value, std::move(indices));
  }

 private:
  Var renew(const Var& v) {
    Var fresh(v.name(), v.dtype());
    vmap_[v.get()] = fresh;
    return fresh;
  }
  Buffer buffer(const Buffer& b) {
    auto it = buffers_.find(b.get());
    return it == buffers_.end() ? b : it->second;
  }

  VarMap<Expr> vmap_;
  std::unordered_map<const BufferNode*, Buffer> buffers_;
};

class LoopUnroller : public StmtMutator {
 protected:
  Stmt visit_for(const ForNode* op, const Stmt& self) override {
    Stmt body = mutate_stmt(op->body);
    if (op->for_kind != ForKind::Unrolled) {
      if (body.same_as(op->body)) return self;
      return for_loop(op->loop_var, op->min, op->extent, op->for_kind, body, op->thread_tag);
    }
    auto extent = as_const_int(op->extent);
    if (!extent) {
      // The number of copies is unknown at compile time: nothing to unroll into, so the loop
      // runs as an ordinary serial loop (the Unrolled kind is only a request).
      return for_loop(op->loop_var, op->min, op->extent, ForKind::Serial, body, op->thread_tag);
    }
    auto min_const = as_const_int(op->min);
    std::vector<Stmt> copies;
    for (int64_t k = 0; k < *extent; ++k) {
      Expr value = min_const ? make_int(op->loop_var.dtype(), *min_const + k)
                   : k == 0  ? op->min
                             : add(op->min, make_int(op->min.dtype(), k));
      VarMap<Expr> vmap{{op->loop_var.get(), value}};
      if (k == 0) {
        copies.push_back(substitute(body, vmap));
      } else {
        DefinitionRenewer renewer(std::move(vmap));
        copies.push_back(renewer.mutate_stmt(body));
      }
    }
    // Extent 0 runs nothing: an empty statement that every later pass and backend accepts.
    if (copies.empty()) return evaluate(make_int(DataType::i32(), 0));
    return seq(std::move(copies));
  }
};

}  // namespace

Stmt unroll_loops(const Stmt& s) { return LoopUnroller().mutate_stmt(s); }

PrimFunc unroll_loops(const PrimFunc& f) {
  PrimFunc out = f;
  out.body = unroll_loops(f.body);
  return out;
}

}  // namespace kiln::ir
