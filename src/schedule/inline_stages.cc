// inline_stages: the dataflow lowering works on. Inlined stages are substituted into their
// readers (so bound inference sees the real accesses), readers are recorded per stage, and
// attachments are validated now that inlining and caching are final.
#include <algorithm>

#include "kiln/ir/functor.h"
#include "kiln/support/error.h"
#include "detail.h"

namespace kiln::schedule {
namespace {

class Inliner : public ir::ExprMutator {
 public:
  explicit Inliner(const Dataflow& g) : g_(g) {}

 protected:
  ir::Expr visit_producer_load(const ir::ProducerLoadNode* op, const ir::Expr& self) override {
    ir::Expr e = ExprMutator::visit_producer_load(op, self);
    auto* load = e.as<ir::ProducerLoadNode>();
    te::Tensor t = te::Tensor::from_producer(load->producer);
    const Stage& s = g_.stage_of(t);
    if (s->attach != AttachKind::Inline) return e;
    const te::ComputeOpNode& c = g_.compute_of(s);
    ir::VarMap<ir::Expr> vmap;
    for (size_t d = 0; d < c.axis.size(); ++d) vmap[c.axis[d]->var.get()] = load->indices[d];
    return ir::substitute(g_.bodies.at(s.get())[t.value_index()], vmap);
  }

 private:
  const Dataflow& g_;
};

bool contains(const std::vector<Stage>& v, const StageNode* s) {
  return std::any_of(v.begin(), v.end(), [&](const Stage& x) { return x.get() == s; });
}

}  // namespace

const Stage& Dataflow::stage_of(const te::Tensor& t) const {
  auto it = schedule->stage_of_op.find(t.op().get());
  KILN_USER_CHECK(it != schedule->stage_of_op.end()) << "lower: tensor '" << t.name() << "' is not part of the schedule";
  return it->second;
}

std::vector<const ir::IterVarNode*> attach_path(const StageNode& s) {
  std::vector<const ir::IterVarNode*> path;
  const StageNode* cur = &s;
  for (int depth = 0; cur->attach == AttachKind::At; ++depth) {
    KILN_CHECK(depth < 1000) << "attachment cycle at stage '" << s.origin_op.name() << "'";
    const StageNode& parent = *cur->attach_stage;
    const auto& leaves = parent.leaf_iter_vars;
    auto it = std::find_if(leaves.begin(), leaves.end(), [&](const ir::IterVar& iv) { return iv.same_as(cur->attach_ivar); });
    KILN_USER_CHECK(it != leaves.end())
        << "compute_at: stage '" << cur->origin_op.name() << "' is attached at axis '" << cur->attach_ivar->var.name()
        << "', which is no longer a leaf axis of stage '" << parent.origin_op.name() << "'";
    for (auto r = std::make_reverse_iterator(it + 1); r != leaves.rend(); ++r) path.push_back(r->get());
    cur = &parent;
  }
  return path;
}

std::vector<ir::IterVar> root_axes(const StageNode& s) {
  auto* c = s.op.as<te::ComputeOpNode>();
  std::vector<ir::IterVar> out = c->axis;
  out.insert(out.end(), c->reduce_axis.begin(), c->reduce_axis.end());
  return out;
}

Dataflow inline_stages(const Schedule& sch) {
  Dataflow g;
  g.schedule = sch.node().get();
  Inliner inliner(g);
  for (const Stage& s : sch.stages()) {
    for (const auto& [iv, attr] : s->attrs) g.attrs[iv] = &attr;
    auto* c = s->op.as<te::ComputeOpNode>();
    if (!c) continue;
    // Producers come first, so the bodies inlined here are already final.
    g.bodies[s.get()] = rewrite_bodies(*c, [&](const ir::Expr& e) { return inliner.mutate(e); }, nullptr);
    if (s->attach != AttachKind::Inline) g.stages.push_back(s);
  }
  for (const Stage& s : g.stages) {
    for (const ir::Expr& b : g.bodies.at(s.get())) {
      ir::post_order_visit(b, [&](const ir::Expr& e) {
        auto* load = e.as<ir::ProducerLoadNode>();
        if (!load) return;
        std::vector<Stage>& readers = g.consumers[g.stage_of(te::Tensor::from_producer(load->producer)).get()];
        if (!contains(readers, s.get())) readers.push_back(s);
      });
    }
  }
  for (const Stage& s : g.stages) {
    if (s->attach != AttachKind::At) continue;
    const StageNode& parent = *s->attach_stage;
    KILN_USER_CHECK(parent.attach != AttachKind::Inline)
        << "compute_at: stage '" << s.name() << "' is attached at stage '" << parent.origin_op.name()
        << "', which is inlined; attach it to a consumer that has loops";
    std::vector<const ir::IterVarNode*> path = attach_path(*s.get());  // checks the axis is still a leaf
    g.attached_at[s->attach_ivar.get()].push_back(s);
    // Every reader must run inside the attach loop, where the stage's buffer lives.
    for (const Stage& q : g.consumers[s.get()]) {
      if (q.get() == &parent) continue;
      std::vector<const ir::IterVarNode*> qpath = attach_path(*q.get());
      bool inside = std::find(qpath.begin(), qpath.end(), s->attach_ivar.get()) != qpath.end();
      KILN_USER_CHECK(inside) << "compute_at: stage '" << s.name() << "' is computed inside loop '"
                              << s->attach_ivar->var.name() << "' of stage '" << parent.origin_op.name()
                              << "', but stage '" << q.name() << "' reads it outside that loop";
    }
    KILN_USER_CHECK(!g.consumers[s.get()].empty())
        << "compute_at: stage '" << s.name() << "' is attached at stage '" << parent.origin_op.name()
        << "', which does not read it";
  }
  return g;
}

}  // namespace kiln::schedule
