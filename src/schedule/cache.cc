// cache_read and cache_write: dataflow rewrites that add a copy stage (TVM semantics).
#include <numeric>

#include "kiln/ir/functor.h"
#include "kiln/schedule/schedule.h"
#include "kiln/support/error.h"
#include "detail.h"

namespace kiln::schedule {
namespace {

void check_scope(const std::string& prim, const std::string& scope) {
  KILN_USER_CHECK(scope == "global" || scope == "local" || scope == "shared" || scope == "warp")
      << prim << ": unknown scope '" << scope << "' (global, local, shared or warp)";
}

// Reads of tensor `from` become reads of `to` at the indices `place` maps them to.
class ReplaceTensor : public ir::ExprMutator {
 public:
  using Place = std::function<std::vector<ir::Expr>(const std::vector<ir::Expr>&)>;
  ReplaceTensor(te::Tensor from, te::Tensor to, Place place)
      : from_(std::move(from)), to_(std::move(to)), place_(std::move(place)) {}
  int replaced = 0;

 protected:
  ir::Expr visit_producer_load(const ir::ProducerLoadNode* op, const ir::Expr& self) override {
    ir::Expr e = ExprMutator::visit_producer_load(op, self);
    auto* load = e.as<ir::ProducerLoadNode>();
    if (!te::Tensor::from_producer(load->producer).same_as(from_)) return e;
    ++replaced;
    return to_(place_(load->indices));
  }

 private:
  te::Tensor from_, to_;
  Place place_;
};

int position_of(const ScheduleNode& sch, const StageNode* s) {
  for (size_t i = 0; i < sch.stages.size(); ++i) {
    if (sch.stages[i].get() == s) return static_cast<int>(i);
  }
  KILN_CHECK(false) << "stage not in its schedule";
  return -1;
}

void register_op(ScheduleNode& sch, const te::Operation& op, const Stage& s) {
  sch.stage_of_op[op.get()] = s;
  sch.keep_alive.push_back(op);
}

Stage new_stage(const te::Operation& op, const std::shared_ptr<ScheduleNode>& sch, const std::string& scope) {
  auto n = std::make_shared<StageNode>();
  n->op = op;
  n->origin_op = op;
  auto* c = op.as<te::ComputeOpNode>();
  n->all_iter_vars = c->axis;
  n->all_iter_vars.insert(n->all_iter_vars.end(), c->reduce_axis.begin(), c->reduce_axis.end());
  n->leaf_iter_vars = n->all_iter_vars;
  n->scope = scope;
  n->schedule = sch;
  return Stage(n);
}

std::vector<std::string> copy_axis_names(size_t ndim) {
  std::vector<std::string> names;
  for (size_t d = 0; d < ndim; ++d) names.push_back("ax" + std::to_string(d));
  return names;
}

}  // namespace

std::vector<ir::Expr> rewrite_bodies(const te::ComputeOpNode& c, const std::function<ir::Expr(const ir::Expr&)>& f,
                                     const std::vector<ir::IterVar>* new_reduce_axis) {
  std::vector<ir::Expr> out;
  auto* r0 = c.body[0].as<ir::ReduceNode>();
  if (!r0) {
    for (const ir::Expr& b : c.body) out.push_back(f(b));
    return out;
  }
  // One multi-slot reduction: rewrite its shared sources once so the slots stay identical.
  std::vector<ir::Expr> sources;
  for (const ir::Expr& s : r0->source) sources.push_back(f(s));
  ir::Expr cond = f(r0->condition);
  const std::vector<ir::IterVar>& axis = new_reduce_axis ? *new_reduce_axis : r0->axis;
  for (size_t i = 0; i < c.body.size(); ++i) {
    out.push_back(ir::make_reduce(r0->combiner, sources, axis, cond, static_cast<int>(i)));
  }
  return out;
}

te::Tensor Schedule::cache_read(const te::Tensor& t, const std::string& scope, const std::vector<te::Tensor>& readers) {
  Layout same{t.shape(), [](const std::vector<ir::Var>& v) { return std::vector<ir::Expr>(v.begin(), v.end()); },
              [](const std::vector<ir::Expr>& i) { return i; }};
  return cache_read(t, scope, readers, same);
}

te::Tensor Schedule::cache_read(const te::Tensor& t, const std::string& scope, const std::vector<te::Tensor>& readers,
                                const Layout& layout) {
  check_scope("cache_read", scope);
  Stage producer = (*this)[t];
  KILN_USER_CHECK(!readers.empty()) << "cache_read: no readers given for '" << t.name() << "'";
  auto elements = [](const std::vector<int64_t>& shape) {
    return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
  };
  KILN_USER_CHECK(elements(layout.shape) >= elements(t.shape()))
      << "cache_read: a layout of " << elements(layout.shape) << " elements cannot hold '" << t.name() << "' ("
      << elements(t.shape()) << ")";
  te::Tensor src = t;
  te::Tensor cache =
      te::compute(layout.shape, [&](const std::vector<ir::Var>& v) { return src(layout.source(v)); },
                  t.name() + "." + scope, copy_axis_names(layout.shape.size()));
  Stage cs = new_stage(cache.op(), node_, scope);
  for (const te::Tensor& reader : readers) {
    Stage rs = (*this)[reader];
    auto* c = rs->op.as<te::ComputeOpNode>();
    KILN_USER_CHECK(c) << "cache_read: reader '" << reader.name() << "' is a placeholder";
    ReplaceTensor replace(t, cache, layout.place);
    std::vector<ir::Expr> body = rewrite_bodies(*c, [&](const ir::Expr& e) { return replace.mutate(e); }, nullptr);
    KILN_USER_CHECK(replace.replaced > 0) << "cache_read: '" << reader.name() << "' does not read '" << t.name() << "'";
    te::Operation op(std::make_shared<te::ComputeOpNode>(c->name, c->shape, c->dtypes, c->axis, c->reduce_axis, body));
    rs->op = op;
    register_op(*node_, op, rs);
  }
  int pos = position_of(*node_, producer.get());
  node_->stages.insert(node_->stages.begin() + pos + 1, cs);
  register_op(*node_, cache.op(), cs);
  return cache;
}

te::Tensor Schedule::cache_write(const te::Tensor& t, const std::string& scope) {
  check_scope("cache_write", scope);
  Stage s = (*this)[t];
  auto* c = s->op.as<te::ComputeOpNode>();
  KILN_USER_CHECK(c) << "cache_write: '" << t.name() << "' is a placeholder";
  KILN_USER_CHECK(s->attach != AttachKind::Inline) << "cache_write: stage '" << s.name() << "' is inlined";
  bool reordered = false;
  for (size_t i = 0; i < s->leaf_iter_vars.size(); ++i) reordered = reordered || !s->leaf_iter_vars[i].same_as(s->all_iter_vars[i]);
  KILN_USER_CHECK(s->relations.empty() && !reordered)
      << "cache_write: stage '" << s.name() << "' must be cached before it is split, fused or reordered";
  // The cache computes what the stage computed, over axes of its own.
  ir::VarMap<ir::Expr> vmap;
  std::vector<std::string> names;
  for (const ir::IterVar& iv : c->axis) names.push_back(iv->var.name() + ".c");
  std::vector<ir::IterVar> new_reduce;
  for (const ir::IterVar& iv : c->reduce_axis) {
    ir::IterVar n = ir::IterVar::make(ir::Var(iv->var.name()), iv->dom, ir::IterKind::Reduce);
    vmap[iv->var.get()] = n->var;
    new_reduce.push_back(n);
  }
  te::Operation cache_op = te::make_compute(
      c->shape,
      [&](const std::vector<ir::Var>& v) {
        for (size_t d = 0; d < v.size(); ++d) vmap[c->axis[d]->var.get()] = v[d];
        return rewrite_bodies(*c, [&](const ir::Expr& e) { return ir::substitute(e, vmap); }, &new_reduce);
      },
      c->name + "." + scope, names);
  // The stage itself now copies the cache, keeping its data-parallel axes (and any schedule
  // decisions made on them).
  std::vector<ir::Expr> copy;
  std::vector<ir::Expr> idx;
  for (const ir::IterVar& iv : c->axis) idx.push_back(iv->var);
  for (int i = 0; i < cache_op.num_outputs(); ++i) copy.push_back(cache_op.output(i)(idx));
  te::Operation op(std::make_shared<te::ComputeOpNode>(c->name, c->shape, c->dtypes, c->axis,
                                                       std::vector<ir::IterVar>{}, copy));
  s->op = op;
  s->all_iter_vars = c->axis;
  s->leaf_iter_vars = c->axis;
  register_op(*node_, op, s);
  Stage cs = new_stage(cache_op, node_, scope);
  int pos = position_of(*node_, s.get());
  node_->stages.insert(node_->stages.begin() + pos, cs);
  register_op(*node_, cache_op, cs);
  return cache_op.output(t.value_index());
}

te::Tensor Schedule::rfactor(const te::Tensor& t, int64_t factor) {
  Stage s = (*this)[t];
  auto* c = s->op.as<te::ComputeOpNode>();
  KILN_USER_CHECK(c && c->is_reduction()) << "rfactor: '" << t.name() << "' is not a reduction";
  KILN_USER_CHECK(s->attach != AttachKind::Inline) << "rfactor: stage '" << s.name() << "' is inlined";
  KILN_USER_CHECK(factor >= 2) << "rfactor: the factor must be at least 2, got " << factor;
  KILN_USER_CHECK(s->relations.empty()) << "rfactor: stage '" << s.name()
                                        << "' must be factored before it is split, fused or reordered";
  const auto* r0 = c->body[0].as<ir::ReduceNode>();
  int64_t total = 1;
  for (const ir::IterVar& iv : c->reduce_axis) total *= *ir::as_const_int(iv->dom.extent);
  const int64_t inner = (total + factor - 1) / factor;
  ir::IterVar kk = ir::IterVar::make(ir::Var("k.rf"), ir::Range(ir::Expr(0), ir::Expr(static_cast<int>(inner))),
                                     ir::IterKind::Reduce);
  std::vector<int64_t> shape = c->shape;
  shape.push_back(factor);
  std::vector<std::string> names;
  for (const ir::IterVar& iv : c->axis) names.push_back(iv->var.name());
  names.push_back("rf");
  te::Operation rf = te::make_compute(
      shape,
      [&](const std::vector<ir::Var>& v) {
        ir::VarMap<ir::Expr> vmap;
        for (size_t d = 0; d < c->axis.size(); ++d) vmap[c->axis[d]->var.get()] = v[d];
        // The flattened reduce index, and the original reduce axes recovered from it.
        ir::Expr flat = kk->var * ir::Expr(static_cast<int>(factor)) + v.back();
        int64_t stride = total;
        for (const ir::IterVar& iv : c->reduce_axis) {
          const int64_t ext = *ir::as_const_int(iv->dom.extent);
          stride /= ext;
          ir::Expr idx = ir::floormod(ir::floordiv(flat, ir::Expr(static_cast<int>(stride))), ir::Expr(static_cast<int>(ext)));
          vmap[iv->var.get()] = iv->dom.min + idx;
        }
        std::vector<ir::Expr> sources;
        for (const ir::Expr& src : r0->source) sources.push_back(ir::substitute(src, vmap));
        ir::Expr cond = r0->condition.defined() ? ir::substitute(r0->condition, vmap) : ir::Expr();
        if (inner * factor != total) {
          ir::Expr inside = flat < ir::Expr(static_cast<int>(total));
          cond = cond.defined() ? ir::logical_and(inside, cond) : inside;
        }
        std::vector<ir::Expr> out;
        for (size_t i = 0; i < c->body.size(); ++i)
          out.push_back(ir::make_reduce(r0->combiner, sources, {kk}, cond, static_cast<int>(i)));
        return out;
      },
      c->name + ".rf", names);
  // The stage itself combines the partials over j.
  ir::IterVar j = ir::IterVar::make(ir::Var("j.rf"), ir::Range(ir::Expr(0), ir::Expr(static_cast<int>(factor))),
                                    ir::IterKind::Reduce);
  std::vector<ir::Expr> idx;
  for (const ir::IterVar& iv : c->axis) idx.push_back(iv->var);
  idx.push_back(j->var);
  std::vector<ir::Expr> partials;
  for (int i = 0; i < rf.num_outputs(); ++i) partials.push_back(rf.output(i)(idx));
  std::vector<ir::Expr> bodies;
  for (size_t i = 0; i < c->body.size(); ++i)
    bodies.push_back(ir::make_reduce(r0->combiner, partials, {j}, ir::Expr(), static_cast<int>(i)));
  te::Operation op(std::make_shared<te::ComputeOpNode>(c->name, c->shape, c->dtypes, c->axis,
                                                       std::vector<ir::IterVar>{j}, bodies));
  s->op = op;
  s->all_iter_vars = c->axis;
  s->all_iter_vars.push_back(j);
  s->leaf_iter_vars = s->all_iter_vars;
  register_op(*node_, op, s);
  Stage rs = new_stage(rf, node_, "global");
  int pos = position_of(*node_, s.get());
  node_->stages.insert(node_->stages.begin() + pos, rs);
  register_op(*node_, rf, rs);
  return rf.output(t.value_index());
}

}  // namespace kiln::schedule
