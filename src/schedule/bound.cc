// infer_bound: ranges of every axis and the region every stage computes (see bound.h).
#include "schedule/bound.h"

#include <unordered_set>

#include "kiln/ir/functor.h"
#include "kiln/ir/printer.h"
#include "kiln/support/error.h"
#include "detail.h"

namespace kiln::schedule {

using ir::arith::IntervalSet;

int64_t const_extent(const ir::Range& r) {
  auto e = ir::as_const_int(r.extent);
  KILN_CHECK(e) << "non-constant extent after bound inference";
  return *e;
}

namespace {

ir::Expr i32(int64_t v) { return ir::make_int(ir::DataType::i32(), v); }

int scope_rank(const std::string& scope) { return scope == "global" ? 0 : scope == "shared" ? 1 : 2; }
int thread_rank(const std::string& tag) { return tag.rfind("blockIdx", 0) == 0 ? 0 : 1; }

bool is_const(const ir::Expr& e, int64_t v) { return e.defined() && ir::is_const_int(e, v); }

// True if the interval is exactly [0, extent - 1] of a zero-based range.
bool covers_zero_based(const IntervalSet& s, const ir::Range& r) {
  return is_const(r.min, 0) && is_const(s.min, 0) && is_const(s.max, const_extent(r) - 1);
}

IntervalSet range_set(const ir::Range& r) {
  return {r.min, ir::arith::simplify(r.min + i32(const_extent(r) - 1))};
}

class BoundInferer {
 public:
  explicit BoundInferer(const Dataflow& g) : g_(g) {}

  Bounds run() {
    for (auto it = g_.stages.rbegin(); it != g_.stages.rend(); ++it) infer_stage(*it->get());
    return std::move(b_);
  }

 private:
  void infer_stage(const StageNode& s) {
    const te::ComputeOpNode& c = *s.op.as<te::ComputeOpNode>();
    std::vector<ir::Range> region;
    auto readers = g_.consumers.find(&s);
    if (s.is_output || readers == g_.consumers.end() || readers->second.empty()) {
      for (int64_t e : c.shape) region.emplace_back(i32(0), i32(e));
    } else {
      region = needed_region(s, c, readers->second);
    }
    b_.regions[&s] = region;
    for (size_t d = 0; d < c.axis.size(); ++d) b_.ranges[c.axis[d].get()] = region[d];
    for (const ir::IterVar& r : c.reduce_axis) b_.ranges[r.get()] = r->dom;
    pass_down(s);
  }

  // Leaf ranges from root ranges, and the loop variables of the leaves.
  void pass_down(const StageNode& s) {
    for (const IterVarRelation& rel : s.relations) {
      if (rel.kind == IterVarRelation::Kind::Split) {
        int64_t ext = const_extent(b_.ranges.at(rel.parent.get()));
        int64_t factor = rel.factor > 0 ? rel.factor : (ext + rel.nparts - 1) / rel.nparts;
        int64_t outer = rel.factor > 0 ? (ext + factor - 1) / factor : rel.nparts;
        b_.ranges[rel.outer.get()] = ir::Range(i32(0), i32(outer));
        b_.ranges[rel.inner.get()] = ir::Range(i32(0), i32(factor));
      } else {
        int64_t ext = const_extent(b_.ranges.at(rel.outer.get())) * const_extent(b_.ranges.at(rel.inner.get()));
        b_.ranges[rel.fused.get()] = ir::Range(i32(0), i32(ext));
      }
    }
    std::vector<ir::IterVar> roots = root_axes(s);
    for (const ir::IterVar& leaf : s.leaf_iter_vars) {
      bool is_root = false;
      for (const ir::IterVar& r : roots) is_root = is_root || r.same_as(leaf);
      ir::Var v = is_root ? ir::Var(leaf->var.name(), leaf->var.dtype()) : leaf->var;
      b_.loop_vars[leaf.get()] = v;
      int64_t ext = const_extent(b_.ranges.at(leaf.get()));
      if (ext > 1) ana_.bind(v, ir::Range(i32(0), i32(ext)));
    }
  }

  // TVM's NeedRelax: loops inside the attach point range over their extent; thread loops are
  // relaxed when the storage is shared across those threads (a warp buffer: across its lanes,
  // threadIdx.x).
  bool need_relax(const ir::IterVarNode* iv, bool found_attach, const std::string& scope) const {
    auto it = g_.attrs.find(iv);
    bool bound = it != g_.attrs.end() && it->second->for_kind == ir::ForKind::ThreadBinding;
    if (!bound) return !found_attach;
    if (scope == "warp") return it->second->thread_tag == "threadIdx.x";
    return scope_rank(scope) <= thread_rank(it->second->thread_tag);
  }

  std::vector<ir::Range> needed_region(const StageNode& s, const te::ComputeOpNode& c,
                                       const std::vector<Stage>& readers) {
    std::vector<const ir::IterVarNode*> path = attach_path(s);
    std::unordered_set<const ir::IterVarNode*> in_path(path.begin(), path.end());
    size_t nd = c.shape.size();
    std::vector<std::vector<IntervalSet>> parts(nd);
    for (const Stage& q : readers) {
      std::unordered_map<const ir::IterVarNode*, IntervalSet> up;
      ir::VarMap<IntervalSet> relax;
      bool found = false;
      const auto& leaves = q->leaf_iter_vars;
      for (auto it = leaves.rbegin(); it != leaves.rend(); ++it) {
        const ir::IterVarNode* iv = it->get();
        found = found || in_path.count(iv);
        const ir::Range& r = b_.ranges.at(iv);
        int64_t ext = const_extent(r);
        const ir::Var& v = b_.loop_vars.at(iv);
        if (ext == 1) {
          up[iv] = IntervalSet::single_point(r.min);
        } else if (need_relax(iv, found, s.scope)) {
          up[iv] = range_set(r);
          relax[v.get()] = {i32(0), i32(ext - 1)};
        } else {
          up[iv] = IntervalSet::single_point(ir::arith::simplify(v + r.min));
        }
      }
      for (const ir::IterVarNode* iv : attach_path(*q.get())) {
        found = found || in_path.count(iv);
        int64_t ext = const_extent(b_.ranges.at(iv));
        if (ext > 1 && need_relax(iv, found, s.scope)) relax[b_.loop_vars.at(iv).get()] = {i32(0), i32(ext - 1)};
      }
      // The overhang too: union_in_shape clips it to this stage's shape, so only a stage larger
      // than its reader (a padded product) computes there, and its tiles stay whole.
      pass_up_domain(*q.get(), b_, free_, &up, true);
      ir::VarMap<IntervalSet> dom;
      for (const ir::IterVar& r : root_axes(*q.get())) dom[r->var.get()] = relaxed(up.at(r.get()), relax);
      for (const ir::Expr& body : g_.bodies.at(q.get())) {
        ir::post_order_visit(body, [&](const ir::Expr& e) {
          auto* load = e.as<ir::ProducerLoadNode>();
          if (!load || g_.stage_of(te::Tensor::from_producer(load->producer)).get() != &s) return;
          for (size_t d = 0; d < nd; ++d) parts[d].push_back(free_.eval_interval(load->indices[d], dom));
        });
      }
    }
    std::vector<ir::Range> region;
    for (size_t d = 0; d < nd; ++d) region.push_back(union_in_shape(s, d, parts[d], c.shape[d]));
    return region;
  }

  IntervalSet relaxed(const IntervalSet& s, const ir::VarMap<IntervalSet>& relax) const {
    if (relax.empty()) return s;
    IntervalSet out;
    if (s.min.defined()) out.min = free_.eval_interval(s.min, relax).min;
    if (s.max.defined()) out.max = free_.eval_interval(s.max, relax).max;
    return out;
  }

  // The union of the parts, clipped to [0, extent) where provably larger (reads outside the
  // tensor are excluded by their consumers' conditions), with a constant extent.
  ir::Range union_in_shape(const StageNode& s, size_t d, const std::vector<IntervalSet>& parts, int64_t extent) {
    ir::Expr mn, mx;
    bool bounded = !parts.empty();
    for (const IntervalSet& p : parts) {
      if (!p.is_bounded()) { bounded = false; break; }
      mn = mn.defined() ? ana_.simplify(ir::min(mn, p.min)) : ana_.simplify(p.min);
      mx = mx.defined() ? ana_.simplify(ir::max(mx, p.max)) : ana_.simplify(p.max);
    }
    if (!bounded) return ir::Range(i32(0), i32(extent));
    if (ana_.can_prove(mn <= 0)) mn = i32(0);
    if (ana_.can_prove(mx >= i32(extent - 1))) mx = i32(extent - 1);
    ir::Expr ext = ana_.simplify(mx - mn + 1);
    if (!ir::as_const_int(ext)) {
      ir::arith::IntBound bound = ana_.const_int_bound(ext);
      KILN_USER_CHECK(bound.max_value != ir::arith::IntBound::kPosInf)
          << "bound inference: cannot bound the region of stage '" << s.origin_op.name() << "' in dimension " << d
          << " (extent " << ext << ")";
      ext = i32(bound.max_value);
    }
    KILN_CHECK(*ir::as_const_int(ext) > 0) << "empty region for stage '" << s.origin_op.name() << "'";
    return ir::Range(mn, ext);
  }

  const Dataflow& g_;
  Bounds b_;
  ir::arith::Analyzer ana_;   // knows loop ranges: simplification and proofs
  ir::arith::Analyzer free_;  // knows nothing: eval_interval keeps fixed loop vars symbolic
};

}  // namespace

void pass_up_domain(const StageNode& s, const Bounds& b, const ir::arith::Analyzer& ana,
                    std::unordered_map<const ir::IterVarNode*, IntervalSet>* sets, bool overhang) {
  for (auto it = s.relations.rbegin(); it != s.relations.rend(); ++it) {
    const IterVarRelation& rel = *it;
    if (rel.kind == IterVarRelation::Kind::Split) {
      const ir::Range& pr = b.ranges.at(rel.parent.get());
      const ir::Range& orr = b.ranges.at(rel.outer.get());
      const ir::Range& ir_ = b.ranges.at(rel.inner.get());
      const IntervalSet& o = sets->at(rel.outer.get());
      const IntervalSet& i = sets->at(rel.inner.get());
      if (covers_zero_based(o, orr) && covers_zero_based(i, ir_)) {
        const int64_t span = const_extent(orr) * const_extent(ir_);
        (*sets)[rel.parent.get()] = overhang && span > const_extent(pr)
                                        ? IntervalSet{pr.min, ir::arith::simplify(pr.min + i32(span - 1))}
                                        : range_set(pr);
        continue;
      }
      ir::Var ov = rel.outer->var, iv = rel.inner->var;
      ir::Expr value = pr.min + ov * i32(const_extent(ir_)) + iv;
      (*sets)[rel.parent.get()] = ana.eval_interval(value, {{ov.get(), o}, {iv.get(), i}});
    } else {
      const ir::Range& orr = b.ranges.at(rel.outer.get());
      const ir::Range& ir_ = b.ranges.at(rel.inner.get());
      const IntervalSet& f = sets->at(rel.fused.get());
      ir::Expr ie = i32(const_extent(ir_));
      if (f.is_single_point()) {
        (*sets)[rel.outer.get()] = IntervalSet::single_point(orr.min + ir::floordiv(f.min, ie));
        (*sets)[rel.inner.get()] = IntervalSet::single_point(ir_.min + ir::floormod(f.min, ie));
        continue;
      }
      if (covers_zero_based(f, b.ranges.at(rel.fused.get()))) {
        (*sets)[rel.outer.get()] = range_set(orr);
        (*sets)[rel.inner.get()] = range_set(ir_);
        continue;
      }
      // A block of the fused loop inside one run of the inner axis (its length divides the
      // inner extent and it starts at a multiple of its length, as after fuse then split):
      // one outer point and a contiguous part of the inner axis.
      auto len = ir::as_const_int(ana.simplify(f.max - f.min + 1));
      if (len && *len > 0 && const_extent(ir_) % *len == 0 &&
          ana.can_prove(ir::eq(ir::floormod(f.min, i32(*len)), i32(0)))) {
        ir::Expr first = ana.simplify(ir_.min + ir::floormod(f.min, ie));
        (*sets)[rel.outer.get()] = IntervalSet::single_point(ana.simplify(orr.min + ir::floordiv(f.min, ie)));
        (*sets)[rel.inner.get()] = IntervalSet{first, ana.simplify(first + i32(*len - 1))};
      } else {
        ir::Var fv = rel.fused->var;
        (*sets)[rel.outer.get()] = ana.eval_interval(orr.min + ir::floordiv(fv, ie), {{fv.get(), f}});
        (*sets)[rel.inner.get()] = range_set(ir_);
      }
    }
  }
}

void pass_up_index(const StageNode& s, const Bounds& b, std::unordered_map<const ir::IterVarNode*, ir::Expr>* values) {
  for (auto it = s.relations.rbegin(); it != s.relations.rend(); ++it) {
    const IterVarRelation& rel = *it;
    if (rel.kind == IterVarRelation::Kind::Split) {
      const ir::Range& pr = b.ranges.at(rel.parent.get());
      ir::Expr v = values->at(rel.outer.get()) * i32(const_extent(b.ranges.at(rel.inner.get()))) +
                   values->at(rel.inner.get());
      (*values)[rel.parent.get()] = is_const(pr.min, 0) ? v : pr.min + v;
    } else {
      const ir::Range& orr = b.ranges.at(rel.outer.get());
      const ir::Range& ir_ = b.ranges.at(rel.inner.get());
      ir::Expr f = values->at(rel.fused.get()), ie = i32(const_extent(ir_));
      ir::Expr o = ir::floordiv(f, ie), i = ir::floormod(f, ie);
      (*values)[rel.outer.get()] = is_const(orr.min, 0) ? o : orr.min + o;
      (*values)[rel.inner.get()] = is_const(ir_.min, 0) ? i : ir_.min + i;
    }
  }
}

ir::arith::Analyzer loop_analyzer(const Bounds& b) {
  ir::arith::Analyzer ana;
  for (const auto& [iv, v] : b.loop_vars) {
    int64_t ext = const_extent(b.ranges.at(iv));
    if (ext > 1) ana.bind(v, ir::Range(i32(0), i32(ext)));
  }
  return ana;
}

Bounds infer_bound(const Dataflow& g) { return BoundInferer(g).run(); }

Bounds infer_bound(const Schedule& s) { return infer_bound(inline_stages(s)); }

}  // namespace kiln::schedule
