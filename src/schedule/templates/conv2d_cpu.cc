#include "schedule/templates/conv2d_cpu.h"

#include <algorithm>
#include <string>

#include "schedule/templates/anchor_cpu.h"
#include "schedule/templates/register_tile.h"
#include "kiln/support/error.h"
#include "kiln/te/ops/nn_conv.h"

namespace kiln::schedule {

// The knobs both conv templates share: the register tile (rows x columns x channel blocks) and
// the order of the reduction loops around it.
struct ConvTile {
  int64_t ohr = 1, owr = 1, ocp = 1;
  bool window_outer = false, unroll_kw = false;
};

// The default register tile of a conv: `oc_blocks` weight vectors (channel blocks) by tile_oh x
// tile_ow broadcast inputs among the divisors of the output, ranked by the target's register
// model (register_tile.h) after two conv-specific preferences: a tile whose write-out
// vectorizes (vectorized_write_out: scalar stores of the transposed tile measured up to 15%
// slower on AVX-512), and single-row tiles (one contiguous input row per tap) unless rows
// raise the model's efficiency.
struct ConvTileChoice {
  int64_t ocp = 1, ohr = 1, owr = 1;
};

// Rough cycles per output element of a tile whose write-out transposes it: the FMAs (`reduce`
// products an element, `lanes` at a time, at the tile's model efficiency, stretched by the
// columns an overhanging last tile computes in vain) and the write-out (about 2 cycles an
// element as scalar stores, 0.6 vectorized). Calibrated on squeezenet's stem (3x3 s2 3->64,
// 111 columns; 1 thread, Zen 4 AVX-512): 3 columns x 4 blocks, scalar stores, 3.8 cycles an
// element (1.15 ms), 8 columns x 1 block overhanging by one, vectorized, 2.3 (0.69 ms).
double transposed_tile_cycles(const Target& target, int64_t lanes, int64_t reduce, int64_t ow, const ConvTileChoice& c,
                              bool vec_out) {
  double eff = tile_efficiency(target, {c.ocp, c.ohr * c.owr});
  if (eff <= 0) return 1e30;
  double computed = double((ow + c.owr - 1) / c.owr * c.owr) / double(ow);
  double fma = double(reduce) / double(lanes * target.facts.fma_per_cycle) / eff * computed;
  return fma + (vec_out ? 0.6 : 2.0);
}

// `overhanging`: column counts allowed that do not divide ow (tile_ow's overhanging candidates).
// A tile of them is the default only where the divisors of ow leave the write-out scalar and
// transposed_tile_cycles says the wasted columns cost less than the scalar stores (reduce > 0:
// the write-out transposes; a short reduction, as a stem's, pays for the write-out the most).
ConvTileChoice default_conv_tile(const Target& target, int64_t nblk, int64_t co, int64_t oh, int64_t ow,
                                 int64_t max_owr, int64_t max_ohr, int64_t reduce,
                                 const std::vector<int64_t>& overhanging) {
  auto best_of = [&](const std::vector<int64_t>& widths) {
    ConvTileChoice best;
    std::vector<double> best_rank;
    for (int64_t ocp : {1, 2, 4}) {
      if (nblk % ocp != 0) continue;
      for (int64_t ohr = 1; ohr <= (oh > 0 ? max_ohr : 1); ++ohr) {
        if (oh > 0 && oh % ohr != 0) continue;
        for (int64_t owr : widths) {
          RegisterTile t{ocp, ohr * owr};
          std::vector<double> model = tile_rank(target, t);
          std::vector<double> rank = {vectorized_write_out(owr, co) ? 0.0 : 1.0, model[0], double(ohr)};
          rank.insert(rank.end(), model.begin() + 1, model.end());
          if (best_rank.empty() || rank < best_rank) best_rank = rank, best = {ocp, ohr, owr};
        }
      }
    }
    return best;
  };
  std::vector<int64_t> divisors;
  for (int64_t owr = 1; owr <= max_owr; ++owr)
    if (ow % owr == 0) divisors.push_back(owr);
  ConvTileChoice exact = best_of(divisors);
  if (reduce <= 0 || overhanging.empty() || vectorized_write_out(exact.owr, co)) return exact;
  ConvTileChoice over = best_of(overhanging);
  return transposed_tile_cycles(target, co, reduce, ow, over, true) <
                 transposed_tile_cycles(target, co, reduce, ow, exact, false)
             ? over
             : exact;
}

// nblk: output-channel blocks of the target's lanes; oh is 0 for a 1-d conv (no row knob).
// reduce: products per output element when the write-out transposes the tile (NCHW output),
// else 0 (no overhanging column tiles).
ConvTile define_conv_tile(Config& cfg, const Target& target, int64_t nblk, int64_t co, int64_t oh, int64_t ow,
                          int64_t reduce) {
  ConvTile t;
  // The search spans tiles up to a register file of broadcasts (columns) and 4 rows; the default
  // is the register model's. Measured (resnet18, 2 threads, Zen 4): on AVX2 code the previous
  // defaults of 2 blocks x 8 columns (19 registers of 16) ran 2-3x slower than the tuner's best
  // tiles of 7 to 14 accumulators; on AVX-512 (Xeon) 2 x 8 measured best of its neighbours
  // (7x7 conv 1.61 ms vs 1.72 for 1 x 16).
  const int64_t max_owr = target.facts.vector_registers - 2, max_ohr = 4;
  // Widths without a vectorizable divisor (squeezenet's 111, 55, 27, 13) may also take column
  // tiles of a vectorizable width that overhang the row.
  std::vector<int64_t> overhanging;
  if (reduce > 0)
    for (int64_t w = 2; w <= std::min(max_owr, co); w *= 2)
      if (vectorized_write_out(w, co) && ow % w != 0) overhanging.push_back(w);
  ConvTileChoice d = default_conv_tile(target, nblk, co, oh, ow, max_owr, max_ohr, reduce, overhanging);
  t.owr = cfg.define_split("tile_ow", ow, 2, {(ow + d.owr - 1) / d.owr, d.owr}, max_owr, overhanging)[1];
  if (oh > 0) t.ohr = cfg.define_split("tile_oh", oh, 2, {oh / d.ohr, d.ohr}, max_ohr)[1];
  t.ocp = cfg.define_knob("oc_blocks", {1, 2, 4}, d.ocp);
  while (nblk % t.ocp != 0) t.ocp /= 2;  // a choice tuned for another shape: the largest that divides
  t.window_outer = cfg.define_knob("reduce_order", {0, 1}, 0) == 1;
  t.unroll_kw = cfg.define_knob("unroll_kw", {0, 1}, 0) == 1;
  return t;
}

// Orders the reduction loops of a blocked stage: input channels outside the kernel window
// (reduce_order 0) or inside it (1), and unrolls the innermost window axis when asked.
std::vector<ir::IterVar> order_reduction(Stage& st, const ConvTile& t, size_t channel_axes) {
  std::vector<ir::IterVar> r = st.reduce_axis();
  std::vector<ir::IterVar> ch(r.begin(), r.begin() + channel_axes), win(r.begin() + channel_axes, r.end());
  if (t.unroll_kw && !win.empty()) st.unroll(win.back());
  std::vector<ir::IterVar> out = t.window_outer ? win : ch;
  const auto& in = t.window_outer ? ch : win;
  out.insert(out.end(), in.begin(), in.end());
  return out;
}

// The tile_ic > 1 structure of schedule_conv_cpu (2-d only): parallel over (image, channel
// blocks); the blocked stage holds the block's whole output plane and loops input-channel chunk
// > row tiles > column tiles > the chunk's channels and window > the register tile.
ir::IterVar schedule_conv_ic_blocked(Schedule& s, const te::Tensor& tiled, const te::Tensor& blocked, const ConvTile& t,
                                     int64_t ci, bool vec_out) {
  int64_t co = blocked.shape().back();
  Stage out = s[tiled];
  auto ax = out.op_axis();  // n, c, h, w
  auto [oco, oci] = out.split(ax[1], co * t.ocp);
  auto [owo, owi] = out.split(ax[3], t.owr);
  out.reorder({ax[0], oco, ax[2], owo, oci, owi});
  if (vec_out) out.vectorize(owi);
  else out.unroll(owi);
  ir::IterVar task = fuse_parallel(out, {ax[0], oco});

  Stage b = s[blocked];
  b.set_scope("local");
  b.compute_at(out, task);
  auto bx = b.op_axis();  // n, block, h, w, lane
  auto r = b.reduce_axis();  // rc, ry, rx
  auto [rco, rci] = b.split(r[0], ci);
  auto [bho, bhi] = b.split(bx[2], t.ohr);
  auto [bwo, bwi] = b.split(bx[3], t.owr);
  std::vector<ir::IterVar> order = {bx[0], rco, bho, bwo};
  if (t.window_outer) order.insert(order.end(), {r[1], r[2], rci});
  else order.insert(order.end(), {rci, r[1], r[2]});
  order.insert(order.end(), {bx[1], bhi, bwi, bx[4]});
  b.reorder(order);
  if (t.unroll_kw) b.unroll(r[2]);
  // Each chunk's sum starts from zero in registers and is added to the plane at the end: see
  // sum_chunk_channels.
  b.partial_sums(bwo);
  b.unroll(bx[1]);
  b.unroll(bhi);
  b.unroll(bwi);
  b.vectorize(bx[4]);
  return task;
}

bool vectorized_write_out(int64_t columns, int64_t lanes) {
  return columns >= 4 && columns * 2 >= lanes && columns <= lanes && (columns & (columns - 1)) == 0;
}

// Channels per partial sum of the register tile, or 0 for one running sum. A float running sum
// of n products gathers rounding error in proportion to n (about sqrt(n) for random signs);
// summed in chunks of k products, each from zero, as k + n/k. Measured, max error vs a double
// reference on a 1x1 conv with 4096 input channels: one running sum 4.2e-6, chunks of 32
// 8.1e-7, of 64 5.9e-7, ONNX Runtime 5.1e-7; on inception_v3 (94 convs, rms output error vs
// PyTorch float64): one sum 7.8e-5, chunks of >= 64 products 5.0e-5, >= 32 4.2e-5, >= 16
// 3.7e-5, ONNX Runtime 5.2e-5. A chunk costs a zeroing and an add per accumulator; >= 32
// products (1x1: 32 channels, 3x3: 4) measured within noise of one sum on resnet18 (1 thread).
int64_t sum_chunk_channels(int64_t cg, int64_t taps) {
  constexpr int64_t kChunk = 32;
  if (cg * taps < 4 * kChunk) return 0;
  for (int64_t pc = (kChunk + taps - 1) / taps; pc <= cg / 2; ++pc)
    if (cg % pc == 0) return pc;
  return 0;
}

void schedule_conv_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target, Config& cfg) {
  const int64_t lanes = target.lanes(32);
  te::Tensor blocked = input_with_suffix(conv, te::ops::kBlockedSuffix);
  KILN_CHECK(blocked.defined()) << "schedule_conv_cpu: '" << conv.name() << "' is not a conv_nd result";
  KILN_CHECK(tiled.shape() == conv.shape()) << "schedule_conv_cpu: the tiled stage must have the conv's shape";
  te::Tensor wpack = input_with_suffix(blocked, te::ops::kPackSuffix);
  te::Tensor pad = input_with_suffix(blocked, te::ops::kPadSuffix);
  int d = conv.ndim() - 2;
  int64_t co = blocked.shape().back(), nblk = blocked.shape()[1], ow = conv.shape().back();
  int64_t oh = d >= 2 ? conv.shape()[d] : 0;
  const auto* bop = blocked.op().as<te::ComputeOpNode>();
  int64_t cg = ir::as_const_int(bop->reduce_axis[0]->dom.extent).value_or(1), taps = 1;
  for (size_t i = 1; i < bop->reduce_axis.size(); ++i) taps *= ir::as_const_int(bop->reduce_axis[i]->dom.extent).value_or(1);
  ConvTile t = define_conv_tile(cfg, target, nblk, co, oh, ow, cg * taps);
  // The write-out transposes the tile (channels in lanes -> columns in lanes). Vectorized over a
  // power of two of columns from half a register to a whole one, LLVM does it with shuffles and
  // stores whole vectors; measured (1 thread, AVX-512: 8 or 16 columns) resnet18's 7x7 conv 1.86
  // -> 1.66 ms, layer1 3x3 1.47 -> 1.30, mobilenet's 1x1 16->96 at 112x112 0.66 -> 0.55. Other
  // widths stay scalar stores (vectorized, they were slower).
  int64_t vec_out = cfg.define_knob("vec_out", {0, 1}, vectorized_write_out(t.owr, co) ? 1 : 0);
  // Input-channel blocks [C/ci, ci]: with more than one, a task computes a whole channel block's
  // output plane, chunk by chunk of ci input channels, in a local buffer (the plane of a 7x7
  // layer is 6 KiB): each weight chunk streamed from L3 then feeds every row at once, instead
  // of the first row alone. The default uses chunks of 32 channels on planes of at most 28x28
  // with a long reduction, when that leaves at least 8 tasks. Measured (1 thread, in resnet18):
  // layer4 3x3 convs 2.14 -> 1.75 ms, layer3 1.70 -> 1.55, the stride-2 ones 0.92 -> 0.80; on
  // 56x56 planes it lost 5-9%, so those keep row tiles.
  bool plane_fits = d == 2 && oh * ow <= 28 * 28 && cg * taps >= 256 && cg >= 64 &&
                    conv.shape()[0] * (nblk / t.ocp) >= 4 * target.facts.cores;
  int64_t ci = plane_fits ? largest_divisor(cg, 32) : cg;
  int64_t ic_chunks = d == 2 ? cfg.define_split("tile_ic", cg, 2, {cg / ci, ci}, 0)[0] : 1;
  // The padded input: computed whole at the root before the conv (one pass over memory, parallel
  // over channels), or by each parallel task for the rows it reads (no pass over memory, but
  // rows shared by neighbouring tasks, and every channel group's task, pad them again).
  // Measured (2 threads, resnet18's layer1 3x3 conv): at the root 0.73 ms, in the task 0.80.
  const bool pad_in_task = pad.defined() && cfg.define_knob("pad_at", {0, 1}, 0) == 1;

  if (!conv.same_as(tiled)) s[conv].compute_inline();
  if (ic_chunks > 1) {
    ir::IterVar task = schedule_conv_ic_blocked(s, tiled, blocked, t, cg / ic_chunks, vec_out != 0);
    compute_root_parallel(s, wpack, 1);
    place_pad(s, pad, s[tiled], task, !pad_in_task, lanes);
    return;
  }
  Stage out = s[tiled];
  auto ax = out.op_axis();  // n, c, spatial...
  auto [oco, oci] = out.split(ax[1], co * t.ocp);
  auto [owo, owi] = out.split(ax.back(), t.owr);
  std::vector<ir::IterVar> outer = {ax[0], oco};
  for (int i = 0; i + 2 < d; ++i) outer.push_back(ax[2 + i]);
  std::vector<ir::IterVar> order = outer;
  ir::IterVar ohi;
  if (d >= 2) {
    auto [oho, ohi_] = out.split(ax[d], t.ohr);
    ohi = ohi_;
    outer.push_back(oho);
    order.push_back(oho);
  }
  // The parallel tasks' order: channel blocks outside rows (0: a block's weights stay in cache
  // across its rows; the input is read once per block) or rows outside channel blocks (1: a
  // row's input stays in L1 across the blocks; all the weights are read once per row). Default
  // 1 when the weights fit half of L2. Measured (1 thread, Zen 4 AVX-512): mobilenet_v2 10.8 ->
  // 9.0 ms (its 1x1 16->96 at 112x112 1.14 -> 0.80, 24->144 at 56x56 0.50 -> 0.36, the stem
  // 0.52 -> 0.40); resnet18 and efficientnet_b0 within noise.
  if (d == 2) {
    int64_t weight_bytes = nblk * co * cg * taps * conv.dtype().bytes();
    if (cfg.define_knob("rows_outer", {0, 1}, weight_bytes * 2 <= target.facts.l2_bytes ? 1 : 0) == 1) {
      std::swap(order[1], order[2]);
      std::swap(outer[1], outer[2]);
    }
  }
  order.push_back(owo);
  if (ohi.defined()) order.push_back(ohi);
  order.push_back(oci);
  order.push_back(owi);
  out.reorder(order);
  if (vec_out) out.vectorize(owi);
  else out.unroll(owi);
  ir::IterVar task = fuse_parallel(out, outer);

  Stage b = s[blocked];
  b.set_scope("local");
  b.compute_at(out, owo);
  auto bx = b.op_axis();  // n, block, o..., lane: inside the tile, block/rows/columns span it
  std::vector<ir::IterVar> border = {bx[0]};
  for (int i = 0; i + 2 < d; ++i) border.push_back(bx[2 + i]);
  std::vector<ir::IterVar> red = order_reduction(b, t, 1);
  if (int64_t pc = sum_chunk_channels(cg, taps)) {
    ir::IterVar rc = b.reduce_axis()[0];
    auto [rco, rci] = b.split(rc, pc);
    std::replace_if(red.begin(), red.end(), [&](const ir::IterVar& v) { return v.same_as(rc); }, rci);
    red.insert(red.begin(), rco);
    b.partial_sums(rco);
  }
  border.insert(border.end(), red.begin(), red.end());
  border.push_back(bx[1]);
  if (d >= 2) border.push_back(bx[d]);
  border.push_back(bx[1 + d]);
  border.push_back(bx.back());
  b.reorder(border);
  b.unroll(bx[1]);
  if (d >= 2) b.unroll(bx[d]);
  b.unroll(bx[1 + d]);
  b.vectorize(bx.back());

  compute_root_parallel(s, wpack, 1);
  place_pad(s, pad, out, task, !pad_in_task, lanes);
}

// Whether the register tile, with the window's kx loop unrolled around it as LLVM does by
// itself, holds more values than the register file: the accumulators, the weight vectors, and
// the input broadcasts LLVM then shares among the taps of a row ((owr - 1) x stride + kw per
// row, each loaded once per channel). resnet18's 3 x 3 512 -> 512 conv at 7 x 7 for AVX2 (7
// accumulators, 1 weight, 9 broadcasts: 17 of 16 registers) had 154 stack accesses among its
// 168 FMAs unrolled, 6 (the function's own) rolled; resnet18's NCHW[8]c convs summed 26.2 ->
// 21.4 ms, the whole model 58.3 -> 54.2 (one thread, Zen 3, medians of 10 and 6 processes),
// mobilenet_v2 and squeezenet1_1 within the noise. AVX-512's 32 registers hold the same tiles
// unrolled, which stay as they were tuned.
bool unrolled_window_spills(const Target& target, const ConvTile& t, const te::Tensor& conv,
                            const std::vector<ir::IterVar>& reduce) {
  const int64_t kw = ir::as_const_int(reduce[2]->dom.extent).value_or(1);
  if (kw <= 1) return false;
  const int64_t ow = conv.shape()[3];
  const std::vector<int64_t>& in = conv.op().input_tensors()[0].shape();  // n, c/x, ih, iw, x (padded)
  const int64_t stride = ow > 1 ? std::max<int64_t>(1, (in[3] - kw) / (ow - 1)) : 1;
  const int64_t broadcasts = t.ohr * std::min((t.owr - 1) * stride + kw, t.owr * kw);
  return t.ocp * t.ohr * t.owr + t.ocp + broadcasts > target.facts.vector_registers;
}

void schedule_conv_nchwc_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target,
                             Config& cfg) {
  KILN_CHECK(conv.ndim() == 5 && tiled.shape() == conv.shape()) << "schedule_conv_nchwc_cpu: not a blocked conv";
  te::Tensor pad = input_with_suffix(conv, te::ops::kPadSuffix);
  int64_t nblk = conv.shape()[1], oh = conv.shape()[2], ow = conv.shape()[3], co = conv.shape()[4];
  ConvTile t = define_conv_tile(cfg, target, nblk, co, oh, ow, 0);

  te::Tensor core = conv;
  if (conv.same_as(tiled)) {
    core = s.cache_write(conv, "local");
  } else {
    s[conv].set_scope("local");
  }
  Stage out = s[tiled];
  auto ax = out.op_axis();  // n, block, oh, ow, lane
  auto [bo, bi] = out.split(ax[1], t.ocp);
  auto [oho, ohi] = out.split(ax[2], t.ohr);
  auto [owo, owi] = out.split(ax[3], t.owr);
  out.reorder({ax[0], bo, oho, owo, ohi, bi, owi, ax[4]});
  out.unroll(bi);
  out.unroll(owi);
  out.vectorize(ax[4]);
  fuse_parallel(out, {ax[0], bo, oho});

  Stage c = s[core];
  c.compute_at(out, owo);
  auto cx = c.op_axis();  // n, block, oh, ow, lane
  // Reduce axes: channel blocks, ry, rx, channel lanes. The channel lanes stay innermost of the
  // reduction (one broadcast per lane); reduce_order moves the block loop inside the window.
  auto r = c.reduce_axis();
  if (t.unroll_kw) c.unroll(r[2]);
  std::vector<ir::IterVar> order = {cx[0]};
  // Long reductions sum in chunks of channel blocks, each from zero (sum_chunk_channels: less
  // rounding error; inception_v3's worst error was 1.41x kiln check's tolerance with one running
  // sum per output, 0.85x in NCHW's chunks).
  const int64_t cb = ir::as_const_int(r[0]->dom.extent).value_or(1), ci = ir::as_const_int(r[3]->dom.extent).value_or(1);
  const int64_t taps = ir::as_const_int(r[1]->dom.extent).value_or(1) * ir::as_const_int(r[2]->dom.extent).value_or(1);
  ir::IterVar rblk = r[0];
  if (int64_t pc = sum_chunk_channels(cb * ci, taps)) {
    int64_t blocks = 1;
    while (blocks < cb && (cb % blocks != 0 || blocks * ci < pc)) ++blocks;
    if (blocks < cb) {
      auto [chunk, within] = c.split(r[0], blocks);
      order.push_back(chunk);
      rblk = within;
    }
  }
  if (t.window_outer) order.insert(order.end(), {r[1], r[2], rblk, r[3]});
  else order.insert(order.end(), {rblk, r[1], r[2], r[3]});
  order.insert(order.end(), {cx[1], cx[2], cx[3], cx[4]});
  c.reorder(order);
  if (!t.unroll_kw && unrolled_window_spills(target, t, conv, r)) keep_rolled(c, {r[1], r[2]});
  if (!rblk.same_as(r[0])) c.partial_sums(order[1]);
  c.unroll(cx[1]);
  c.unroll(cx[2]);
  c.unroll(cx[3]);
  c.vectorize(cx[4]);
  // The padded input at the root (0) or not made (1: loads under the bounds test); see the header.
  if (pad.defined() && cfg.define_knob("pad_at", {0, 1}, 0) == 1) s[pad].compute_inline();
  else compute_root_parallel(s, pad, target.lanes(32));
}

}  // namespace kiln::schedule
