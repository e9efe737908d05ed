#include "schedule/templates/reduction_cpu.h"

#include <algorithm>

#include "kiln/ir/functor.h"
#include "schedule/templates/injective_cpu.h"
#include "kiln/support/error.h"

namespace kiln::schedule {

namespace {
constexpr int64_t kNever = int64_t{1} << 62;

int64_t extent_of(const ir::IterVar& iv) { return *ir::as_const_int(iv->dom.extent); }

int64_t pow2_divisor(int64_t n, int64_t cap) {
  int64_t v = 1;
  while (v * 2 <= cap && n % (v * 2) == 0) v *= 2;
  return v;
}

// Whether the reduction reads its inputs contiguously along its innermost kept axis: some load
// has that axis' variable as its last index, and none has a reduce axis there.
bool innermost_axis_kept(const te::ComputeOpNode& c) {
  const auto* r = c.body[0].as<ir::ReduceNode>();
  const ir::VarNode* last = c.axis.back()->var.get();
  bool kept = false, reduced = false;
  for (const ir::Expr& src : r->source) {
    ir::post_order_visit(src, [&](const ir::Expr& e) {
      const auto* l = e.as<ir::ProducerLoadNode>();
      if (!l || l->indices.empty()) return;
      const auto* v = l->indices.back().as<ir::VarNode>();
      if (!v) return;
      if (v == last) kept = true;
      for (const ir::IterVar& k : r->axis)
        if (k->var.get() == v) reduced = true;
    });
  }
  return kept && !reduced;
}

void schedule_reduction_stage(Stage st, const Target& target, Config& cfg) {
  int64_t vector_bytes = cfg.define_knob("reduce_vector_bytes", vector_byte_choices(target), target.facts.vector_bits / 8);
  int64_t parallel_min = cfg.define_knob("reduce_parallel_min", {0, 2048, 8192, 32768, 262144, kNever}, 8192);
  const auto& c = *st->op.as<te::ComputeOpNode>();
  std::vector<ir::IterVar> data = st.op_axis(), red = st.reduce_axis();
  if (st.leaf_axes().size() != data.size() + red.size()) return;  // scheduled already
  int64_t work = 1;
  for (const ir::IterVar& iv : data) work *= extent_of(iv);
  int64_t out_elems = work;
  for (const ir::IterVar& iv : red) work *= extent_of(iv);
  int bytes = 1;
  for (const ir::DataType& t : c.dtypes) bytes = std::max(bytes, t.bytes());
  int64_t lanes = pow2_divisor(extent_of(data.back()), std::max<int64_t>(vector_bytes / bytes, 1));
  ir::IterVar outer = data.back();
  bool kept = innermost_axis_kept(c);
  if (kept && lanes >= 2) {
    auto [jo, ji] = st.split(data.back(), lanes);
    outer = jo;
    for (size_t d = data.size() - 1; d-- > 0;) outer = st.fuse(data[d], outer);
    std::vector<ir::IterVar> order{outer};
    order.insert(order.end(), red.begin(), red.end());
    order.push_back(ji);
    st.reorder(order);
    st.vectorize(ji);
    out_elems /= lanes;
  } else if (kept && data.size() >= 2) {
    // An odd kept inner extent (e.g. 55*55): it stays the innermost plain loop, inside the
    // reduce loops, where LLVM vectorizes it (no dependence between its iterations).
    outer = data[data.size() - 2];
    for (size_t d = data.size() - 2; d-- > 0;) outer = st.fuse(data[d], outer);
    std::vector<ir::IterVar> order{outer};
    order.insert(order.end(), red.begin(), red.end());
    order.push_back(data.back());
    st.reorder(order);
    out_elems /= extent_of(data.back());
  } else {
    for (size_t d = data.size() - 1; d-- > 0;) outer = st.fuse(data[d], outer);
  }
  if (work >= parallel_min && out_elems >= 2) st.parallel(outer);
}
}  // namespace

// A reduction of many points to a few values (a DynamicQuantizeLinear's min and max over a whole
// activation, a global sum) is one serial chain per value, which LLVM does not vectorize (float
// max/min and sums do not reassociate without fast-math). Factored into `lanes` partial results
// (Schedule::rfactor: partial j takes the points k with k % lanes == j), the chains run side by
// side in one vector over contiguous points, and the few partials are combined after. Measured
// (bert_mini_int8's min/max over 128 x 256 floats, Zen 4): about 70 us each as one chain.
// Returns the partial stages it scheduled.
std::vector<te::Operation> factor_long_reductions(Schedule& s, const Target& target) {
  std::vector<std::pair<te::Tensor, int64_t>> long_ones;  // and the partials' lanes
  for (const Stage& st : s.stages()) {
    const auto* c = st->op.as<te::ComputeOpNode>();
    if (!c || !c->is_reduction() || st->attach != AttachKind::Root || !st->relations.empty()) continue;
    int64_t outputs = 1, points = 1;
    for (const ir::IterVar& iv : c->axis) outputs *= extent_of(iv);
    for (const ir::IterVar& iv : c->reduce_axis) {
      auto e = ir::as_const_int(iv->dom.extent);
      points *= e ? *e : 0;
    }
    const int64_t lanes = target.lanes(c->dtypes[0].bits);
    if (outputs <= 4 && lanes >= 2 && points >= 64 * lanes && points % lanes == 0 && !innermost_axis_kept(*c))
      long_ones.emplace_back(st->origin_op.output(0), lanes);
  }
  std::vector<te::Operation> partials;
  for (const auto& [t, lanes] : long_ones) {
    te::Tensor partial = s.rfactor(t, lanes);
    partials.push_back(partial.op());
    Stage p = s[partial];
    std::vector<ir::IterVar> order = p.op_axis();
    ir::IterVar j = order.back();
    order.pop_back();
    for (const ir::IterVar& r : p.reduce_axis()) order.push_back(r);
    order.push_back(j);
    p.reorder(order);
    p.vectorize(j);
  }
  return partials;
}

void reduction_cpu(Schedule& s, const std::vector<te::Tensor>& outputs, const Target& target, Config& cfg) {
  inline_injective_stages(s);
  std::vector<te::Operation> partials = factor_long_reductions(s, target);
  for (const Stage& st : s.stages()) {
    const auto* c = st->op.as<te::ComputeOpNode>();
    bool partial = std::any_of(partials.begin(), partials.end(), [&](const te::Operation& p) { return p.same_as(st->op); });
    if (c && c->is_reduction() && st->attach == AttachKind::Root && !partial) schedule_reduction_stage(st, target, cfg);
  }
  for (const te::Tensor& t : outputs) {
    const auto* c = s[t]->op.as<te::ComputeOpNode>();
    if (c && !c->is_reduction()) schedule_injective_stage(s, t, target, cfg);
  }
}

}  // namespace kiln::schedule
