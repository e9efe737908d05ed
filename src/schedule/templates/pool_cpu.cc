#include "schedule/templates/pool_cpu.h"

#include <algorithm>
#include <string>

#include "ir/arith.h"
#include "kiln/ir/functor.h"
#include "schedule/templates/anchor_cpu.h"
#include "kiln/support/error.h"
#include "kiln/te/ops/nn_conv.h"

namespace kiln::schedule {

namespace {
te::Tensor input_named(const te::Tensor& t, const std::string& name) {
  for (const te::Tensor& in : t.op().input_tensors()) {
    if (in.op().name() == name) return in;
  }
  return te::Tensor();
}

// How many input elements apart neighbouring outputs of the window reduction's row read (the
// window's stride along W; 1 when no load says otherwise).
int64_t row_stride(const te::Tensor& red) {
  const auto* c = red.op().as<te::ComputeOpNode>();
  const ir::VarNode* w = c->axis.back()->var.get();
  int64_t stride = 1;
  ir::post_order_visit(c->body[0], [&](const ir::Expr& e) {
    const auto* l = e.as<ir::ProducerLoadNode>();
    if (!l || l->indices.empty()) return;
    ir::VarMap<ir::Expr> one, zero;
    one[w] = ir::Expr(1);
    zero[w] = ir::Expr(0);
    const ir::Expr& i = l->indices.back();
    auto d = ir::as_const_int(ir::arith::simplify(ir::substitute(i, one) - ir::substitute(i, zero)));
    if (d) stride = std::max(stride, *d);
  });
  return stride;
}

// Global pooling read in partial blocks (te::ops::GlobalPartial): per (image, channel) task,
// "<red>.part" accumulates its chains x lanes block in registers (chains unrolled, lanes one
// vector), "<red>.lane" folds the chains, `red` the lanes.
void schedule_global_partial(Schedule& s, const te::Tensor& tiled, const te::Tensor& pool, const te::Tensor& red,
                             const te::Tensor& lane) {
  te::Tensor part = input_named(lane, red.op().name() + ".part");
  if (!pool.same_as(tiled) && !pool.op().as<te::ComputeOpNode>()->is_reduction()) s[pool].compute_inline();
  Stage out = s[tiled];
  auto ax = out.op_axis();
  ir::IterVar plane = fuse_parallel(out, {ax[0], ax[1]});
  if (!red.same_as(tiled)) s[red].compute_at(out, plane);
  for (const te::Tensor& t : {lane, part}) {
    Stage st = s[t];
    st.set_scope("local");
    st.compute_at(out, plane);
    auto d = st.op_axis();
    std::vector<ir::IterVar> order = {d[0], d[1], st.reduce_axis()[0]};
    order.insert(order.end(), d.begin() + 2, d.end());
    st.reorder(order);
    if (d.size() == 4) st.unroll(d[2]);
    st.vectorize(d.back());
  }
}
}  // namespace

void schedule_pool_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& pool, const Target& target, Config& cfg) {
  const int64_t lanes = target.lanes(32);
  const auto* pc = pool.op().as<te::ComputeOpNode>();
  // The window reduction: the pool itself (max) or the sum an average / lp norm divides.
  te::Tensor red = pc->is_reduction() ? pool : input_named(pool, pool.op().name() + ".sum");
  te::Tensor pad = red.defined() ? input_named(red, pool.op().name() + ".pad") : te::Tensor();
  if (te::Tensor lane = red.defined() ? input_named(red, red.op().name() + ".lane") : te::Tensor(); lane.defined()) {
    schedule_global_partial(s, tiled, pool, red, lane);
    return;
  }
  int64_t vec = cfg.define_knob("vec_ow", {0, 1}, 1);
  // The window loops unrolled around the vector (each tap one load and one max or add).
  bool unroll = cfg.define_knob("unroll_window", {0, 1}, 1) == 1;

  int64_t ow = tiled.shape().back();
  // Output columns in vectors: the widest power of two dividing W, or W's widest other divisor
  // when the power of two fills less than half a register, no narrower than a quarter register.
  // A strided window only when one vector holds the row: its taps are strided loads (a masked
  // wide load and a permute each), and longer rows do better as plain loops LLVM vectorizes with
  // interleaved loads shared by neighbouring taps. Measured (bench_ops, 2 threads, AMD EPYC Zen
  // 4, 3x3 stride-2 max pools), explicit vectors against plain loops: squeezenet1_1's 256@27
  // (W 13) 0.05 against 0.29 ms; its 128@55 (11 lanes) 0.15 against 0.08, resnet18's 64@112
  // (8 lanes) 0.28 against 0.22.
  int64_t v = vector_width(ow, lanes);
  if (v * 2 < lanes) v = std::max(v, largest_divisor(ow, lanes));
  const int64_t min_vector = std::max<int64_t>(2, lanes / 4);
  bool windowed = red.defined() && tiled.ndim() > 2;
  vec = vec && windowed && v >= min_vector && (row_stride(red) == 1 || ow <= lanes);

  if (!pool.same_as(tiled) && !pc->is_reduction()) s[pool].compute_inline();
  // A window reduction that is itself the output accumulates in a local tile instead, so the
  // row can be vectorized with the window loops outside the lanes (a reduction stage's own
  // axes cannot be: its reduce loops are innermost).
  if (vec && red.same_as(tiled)) red = s.cache_write(tiled, "local");
  Stage out = s[tiled];
  auto ax = out.op_axis();
  ir::IterVar plane = fuse_parallel(out, {ax[0], ax[1]});
  bool out_reduces = out->op.as<te::ComputeOpNode>()->is_reduction();  // the stage's op: after cache_write, a copy
  ir::IterVar row = plane;
  if (vec && !out_reduces) {
    auto [wo, wi] = out.split(ax.back(), v);
    out.vectorize(wi);
    row = wo;
  }
  if (red.defined() && !red.same_as(tiled)) {
    Stage r = s[red];
    r.compute_at(out, row.same_as(plane) ? plane : row);
    if (!row.same_as(plane)) {
      // Window loops outside, the row's lanes inside: strided (stride-2) reads of the padded
      // row become vector loads plus shuffles in codegen.
      std::vector<ir::IterVar> order = r.op_axis();
      order.pop_back();
      auto rx = r.reduce_axis();
      order.insert(order.end(), rx.begin(), rx.end());
      order.push_back(r.op_axis().back());
      r.reorder(order);
      r.vectorize(r.op_axis().back());
      if (unroll) {
        for (const ir::IterVar& k : rx) r.unroll(k);
      }
    }
  }
  if (pad.defined()) {
    s[pad].compute_at(out, plane);
    vectorize_innermost(s[pad], lanes);
  }
}

void schedule_pool_nchwc_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& pool, const Target& target,
                             Config& cfg) {
  KILN_CHECK(pool.ndim() == 5 && tiled.shape() == pool.shape()) << "schedule_pool_nchwc_cpu: not a blocked 2-d pool";
  const auto* pc = pool.op().as<te::ComputeOpNode>();
  te::Tensor red = pc->is_reduction() ? pool : input_named(pool, pool.op().name() + ".sum");
  te::Tensor pad = input_named(red, pool.op().name() + ".pad");
  const int64_t oh = pool.shape()[2], ow = pool.shape()[3];
  // A tile of nv pixels, one vector of the block's channels each; rows per task as the blocked
  // depthwise conv's (blocked_task_rows).
  int64_t pv = largest_divisor(ow, std::max<int64_t>(1, target.facts.fma_in_flight() * 2));
  int64_t nv = cfg.define_split("tile_ow", ow, 2, {ow / pv, pv}, target.facts.vector_registers / 2)[1];
  const int64_t per_task = blocked_task_rows(target, pool, pad, 1);
  int64_t rows = cfg.define_split("task_rows", oh, 2, {oh / per_task, per_task}, 0)[1];

  if (!pool.same_as(tiled) && !pc->is_reduction()) s[pool].compute_inline();
  if (red.same_as(tiled)) red = s.cache_write(tiled, "local");
  else s[red].set_scope("local");
  ir::IterVar task = schedule_blocked_window(s, tiled, red, rows, 1, nv);
  if (pad.defined() && pad.op().as<te::ComputeOpNode>()) {
    s[pad].compute_at(s[tiled], task);
    vectorize_innermost(s[pad], target.lanes(32));
  }
}

}  // namespace kiln::schedule
