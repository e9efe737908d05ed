// insert_thread_sync: block-wide barriers where threads exchange data through shared memory
// (transforms.h).
//
// Conservative by design: any access to a shared buffer may be another thread's, so a barrier
// goes between a write and a later read of the same shared buffer, and between a read and a
// later write. Two writes of one buffer need none: a te stage assigns each element one value (a
// copy computed twice writes the same value twice), so which thread writes last does not
// matter, and a cooperative fetch's loop over its slices needs no barrier per slice. Distinct
// buffers that plan_shared_storage put in the same bytes (src/ir/shared_storage.h) need one
// between any two of their accesses, two writes included. Statements are taken whole
// (a loop that synchronizes inside still counts with all its accesses), which can cost a
// barrier more than needed, never one less. Loop-carried conflicts: a loop body's accesses
// after its last barrier are checked against the body's accesses before its first barrier, as
// the next iteration would meet them (the body simulated twice); the barrier between them goes
// at the end of the body.
//
// inject_double_buffer's next-iteration writes (kDoubleBufferWrite) are left out: they go to
// the half of a double buffer nobody reads in that iteration, ordered by the pass's barriers.
//
// A barrier every thread of the block must reach: one needed inside a branch that not all
// threads take (a condition on a thread index, or a thread loop narrower than the launch,
// which code generation guards) would deadlock or be undefined, so it is an error naming the
// buffer.
#include <map>
#include <set>

#include "kiln/ir/functor.h"
#include "ir/shared_storage.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"

namespace kiln::ir {
namespace {

using BufferSet = std::set<const VarNode*>;

// The shared buffers a statement reads and writes, and for each buffer the thread index every
// one of its accesses uses as the whole index (null: some access indexes otherwise): a buffer
// each thread reads and writes only at its own thread index (a cross-thread reduction's
// partials, accumulated in place) is private to the thread until someone reads it otherwise.
struct Access {
  BufferSet reads, writes;
  std::map<const VarNode*, const VarNode*> own_index;
  void add(const Access& o) {
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
    for (const auto& [b, v] : o.own_index) note(b, v);
  }
  void note(const VarNode* buffer, const VarNode* index) {
    auto [it, fresh] = own_index.emplace(buffer, index);
    if (!fresh && it->second != index) it->second = nullptr;
  }
  bool empty() const { return reads.empty() && writes.empty(); }
};

bool intersects(const BufferSet& a, const BufferSet& b, const Access& ea, const Access& eb) {
  for (const VarNode* v : a) {
    if (!b.count(v)) continue;
    const VarNode* ia = ea.own_index.at(v);
    if (ia == nullptr || ia != eb.own_index.at(v)) return true;
  }
  return false;
}

// Whether some buffer of `a` and a distinct one of `b` share bytes (plan_shared_storage).
bool share_bytes(const BufferSet& a, const BufferSet& b, const SharedStorage& storage) {
  for (const VarNode* x : a)
    for (const VarNode* y : b)
      if (storage.overlap(x, y)) return true;
  return false;
}

// Whether `later` must wait for `earlier`: a read after a write, or a write after a read, of
// one shared buffer, unless both index it only by the same thread index; or any access after
// any access of another buffer in the same bytes (two writes too: they store different values).
bool conflict(const Access& earlier, const Access& later, const SharedStorage& storage) {
  if (intersects(earlier.writes, later.reads, earlier, later) || intersects(earlier.reads, later.writes, earlier, later))
    return true;
  if (!storage.aliased) return false;
  BufferSet e = earlier.reads, l = later.reads;
  e.insert(earlier.writes.begin(), earlier.writes.end());
  l.insert(later.writes.begin(), later.writes.end());
  return share_bytes(e, l, storage);
}

bool is_barrier(const Stmt& s) {
  const auto* e = s.as<EvaluateNode>();
  const auto* c = e ? e->value.as<CallNode>() : nullptr;
  return c && c->name == "kiln_barrier";
}

// The shared-memory accesses of a statement; `thread_vars`: the vars of threadIdx loops.
Access accesses(const Stmt& s, const std::set<const VarNode*>& thread_vars) {
  struct Scan : StmtVisitor {
    const std::set<const VarNode*>& threads;
    Access a;
    explicit Scan(const std::set<const VarNode*>& t) : threads(t) {}
    const VarNode* own(const std::vector<Expr>& indices) const {
      const auto* v = indices.size() == 1 ? indices[0].as<VarNode>() : nullptr;
      return v && threads.count(v) ? v : nullptr;
    }
    void visit_buffer_load(const BufferLoadNode* op) override {
      if (op->buffer->scope == "shared") {
        a.reads.insert(op->buffer->data.get());
        a.note(op->buffer->data.get(), own(op->indices));
      }
      StmtVisitor::visit_buffer_load(op);
    }
    // inject_double_buffer's next-iteration writes: to a half nobody reads in this iteration,
    // behind the pass's own barriers (transforms.h).
    bool next_half = false;
    void visit_attr(const AttrStmtNode* op) override {
      const bool outer = next_half;
      next_half = next_half || op->key == kDoubleBufferWrite;
      StmtVisitor::visit_attr(op);
      next_half = outer;
    }
    void visit_buffer_store(const BufferStoreNode* op) override {
      if (op->buffer->scope == "shared" && !next_half) {
        a.writes.insert(op->buffer->data.get());
        a.note(op->buffer->data.get(), own(op->indices));
      }
      StmtVisitor::visit_buffer_store(op);
    }
  } scan(thread_vars);
  scan.visit_stmt(s);
  return scan.a;
}

std::vector<Stmt> as_list(const Stmt& s) {
  if (const auto* q = s.as<SeqStmtNode>()) return q->seq;
  return {s};
}

class SyncInserter : public StmtMutator {
 public:
  SyncInserter(const KernelLaunch& launch, SharedStorage storage) : launch_(launch), storage_(std::move(storage)) {}

 protected:
  Stmt visit_seq(const SeqStmtNode* op, const Stmt& self) override {
    std::vector<Stmt> children;
    for (const Stmt& s : op->seq) children.push_back(mutate_stmt(s));
    std::vector<Stmt> out;
    Access pending;
    for (const Stmt& s : children) {
      if (is_barrier(s)) {
        pending = Access();
        out.push_back(s);
        continue;
      }
      Access a = accesses(s, thread_vars_);
      if (conflict(pending, a, storage_)) {
        out.push_back(barrier(a));
        pending = Access();
      }
      pending.add(a);
      out.push_back(s);
    }
    (void)self;
    return seq(out);
  }

  Stmt visit_for(const ForNode* op, const Stmt& self) override {
    const bool narrow_thread_loop = op->for_kind == ForKind::ThreadBinding && op->thread_tag.rfind("threadIdx.", 0) == 0 &&
                                    as_const_int(op->extent).value_or(0) < launch_extent(op->thread_tag);
    if (op->for_kind == ForKind::ThreadBinding && op->thread_tag.rfind("threadIdx.", 0) == 0)
      thread_vars_.insert(op->loop_var.get());
    divergent_ += narrow_thread_loop;
    Stmt body = mutate_stmt(op->body);
    // The next iteration's first accesses against this one's last.
    if (op->for_kind != ForKind::ThreadBinding) {
      std::vector<Stmt> list = as_list(body);
      Access head, tail;
      bool seen_barrier = false;
      for (const Stmt& s : list) {
        if (is_barrier(s)) {
          seen_barrier = true;
          tail = Access();
          continue;
        }
        Access a = accesses(s, thread_vars_);
        if (!seen_barrier) head.add(a);
        tail.add(a);
      }
      // At the end of the body rather than its start: the same ordering between iterations,
      // and the form hand-written kernels take. PoCL 3.1 (Debian 12) miscomputes a loop whose
      // body starts with a barrier when a thread-dependent branch follows inside it (a
      // guarded accumulation gave garbage; with the barrier last, exact results).
      if (conflict(tail, head, storage_)) {
        list.push_back(barrier(head));
        body = seq(list);
      }
    }
    divergent_ -= narrow_thread_loop;
    if (body.same_as(op->body)) return self;
    return for_loop(op->loop_var, op->min, op->extent, op->for_kind, body, op->thread_tag);
  }

  Stmt visit_if(const IfThenElseNode* op, const Stmt& self) override {
    bool thread_dependent = false;
    post_order_visit(op->condition, [&](const Expr& e) {
      if (const auto* v = e.as<VarNode>()) thread_dependent |= thread_vars_.count(v) > 0;
    });
    divergent_ += thread_dependent;
    Stmt then_case = mutate_stmt(op->then_case);
    Stmt else_case = op->else_case.defined() ? mutate_stmt(op->else_case) : Stmt();
    divergent_ -= thread_dependent;
    if (then_case.same_as(op->then_case) && else_case.same_as(op->else_case)) return self;
    return if_then_else(op->condition, then_case, else_case);
  }

  Stmt visit_let_stmt(const LetStmtNode* op, const Stmt& self) override {
    post_order_visit(op->value, [&](const Expr& e) {
      if (const auto* v = e.as<VarNode>(); v && thread_vars_.count(v)) thread_vars_.insert(op->var.get());
    });
    return StmtMutator::visit_let_stmt(op, self);
  }

 private:
  int64_t launch_extent(const std::string& tag) const { return launch_.block[tag.back() - 'x']; }

  Stmt barrier(const Access& waiting) {
    if (divergent_ > 0) {
      std::string buffer = "?";
      for (const VarNode* v : waiting.reads) buffer = v->name;
      for (const VarNode* v : waiting.writes) buffer = v->name;
      KILN_THROW() << "kernel '" << launch_.kernel << "': shared buffer '" << buffer
                   << "' needs a barrier inside a branch not every thread of the block takes (a condition on a "
                      "thread index, or a thread loop narrower than the block)";
    }
    return evaluate(make_intrinsic(DataType::i32(), "kiln_barrier", {}));
  }

  const KernelLaunch& launch_;
  const SharedStorage storage_;
  std::set<const VarNode*> thread_vars_;
  int divergent_ = 0;
};

}  // namespace

PrimFunc insert_thread_sync(const PrimFunc& kernel, const KernelLaunch& launch) {
  PrimFunc out = kernel;
  out.body = SyncInserter(launch, plan_shared_storage(kernel.body)).mutate_stmt(kernel.body);
  return out;
}

}  // namespace kiln::ir
