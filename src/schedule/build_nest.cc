// build_nest: the loop nest of one stage. Loops follow the stage's leaf order with the kinds
// its annotations ask for; root axis values come from the leaves (split: outer*factor + inner,
// fuse: floordiv/floormod); guards keep overhanging splits and over-approximated regions inside
// the tensor; a reduction gets its init stores before its outermost reduce loop; stages
// attached at a leaf are realized at the top of that leaf's loop body.
#include <algorithm>

#include "kiln/ir/functor.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"
#include "detail.h"

namespace kiln::schedule {
namespace {

ir::Expr i32(int64_t v) { return ir::make_int(ir::DataType::i32(), v); }

ir::Expr conj(const ir::Expr& a, const ir::Expr& b) {
  if (!a.defined() || ir::is_const_int(a, 1)) return b;
  if (!b.defined() || ir::is_const_int(b, 1)) return a;
  return ir::logical_and(a, b);
}

using ValueMap = std::unordered_map<const ir::IterVarNode*, ir::Expr>;

class NestBuilder {
 public:
  NestBuilder(LowerContext& ctx, const StageNode& s)
      : ctx_(ctx), s_(s), c_(*s.op.as<te::ComputeOpNode>()), bodies_(ctx.g.bodies.at(&s)),
        leaves_(s.leaf_iter_vars) {}

  ir::Stmt build() {
    for (const ir::IterVar& leaf : leaves_) values_[leaf.get()] = leaf_value(leaf, ctx_.b.loop_vars.at(leaf.get()));
    pass_up_index(s_, ctx_.b, &values_);
    size_t n = leaves_.size();
    // Outermost reduce loop: the init goes right before it.
    size_t r = n;
    for (size_t q = 0; q < n && c_.is_reduction(); ++q) {
      if (leaves_[q]->iter_kind == ir::IterKind::Reduce) { r = q; break; }
    }
    // Outermost tensorized loop: it and everything inside become one call.
    size_t tp = n;
    for (size_t q = 0; q < n; ++q) {
      const IterVarAttr* a = attr(leaves_[q]);
      if (a && a->tensor_intrin) { tp = q; break; }
    }
    ir::Stmt inner;
    if (tp < n) {
      for (size_t q = tp; q < n; ++q) {
        auto it = ctx_.g.attached_at.find(leaves_[q].get());
        KILN_USER_CHECK(it == ctx_.g.attached_at.end() || it->second.empty())
            << "tensorize: stage '" << it->second[0].name() << "' is attached inside the tensorized loop '"
            << leaves_[tp]->var.name() << "' of stage '" << s_.origin_op.name() << "'";
      }
      bool update = r < tp;
      inner = tensorize_nest(ctx_, s_, tp, update, values_);
      if (!update) r = n;  // the intrinsic's body initializes
    } else {
      // Partial sums (Stage::partial_sums) under leaf p: the update goes to a local accumulator
      // indexed by the data-parallel loops inside p, zeroed at the top of p's body and added to
      // the stage's buffer at its end.
      size_t p = n;
      for (size_t q = 0; q < n; ++q) {
        const IterVarAttr* a = attr(leaves_[q]);
        if (a && a->partial_sum) p = q;
      }
      if (p < n) {
        KILN_USER_CHECK(r < n && p >= r && bodies_[0].as<ir::ReduceNode>()->combiner->lhs.size() == 1)
            << "partial_sums: loop '" << leaves_[p]->var.name() << "' of stage '" << s_.origin_op.name()
            << "' must be inside the outermost reduce loop of a single-valued reduction";
        std::vector<ir::Expr> shape;
        for (size_t q = p + 1; q < n; ++q) {
          int64_t ext = const_extent(ctx_.b.ranges.at(leaves_[q].get()));
          if (leaves_[q]->iter_kind != ir::IterKind::Reduce && ext > 1) {
            shape.push_back(i32(ext));
            part_index_.push_back(ctx_.b.loop_vars.at(leaves_[q].get()));
          }
        }
        if (shape.empty()) shape.push_back(i32(1)), part_index_.push_back(i32(0));
        const ir::Buffer& main = ctx_.storage.at(&s_)[0].buffer;
        part_ = ir::Buffer::make(main->name + ".part", main->dtype, shape, "local");
        part_at_ = p;
      }
      inner = update_stmt();
    }
    ir::Stmt init = r < n ? init_stmt(r, tp) : ir::Stmt();
    for (size_t q = std::min(tp, n); q-- > 0;) {
      ir::Stmt body = q + 1 == r ? ir::seq({init, inner}) : inner;
      if (q == part_at_) body = ir::allocate(part_, ir::seq({part_points(false), body, part_points(true)}));
      inner = make_loop(q, wrap_attached(q, body));
    }
    return r == 0 ? ir::seq({init, inner}) : inner;
  }

 private:
  const IterVarAttr* attr(const ir::IterVar& iv) const {
    auto it = ctx_.g.attrs.find(iv.get());
    return it == ctx_.g.attrs.end() ? nullptr : it->second;
  }

  // The value a leaf takes: loops run over [0, extent); a loop of extent 1 is not emitted.
  ir::Expr leaf_value(const ir::IterVar& leaf, const ir::Var& loop_var) const {
    const ir::Range& r = ctx_.b.ranges.at(leaf.get());
    if (const_extent(r) == 1) return r.min;
    return ir::is_const_int(r.min, 0) ? ir::Expr(loop_var) : loop_var + r.min;
  }

  ir::VarMap<ir::Expr> root_map(const ValueMap& values) const {
    ir::VarMap<ir::Expr> m;
    for (const ir::IterVar& r : root_axes(s_)) m[r->var.get()] = values.at(r.get());
    return m;
  }

  // Store indices of the stage's outputs: root values relative to the realized region.
  std::vector<ir::Expr> store_indices(const ValueMap& values, int output) const {
    const Storage& st = ctx_.storage.at(&s_)[output];
    std::vector<ir::Expr> idx;
    for (size_t d = 0; d < c_.axis.size(); ++d) {
      ir::Expr v = values.at(c_.axis[d].get());
      idx.push_back(ir::is_const_int(st.offset[d], 0) ? v : v - st.offset[d]);
    }
    return idx;
  }

  // Conditions, where not provable, keeping: root values inside their axes' domains; every
  // split parent below its extent (a split of an overhanging split would otherwise visit some
  // points twice); data-parallel values inside the realized region (a split wider than a
  // compute_at region must not write past the buffer).
  ir::Expr guard(const ValueMap& values, bool reduce_axes_too) const {
    ir::Expr cond;
    auto require = [&](const ir::Expr& c) {
      if (!ctx_.ana.can_prove(c)) cond = conj(cond, c);
    };
    for (const ir::IterVar& r : root_axes(s_)) {
      if (r->iter_kind == ir::IterKind::Reduce && !reduce_axes_too) continue;
      ir::Expr v = values.at(r.get());
      require(v >= r->dom.min);
      require(v < r->dom.min + r->dom.extent);
    }
    for (const IterVarRelation& rel : s_.relations) {
      if (rel.kind != IterVarRelation::Kind::Split) continue;
      if (rel.parent->iter_kind == ir::IterKind::Reduce && !reduce_axes_too) continue;
      auto v = values.find(rel.parent.get());
      if (v == values.end()) continue;
      const ir::Range& r = ctx_.b.ranges.at(rel.parent.get());
      require(v->second < r.min + r.extent);
    }
    const Storage& st = ctx_.storage.at(&s_)[0];
    for (size_t d = 0; d < c_.axis.size(); ++d) {
      ir::Expr rel = values.at(c_.axis[d].get()) - st.offset[d];
      require(rel >= 0);
      require(rel < st.buffer->shape[d]);
    }
    return cond;
  }

  static ir::Stmt guarded(const ir::Expr& cond, ir::Stmt body) {
    return cond.defined() ? ir::if_then_else(cond, std::move(body)) : body;
  }

  ir::Stmt update_stmt() const {
    ir::VarMap<ir::Expr> vmap = root_map(values_);
    std::vector<ir::Stmt> stores;
    auto* red = bodies_[0].as<ir::ReduceNode>();
    if (!red) {
      for (size_t v = 0; v < bodies_.size(); ++v) {
        stores.push_back(ir::buffer_store(ctx_.storage.at(&s_)[v].buffer, ctx_.to_buffers(bodies_[v], vmap),
                                          store_indices(values_, static_cast<int>(v))));
      }
      return guarded(guard(values_, true), ir::seq(stores));
    }
    const ir::CommReducerNode& comb = *red->combiner;
    size_t slots = comb.lhs.size();
    std::vector<ir::Expr> old, src;
    for (size_t v = 0; v < slots; ++v) {
      old.push_back(ir::buffer_load(ctx_.storage.at(&s_)[v].buffer, store_indices(values_, static_cast<int>(v))));
      src.push_back(ctx_.to_buffers(red->source[v], vmap));
    }
    ir::Stmt update;
    if (slots == 1 && part_.defined()) {
      ir::Expr acc = ir::buffer_load(part_, part_index_);
      ir::Expr value = ir::substitute(comb.result[0], {{comb.lhs[0].get(), acc}, {comb.rhs[0].get(), src[0]}});
      update = ir::buffer_store(part_, value, part_index_);
    } else if (slots == 1) {
      ir::Expr value = ir::substitute(comb.result[0], {{comb.lhs[0].get(), old[0]}, {comb.rhs[0].get(), src[0]}});
      update = ir::buffer_store(ctx_.storage.at(&s_)[0].buffer, value, store_indices(values_, 0));
    } else {
      // Every slot's new value reads the old values of all slots: bind them first.
      ir::VarMap<ir::Expr> bind;
      std::vector<ir::Var> lhs, rhs;
      for (size_t v = 0; v < slots; ++v) {
        lhs.emplace_back(comb.lhs[v].name(), comb.lhs[v].dtype());
        rhs.emplace_back(comb.rhs[v].name(), comb.rhs[v].dtype());
        bind[comb.lhs[v].get()] = lhs[v];
        bind[comb.rhs[v].get()] = rhs[v];
      }
      for (size_t v = 0; v < slots; ++v) {
        stores.push_back(ir::buffer_store(ctx_.storage.at(&s_)[v].buffer, ir::substitute(comb.result[v], bind),
                                          store_indices(values_, static_cast<int>(v))));
      }
      update = ir::seq(stores);
      for (size_t v = slots; v-- > 0;) update = ir::let_stmt(rhs[v], src[v], update);
      for (size_t v = slots; v-- > 0;) update = ir::let_stmt(lhs[v], old[v], update);
    }
    ir::Expr cond = guard(values_, true);
    if (!ir::is_const_int(red->condition, 1)) cond = conj(cond, ctx_.to_buffers(red->condition, vmap));
    return guarded(cond, update);
  }

  // Identity stores for the data-parallel points of one iteration outside leaf r; the data-
  // parallel loops inside r are duplicated with fresh variables. Under a tensorized leaf tp
  // whose intrinsic initializes (TensorIntrin::init), its call instead of the stores there.
  ir::Stmt init_stmt(size_t r, size_t tp) {
    ValueMap values = values_;
    std::vector<std::pair<size_t, ir::Var>> loops;
    const IterVarAttr* t = tp < leaves_.size() ? attr(leaves_[tp]) : nullptr;
    const bool by_intrin = t && t->tensor_intrin->init;
    const size_t end = by_intrin ? tp : leaves_.size();
    for (size_t q = r + 1; q < end; ++q) {
      const ir::IterVar& leaf = leaves_[q];
      if (leaf->iter_kind == ir::IterKind::Reduce) continue;
      ir::Var v(leaf->var.name() + ".init", leaf->var.dtype());
      int64_t ext = const_extent(ctx_.b.ranges.at(leaf.get()));
      if (ext > 1) {
        ctx_.ana.bind(v, ir::Range(i32(0), i32(ext)));
        loops.emplace_back(q, v);
      }
      values[leaf.get()] = leaf_value(leaf, v);
    }
    if (by_intrin) return wrap_fresh_loops(loops, tensorize_init(ctx_, s_, tp, values));
    pass_up_index(s_, ctx_.b, &values);
    auto* red = bodies_[0].as<ir::ReduceNode>();
    std::vector<ir::Stmt> stores;
    for (size_t v = 0; v < red->combiner->identity.size(); ++v) {
      stores.push_back(ir::buffer_store(ctx_.storage.at(&s_)[v].buffer, red->combiner->identity[v],
                                        store_indices(values, static_cast<int>(v))));
    }
    ir::Stmt body = guarded(guard(values, false), ir::seq(stores));
    return wrap_fresh_loops(loops, body);
  }

  // The partial accumulator's identity stores (combine false), or its sums into the stage's
  // buffer (combine true), for every data-parallel point inside leaf part_at_, with fresh loops.
  ir::Stmt part_points(bool combine) {
    ValueMap values = values_;
    std::vector<std::pair<size_t, ir::Var>> loops;
    std::vector<ir::Expr> pidx;
    for (size_t q = part_at_ + 1; q < leaves_.size(); ++q) {
      const ir::IterVar& leaf = leaves_[q];
      if (leaf->iter_kind == ir::IterKind::Reduce) continue;
      ir::Var v(leaf->var.name() + (combine ? ".sum" : ".zero"), leaf->var.dtype());
      int64_t ext = const_extent(ctx_.b.ranges.at(leaf.get()));
      if (ext > 1) {
        ctx_.ana.bind(v, ir::Range(i32(0), i32(ext)));
        loops.emplace_back(q, v);
        pidx.push_back(v);
      }
      values[leaf.get()] = leaf_value(leaf, v);
    }
    if (pidx.empty()) pidx.push_back(i32(0));
    auto* red = bodies_[0].as<ir::ReduceNode>();
    const ir::CommReducerNode& comb = *red->combiner;
    ir::Stmt body;
    if (combine) {
      pass_up_index(s_, ctx_.b, &values);
      const ir::Buffer& main = ctx_.storage.at(&s_)[0].buffer;
      std::vector<ir::Expr> idx = store_indices(values, 0);
      ir::Expr value = ir::substitute(comb.result[0], {{comb.lhs[0].get(), ir::buffer_load(main, idx)},
                                                       {comb.rhs[0].get(), ir::buffer_load(part_, pidx)}});
      body = guarded(guard(values, false), ir::buffer_store(main, value, idx));
    } else {
      body = ir::buffer_store(part_, comb.identity[0], pidx);
    }
    return wrap_fresh_loops(loops, body);
  }

  // Wraps `body` in fresh loops over the given leaves (index into leaves_, loop var), outermost
  // first, each with its leaf's extent and loop kind.
  ir::Stmt wrap_fresh_loops(const std::vector<std::pair<size_t, ir::Var>>& loops, ir::Stmt body) const {
    for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
      const ir::IterVar& leaf = leaves_[it->first];
      const IterVarAttr* a = attr(leaf);
      ir::ForKind kind = a ? a->for_kind : ir::ForKind::Serial;
      body = ir::for_loop(it->second, i32(0), ctx_.b.ranges.at(leaf.get()).extent, kind, body, a ? a->thread_tag : "");
    }
    return body;
  }

  ir::Stmt make_loop(size_t q, ir::Stmt body) const {
    const ir::IterVar& leaf = leaves_[q];
    const ir::Var& v = ctx_.b.loop_vars.at(leaf.get());
    const ir::Range& r = ctx_.b.ranges.at(leaf.get());
    const IterVarAttr* a = attr(leaf);
    ir::ForKind kind = a ? a->for_kind : ir::ForKind::Serial;
    bool emit = const_extent(r) > 1 || kind == ir::ForKind::ThreadBinding;
    ir::Stmt loop = emit ? ir::for_loop(v, i32(0), r.extent, kind, body, a ? a->thread_tag : "") : body;
    if (a) {
      for (auto it = a->pragmas.rbegin(); it != a->pragmas.rend(); ++it) {
        loop = ir::attr_stmt("pragma_" + it->first, emit ? ir::Expr(v) : ir::Expr(), it->second, loop);
      }
    }
    return loop;
  }

  ir::Stmt wrap_attached(size_t q, ir::Stmt body) {
    auto it = ctx_.g.attached_at.find(leaves_[q].get());
    if (it == ctx_.g.attached_at.end()) return body;
    for (auto x = it->second.rbegin(); x != it->second.rend(); ++x) body = realize(ctx_, *x->get(), body);
    return body;
  }

  LowerContext& ctx_;
  const StageNode& s_;
  const te::ComputeOpNode& c_;
  const std::vector<ir::Expr>& bodies_;
  const std::vector<ir::IterVar>& leaves_;
  ValueMap values_;
  // Partial sums: the local accumulator, its indices in the update, and the leaf that owns it.
  ir::Buffer part_;
  std::vector<ir::Expr> part_index_;
  size_t part_at_ = static_cast<size_t>(-1);
};

}  // namespace

ir::Stmt build_nest(LowerContext& ctx, const StageNode& s) { return NestBuilder(ctx, s).build(); }

ir::Stmt realize(LowerContext& ctx, const StageNode& s, ir::Stmt rest) {
  const std::vector<Storage>& st = ctx.storage.at(&s);
  ir::Stmt nest = build_nest(ctx, s);
  // The marker goes on the producer, not the allocation: inject_double_buffer moves the
  // producer to the next iteration's slot, and the allocation out of the loop.
  // Its value: the number of buffers.
  if (s.double_buffer)
    nest = ir::attr_stmt(ir::kDoubleBufferScope, st[0].buffer->data, ir::Expr(s.double_buffer), nest);
  ir::Stmt body = ir::seq({std::move(nest), std::move(rest)});
  for (auto it = st.rbegin(); it != st.rend(); ++it) body = ir::allocate(it->buffer, body);
  return body;
}

}  // namespace kiln::schedule
