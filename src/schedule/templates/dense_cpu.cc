#include "kiln/schedule/templates/dense_cpu.h"

#include <string>

#include "kiln/schedule/templates/anchor_cpu.h"
#include "kiln/support/error.h"
#include "kiln/te/ops/nn_conv.h"

namespace kiln::schedule {

namespace {

te::Tensor input_named(const te::Tensor& t, const std::string& suffix) {
  for (const te::Tensor& in : t.op().input_tensors()) {
    const std::string& n = in.op().name();
    if (n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0) return in;
  }
  return te::Tensor();
}

int64_t reduce_extent(const te::Tensor& t) {
  const auto* c = t.op().as<te::ComputeOpNode>();
  KILN_CHECK(c && c->reduce_axis.size() == 1) << "'" << t.name() << "' is not a single-axis reduction";
  return ir::as_const_int(c->reduce_axis[0]->dom.extent).value_or(1);
}

}  // namespace

void schedule_dense_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& dense, Config& cfg) {
  te::Tensor blocked = input_named(dense, te::ops::kBlockedSuffix);
  KILN_CHECK(blocked.defined()) << "schedule_dense_cpu: '" << dense.name() << "' is not a dense result";
  te::Tensor wpack = input_named(blocked, te::ops::kPackSuffix);
  int64_t m = dense.shape()[0], nb = blocked.shape()[1], nr = blocked.shape()[2], k = reduce_extent(blocked);

  int64_t pi = largest_divisor(m, 8), pk = largest_divisor(k, 4);
  int64_t mr = cfg.define_split("tile_i", m, 2, {m / pi, pi}, 16)[1];
  int64_t np = cfg.define_knob("panels", {1, 2, 4}, nb % 2 == 0 ? 2 : 1);
  while (nb % np != 0) np /= 2;  // a choice tuned for another shape: the largest that divides
  int64_t ku = cfg.define_split("tile_k", k, 2, {k / pk, pk}, 16)[1];
  bool unroll_k = cfg.define_knob("unroll_k", {0, 1}, 1) == 1;

  if (!dense.same_as(tiled)) s[dense].compute_inline();
  Stage out = s[tiled];
  auto ax = out.op_axis();
  auto [io, ii] = out.split(ax[0], mr);
  auto [jo, ji] = out.split(ax[1], nr * np);
  out.reorder({jo, io, ii, ji});
  out.unroll(ii);
  out.vectorize(ji);
  ir::IterVar tile = fuse_parallel(out, {jo, io});

  Stage b = s[blocked];
  b.set_scope("local");
  b.compute_at(out, tile);
  auto bx = b.op_axis();  // i, panel, lane
  // Long reductions sum in chunks of up to 64 products, each from zero in registers (see
  // Stage::partial_sums): at K = 4096, max error 23 ulps of max|y| with one running float sum,
  // 4.5 in chunks of 64 (test_precision).
  int64_t pc = 0;
  for (int64_t c = ku; c <= 64 && k % ku == 0; c += ku)
    if (k % c == 0) pc = c;
  if (k >= 256 && pc >= 32) {
    auto [kc, kr] = b.split(b.reduce_axis(0), pc);
    auto [ko, ki] = b.split(kr, ku);
    b.reorder({kc, ko, ki, bx[0], bx[1], bx[2]});
    b.partial_sums(kc);
    if (unroll_k) b.unroll(ki);
  } else {
    auto [ko, ki] = b.split(b.reduce_axis(0), ku);
    b.reorder({ko, ki, bx[0], bx[1], bx[2]});
    if (unroll_k) b.unroll(ki);
  }
  b.unroll(bx[0]);
  b.unroll(bx[1]);
  b.vectorize(bx[2]);

  if (wpack.defined() && wpack.op().as<te::ComputeOpNode>()) {
    Stage p = s[wpack];
    p.compute_root();
    fuse_parallel(p, {p.op_axis(0)});
  }
}

void schedule_matmul_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& mm, Config& cfg) {
  int nd = mm.ndim();
  int64_t jext = mm.shape().back(), k = reduce_extent(mm);
  int64_t pj = jext % 32 == 0 ? 32 : vector_width(jext, 16);
  int64_t nr = cfg.define_split("tile_j", jext, 2, {jext / pj, pj}, 64)[1];
  int64_t mr = 1;
  if (nd >= 2) {
    int64_t iext = mm.shape()[nd - 2], pi = largest_divisor(iext, 8);
    mr = cfg.define_split("tile_i", iext, 2, {iext / pi, pi}, 16)[1];
  }
  int64_t pk = largest_divisor(k, 4);
  int64_t ku = cfg.define_split("tile_k", k, 2, {k / pk, pk}, 16)[1];

  te::Tensor core = mm;
  if (mm.same_as(tiled)) {
    core = s.cache_write(mm, "local");
  } else {
    s[mm].set_scope("local");
  }
  Stage out = s[tiled];
  auto ax = out.op_axis();
  std::vector<ir::IterVar> outer(ax.begin(), ax.end() - (nd >= 2 ? 2 : 1));
  auto [jo, ji] = out.split(ax.back(), nr);
  if (nd >= 2) {
    auto [io, ii] = out.split(ax[nd - 2], mr);
    outer.push_back(io);
    outer.push_back(jo);
    std::vector<ir::IterVar> order = outer;
    order.push_back(ii);
    order.push_back(ji);
    out.reorder(order);
    out.unroll(ii);
  } else {
    outer.push_back(jo);
  }
  out.vectorize(ji);
  // The tile loops fuse into the parallel loop: the core is computed per fused iteration.
  ir::IterVar tile_at = fuse_parallel(out, outer);

  Stage c = s[core];
  c.compute_at(out, tile_at);
  auto cx = c.op_axis();
  auto [ko, ki] = c.split(c.reduce_axis(0), ku);
  std::vector<ir::IterVar> corder(cx.begin(), cx.end() - (nd >= 2 ? 2 : 1));
  corder.push_back(ko);
  corder.push_back(ki);
  if (nd >= 2) corder.push_back(cx[nd - 2]);
  corder.push_back(cx.back());
  c.reorder(corder);
  c.unroll(ki);
  if (nd >= 2) c.unroll(cx[nd - 2]);
  c.vectorize(cx.back());
}

}  // namespace kiln::schedule
