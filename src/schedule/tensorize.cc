// tensorize_nest: checks that the loops under a tensorized axis compute what the intrinsic
// declares and replaces them by the intrinsic's call (TVM's tensorize, for te schedules).
//
// The region the nest covers is found like a bound: loops outside the axis are fixed, loops
// inside range over their extents. A nest that may lie wholly outside an axis (tensor_intrin.h)
// is emitted under a guard. Its root axes are matched to the declaration's axes from the
// innermost outward (extra outer axes must have extent 1); the stage's expression is rewritten
// into the declaration's variables and tensors and compared structurally.
#include <sstream>

#include "kiln/ir/functor.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"
#include "kiln/support/error.h"
#include "detail.h"

namespace kiln::schedule {

using ir::arith::IntervalSet;

ir::Expr TensorIntrinBuffer::address() const {
  return ir::make_intrinsic(ir::DataType::handle(), "address_of", {ir::buffer_load(buffer, base)});
}

namespace {

ir::Expr i32(int64_t v) { return ir::make_int(ir::DataType::i32(), v); }

// Tensors read by bodies, in order of first appearance (as te::Operation::input_tensors).
std::vector<te::Tensor> tensors_read(const std::vector<ir::Expr>& bodies) {
  std::vector<te::Tensor> out;
  for (const ir::Expr& b : bodies) {
    ir::post_order_visit(b, [&](const ir::Expr& e) {
      auto* load = e.as<ir::ProducerLoadNode>();
      if (!load) return;
      te::Tensor t = te::Tensor::from_producer(load->producer);
      for (const te::Tensor& s : out) {
        if (s.same_as(t)) return;
      }
      out.push_back(t);
    });
  }
  return out;
}

// Simplifies the indices of tensor reads so both sides of the comparison are canonical.
class IndexCanon : public ir::ExprMutator {
 public:
  explicit IndexCanon(const ir::arith::Analyzer& ana) : ana_(ana) {}

 protected:
  ir::Expr visit_producer_load(const ir::ProducerLoadNode* op, const ir::Expr&) override {
    std::vector<ir::Expr> idx;
    for (const ir::Expr& i : op->indices) idx.push_back(ana_.simplify(mutate(i)));
    return ir::producer_load(op->producer, idx);
  }

 private:
  const ir::arith::Analyzer& ana_;
};

// Reads of the stage's tensors become reads of the declaration's inputs, relative to the
// region the nest reads.
class ToDeclInputs : public ir::ExprMutator {
 public:
  struct Input {
    te::Tensor from, to;
    std::vector<ir::Expr> min;  // region minimum per dimension of `from`
  };
  std::vector<Input> inputs;

 protected:
  ir::Expr visit_producer_load(const ir::ProducerLoadNode* op, const ir::Expr& self) override {
    ir::Expr e = ExprMutator::visit_producer_load(op, self);
    auto* load = e.as<ir::ProducerLoadNode>();
    te::Tensor t = te::Tensor::from_producer(load->producer);
    for (const Input& in : inputs) {
      if (!in.from.same_as(t)) continue;
      size_t lead = in.from.ndim() - in.to.ndim();
      std::vector<ir::Expr> idx;
      for (size_t d = lead; d < load->indices.size(); ++d) idx.push_back(load->indices[d] - in.min[d]);
      return in.to(idx);
    }
    return e;
  }
};

class Tensorizer {
 public:
  Tensorizer(LowerContext& ctx, const StageNode& s, size_t pos)
      : ctx_(ctx), s_(s), c_(*s.op.as<te::ComputeOpNode>()), leaf_(s.leaf_iter_vars[pos]),
        intrin_(*ctx.g.attrs.at(leaf_.get())->tensor_intrin), d_(*intrin_.decl.op().as<te::ComputeOpNode>()) {}

  ir::Stmt run(size_t pos, bool update, const std::unordered_map<const ir::IterVarNode*, ir::Expr>& values) {
    std::unordered_map<const ir::IterVarNode*, IntervalSet> up = nest_region(pos, values);
    match_axes(c_.axis, d_.axis, up, "axis");
    match_axes(c_.reduce_axis, d_.reduce_axis, up, "reduce axis");
    check_computation();
    const TensorIntrin::Emit& emit = update ? intrin_.update : intrin_.body;
    KILN_USER_CHECK(static_cast<bool>(emit))
        << "tensorize: intrinsic '" << intrin_.name << "' has no update function, but reduce loops of stage '"
        << name() << "' remain outside the tensorized loop '" << leaf_->var.name() << "'";
    std::vector<TensorIntrinBuffer> ins;
    for (const ToDeclInputs::Input& in : to_decl_.inputs) ins.push_back(intrin_buffer(ctx_.storage_of(in.from), in.min));
    const std::vector<TensorIntrinBuffer> outs = outputs();
    return guarded(emit(ins, outs));
  }

  // The outputs' initialization: only the data-parallel axes matter (the update's call checks
  // the rest of the nest against the declaration).
  ir::Stmt run_init(size_t pos, const std::unordered_map<const ir::IterVarNode*, ir::Expr>& values) {
    if (!intrin_.init) return ir::Stmt();
    match_axes(c_.axis, d_.axis, nest_region(pos, values), "axis");
    const std::vector<TensorIntrinBuffer> outs = outputs();
    return guarded(intrin_.init({}, outs));
  }

 private:
  // The region of every root axis covered by the nest: leaves outside it at their values.
  std::unordered_map<const ir::IterVarNode*, IntervalSet> nest_region(
      size_t pos, const std::unordered_map<const ir::IterVarNode*, ir::Expr>& values) {
    std::unordered_map<const ir::IterVarNode*, IntervalSet> up;
    for (size_t q = 0; q < s_.leaf_iter_vars.size(); ++q) {
      const ir::IterVar& l = s_.leaf_iter_vars[q];
      const ir::Range& r = ctx_.b.ranges.at(l.get());
      auto v = values.find(l.get());
      up[l.get()] = q < pos && v != values.end() ? IntervalSet::single_point(v->second)
                                                 : IntervalSet{r.min, r.min + i32(const_extent(r) - 1)};
    }
    pass_up_domain(s_, ctx_.b, free_, &up);
    return up;
  }

  // The outputs' regions in their buffers; where a region may overhang the one its stage
  // realizes, the intrinsic must clip (TensorIntrin::clips_outputs) and a region wholly outside
  // is skipped.
  std::vector<TensorIntrinBuffer> outputs() {
    std::vector<TensorIntrinBuffer> outs;
    for (int v = 0; v < c_.num_outputs(); ++v) {
      outs.push_back(intrin_buffer(ctx_.storage.at(&s_)[v], out_base_));
      const TensorIntrinBuffer& o = outs.back();
      for (size_t d = 0; d < o.base.size(); ++d) {
        const ir::Expr& extent = o.buffer->shape[d];
        if (ctx_.ana.can_prove(o.base[d] + i32(out_extent_[d]) <= extent)) continue;
        KILN_USER_CHECK(intrin_.clips_outputs)
            << mismatch() << "it overhangs the region of '" << o.buffer->name << "' the stage realizes in dimension " << d
            << " (its consumers need less than whole tiles)";
        guard_ = guard_.defined() ? ir::logical_and(guard_, o.base[d] < extent) : o.base[d] < extent;
      }
    }
    return outs;
  }

  ir::Stmt guarded(ir::Stmt call) const { return guard_.defined() ? ir::if_then_else(guard_, call) : call; }

  std::string name() const { return s_.origin_op.name(); }

  std::string mismatch() const {
    return "tensorize: the loop nest under '" + leaf_->var.name() + "' of stage '" + name() +
           "' does not match intrinsic '" + intrin_.name + "': ";
  }

  // Stage axes, innermost first, against the declaration's; records how the stage's root
  // variables read in the declaration's variables.
  void match_axes(const std::vector<ir::IterVar>& mine, const std::vector<ir::IterVar>& decl,
                  const std::unordered_map<const ir::IterVarNode*, IntervalSet>& up, const char* what) {
    KILN_USER_CHECK(mine.size() >= decl.size()) << mismatch() << "the intrinsic has " << decl.size() << " " << what
                                                << "s, the stage only " << mine.size();
    size_t lead = mine.size() - decl.size();
    for (size_t a = 0; a < mine.size(); ++a) {
      const ir::IterVar& iv = mine[a];
      const IntervalSet& set = up.at(iv.get());
      ir::Expr base = ctx_.ana.simplify(set.min);
      auto ext = ir::as_const_int(ctx_.ana.simplify(set.max - set.min + 1));
      KILN_USER_CHECK(ext) << mismatch() << what << " '" << iv->var.name() << "' has a non-constant extent in the nest";
      int64_t want = a < lead ? 1 : *ir::as_const_int(decl[a - lead]->dom.extent);
      KILN_USER_CHECK(*ext == want) << mismatch() << what << " '" << iv->var.name() << "' has extent " << *ext
                                    << " in the nest but " << want << " in the declaration";
      ir::Expr end = iv->dom.min + iv->dom.extent;
      if (!ctx_.ana.can_prove(base + i32(*ext) <= end)) {
        // Wholly inside or wholly outside: a tile aligned to its extent on an axis of whole
        // tiles (a block of tiles overhanging the tensor): the call is guarded.
        const auto axis_extent = ir::as_const_int(iv->dom.extent);
        const bool whole = axis_extent && *axis_extent % *ext == 0 &&
                           ctx_.ana.can_prove(ir::eq(ir::floormod(base - iv->dom.min, i32(*ext)), i32(0)));
        KILN_USER_CHECK(whole) << mismatch() << "the nest overhangs " << what << " '" << iv->var.name()
                               << "' (a split factor that does not divide the extent?)";
        guard_ = guard_.defined() ? ir::logical_and(guard_, base < end) : base < end;
      }
      KILN_USER_CHECK(ctx_.ana.can_prove(base >= iv->dom.min))
          << mismatch() << "the nest overhangs " << what << " '" << iv->var.name() << "' below its start";
      if (iv->iter_kind != ir::IterKind::Reduce) {
        out_base_.push_back(base);
        out_extent_.push_back(*ext);
      }
      ir::Expr value = base;
      if (a >= lead) {
        const ir::IterVar& dv = decl[a - lead];
        value = ctx_.ana.simplify(base + (dv->var - dv->dom.min));
        decl_dom_[dv->var.get()] = IntervalSet{dv->dom.min, dv->dom.min + dv->dom.extent - 1};
      }
      vmap_[iv->var.get()] = value;
    }
  }

  void check_computation() {
    const std::vector<ir::Expr>& bodies = ctx_.g.bodies.at(&s_);
    KILN_USER_CHECK(bodies.size() == d_.body.size())
        << mismatch() << "the stage has " << bodies.size() << " outputs, the intrinsic " << d_.body.size();
    std::vector<ir::Expr> mine;
    for (const ir::Expr& b : bodies) mine.push_back(ir::substitute(b, vmap_));
    std::vector<te::Tensor> reads = tensors_read(mine), decl_inputs = intrin_.decl.op().input_tensors();
    KILN_USER_CHECK(reads.size() == decl_inputs.size())
        << mismatch() << "the stage reads " << reads.size() << " tensors, the intrinsic declares "
        << decl_inputs.size() << " inputs";
    for (size_t i = 0; i < reads.size(); ++i) to_decl_.inputs.push_back(input_region(mine, reads[i], decl_inputs[i]));
    IndexCanon canon(ctx_.ana);
    for (size_t v = 0; v < mine.size(); ++v) {
      ir::Expr got = canon.mutate(to_decl_.mutate(as_decl_reduction(mine[v])));
      ir::Expr want = canon.mutate(d_.body[v]);
      KILN_USER_CHECK(ir::structural_equal(got, want))
          << mismatch() << "the nest computes " << ir::to_string(got) << " but the intrinsic declares "
          << ir::to_string(want);
    }
  }

  // A reduction of the stage rewritten over the declaration's reducer and axes, when the
  // reducers agree (same slot results and identities), so the two compare node for node.
  ir::Expr as_decl_reduction(const ir::Expr& e) const {
    auto* r = e.as<ir::ReduceNode>();
    auto* dr = d_.body[0].as<ir::ReduceNode>();
    if (!r || !dr) return e;
    const ir::CommReducerNode &a = *r->combiner, &b = *dr->combiner;
    bool same = a.result.size() == b.result.size();
    for (size_t i = 0; same && i < a.result.size(); ++i) {
      ir::VarMap<ir::Expr> m;
      for (size_t j = 0; j < a.lhs.size(); ++j) {
        m[a.lhs[j].get()] = b.lhs[j];
        m[a.rhs[j].get()] = b.rhs[j];
      }
      same = a.lhs[i].dtype() == b.lhs[i].dtype() && ir::structural_equal(ir::substitute(a.result[i], m), b.result[i]) &&
             ir::structural_equal(a.identity[i], b.identity[i]);
    }
    KILN_USER_CHECK(same) << mismatch() << "the reductions use different reducers";
    return ir::make_reduce(dr->combiner, r->source, dr->axis, r->condition, r->value_index);
  }

  ToDeclInputs::Input input_region(const std::vector<ir::Expr>& mine, const te::Tensor& t, const te::Tensor& decl) {
    KILN_USER_CHECK(decl.op().as<te::PlaceholderOpNode>())
        << "tensorize: input '" << decl.name() << "' of intrinsic '" << intrin_.name << "' must be a placeholder";
    KILN_USER_CHECK(t.ndim() >= decl.ndim() && t.dtype() == decl.dtype())
        << mismatch() << "'" << t.name() << "' (" << t.dtype().str() << ", " << t.ndim() << " dims) cannot be input '"
        << decl.name() << "' (" << decl.dtype().str() << ", " << decl.ndim() << " dims)";
    std::vector<IntervalSet> region(t.ndim());
    for (const ir::Expr& b : mine) {
      ir::post_order_visit(b, [&](const ir::Expr& e) {
        auto* load = e.as<ir::ProducerLoadNode>();
        if (!load || !te::Tensor::from_producer(load->producer).same_as(t)) return;
        for (int d = 0; d < t.ndim(); ++d) {
          IntervalSet s = free_.eval_interval(load->indices[d], decl_dom_);
          KILN_USER_CHECK(s.is_bounded()) << mismatch() << "cannot bound the region of '" << t.name() << "' it reads";
          region[d].min = region[d].min.defined() ? ir::min(region[d].min, s.min) : s.min;
          region[d].max = region[d].max.defined() ? ir::max(region[d].max, s.max) : s.max;
        }
      });
    }
    ToDeclInputs::Input in{t, decl, {}};
    size_t lead = t.ndim() - decl.ndim();
    for (int d = 0; d < t.ndim(); ++d) {
      ir::Expr mn = ctx_.ana.simplify(region[d].min);
      auto ext = ir::as_const_int(ctx_.ana.simplify(region[d].max - mn + 1));
      int64_t want = static_cast<size_t>(d) < lead ? 1 : decl.shape()[d - lead];
      KILN_USER_CHECK(ext && *ext == want)
          << mismatch() << "it reads " << (ext ? std::to_string(*ext) : "a non-constant number of") << " elements of '"
          << t.name() << "' in dimension " << d << " where input '" << decl.name() << "' has " << want;
      in.min.push_back(mn);
    }
    return in;
  }

  TensorIntrinBuffer intrin_buffer(const Storage& st, const std::vector<ir::Expr>& min) const {
    TensorIntrinBuffer out;
    out.buffer = st.buffer;
    for (size_t d = 0; d < min.size(); ++d) out.base.push_back(ctx_.ana.simplify(min[d] - st.offset[d]));
    out.strides.assign(st.buffer->shape.size(), 1);
    for (size_t d = st.buffer->shape.size(); d-- > 1;) {
      out.strides[d - 1] = out.strides[d] * *ir::as_const_int(st.buffer->shape[d]);
    }
    return out;
  }

  LowerContext& ctx_;
  const StageNode& s_;
  const te::ComputeOpNode& c_;
  ir::IterVar leaf_;
  const TensorIntrin& intrin_;
  const te::ComputeOpNode& d_;
  ir::arith::Analyzer free_;
  ir::VarMap<ir::Expr> vmap_;
  ir::VarMap<IntervalSet> decl_dom_;
  std::vector<ir::Expr> out_base_;
  std::vector<int64_t> out_extent_;
  ir::Expr guard_;  // where the nest may lie wholly outside an axis
  ToDeclInputs to_decl_;
};

}  // namespace

ir::Stmt tensorize_nest(LowerContext& ctx, const StageNode& s, size_t pos, bool update,
                        const std::unordered_map<const ir::IterVarNode*, ir::Expr>& leaf_values) {
  return Tensorizer(ctx, s, pos).run(pos, update, leaf_values);
}

ir::Stmt tensorize_init(LowerContext& ctx, const StageNode& s, size_t pos,
                        const std::unordered_map<const ir::IterVarNode*, ir::Expr>& leaf_values) {
  return Tensorizer(ctx, s, pos).run_init(pos, leaf_values);
}

}  // namespace kiln::schedule
