#include "schedule/templates/dense_cpu.h"

#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/ir/functor.h"
#include "schedule/templates/anchor_cpu.h"
#include "schedule/templates/gemm_blocking.h"
#include "kiln/support/error.h"
#include "kiln/te/ops/nn_conv.h"

namespace kiln::schedule {

namespace {

int64_t reduce_extent(const te::Tensor& t) {
  const auto* c = t.op().as<te::ComputeOpNode>();
  KILN_CHECK(c && c->reduce_axis.size() == 1) << "'" << t.name() << "' is not a single-axis reduction";
  return ir::as_const_int(c->reduce_axis[0]->dom.extent).value_or(1);
}

// Powers of two from 1 to the most vectors a tile row may have on the target (max_tile_vectors).
std::vector<int64_t> vector_counts(const Target& target) {
  std::vector<int64_t> c;
  for (int64_t v = 1; v <= max_tile_vectors(target); v *= 2) c.push_back(v);
  return c;
}

}  // namespace

void schedule_dense_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& dense, const Target& target, Config& cfg) {
  te::Tensor blocked = input_with_suffix(dense, te::ops::kBlockedSuffix);
  KILN_CHECK(blocked.defined()) << "schedule_dense_cpu: '" << dense.name() << "' is not a dense result";
  te::Tensor wpack = input_with_suffix(blocked, te::ops::kPackSuffix);
  const int lead = dense.ndim() - 2;
  const int64_t m = dense.shape()[lead], n = dense.shape()[lead + 1], k = reduce_extent(blocked);
  const int64_t mp = blocked.shape()[lead], nb = blocked.shape()[lead + 1], nr = blocked.shape()[lead + 2];

  // The register block of the target (gemm_blocking.h); the strategy padded the rows to it and
  // the panel count to its vectors.
  RegisterBlock rb = register_block(target, m, n);
  int64_t pi = largest_divisor(mp, rb.mr);
  int64_t mr = cfg.define_split("tile_i", mp, 2, {mp / pi, pi}, max_tile_rows(target, 1))[1];
  int64_t pp = nr >= target.lanes(32) ? vector_width(nb, rb.nv) : 1;
  int64_t np = cfg.define_knob("panels", vector_counts(target), pp);
  while (nb % np != 0) np /= 2;  // a choice tuned for another shape: the largest that divides
  int64_t pk = largest_divisor(k, 4);
  int64_t ku = cfg.define_split("tile_k", k, 2, {k / pk, pk}, 16)[1];
  bool unroll_k = cfg.define_knob("unroll_k", {0, 1}, 1) == 1;
  // Long reductions sum in chunks of up to 64 products, each from zero in registers (see
  // Stage::partial_sums): at K = 4096, max error 23 ulps of max|y| with one running float sum,
  // 4.5 in chunks of 64 (test_precision).
  int64_t pc = 0;
  for (int64_t c = ku; c <= 64 && k % ku == 0; c += ku)
    if (k % c == 0) pc = c;
  bool chunks = k >= 256 && pc >= 32;
  // sweep: a task is a panel group over all rows, swept chunk by chunk over its row tiles, so
  // the chunk x (np * nr) slice of the weight stays in L1 across them. Off by default: on Zen 4
  // (one thread, 4x64 tiles) [128, 512] x [512, 2048] ran 2.8-2.9 ms with it and 2.75-2.77
  // without, the LM head [128, 512] x [512, 50257] 65-74 ms and 66-70.
  bool sweep = cfg.define_knob("sweep", {0, 1}, 0) == 1 && chunks;

  if (!dense.same_as(tiled)) s[dense].compute_inline();
  Stage out = s[tiled];
  auto ax = out.op_axis();
  auto [io, ii] = out.split(ax[lead], mr);
  auto [jo, ji] = out.split(ax[lead + 1], nr * np);
  std::vector<ir::IterVar> order(ax.begin(), ax.begin() + lead), tasks;
  order.insert(order.end(), {jo, io, ii, ji});
  out.reorder(order);
  out.unroll(ii);
  out.vectorize(ji);
  tasks.assign(order.begin(), order.end() - (sweep ? 3 : 2));
  ir::IterVar task = fuse_parallel(out, tasks);

  Stage b = s[blocked];
  b.set_scope("local");
  b.compute_at(out, task);
  auto bx = b.op_axis();  // batch..., i, panel, lane
  std::vector<ir::IterVar> inner(bx.begin() + lead, bx.end());
  if (sweep) {
    auto [rows, ri] = b.split(inner[0], mr);
    auto [kc, kr] = b.split(b.reduce_axis(0), pc);
    auto [ko, ki] = b.split(kr, ku);
    b.reorder({kc, rows, ko, ki, ri, inner[1], inner[2]});
    b.partial_sums(rows);
    if (unroll_k) b.unroll(ki);
    inner[0] = ri;
  } else if (chunks) {
    auto [kc, kr] = b.split(b.reduce_axis(0), pc);
    auto [ko, ki] = b.split(kr, ku);
    b.reorder({kc, ko, ki, inner[0], inner[1], inner[2]});
    b.partial_sums(kc);
    if (unroll_k) b.unroll(ki);
  } else {
    auto [ko, ki] = b.split(b.reduce_axis(0), ku);
    b.reorder({ko, ki, inner[0], inner[1], inner[2]});
    if (unroll_k) b.unroll(ki);
  }
  b.unroll(inner[0]);
  b.unroll(inner[1]);
  b.vectorize(inner[2]);

  if (wpack.defined() && wpack.op().as<te::ComputeOpNode>()) {
    Stage p = s[wpack];
    p.compute_root();
    fuse_parallel(p, {p.op_axis(0)});
  }
}

namespace {

// What schedule_matmul_cpu's knobs chose.
struct MatmulTile {
  int64_t mr = 1, nr = 1, ku = 1;  // register tile rows and columns; reduction steps unrolled
  int64_t kc = 0;                   // K chunk swept over a task's register tiles; 0: none
  bool panels_outer = false;        // tile loops: column panels outside row tiles (or tasks)
};

// The operand read along the product's columns (its load's last index is the output's last
// axis), B of A x B, when it is a [..., K, N] input of the kernel: not a 1-D vector, not computed
// by a fused producer. Undefined otherwise.
te::Tensor column_input(const te::Tensor& mm) {
  const auto* c = mm.op().as<te::ComputeOpNode>();
  const ir::Var& j = c->axis.back()->var;
  te::Tensor found;
  ir::post_order_visit(c->body[0], [&](const ir::Expr& e) {
    const auto* load = e.as<ir::ProducerLoadNode>();
    if (!load || load->indices.size() < 2 || !load->indices.back().same_as(j)) return;
    te::Tensor t = te::Tensor::from_producer(load->producer);
    if (t.op().as<te::PlaceholderOpNode>()) found = t;
  });
  return found;
}

// Candidates of tile_kc: 0 (no chunks) and, for each size 64..512, the largest divisor of K at
// most that size when it is at least half of it and less than K.
std::vector<int64_t> k_chunks(int64_t k) {
  std::vector<int64_t> chunks = {0};
  for (int64_t cap = 64; cap <= 512; cap *= 2) {
    int64_t d = largest_divisor(k, cap);
    if (2 * d >= cap && d < k && d != chunks.back()) chunks.push_back(d);
  }
  return chunks;
}

// B [..., K, N] copied at the root into column panels [..., N/nr, K, nr], which `reader` then
// loads: a k step of the register tile reads one contiguous nr-wide row, and successive k are
// nr*4 bytes apart instead of N*4 (at N = 1024, 4 KiB: every row of a panel in the same few
// cache sets). The copy is parallel over panels and vectorized along them.
void pack_columns(Schedule& s, const te::Tensor& b, const te::Tensor& reader, int64_t nr, int64_t lanes) {
  const size_t lead = b.shape().size() - 2;
  const ir::Expr w(static_cast<int>(nr));
  std::vector<int64_t> shape(b.shape().begin(), b.shape().begin() + lead);
  shape.insert(shape.end(), {b.shape().back() / nr, b.shape()[lead], nr});
  Schedule::Layout panels{
      shape,
      [&](const std::vector<ir::Var>& v) {
        std::vector<ir::Expr> i(v.begin(), v.begin() + lead);
        i.insert(i.end(), {v[lead + 1], v[lead] * w + v[lead + 2]});
        return i;
      },
      [&](const std::vector<ir::Expr>& i) {
        std::vector<ir::Expr> p(i.begin(), i.begin() + lead);
        p.insert(p.end(), {i[lead + 1] / w, i[lead], i[lead + 1] % w});
        return p;
      }};
  Stage st = s[s.cache_read(b, "global", {reader}, panels)];
  auto ax = st.op_axis();
  vectorize_innermost(st, lanes);
  fuse_parallel(st, std::vector<ir::IterVar>(ax.begin(), ax.begin() + lead + 1));
}

// One task per register tile: the tile loops (rows outer, or panels outer) fuse into the
// parallel loop and the core sums its whole reduction in registers at each.
void schedule_matmul_tiles(Schedule& s, const te::Tensor& tiled, const te::Tensor& core, const MatmulTile& t) {
  int nd = tiled.ndim();
  Stage out = s[tiled];
  auto ax = out.op_axis();
  std::vector<ir::IterVar> outer(ax.begin(), ax.end() - (nd >= 2 ? 2 : 1));
  auto [jo, ji] = out.split(ax.back(), t.nr);
  if (nd >= 2) {
    auto [io, ii] = out.split(ax[nd - 2], t.mr);
    if (t.panels_outer) outer.insert(outer.end(), {jo, io});
    else outer.insert(outer.end(), {io, jo});
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
  auto [ko, ki] = c.split(c.reduce_axis(0), t.ku);
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

// K chunks (tile_kc): a task is a row strip [mr, N] (or, panels outer, a column panel [M, nr])
// whose block the core accumulates in a local buffer one chunk of K at a time, sweeping the
// chunk over all the task's register tiles before the next: the operand slice the tiles share
// (A's strip or B's panel, kc rows) stays in L1/L2 across them instead of streaming from L3 per
// tile. Each tile's chunk sums from zero in registers and is added to the block (partial_sums).
void schedule_matmul_k_chunks(Schedule& s, const te::Tensor& tiled, const te::Tensor& core, const MatmulTile& t) {
  int nd = tiled.ndim();
  Stage out = s[tiled];
  auto ax = out.op_axis();
  std::vector<ir::IterVar> task(ax.begin(), ax.end() - 2);
  auto [jo, ji] = out.split(ax[nd - 1], t.nr);
  auto [io, ii] = out.split(ax[nd - 2], t.mr);
  task.push_back(t.panels_outer ? jo : io);
  std::vector<ir::IterVar> order = task;
  order.insert(order.end(), {t.panels_outer ? io : jo, ii, ji});
  out.reorder(order);
  out.unroll(ii);
  out.vectorize(ji);
  ir::IterVar task_at = fuse_parallel(out, task);

  Stage c = s[core];
  c.compute_at(out, task_at);
  auto cx = c.op_axis();
  ir::IterVar ci = cx[nd - 2], cj = cx[nd - 1], sweep;
  if (t.panels_outer) std::tie(sweep, ci) = c.split(ci, t.mr);
  else std::tie(sweep, cj) = c.split(cj, t.nr);
  auto [kco, kr] = c.split(c.reduce_axis(0), t.kc);
  auto [ko, ki] = c.split(kr, t.ku);
  std::vector<ir::IterVar> corder(cx.begin(), cx.end() - 2);
  corder.insert(corder.end(), {kco, sweep, ko, ki, ci, cj});
  c.reorder(corder);
  c.partial_sums(sweep);
  c.unroll(ki);
  c.unroll(ci);
  c.vectorize(cj);
}

}  // namespace

void schedule_matmul_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& mm, const Target& target, Config& cfg) {
  const int64_t lanes = target.lanes(32);
  int nd = mm.ndim();
  int64_t jext = mm.shape().back(), k = reduce_extent(mm);
  MatmulTile t;
  // The register block of the target (gemm_blocking.h) for whole vectors that divide N; the
  // strategy padded the rows (mm is then "<name>.acc", of iext >= M rows) to its mr.
  int64_t iext = nd >= 2 ? mm.shape()[nd - 2] : 1, m = nd >= 2 ? tiled.shape()[nd - 2] : 1;
  RegisterBlock rb = matmul_register_block(target, m, jext);
  int64_t pj = jext % lanes == 0 ? rb.nv * lanes : vector_width(jext, lanes);
  t.nr = cfg.define_split("tile_j", jext, 2, {jext / pj, pj}, lanes * max_tile_vectors(target))[1];
  if (nd >= 2) {
    int64_t pi = largest_divisor(iext, rb.mr);
    t.mr = cfg.define_split("tile_i", iext, 2, {iext / pi, pi}, max_tile_rows(target, 1))[1];
  }
  int64_t pk = largest_divisor(k, 4);
  t.ku = cfg.define_split("tile_k", k, 2, {k / pk, pk}, 16)[1];
  // The cache-level choices (gemm_blocking.h): B packed when a tile's K x nr panel exceeds half
  // of L1 and more than one row tile reads it.
  te::Tensor b = nd >= 2 ? column_input(mm) : te::Tensor();
  bool pack_b = b.defined() && cfg.define_knob("pack_b", {0, 1}, pack_pays(target, k, t.nr) && iext > t.mr) == 1;
  if (nd >= 2) {
    t.kc = cfg.define_knob("tile_kc", k_chunks(k), 0);
    // Column panels outside row tiles when B is packed (BLIS's loop order: a packed panel is
    // reused by every row tile before the next is read; rows outside, every thread streams all
    // of B per row tile). Measured (bench_ops, 2 threads, Zen 4), SGEMM GFLOPS rows -> panels
    // outer: AVX-512 code 256 155 -> 220, 512 188 -> 221, 1024 203 -> 216; AVX2 code 256 226 ->
    // 223, 512 181 -> 221, 1024 198 -> 215; bert_mini's 128x256x256 matmul 191 -> 223.
    t.panels_outer = cfg.define_knob("order", {0, 1}, pack_b ? 1 : 0) == 1;
  }

  te::Tensor core = mm;
  if (mm.same_as(tiled)) {
    core = s.cache_write(mm, "local");
  } else {
    s[mm].set_scope("local");
  }
  if (pack_b) pack_columns(s, b, core, t.nr, lanes);
  if (t.kc > 0) schedule_matmul_k_chunks(s, tiled, core, t);
  else schedule_matmul_tiles(s, tiled, core, t);
}

}  // namespace kiln::schedule
