// inject_double_buffer: a shared tile loaded for iteration k+1 while iteration k computes
// (transforms.h).
//
//   for (k, 0, K) { produce B(k); compute(k) reads B }
// becomes
//   allocate B[2 * n]
//   produce B(0) into half 0; barrier
//   for (k, 0, K) { compute(k) reads half k%2; if (k+1 < K) produce B(k+1) into half (k+1)%2;
//                   barrier }
//
// Barriers: the pass places them itself, one per iteration, at the end of the body. Iteration k
// writes half (k+1)%2 while other threads may still read half k%2 in the same iteration: no
// conflict. The half it writes was last read in iteration k-1, and every thread passed that
// iteration's closing barrier before any thread began iteration k. The closing barrier also
// makes the writes visible before iteration k+1 reads them; the prologue's barrier does the same
// for iteration 0. The barrier closes the body rather than opening it (PoCL 3.1 miscomputes some
// loops whose body starts with a barrier, docs/gpu.md, "Pipeline"), and it sits outside the guard, which depends
// on k alone; a loop under a thread-dependent branch is refused, as every thread must reach it.
// insert_thread_sync, run later, keeps these barriers; it does not know the halves, so the
// next-iteration producer is marked kDoubleBufferWrite and its writes are left out of its
// conflicts (else it would see a read of B then a write of B in the body and add a barrier
// before the write, one per iteration more than needed, costing most of the overlap).
//
// Asynchronous copies (cp.async, sm_80+): a plain copy stalls its thread until the global load
// returns, so it overlaps nothing of its own thread's compute; an asynchronous one is issued and
// left in flight. The producer then goes first:
//   produce B(0) into half 0 (async); commit; wait(0); barrier
//   for (k, 0, K) { if (k+1 < K) { produce B(k+1) into half (k+1)%2 (async); commit }
//                   compute(k) reads half k%2; wait(0); barrier }
// The same one barrier per iteration, for the same reasons: the half iteration k fills was last
// read in iteration k-1, before its closing barrier. wait(0) before the barrier: a thread's copies
// land in shared memory at its wait, not at its issue, so each thread waits for its own before
// the barrier publishes them to the block. At that wait only the group of tile k+1 is in flight,
// and it is the one iteration k+1 reads, so no wait lets a group stay pending (wait_group 1 would
// need the copy of tile k+2 issued before the compute of tile k: a third half). The commit sits
// in the guard: in the last iteration no group is made, and wait(0) returns at once.
//
// More buffers (the marker's value S > 2, Stage::double_buffer(S)): a pipeline S - 1 tiles deep.
//   produce B(0..S-2) into buffers 0..S-2, a commit after each; wait(S-2); barrier
//   for (k, 0, K) { if (k+S-1 < K) produce B(k+S-1) into buffer (k+S-1)%S; commit
//                   compute(k) reads buffer k%S; wait(S-2); barrier }
// Buffer (k+S-1)%S = (k-1)%S was last read in iteration k-1, before its closing barrier. Every
// iteration commits a group, empty past the end, so the groups in flight are those of tiles
// k+1..k+S-1 at the wait, and leaving S-2 of them pending completes tile k+1's. Without
// asynchronous copies the producers go after the compute, as with two.
//
// A consumer that stays in flight (wgmma runs whose call says in_flight, transforms.h): the run
// of iteration k still reads buffer k%S after iteration k's closing barrier; each thread's run
// of k waits only for its run of k-1. So the buffer written in iteration k must be one that the
// runs of k-2 read, which every thread waited for before iteration k-1's barrier: the pipeline
// is S - 2 tiles deep (S >= 3), the producer of iteration k fills (k+S-2)%S, the wait leaves
// S-3 groups pending, and kWgmmaDrain() after the loop waits for the last runs.
#include <algorithm>
#include <map>
#include <set>

#include "async_copies.h"
#include "ir/arith.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"

namespace kiln::ir {
namespace {

Expr i32(int64_t v) { return make_int(DataType::i32(), v); }

const AttrStmtNode* marker(const Stmt& s) {
  const auto* a = s.as<AttrStmtNode>();
  return a && a->key == kDoubleBufferScope ? a : nullptr;
}

// A loop body as a list: Seqs flattened, Allocates peeled off into `allocs` (they move outside
// the loop: shared allocations are per block anyway, and hoist_device_allocations lifts them to
// the kernel's top next).
void flatten(const Stmt& s, std::vector<Stmt>* items, std::vector<Buffer>* allocs) {
  if (const auto* q = s.as<SeqStmtNode>()) {
    for (const Stmt& c : q->seq) flatten(c, items, allocs);
  } else if (const auto* a = s.as<AllocateNode>()) {
    allocs->push_back(a->buffer);
    flatten(a->body, items, allocs);
  } else {
    items->push_back(s);
  }
}

// Accesses of the doubled buffers moved into one half: index + half * size.
class ToHalf : public StmtMutator {
 public:
  ToHalf(const std::map<const VarNode*, Buffer>& doubled, Expr half) : doubled_(doubled), half_(std::move(half)) {}

 protected:
  Expr visit_buffer_load(const BufferLoadNode* op, const Expr& self) override {
    Expr e = StmtMutator::visit_buffer_load(op, self);
    const auto* l = e.as<BufferLoadNode>();
    auto it = doubled_.find(l->buffer->data.get());
    if (it == doubled_.end()) return e;
    return buffer_load(it->second, {offset(l->buffer, l->indices)});
  }
  Stmt visit_buffer_store(const BufferStoreNode* op, const Stmt& self) override {
    Stmt s = StmtMutator::visit_buffer_store(op, self);
    const auto* st = s.as<BufferStoreNode>();
    auto it = doubled_.find(st->buffer->data.get());
    if (it == doubled_.end()) return s;
    return buffer_store(it->second, st->value, {offset(st->buffer, st->indices)});
  }

 private:
  Expr offset(const Buffer& b, const std::vector<Expr>& indices) const {
    KILN_CHECK(indices.size() == 1) << "inject_double_buffer: '" << b->name << "' is not flattened";
    return indices[0] + half_ * i32(b.num_elements());
  }
  const std::map<const VarNode*, Buffer>& doubled_;
  Expr half_;
};

// The buffers a statement loads from and stores to.
struct Accessed {
  std::set<const VarNode*> reads, writes;
};

Accessed accessed(const Stmt& s) {
  struct Scan : StmtVisitor {
    Accessed a;
    void visit_buffer_load(const BufferLoadNode* op) override {
      a.reads.insert(op->buffer->data.get());
      StmtVisitor::visit_buffer_load(op);
    }
    void visit_buffer_store(const BufferStoreNode* op) override {
      a.writes.insert(op->buffer->data.get());
      StmtVisitor::visit_buffer_store(op);
    }
  } scan;
  scan.visit_stmt(s);
  return scan.a;
}

Stmt barrier() { return evaluate(make_intrinsic(DataType::i32(), "kiln_barrier", {})); }
Stmt commit() { return evaluate(make_intrinsic(DataType::i32(), kAsyncCommit, {})); }
// Waits until at most `pending` of the thread's groups of copies are in flight.
Stmt wait(int64_t pending) { return evaluate(make_intrinsic(DataType::i32(), kAsyncWait, {i32(pending)})); }

// Whether a statement has a wgmma whose run stays in flight past its iteration (transforms.h).
bool has_wgmma_in_flight(const Stmt& s) {
  bool found = false;
  struct Scan : StmtVisitor {
    bool* found;
    void visit_attr(const AttrStmtNode* op) override {
      const auto* c = op->value.as<CallNode>();
      if (op->key == kWgmma && c && c->name == kWgmmaCall && c->args.size() >= kWgmmaOperands)
        *found = *found || !is_zero(c->args.back());
      StmtVisitor::visit_attr(op);
    }
  } scan;
  scan.found = &found;
  scan.visit_stmt(s);
  return found;
}

class Injector : public StmtMutator {
 public:
  Injector(const Stmt& body, bool async_copy) : async_(async_copy) {
    // The block's extent per thread tag: a thread loop narrower than it is guarded, so divergent.
    struct Scan : StmtVisitor {
      std::map<std::string, int64_t>* extents;
      void visit_for(const ForNode* op) override {
        if (op->for_kind == ForKind::ThreadBinding) {
          int64_t& e = (*extents)[op->thread_tag];
          e = std::max(e, as_const_int(op->extent).value_or(0));
        }
        StmtVisitor::visit_for(op);
      }
    } scan;
    scan.extents = &launch_;
    scan.visit_stmt(body);
  }

 protected:
  Stmt visit_for(const ForNode* op, const Stmt& self) override {
    const bool thread = op->for_kind == ForKind::ThreadBinding && op->thread_tag.rfind("threadIdx.", 0) == 0;
    const bool narrow = thread && as_const_int(op->extent).value_or(0) < launch_.at(op->thread_tag);
    if (thread) thread_vars_.insert(op->loop_var.get());
    divergent_ += narrow;
    Stmt loop = StmtMutator::visit_for(op, self);
    if (op->for_kind == ForKind::Serial) loop = inject(loop.as<ForNode>(), loop);
    divergent_ -= narrow;
    return loop;
  }

  Stmt visit_if(const IfThenElseNode* op, const Stmt& self) override {
    bool thread_dependent = false;
    post_order_visit(op->condition, [&](const Expr& e) {
      if (const auto* v = e.as<VarNode>()) thread_dependent |= thread_vars_.count(v) > 0;
    });
    divergent_ += thread_dependent;
    Stmt s = StmtMutator::visit_if(op, self);
    divergent_ -= thread_dependent;
    return s;
  }

  Stmt visit_let_stmt(const LetStmtNode* op, const Stmt& self) override {
    post_order_visit(op->value, [&](const Expr& e) {
      if (const auto* v = e.as<VarNode>(); v && thread_vars_.count(v)) thread_vars_.insert(op->var.get());
    });
    // For the alignment of async copies' vector indices, which may read the let.
    if (op->var.dtype().is_integer() && op->var.dtype().is_scalar()) ana_.bind_value(op->var, op->value);
    return StmtMutator::visit_let_stmt(op, self);
  }

 public:
  static std::string name_of(const AttrStmtNode* op) {
    const auto* v = op->node.as<VarNode>();
    return v ? v->name : "?";
  }

 private:
  Stmt inject(const ForNode* op, const Stmt& self) {
    std::vector<Stmt> items;
    std::vector<Buffer> allocs;
    flatten(op->body, &items, &allocs);
    std::vector<Stmt> producers, rest;
    for (const Stmt& s : items) (marker(s) ? producers : rest).push_back(s);
    if (producers.empty()) return self;
    const std::string loop = op->loop_var->name;

    // The number of buffers, the same for every producer of the loop.
    const int64_t stages = double_buffers(*marker(producers[0]));
    std::map<const VarNode*, Buffer> doubled;
    for (const Stmt& p : producers) {
      const AttrStmtNode* m = marker(p);
      const VarNode* data = m->node.as<VarNode>();
      Buffer old;
      for (const Buffer& b : allocs)
        if (b->data.get() == data) old = b;
      KILN_USER_CHECK(old.defined()) << "double_buffer: shared buffer '" << name_of(m)
                                     << "' is not allocated inside loop '" << loop << "'";
      KILN_USER_CHECK(divergent_ == 0)
          << "double_buffer: shared buffer '" << name_of(m) << "' is loaded in loop '" << loop
          << "' under a branch not every thread of the block takes; its barrier would not be reached by all";
      KILN_USER_CHECK(double_buffers(*m) == stages)
          << "double_buffer: shared buffers of loop '" << loop << "' have " << stages << " and " << double_buffers(*m)
          << " buffers; one loop pipelines its tiles alike";
      auto node = std::make_shared<BufferNode>(*old.get());
      node->shape = {i32(stages * old.num_elements())};
      doubled[data] = Buffer(node);
    }
    // Producers move after the rest of the body (before it, asynchronous): what they read must
    // not change within it.
    const std::set<const VarNode*> rest_writes = accessed(seq(rest)).writes;
    for (const Stmt& p : producers) {
      for (const VarNode* v : accessed(marker(p)->body).reads) {
        KILN_USER_CHECK(!rest_writes.count(v))
            << "double_buffer: the producer of '" << name_of(marker(p)) << "' reads '" << v->name
            << "', which loop '" << loop << "' writes; its next iteration cannot be loaded early";
      }
    }

    const Var& k = op->loop_var;
    Expr rel = is_const_int(op->min, 0) ? Expr(k) : k - op->min;  // iteration number from 0
    // The producers of iteration `it` into buffer `buffer`, simplified: the substituted
    // iteration folds into the indices (X[0 + tx] -> X[tx]).
    auto produce = [&](const Expr& it, const Expr& buffer) {
      std::vector<Stmt> out;
      for (const Stmt& p : producers)
        out.push_back(simplify(ToHalf(doubled, buffer).mutate_stmt(substitute(marker(p)->body, {{k.get(), it}}))));
      return seq(out);
    };
    // The prologue fills buffers 0 .. ahead - 1 (those of iterations the loop has).
    const bool in_flight = has_wgmma_in_flight(seq(rest));
    KILN_USER_CHECK(!in_flight || stages >= 3)
        << "double_buffer: loop '" << loop << "' leaves its wgmma in flight, which needs 3 or more buffers, not "
        << stages;
    const int64_t ahead = in_flight ? stages - 2 : stages - 1;
    // After the loop: a consumer left in flight waited for.
    auto drained = [in_flight](Stmt loop_stmt) {
      if (!in_flight) return loop_stmt;
      return seq({loop_stmt, evaluate(make_intrinsic(DataType::i32(), kWgmmaDrain, {}))});
    };
    std::vector<Stmt> prologue;
    for (int64_t i = 0; i < ahead; ++i) {
      Stmt fill = produce(i == 0 ? op->min : op->min + i32(i), i32(i));
      if (i > 0 && !arith::Analyzer().can_prove(op->extent > i32(i))) fill = if_then_else(op->extent > i32(i), fill);
      prologue.push_back(fill);
    }
    const Stmt next = produce(k + i32(ahead), floormod(rel + i32(ahead), i32(stages)));
    std::vector<Stmt> body;
    for (const Stmt& s : rest) body.push_back(ToHalf(doubled, floormod(rel, i32(stages))).mutate_stmt(s));
    const Expr more = k + i32(ahead) < op->min + op->extent;
    if (async_) {
      int converted = 0;
      std::vector<Stmt> async_prologue;
      for (const Stmt& fill : prologue) async_prologue.push_back(detail::make_async_copies(fill, ana_, &converted));
      Stmt async_next = detail::make_async_copies(next, ana_, &converted);
      if (converted > 0) {
        // One tile ahead: one group in flight, waited to 0. More: every iteration commits a
        // group (an empty one past the end), so that waiting until `ahead - 1` are pending
        // leaves the next iteration's complete.
        const Stmt issue = ahead == 1 ? if_then_else(more, seq({async_next, commit()}))
                                      : seq({if_then_else(more, async_next), commit()});
        body.insert(body.begin(), attr_stmt(kDoubleBufferWrite, k, i32(1), issue));
        body.push_back(wait(ahead - 1));
        body.push_back(barrier());
        Stmt loop = for_loop(k, op->min, op->extent, op->for_kind, seq(body), op->thread_tag);
        std::vector<Stmt> head;
        for (const Stmt& fill : async_prologue) {
          head.push_back(fill);
          head.push_back(commit());
        }
        for (const Stmt& s : {wait(ahead - 1), barrier(), drained(loop)}) head.push_back(s);
        return allocated(allocs, doubled, seq(head));
      }
    }
    body.push_back(attr_stmt(kDoubleBufferWrite, k, i32(1), if_then_else(more, next)));
    body.push_back(barrier());
    prologue.push_back(barrier());
    prologue.push_back(drained(for_loop(k, op->min, op->extent, op->for_kind, seq(body), op->thread_tag)));
    return allocated(allocs, doubled, seq(prologue));
  }

  // `s` inside the loop's allocations, the doubled ones at their new size.
  static Stmt allocated(const std::vector<Buffer>& allocs, const std::map<const VarNode*, Buffer>& doubled, Stmt s) {
    for (auto it = allocs.rbegin(); it != allocs.rend(); ++it) {
      auto d = doubled.find((*it)->data.get());
      s = allocate(d == doubled.end() ? *it : d->second, s);
    }
    return s;
  }

  const bool async_;
  arith::Analyzer ana_;
  std::map<std::string, int64_t> launch_;
  std::set<const VarNode*> thread_vars_;
  int divergent_ = 0;
};

}  // namespace

int64_t double_buffers(const AttrStmtNode& marker) {
  return std::max<int64_t>(2, as_const_int(marker.value).value_or(2));
}

PrimFunc inject_double_buffer(const PrimFunc& kernel, bool async_copy) {
  PrimFunc out = kernel;
  out.body = Injector(kernel.body, async_copy).mutate_stmt(kernel.body);
  // A marker left over was not at the top of a serial loop's body.
  struct Leftover : StmtVisitor {
    void visit_attr(const AttrStmtNode* op) override {
      KILN_USER_CHECK(op->key != kDoubleBufferScope)
          << "double_buffer: shared buffer '" << Injector::name_of(op)
          << "' is not produced at the top of a serial loop (compute_at the loop that walks its tiles, e.g. a "
             "reduce loop)";
      StmtVisitor::visit_attr(op);
    }
  } leftover;
  leftover.visit_stmt(out.body);
  return out;
}

}  // namespace kiln::ir
