#include "schedule/templates/norm_cpu.h"

#include <algorithm>
#include <string>

#include "schedule/templates/anchor_cpu.h"
#include "kiln/te/ops/nn_norm.h"

namespace kiln::schedule {

namespace {

// A stage computed per row: lane partials of a statistic ("<stat>.lanes", te/ops/nn_norm.h) run
// their reduction outside and the lanes as one vector register; an elementwise stage of the row
// (softmax's exp) is vectorized along it. Other statistics (the lanes' final reduction) stay
// scalar loops.
void vectorize_row_stage(Stage st, int64_t lanes) {
  const auto* c = st->op.as<te::ComputeOpNode>();
  const std::string& n = st.name();
  const std::string suffix = te::ops::kLanesSuffix;
  if (!c->is_reduction()) {
    vectorize_innermost(st, lanes);
    return;
  }
  if (n.size() < suffix.size() || n.compare(n.size() - suffix.size(), suffix.size(), suffix) != 0) return;
  ir::IterVar lane = st.op_axis().back();
  std::vector<ir::IterVar> order = st.reduce_axis();
  order.push_back(lane);
  st.reorder(order);
  st.vectorize(lane);
}

}  // namespace

void schedule_norm_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& norm, const Target& target, Config& cfg) {
  const int64_t lanes = target.lanes(32);
  if (!norm.same_as(tiled) && !norm.op().as<te::ComputeOpNode>()->is_reduction()) s[norm].compute_inline();
  // The statistics: every stage the lowering made for this op that is still computed.
  std::vector<Stage> stats;
  for (const Stage& st : s.stages()) {
    if (!st->op.as<te::ComputeOpNode>() || st->attach == AttachKind::Inline || st->is_output) continue;
    if (st->origin_op.name().rfind(norm.op().name(), 0) != 0) continue;
    stats.push_back(st);
  }
  // Rows: the leading dims every statistic keeps.
  int nd = tiled.ndim();
  int rows_rank = nd - 1;
  for (const Stage& st : stats) {
    const auto& sh = st->origin_op->shape;
    int r = 0;
    while (r < nd && r < static_cast<int>(sh.size()) && sh[r] == tiled.shape()[r]) ++r;
    rows_rank = std::min(rows_rank, r);
  }
  int64_t rows = 1;
  for (int d = 0; d < rows_rank; ++d) rows *= tiled.shape()[d];
  int64_t at = cfg.define_knob("stats_at", {0, 1}, rows >= 2 ? 1 : 0);

  Stage out = s[tiled];
  auto ax = out.op_axis();
  std::vector<ir::IterVar> lead = ax;  // the loops outside the vector lanes
  int64_t inner = tiled.shape().back();
  int64_t v = vector_width(inner, lanes);
  if (v >= 4 && rows_rank < nd) {
    auto [o, i] = out.split(ax.back(), v);
    out.vectorize(i);
    lead.back() = o;
  }
  if (rows_rank >= 1 && at) {
    ir::IterVar row = fuse_parallel(out, std::vector<ir::IterVar>(lead.begin(), lead.begin() + rows_rank));
    for (Stage st : stats) {
      st.compute_at(out, row);
      vectorize_row_stage(st, lanes);
    }
    return;
  }
  // No row parallelism: statistics at the root, each with its own parallel loops.
  int par = std::max(1, std::min(rows_rank, nd - 1));
  fuse_parallel(out, std::vector<ir::IterVar>(lead.begin(), lead.begin() + par));
  for (const Stage& st : stats) schedule_loops_cpu(s, st->origin_op.output(0), lanes);
}

}  // namespace kiln::schedule
