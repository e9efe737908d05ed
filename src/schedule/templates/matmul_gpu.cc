#include "schedule/templates/matmul_gpu.h"

#include <algorithm>

#include "schedule/templates/cooperative_fetch_gpu.h"
#include "schedule/templates/generic_gpu.h"
#include "schedule/templates/matmul_tensorcore_gpu.h"
#include "kiln/support/error.h"

namespace kiln::schedule {

bool matmul_gpu_applies(const te::Tensor& anchor) {
  const auto* c = anchor.op().as<te::ComputeOpNode>();
  if (!c || !c->is_reduction() || c->reduce_axis.size() != 1 || anchor.ndim() < 2) return false;
  std::vector<te::Tensor> in = anchor.op().input_tensors();
  return in.size() == 2 && in[0].ndim() >= 2 && in[1].ndim() >= 2;
}

std::optional<ir::IterVar> bind_product_batch(Stage out, size_t row_axis) {
  const std::vector<ir::IterVar> ax = out.op_axis();
  std::vector<ir::IterVar> batch_axes;
  for (size_t d = 0; d + 1 < ax.size(); ++d)
    if (d != row_axis) batch_axes.push_back(ax[d]);
  if (batch_axes.empty()) return std::nullopt;
  // Next to each other (a conv's n and oh are not), so that they fuse.
  std::vector<ir::IterVar> front = batch_axes;
  front.push_back(ax[row_axis]);
  front.push_back(ax.back());
  out.reorder(front);
  ir::IterVar batch = batch_axes[0];
  for (size_t d = 1; d < batch_axes.size(); ++d) batch = out.fuse(batch, batch_axes[d]);
  out.bind(batch, "blockIdx.z");
  return batch;
}

te::Tensor product_under(const te::Tensor& anchor) {
  te::Tensor t = anchor;
  for (std::vector<te::Tensor> in = t.op().input_tensors(); !matmul_gpu_applies(t) && in.size() == 1;
       in = t.op().input_tensors())
    t = in[0];
  return matmul_gpu_applies(t) ? t : anchor;
}

namespace {

// Whether the product reads operand `t` along the reduce axis in its innermost index (A [M, K],
// a dense weight [N, K]): its shared tile's threads then read down a column, rows apart.
bool reads_k_innermost(const te::Tensor& anchor, const te::Tensor& t) {
  const auto* c = anchor.op().as<te::ComputeOpNode>();
  const auto* red = c->body[0].as<ir::ReduceNode>();
  const auto* mul = red ? red->source[0].as<ir::BinaryNode>() : nullptr;
  if (!mul) return false;
  for (ir::Expr e : {mul->a, mul->b}) {
    if (const auto* cast = e.as<ir::CastNode>()) e = cast->value;
    const auto* load = e.as<ir::ProducerLoadNode>();
    if (load && te::Tensor::from_producer(load->producer).same_as(t) && !load->indices.empty())
      return load->indices.back().get() == c->reduce_axis[0]->var.get();
  }
  return false;
}

// The product `anchor` is [batch..., M, N]; `tiled` has its rows at axis `row_axis`, its
// columns last and the batch axes elsewhere in the same order (a conv's [n, oc, oh, ow] of a
// product batched over (n, oh)).
void schedule_product_gpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& anchor, size_t row_axis,
                          const Target& target, Config& cfg) {
  KILN_USER_CHECK(matmul_gpu_applies(anchor)) << "matmul_gpu: '" << anchor.op().name()
                                              << "' is not a product of two matrices over one reduce axis";
  const std::vector<int64_t>& shape = anchor.shape();
  const size_t nd = shape.size();
  const int64_t m = shape[nd - 2], n = shape[nd - 1];
  const int64_t k = *ir::as_const_int(anchor.op().as<te::ComputeOpNode>()->reduce_axis[0]->dom.extent);
  // Threads per block (ty x tx), outputs per thread (tm x tn), the K slice staged in shared
  // memory (bk). Defaults: a 16 x 16 block computing a 128 x 64 tile in 8 x 4 register blocks
  // (64 x 64 in 4 x 4 where M < 128), narrower for thin products (a classifier's M = 1, an
  // attention head's N = 64). On the H100, SGEMM 4096: 8 x 4 39.0 TFLOP/s, 4 x 4 33.7, 8 x 8
  // 34.7, 4 x 8 25.6 (bench/results, run 3). Register blocks shrink (rows from 8 to 4 first,
  // then columns, then rows) while the grid has fewer than two blocks per multiprocessor:
  // resnet18's 512-channel 7x7 convs made 56 blocks of 4 x 1 outputs per thread for the H200's
  // 132 SMs, 478 us each (ncu, bench/results).
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < nd; ++d) batch *= shape[d];
  const int64_t ty0 = pow2_at_least(m, 16), tx0 = pow2_at_least(n, 16);
  int64_t tm0 = m >= 8 * ty0 ? 8 : m >= 4 * ty0 ? 4 : 1, tn0 = n >= 4 * tx0 ? 4 : 1;
  auto grid = [&](int64_t rows, int64_t cols) {
    return batch * ceil_div(m, ty0 * rows) * ceil_div(n, tx0 * cols);
  };
  const int64_t enough = 2 * std::max(1, target.gpu.multiprocessors);
  while (grid(tm0, tn0) < enough && (tn0 > 1 || tm0 > 1)) (tm0 > 4 ? tm0 : tn0 > 1 ? tn0 : tm0) /= 2;
  const int64_t ty = cfg.define_knob("threads_m", {1, 2, 4, 8, 16, 32}, ty0);
  const int64_t tx = cfg.define_knob("threads_n", {1, 2, 4, 8, 16, 32}, tx0);
  const int64_t tm = cfg.define_knob("rows_per_thread", {1, 2, 4, 8}, tm0);
  const int64_t tn = cfg.define_knob("cols_per_thread", {1, 2, 4, 8}, tn0);
  const int64_t bk = cfg.define_knob("tile_k", {1, 2, 4, 8, 16, 32}, std::min<int64_t>(16, pow2_at_least(k, 16)));
  // Two halves of each tile, the next K slice loaded while this one computes
  // (ir::inject_double_buffer). On by default where the loads are asynchronous (CUDA sm_80+:
  // cp.async overlaps them with the compute); elsewhere the plain loads stall their threads
  // anyway, and the tuner may still choose it. A single K slice has nothing to overlap (and its
  // loop, of one iteration, is gone after lowering).
  const bool async = target.kind == TargetKind::kCUDA && target.gpu.async_copy();
  const bool double_buffer_knob = cfg.define_knob("double_buffer", {0, 1}, async ? 1 : 0) != 0;
  // Operand tiles copied 16 bytes a thread (vector loads, one cp.async each) where their rows
  // are whole vectors (below): a quarter of the float32 copies' instructions. On an H200, SGEMM
  // 4096 38.7 -> 42.5 TFLOP/s, 0.86x cuBLAS without TF32 (bench/results, 2026-11-27 run 5).
  const bool vector_fetch = cfg.define_knob("vector_fetch", {0, 1}, 1) != 0;
  const bool double_buffer = double_buffer_knob && k > bk;
  // float16 / bfloat16 products over whole tiles can take the tensor cores instead (on by
  // default where the target has mma.sync); the knobs above then stay unused.
  const std::optional<TensorIntrin> mma = mma_intrin_for(tiled, anchor);
  const bool cuda = target.kind == TargetKind::kCUDA;
  const bool tensor_core_default = mma && cuda && target.gpu.mma_m16n8k16();
  // With more buffers, a pipeline that many less one slices deep (cp.async keeps them in flight).
  // Tensor cores take 3 by default (bench/gpu on an H200: the float16 GEMM 4096 1.09x faster
  // than with 2, the 1024 1.04x), 4 where they are Hopper's wgmma (629 TFLOP/s against 533 with
  // 3; mma.sync's 342 and 339 alike: bench/results, 2026-11-27 run 11); float32's 2 and 3
  // measured alike there.
  const int stages0 = tensor_core_default ? (target.gpu.wgmma() ? 4 : 3) : 2;
  const int buffers = static_cast<int>(cfg.define_knob("pipeline_stages", {2, 3, 4}, stages0));
  if (mma) {
    if (cfg.define_knob("tensor_core", {0, 1}, tensor_core_default) != 0) {
      // Other targets print the mma's reference loops (the OpenCL twin of the schedule).
      KILN_USER_CHECK(!cuda || target.gpu.mma_m16n8k16())
          << "matmul_gpu: tensor_core=1, but target '" << target.str() << "' has no mma.sync m16n8k16 (sm_80 and newer)";
      schedule_matmul_tensorcore_gpu(s, tiled, anchor, row_axis, *mma, double_buffer_knob ? buffers : 1, target, cfg);
      return;
    }
  }
  // At most: every tile's rows padded by 16 bytes (below).
  const int64_t elem = anchor.dtype().bytes();
  const int64_t shared = (ty * tm + tx * tn) * (bk + 16 / elem) * elem * (double_buffer ? buffers : 1);
  // Past the 48 KiB a CUDA block declares statically, its shared memory is dynamic (build_gpu).
  KILN_USER_CHECK(ty * tx <= target.gpu.max_threads_per_block && shared <= target.gpu.max_dynamic_shared_bytes)
      << "matmul_gpu: a " << ty << " x " << tx << " block staging " << shared << " bytes exceeds the target's "
      << target.gpu.max_threads_per_block << " threads or " << target.gpu.max_dynamic_shared_bytes << " shared bytes";

  const std::vector<te::Tensor> operands = anchor.op().input_tensors();
  // The accumulator in registers: the anchor itself when an epilogue is fused after it, else
  // a local copy of the output's reduction.
  te::Tensor acc = anchor;
  if (tiled.op().same_as(anchor.op())) acc = s.cache_write(anchor, "local");
  else s[anchor].set_scope("local");
  te::Tensor a_shared = s.cache_read(operands[0], "shared", {acc});
  te::Tensor b_shared = s.cache_read(operands[1], "shared", {acc});

  Stage out = s[tiled];
  std::vector<ir::IterVar> ax = out.op_axis();
  const size_t od = ax.size();
  std::vector<ir::IterVar> order;
  if (std::optional<ir::IterVar> batch = bind_product_batch(out, row_axis)) order.push_back(*batch);
  auto [bi, ii] = out.split(ax[row_axis], ty * tm);
  auto [yi, mi] = out.split(ii, tm);
  auto [bj, jj] = out.split(ax[od - 1], tx * tn);
  auto [xi, ni] = out.split(jj, tn);
  for (const ir::IterVar& v : {bi, bj, yi, xi, mi, ni}) order.push_back(v);
  out.reorder(order);
  out.bind(bi, "blockIdx.y");
  out.bind(bj, "blockIdx.x");
  out.bind(yi, "threadIdx.y");
  out.bind(xi, "threadIdx.x");

  Stage a = s[acc];
  a.compute_at(out, xi);
  std::vector<ir::IterVar> aax = a.op_axis();
  auto [ko, ki] = a.split(a.reduce_axis(0), bk);
  a.reorder({ko, ki, aax[nd - 2], aax.back()});
  a.unroll(ki);
  s[a_shared].compute_at(a, ko);
  s[b_shared].compute_at(a, ko);
  // A tile read down its columns (K innermost) has threads tm or tn rows apart reading at once:
  // with 16 or 32 floats a row, all in one bank. The A tile's rows belong to threadIdx.y, two
  // to a warp: 16 bytes more a row move them to other banks and keep each row 16-byte aligned,
  // so that the unrolled K slice reads four K steps of a row in one vector load (NVRTC:
  // ld.shared.v4, a quarter of the loads). A dense weight's rows belong to threadIdx.x, 16 to
  // a warp tn rows apart: only an odd stride spreads them (one float more: a 2-way conflict;
  // 16 bytes more made an 8-way one, the H100's nt SGEMM 4096 4.50 -> 10.49 ms).
  // A vector copy needs its rows (the tile's: K slices or the block's columns; the operand's, so
  // that the tile's edge ends a vector) whole vectors, 16-byte aligned in shared memory too: not
  // a dense weight's rows, padded by one element. Only a tensor of its own is copied (a conv's
  // operand computed from its input copies element by element).
  for (const auto& [cached, operand] : {std::pair{a_shared, operands[0]}, std::pair{b_shared, operands[1]}}) {
    const bool k_inner = reads_k_innermost(anchor, operand);
    const int64_t lanes = 16 / std::max(1, operand.dtype().bytes());
    const int64_t tile_row = k_inner ? bk : tx * tn;
    const bool vector = vector_fetch && lanes > 1 && operand.op().as<te::PlaceholderOpNode>() &&
                        tile_row % lanes == 0 && operand.shape().back() % lanes == 0 &&
                        !(k_inner && cached.same_as(b_shared));
    cooperative_fetch(s[cached], ty, tx, vector ? lanes : 1);
    if (k_inner) s[cached].pad_rows(cached.same_as(a_shared) ? lanes : 1);
  }
  if (double_buffer) {
    s[a_shared].double_buffer(buffers);
    s[b_shared].double_buffer(buffers);
  }
}

}  // namespace

void schedule_matmul_gpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& anchor, const Target& target,
                         Config& cfg) {
  schedule_product_gpu(s, tiled, anchor, anchor.ndim() - 2, target, cfg);
}

void schedule_conv_gemm_gpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& anchor, const Target& target,
                            Config& cfg) {
  const te::Tensor product = product_under(anchor);
  KILN_USER_CHECK(anchor.ndim() == 4 && tiled.ndim() == 4 && product.ndim() == 4 && !product.same_as(anchor))
      << "conv_gemm_gpu: '" << anchor.op().name() << "' is not a 2-d convolution as te::ops::conv2d_gemm computes it";
  // The transpose [n, oh, oc, ow] -> [n, oc, oh, ow] is index arithmetic of the output's reads.
  if (!anchor.same_as(tiled)) s[anchor].compute_inline();
  schedule_product_gpu(s, tiled, product, 1, target, cfg);
}

}  // namespace kiln::schedule
