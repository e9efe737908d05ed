#include "schedule/templates/matmul_tensorcore_gpu.h"

#include <algorithm>
#include <array>

#include "kiln/schedule/mma_intrin.h"
#include "schedule/templates/generic_gpu.h"
#include "schedule/templates/matmul_gpu.h"
#include "kiln/support/error.h"

namespace kiln::schedule {
namespace {

bool is_var(const ir::Expr& e, const ir::IterVar& v) { return e.get() == v->var.get(); }

// The last two indices of a load are (a, b).
bool reads_at(const ir::ProducerLoadNode* l, const ir::IterVar& a, const ir::IterVar& b) {
  const size_t n = l->indices.size();
  return n >= 2 && is_var(l->indices[n - 2], a) && is_var(l->indices[n - 1], b);
}

// Spreads the iterations of `f` over the block's 32 x wn x wm threads (threadIdx.x the lanes of a
// warp, y and z the warps); what is left over runs serially in each thread.
void spread_over_threads(Stage st, const ir::IterVar& f, int64_t wm, int64_t wn) {
  auto [f1, x] = st.split(f, 32);
  auto [f2, y] = st.split(f1, wn);
  auto [serial, z] = st.split(f2, wm);
  st.bind(x, "threadIdx.x");
  st.bind(y, "threadIdx.y");
  st.bind(z, "threadIdx.z");
  (void)serial;
}

// Copies `st` (a shared tile computed at a loop of its reader) with every thread of a
// 32 x wn x wm block, `lanes` neighbouring elements a copy (16 bytes: one cp.async each, or one
// vector load). The tiles' rows are whole vectors: K, N and the slices are multiples of 8.
void fetch(Stage st, int64_t wm, int64_t wn, int64_t lanes) {
  std::vector<ir::IterVar> ax = st.op_axis();
  // The vector split off the row itself: its index stays a ramp (cp.async needs one).
  auto [row, v] = st.split(ax.back(), lanes);
  st.vectorize(v);
  ir::IterVar f = ax[0];
  for (size_t i = 1; i + 1 < ax.size(); ++i) f = st.fuse(f, ax[i]);
  f = ax.size() > 1 ? st.fuse(f, row) : row;
  spread_over_threads(st, f, wm, wn);
}

// Copies `st` into core matrices (Stage::core_matrix_layout) with every thread of the block, 8
// neighbouring elements a copy: the 8 rows of a core matrix by 8 neighbouring lanes, so each
// lane's 16 bytes land beside its neighbour's (rows 16 bytes apart: no bank conflict) and a
// warp reads 64 contiguous bytes of each of 8 rows.
void fetch_core_matrices(Stage st, int64_t warps) {
  std::vector<ir::IterVar> ax = st.op_axis();
  const size_t nd = ax.size();
  auto [ro, ri] = st.split(ax[nd - 2], 8);
  auto [co, v] = st.split(ax[nd - 1], 8);
  std::vector<ir::IterVar> order(ax.begin(), ax.end() - 2);
  for (const ir::IterVar& x : {ro, co, ri, v}) order.push_back(x);
  st.reorder(order);
  st.vectorize(v);
  ir::IterVar f = order[0];
  for (size_t i = 1; i + 1 < order.size(); ++i) f = st.fuse(f, order[i]);
  spread_over_threads(st, f, warps, 1);
  st.core_matrix_layout();
}

// The largest of `wanted` halved while a * b exceeds `limit` (the warps of a block, then the
// tiles of a warp, shrink for a product smaller than the default block).
std::pair<int64_t, int64_t> fit(int64_t a, int64_t b, int64_t unit, int64_t limit) {
  while (a * b * unit > limit && (a > 1 || b > 1)) (b > 1 ? b : a) /= 2;
  return {a, b};
}

}  // namespace

std::optional<TensorIntrin> mma_intrin_for(const te::Tensor& tiled, const te::Tensor& anchor) {
  const auto* c = anchor.op().as<te::ComputeOpNode>();
  if (!c || tiled.op().same_as(anchor.op()) || !c->is_reduction() || c->reduce_axis.size() != 1 || anchor.ndim() < 2 ||
      anchor.dtype() != ir::DataType::f32())
    return std::nullopt;
  const auto* red = c->body[0].as<ir::ReduceNode>();
  const auto* sum = red ? red->combiner->result[0].as<ir::BinaryNode>() : nullptr;
  if (!sum || sum->kind != ir::ExprKind::Add || !ir::is_zero(red->combiner->identity[0]) ||
      !ir::is_const_int(red->condition, 1))
    return std::nullopt;
  const auto* mul = red->source[0].as<ir::BinaryNode>();
  if (!mul || mul->kind != ir::ExprKind::Mul) return std::nullopt;
  const auto* ca = mul->a.as<ir::CastNode>();
  const auto* cb = mul->b.as<ir::CastNode>();
  const auto* la = ca ? ca->value.as<ir::ProducerLoadNode>() : nullptr;
  const auto* lb = cb ? cb->value.as<ir::ProducerLoadNode>() : nullptr;
  if (!la || !lb) return std::nullopt;
  const ir::DataType in = la->dtype;
  if ((in != ir::DataType::f16() && in != ir::DataType::bf16()) || lb->dtype != in) return std::nullopt;
  const size_t nd = c->axis.size();
  const ir::IterVar &i = c->axis[nd - 2], &j = c->axis[nd - 1], &k = c->reduce_axis[0];
  const bool nt = reads_at(lb, j, k), nn = reads_at(lb, k, j);
  if (!reads_at(la, i, k) || !(nt || nn) || te::Tensor::from_producer(la->producer).same_as(te::Tensor::from_producer(lb->producer)))
    return std::nullopt;
  const int64_t m = anchor.shape()[nd - 2], n = anchor.shape()[nd - 1];
  const auto kk = ir::as_const_int(k->dom.extent);
  if (m % 16 || n % 8 || !kk || *kk % 16 || !ir::is_zero(k->dom.min)) return std::nullopt;
  return mma_m16n8k16(in, nn);
}

void schedule_matmul_tensorcore_gpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& anchor, size_t row_axis,
                                    const TensorIntrin& mma, int buffers, const Target& target, Config& cfg) {
  const std::vector<int64_t>& shape = anchor.shape();
  const size_t nd = shape.size();
  const int64_t m = shape[nd - 2], n = shape[nd - 1];
  const int64_t k = *ir::as_const_int(anchor.op().as<te::ComputeOpNode>()->reduce_axis[0]->dom.extent);
  // Defaults: the largest block whose grid still fills the multiprocessors (a small product's
  // few large blocks would leave some idle), each smaller for a smaller product. On an H200
  // (bench/gpu, float16 GEMM 4096, 3 stages):
  //   128 x 256: 2 x 4 warps of 4 x 8 tiles, K slices of 64: 331 to 336 TFLOP/s;
  //   128 x 128: 4 x 2 warps of 2 x 8 tiles, K slices of 64: 311 to 315 (ncu: L2 71% busy;
  //              the larger block reads a quarter fewer operand bytes from it, 57%);
  //   else 64 x 64: 2 x 2 warps of 2 x 4 tiles, K slices of 32: 170.
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < nd; ++d) batch *= shape[d];
  std::pair<int64_t, int64_t> rows0 = fit(2, 2, 16, m), cols0 = fit(2, 4, 8, n);
  int64_t bk0 = std::min<int64_t>(32, k);
  for (const auto& [wm_l, fm_l, wn_l, fn_l] : {std::array<int64_t, 4>{2, 4, 4, 8}, std::array<int64_t, 4>{4, 2, 2, 8}}) {
    const std::pair<int64_t, int64_t> rows = fit(wm_l, fm_l, 16, m), cols = fit(wn_l, fn_l, 8, n);
    if (batch * ceil_div(m, 16 * rows.first * rows.second) * ceil_div(n, 8 * cols.first * cols.second) >=
        target.gpu.multiprocessors) {
      rows0 = rows;
      cols0 = cols;
      if (k >= 64) bk0 = 64;
      break;
    }
  }
  const auto [wm0, fm0] = rows0;
  const auto [wn0, fn0] = cols0;
  // A block no larger than the product: a single block past its end would leave its stores'
  // tile shorter than the warps (the region lowering realizes stops at the end), some warps
  // without rows, and the barriers of the warps' K loop in a branch.
  auto [wm, fm] = fit(cfg.define_knob("warps_m", {1, 2, 4}, wm0), cfg.define_knob("mma_m", {1, 2, 4}, fm0), 16, m);
  auto [wn, fn] = fit(cfg.define_knob("warps_n", {1, 2, 4}, wn0), cfg.define_knob("mma_n", {1, 2, 4, 8}, fn0), 8, n);
  int64_t bk = cfg.define_knob("mma_k", {16, 32, 64}, bk0);
  // Hopper's warpgroup mma (sm_90a, wgmma_m64nNk16): warpgroups of 4 warps, each 64 rows of
  // the block by all its columns, one wgmma a warpgroup and 16-deep K step, operands read from
  // shared memory in core matrices (no fragments in registers). Where M is whole warpgroups:
  // 2 a block where M allows (128 rows), K slices of 64 where K allows. The knobs above then
  // stay unused.
  const bool cuda = target.kind == TargetKind::kCUDA;
  const bool wgmma_fits = m % 64 == 0 && n % 8 == 0;
  // The warpgroups' columns: the largest power of two up to 256 that divides N and still gives
  // a block per multiprocessor (else the largest that divides N), at most wgmma_n.
  const int64_t groups = m % 128 == 0 ? 2 : 1;
  int64_t cols = 8;
  for (int64_t c : {256, 128, 64, 32, 16, 8}) {
    if (n % c) continue;
    if (cols == 8) cols = c;
    if (batch * ceil_div(m, 64 * groups) * (n / c) >= target.gpu.multiprocessors) {
      cols = c;
      break;
    }
  }
  // Knobs only where wgmma can run (sm_90a) or its reference loops print (OpenCL's twin): other
  // CUDA targets' tuners have nothing to choose there.
  const bool wgmma_knobs = !cuda || target.gpu.wgmma();
  if (wgmma_knobs)
    cols = std::min<int64_t>(cols, cfg.define_knob("wgmma_n", {64, 128, 256}, std::max<int64_t>(64, cols)));
  // On by default where it fits: on an H200 (bench/results, 2026-11-27 run 11) the float16
  // GEMM 4096 ran 629 TFLOP/s this way (4 stages, both operands swizzled, each slice's wgmma in
  // flight) against mma.sync's 339 and cuBLAS's 578 in the same run.
  const bool warpgroups = wgmma_knobs && cfg.define_knob("warpgroup_mma", {0, 1}, cuda && wgmma_fits) != 0;
  // Each K slice's wgmma left in flight while the next slice's are issued (wgmma_m64nNk16's
  // in_flight) where the pipeline has 3 or more buffers: one tile fewer loaded ahead. On by
  // default: 629 TFLOP/s against 521 waiting for each slice (wgmma_in_flight=0), both with 4
  // stages; with 3, 533 and 537 (run 11 as above).
  const bool in_flight_knob = wgmma_knobs && cfg.define_knob("wgmma_in_flight", {0, 1}, 1) != 0;
  // Operand tiles stored with wgmma's 128-byte swizzle (K-major ones where a K slice is 128
  // bytes, an N-major B where its columns are whole 128-byte panels), else in core matrices. On
  // by default: 533 TFLOP/s (3 stages, run 11) against 190 with neither swizzled, and 239 with
  // only A swizzled (run 9).
  const bool swizzle_knob = wgmma_knobs && cfg.define_knob("wgmma_swizzle", {0, 1}, 1) != 0;
  if (warpgroups) {
    KILN_USER_CHECK(wgmma_fits) << "matmul_tensorcore_gpu: warpgroup_mma=1, but M = " << m << " is not whole warpgroups of "
                                << "64 rows (or N = " << n << " not whole columns of 8)";
    wm = 4 * groups;
    fm = 1;
    wn = 1;
    fn = cols / 8;
    bk = k % 64 == 0 ? 64 : k % 32 == 0 ? 32 : 16;
  }
  const int64_t bm = 16 * fm * wm, bn = 8 * fn * wn, threads = 32 * wm * wn;
  const bool db = buffers >= 2 && k > bk;
  const bool wgmma_in_flight = warpgroups && db && buffers >= 3 && in_flight_knob;
  const int64_t in_bytes = anchor.op().input_tensors()[0].dtype().bytes();
  // The swizzle's rows are 128 bytes: a K-major tile's K slice, or whole panels of an N-major
  // tile's columns.
  const bool swizzle_k_major = warpgroups && swizzle_knob && bk * in_bytes == 128;
  const bool swizzle_n_major = warpgroups && swizzle_knob && bn * in_bytes % 128 == 0;
  // The operand tiles with their rows padded (below; B's tile is [bk, bn] or [bn, bk]), not
  // for wgmma's core matrices.
  const int64_t pad = warpgroups ? 0 : 16 / in_bytes;
  const int64_t b_tile = std::max(bk * (bn + pad), bn * (bk + pad));
  // The float32 staging tile, written after the K loop, takes the operand tiles' bytes
  // (ir::plan_shared_storage): the block needs the larger of the two. Its rows padded by 8
  // floats where they are whole 128-byte lines: a warp's 16 x 8 stores (mma_store_m16n8) put
  // its eight rows in one bank otherwise, an 8-way conflict on every store (ncu, H200,
  // 2026-11-27 run 9); 32 bytes spread each half warp's four rows over all 32 banks. The float16
  // GEMM 4096 gained 2-3% (632 against 616 TFLOP/s with wgmma in run 12, 342 against 330 with
  // mma.sync in run 10). Narrower rows conflict less, unmeasured.
  const int64_t staging_pad = cfg.define_knob("staging_pad", {0, 8}, bn * 4 % 128 == 0 ? 8 : 0);
  const int64_t shared = std::max((bm * (bk + pad) + b_tile) * in_bytes * (db ? buffers : 1), bm * (bn + staging_pad) * 4);
  // Past the 48 KiB a CUDA block declares statically, its shared memory is dynamic (build_gpu).
  KILN_USER_CHECK(threads <= target.gpu.max_threads_per_block && shared <= target.gpu.max_dynamic_shared_bytes)
      << "matmul_tensorcore_gpu: " << wm << " x " << wn << " warps staging " << shared << " bytes exceeds the target's "
      << target.gpu.max_threads_per_block << " threads or " << target.gpu.max_dynamic_shared_bytes << " shared bytes";

  // The accumulators in the warps' registers; the product's own stage becomes their float32
  // tile of the block in shared memory, which the output reads.
  const std::vector<te::Tensor> operands = anchor.op().input_tensors();
  te::Tensor frag = s.cache_write(anchor, "warp");
  s[anchor].set_scope("shared");
  te::Tensor a_sh = s.cache_read(operands[0], "shared", {frag});
  te::Tensor b_sh = s.cache_read(operands[1], "shared", {frag});

  // The output: batch axes on blockIdx.z, block tiles on blockIdx.y / x, its elements over all
  // threads, neighbouring threads neighbouring columns. Its rows are axis `row_axis` (a conv's
  // output channels), its columns the last; the others are the product's batch axes, in order.
  Stage out = s[tiled];
  std::vector<ir::IterVar> ax = out.op_axis();
  const size_t od = ax.size();
  KILN_CHECK(od == nd && row_axis + 1 < od) << "matmul_tensorcore_gpu: output '" << tiled.op().name()
                                            << "' does not lay out the product's axes";
  std::vector<ir::IterVar> order;
  if (std::optional<ir::IterVar> batch = bind_product_batch(out, row_axis)) order.push_back(*batch);
  auto [bi, ii] = out.split(ax[row_axis], bm);
  auto [bj, jj] = out.split(ax[od - 1], bn);
  for (const ir::IterVar& v : {bi, bj, ii, jj}) order.push_back(v);
  out.reorder(order);
  out.bind(bi, "blockIdx.y");
  out.bind(bj, "blockIdx.x");
  spread_over_threads(out, out.fuse(ii, jj), wm, wn);

  // The block's float32 tile: each warp stores its 16 x 8 tiles (threadIdx.z / y: the warp).
  Stage acc = s[anchor];
  acc.compute_at(out, bj);
  std::vector<ir::IterVar> cax = acc.op_axis();
  auto [wi, ti] = acc.split(cax[nd - 2], 16 * fm);
  auto [fi, i16] = acc.split(ti, 16);
  auto [wj, tj] = acc.split(cax[nd - 1], 8 * fn);
  auto [fj, j8] = acc.split(tj, 8);
  acc.reorder({wi, wj, fi, fj, i16, j8});
  acc.bind(wi, "threadIdx.z");
  acc.bind(wj, "threadIdx.y");
  acc.unroll(fi);
  acc.unroll(fj);
  acc.tensorize(i16, mma_store_m16n8());
  if (staging_pad) acc.pad_rows(staging_pad);

  // Each warp's product, K slice by K slice, 16 deep per mma.
  Stage f = s[frag];
  f.compute_at(acc, wj);
  std::vector<ir::IterVar> fax = f.op_axis();
  auto [gi, g16] = f.split(fax[nd - 2], 16);
  auto [gj, g8] = f.split(fax[nd - 1], warpgroups ? bn : 8);
  auto [ko, kr] = f.split(f.reduce_axis(0), bk);
  auto [km, k16] = f.split(kr, 16);
  f.reorder({ko, km, gi, gj, g16, g8, k16});
  f.unroll(km);
  f.unroll(gi);
  f.unroll(gj);
  const std::vector<te::Tensor> mma_in = mma.decl.op().input_tensors();
  const bool b_kn = mma_in[1].shape()[0] == 16;
  if (warpgroups) {
    f.tensorize(g16, wgmma_m64nNk16(mma_in[0].dtype(), b_kn, bn, wgmma_in_flight));
  } else {
    f.tensorize(g16, mma);
  }

  // Rows padded by 16 bytes: the lanes' fragment loads read eight rows at once (groupID), which
  // a 64- or 128-byte row stride put four to a bank; 16 bytes keeps the cp.async targets aligned.
  // wgmma reads swizzled 128-byte rows or core matrices instead.
  for (const te::Tensor& t : {a_sh, b_sh}) {
    s[t].compute_at(f, ko);
    const bool k_major = t.same_as(a_sh) || !b_kn;
    if (k_major ? swizzle_k_major : swizzle_n_major) {
      fetch(s[t], wm, 1, 8);
      s[t].swizzle_128b_layout();
    } else if (warpgroups) {
      fetch_core_matrices(s[t], wm);
    } else {
      fetch(s[t], wm, wn, pad);
      s[t].pad_rows(pad);
    }
    if (db) s[t].double_buffer(buffers);
  }
}

}  // namespace kiln::schedule
