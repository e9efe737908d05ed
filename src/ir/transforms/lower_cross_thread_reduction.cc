// lower_cross_thread_reduction: the combine of a cross-thread reduction's partials as a tree
// across the block's threads (transforms.h).
//
// The generic GPU schedule reduces in two stages (Schedule::rfactor): each thread of a block
// reduces a strided slice into partial[tx], a shared buffer, then a local accumulator combines
// the partials. Lowered, the second stage is a loop every thread runs in full, T iterations
// each, all computing the same value:
//     pragma cross_thread_reduction: for (j, 0, T) acc[i] = F(acc[i], partial[j])
// This pass replaces it by ceil(log2 T) steps that halve the live partials, every thread of the
// block taking part:
//     for (tx: threadIdx.x) {
//       if (tx < n - s) partial[tx] = F(partial[tx], partial[tx + s]);  barrier;  // s = ceil(n/2)
//       ...                                                             // n = T, s, ... 2
//       acc[i] = F(acc[i], partial[0]);              // the serial loop's one remaining iteration
//     }
// A power of two halves exactly; any other count folds its odd tail in the same steps. Every
// barrier is in straight-line code under the thread loop alone (no thread-dependent branch, no
// loop: PoCL 3.1 miscomputes some barriers inside loops, insert_thread_sync.cc). On a 32-lane
// warp (CUDA) the last 64 (or 32) live partials go to the first warp, which finishes in
// registers with shuffles and publishes partial[0] behind one barrier: 6 barriers fewer.
//
// F comes from the loop body, so every combiner of a te reduction works, each slot of a
// multi-valued one (argmax: index and value) through a shared buffer of its own. The tree
// reassociates the combine, which is what a commutative reducer promises (argmax breaks ties on
// the index for this); a float sum rounds differently from the serial order, as any parallel
// sum does.
//
// Barriers: one after each step of the tree, ending with the one before partial[0] is read.
// The barrier between the partials' writes and the tree is insert_thread_sync's, which runs
// next: a write at the writer's own thread index then a read at another's is its plain case,
// and the tree's own barriers leave it nothing more to add.
#include <utility>

#include "kiln/ir/functor.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"

namespace kiln::ir {
namespace {

// The lanes the CUDA dialect's shuffle names in its mask (every lane of a 32-lane warp).
constexpr int kShuffleWarp = 32;

using Lets = std::vector<std::pair<Var, Expr>>;

Stmt barrier() { return evaluate(make_intrinsic(DataType::i32(), "kiln_barrier", {})); }

Stmt with_lets(const Lets& lets, Stmt body) {
  for (auto it = lets.rbegin(); it != lets.rend(); ++it) body = let_stmt(it->first, it->second, body);
  return body;
}

bool mentions(const Expr& e, const VarNode* v) {
  return uses_var(e, [v](const VarNode* x) { return x == v; });
}

// The marked loop's body read as the combiner F. Slot k pairs accumulator acc[k] (a buffer the
// body stores to) with partial[k] (a shared buffer it loads at an index of j), in the order
// build_nest writes them: a single-valued update as `acc[i] = F(acc[i], partial[j])`, a
// multi-valued one as lets of every accumulator, then lets of every partial, then a store per
// slot.
class Combiner {
 public:
  Combiner(const ForNode& loop, const std::string& kernel) : j_(loop.loop_var) {
    auto fail = [&]() -> std::string {
      return "kernel '" + kernel + "': the loop '" + j_.name() + "' marked " + kCrossThreadReductionPragma +
             " is not `acc = F(acc, partial[j])` as Schedule::rfactor lowers";
    };
    Stmt s = loop.body;
    while (const auto* l = s.as<LetStmtNode>()) {
      lets_.emplace_back(l->var, l->value);
      s = l->body;
    }
    std::vector<Stmt> list = s.as<SeqStmtNode>() ? s.as<SeqStmtNode>()->seq : std::vector<Stmt>{s};
    for (const Stmt& x : list) {
      const auto* st = x.as<BufferStoreNode>();
      KILN_CHECK(st && st->buffer->scope == "local") << fail() << ": a statement other than a store to a local buffer";
      for (const Expr& i : st->indices) KILN_CHECK(!mentions(i, j_.get())) << fail() << ": a store indexed by j";
      acc_.push_back(st->buffer);
      values_.push_back(st->value);
    }
    // The partials, in order of their first load.
    auto scan = [&](const Expr& e) {
      post_order_visit(e, [&](const Expr& x) {
        const auto* load = x.as<BufferLoadNode>();
        if (!load) return;
        bool by_j = false;
        for (const Expr& i : load->indices) by_j = by_j || mentions(i, j_.get());
        if (!by_j) return;
        KILN_CHECK(load->buffer->scope == "shared") << fail() << ": '" << load->buffer->name << "' is not shared";
        for (const Buffer& p : partial_)
          if (p->data.same_as(load->buffer->data)) return;
        partial_.push_back(load->buffer);
        partial_index_.push_back(load->indices);
      });
    };
    for (const auto& [v, value] : lets_) scan(value);
    for (const Expr& v : values_) scan(v);
    KILN_CHECK(partial_.size() == acc_.size()) << fail() << ": " << acc_.size() << " accumulators, "
                                               << partial_.size() << " partial buffers";
    for (size_t k = 0; k < acc_.size(); ++k)
      KILN_CHECK(acc_[k]->dtype == partial_[k]->dtype) << fail() << ": slot " << k << " changes type";
  }

  size_t slots() const { return acc_.size(); }
  DataType dtype(size_t k) const { return acc_[k]->dtype; }

  // partial[k] at position `pos` along j.
  Expr partial(size_t k, const Expr& pos) const { return buffer_load(partial_[k], at(k, pos)); }
  Stmt store_partial(size_t k, const Expr& pos, Expr value) const {
    return buffer_store(partial_[k], std::move(value), at(k, pos));
  }

  // F(lhs, rhs) per slot; the body's lets, renamed so that every application defines variables
  // of its own, are appended to `lets`.
  std::vector<Expr> apply(const std::vector<Expr>& lhs, const std::vector<Expr>& rhs, Lets* lets) const {
    Replace replace(*this, lhs, rhs);
    for (const auto& [v, value] : lets_) {
      Var fresh(v.name(), v.dtype());
      lets->emplace_back(fresh, replace.mutate(value));
      replace.renamed[v.get()] = fresh;
    }
    std::vector<Expr> out;
    for (const Expr& v : values_) out.push_back(replace.mutate(v));
    return out;
  }

 private:
  // Loads of the accumulators and partials replaced by the operands, the body's let variables
  // by their renamed copies.
  struct Replace : ExprMutator {
    Replace(const Combiner& c, const std::vector<Expr>& lhs, const std::vector<Expr>& rhs) : c(c), lhs(lhs), rhs(rhs) {}
    Expr visit_buffer_load(const BufferLoadNode* op, const Expr& self) override {
      for (size_t k = 0; k < c.slots(); ++k) {
        if (op->buffer->data.same_as(c.acc_[k]->data)) return lhs[k];
        if (op->buffer->data.same_as(c.partial_[k]->data)) return rhs[k];
      }
      return ExprMutator::visit_buffer_load(op, self);
    }
    Expr visit_var(const VarNode* op, const Expr& self) override {
      auto it = renamed.find(op);
      return it == renamed.end() ? self : it->second;
    }
    const Combiner& c;
    const std::vector<Expr>& lhs;
    const std::vector<Expr>& rhs;
    VarMap<Expr> renamed;
  };

  std::vector<Expr> at(size_t k, const Expr& pos) const {
    std::vector<Expr> idx;
    for (const Expr& i : partial_index_[k]) idx.push_back(substitute(i, {{j_.get(), pos}}));
    return idx;
  }

  Var j_;
  Lets lets_;
  std::vector<Buffer> acc_;
  std::vector<Expr> values_;  // the store of slot k's value
  std::vector<Buffer> partial_;
  std::vector<std::vector<Expr>> partial_index_;
};

class TreeLowering : public StmtMutator {
 public:
  TreeLowering(const PrimFunc& kernel, const KernelLaunch& launch, int warp_size)
      : kernel_(kernel), launch_(launch), warp_size_(warp_size) {}

 protected:
  Stmt visit_attr(const AttrStmtNode* op, const Stmt& self) override {
    if (op->key != std::string("pragma_") + kCrossThreadReductionPragma) return StmtMutator::visit_attr(op, self);
    const auto* loop = op->body.as<ForNode>();
    KILN_CHECK(loop && loop->for_kind == ForKind::Serial && is_zero(loop->min))
        << "kernel '" << kernel_.name << "': " << kCrossThreadReductionPragma << " marks no serial loop from 0";
    return tree(*loop);
  }

  Stmt visit_for(const ForNode* op, const Stmt& self) override {
    const bool thread = op->for_kind == ForKind::ThreadBinding && op->thread_tag.rfind("threadIdx.", 0) == 0;
    thread_loops_ += thread;
    Stmt out = StmtMutator::visit_for(op, self);
    thread_loops_ -= thread;
    return out;
  }

 private:
  Stmt tree(const ForNode& loop) {
    const std::string where = "kernel '" + kernel_.name + "', loop '" + loop.loop_var.name() + "'";
    // The tree's thread loop and barriers need every thread of the block, indexed by tx alone.
    KILN_CHECK(thread_loops_ == 0) << where << ": a cross-thread reduction's combine inside a threadIdx loop";
    const int64_t threads = as_const_int(loop.extent).value_or(-1);
    const int64_t block = launch_.block[0];
    KILN_CHECK(threads >= 1 && launch_.block[1] == 1 && launch_.block[2] == 1 && block >= threads)
        << where << ": " << threads << " partials on a block of " << launch_.block[0] << " x " << launch_.block[1]
        << " x " << launch_.block[2] << " threads (the tree needs them along threadIdx.x)";
    Combiner f(loop, kernel_.name);
    Var tx("tx", DataType::i32());
    std::vector<Stmt> steps;
    for (int64_t n = threads; n > 1;) {
      if (warp_size_ == kShuffleWarp && (n == kShuffleWarp || n == 2 * kShuffleWarp)) {
        steps.push_back(warp_stage(f, tx, n == 2 * kShuffleWarp));
        steps.push_back(barrier());
        break;
      }
      const int64_t s = (n + 1) / 2;
      std::vector<Expr> mine, other;
      for (size_t k = 0; k < f.slots(); ++k) {
        mine.push_back(f.partial(k, tx));
        other.push_back(f.partial(k, tx + Expr(static_cast<int>(s))));
      }
      Lets lets;
      std::vector<Expr> r = f.apply(mine, other, &lets);
      std::vector<Stmt> stores;
      for (size_t k = 0; k < f.slots(); ++k) stores.push_back(f.store_partial(k, tx, r[k]));
      steps.push_back(if_then_else(tx < Expr(static_cast<int>(n - s)), with_lets(lets, seq(stores))));
      steps.push_back(barrier());
      n = s;
    }
    steps.push_back(substitute(loop.body, {{loop.loop_var.get(), Expr(0)}}));
    return for_loop(tx, Expr(0), Expr(static_cast<int>(block)), ForKind::ThreadBinding, seq(steps), "threadIdx.x");
  }

  // The first warp combines the 32 live partials in registers: x = F(x, shuffle_down(x, s)) for
  // s = 16 .. 1 leaves the total in lane 0 (lanes whose partner is past the warp combine their
  // own value again, which only lanes no longer read), which it stores to partial[0]. With 64
  // live partials (`fold`), each lane starts from F(partial[tx], partial[tx + 32]): that step
  // needs no barrier of its own, as no lane reads what another wrote in it.
  static Stmt warp_stage(const Combiner& f, const Var& tx, bool fold) {
    Lets lets;
    std::vector<Expr> x, upper;
    for (size_t k = 0; k < f.slots(); ++k) {
      x.push_back(f.partial(k, tx));
      upper.push_back(f.partial(k, tx + Expr(kShuffleWarp)));
    }
    if (fold) x = f.apply(x, upper, &lets);
    for (size_t k = 0; k < f.slots(); ++k) {
      Var v("red", f.dtype(k));
      lets.emplace_back(v, x[k]);
      x[k] = v;
    }
    for (int s = kShuffleWarp / 2; s >= 1; s /= 2) {
      std::vector<Expr> other;
      for (size_t k = 0; k < f.slots(); ++k) {
        Var v("other", f.dtype(k));
        lets.emplace_back(v, make_intrinsic(f.dtype(k), "kiln_shuffle_down", {x[k], Expr(s)}));
        other.push_back(v);
      }
      std::vector<Expr> r = f.apply(x, other, &lets);
      for (size_t k = 0; k < f.slots(); ++k) {
        Var v("red", f.dtype(k));
        lets.emplace_back(v, r[k]);
        x[k] = v;
      }
    }
    std::vector<Stmt> stores;
    for (size_t k = 0; k < f.slots(); ++k) stores.push_back(f.store_partial(k, Expr(0), x[k]));
    return if_then_else(tx < Expr(kShuffleWarp), with_lets(lets, if_then_else(eq(tx, Expr(0)), seq(stores))));
  }

  const PrimFunc& kernel_;
  const KernelLaunch& launch_;
  const int warp_size_;
  int thread_loops_ = 0;
};

}  // namespace

PrimFunc lower_cross_thread_reduction(const PrimFunc& kernel, const KernelLaunch& launch, int warp_size) {
  PrimFunc out = kernel;
  out.body = TreeLowering(kernel, launch, warp_size).mutate_stmt(kernel.body);
  return out;
}

}  // namespace kiln::ir
