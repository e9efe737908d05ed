#include "schedule/templates/winograd_cpu.h"

#include "schedule/templates/anchor_cpu.h"
#include "schedule/templates/conv2d_cpu.h"
#include "schedule/templates/register_tile.h"
#include "kiln/support/error.h"
#include "kiln/te/ops/nn_winograd.h"

namespace kiln::schedule {

std::vector<int64_t> overhanging_widths(int64_t tw, int64_t max_tw) {
  std::vector<int64_t> widths;
  for (int64_t t = 2; t <= std::min(max_tw, tw - 1); ++t)
    if (tw % t != 0) widths.push_back(t);
  return widths;
}

bool define_task_over(Config& cfg, int64_t u_bytes) {
  return cfg.define_knob("task_over", {0, 1}, u_bytes > (int64_t{1} << 20) ? 1 : 0) == 1;
}

ir::IterVar schedule_winograd_write_out(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv,
                                        const te::Tensor& yt, int64_t co, int64_t ocp, int64_t owr, bool by_channels,
                                        bool vec_out) {
  if (!conv.same_as(tiled)) s[conv].compute_inline();
  Stage out = s[tiled];
  auto ax = out.op_axis();  // n, oc, oh, ow
  auto [ob, oci] = out.split(ax[1], co);
  auto [th, hi] = out.split(ax[2], 2);
  auto [owo, owi] = out.split(ax[3], owr);
  ir::IterVar task;
  if (by_channels) {
    auto [obt, obi] = out.split(ob, ocp);
    out.reorder({ax[0], obt, th, obi, owo, hi, oci, owi});
    task = fuse_parallel(out, {ax[0], obt});
  } else {
    out.reorder({ax[0], th, ob, owo, hi, oci, owi});
    task = fuse_parallel(out, {ax[0], th});
  }
  if (vec_out) out.vectorize(owi);
  else out.unroll(owi);

  Stage sy = s[yt];
  sy.set_scope("local");
  sy.compute_at(out, owo);
  auto yx = sy.op_axis();  // n, block, tile row, hi, column, lane
  sy.unroll(yx[3]);
  sy.unroll(yx[4]);
  sy.vectorize(yx[5]);
  return task;
}

WinogradStages winograd_stages(const te::Tensor& conv, const te::Tensor& tiled, const char* what) {
  te::Tensor yt = input_with_suffix(conv, te::ops::kWinogradOutSuffix);
  te::Tensor m = yt.defined() ? input_with_suffix(yt, te::ops::kWinogradGemmSuffix) : te::Tensor();
  te::Tensor v = m.defined() ? input_with_suffix(m, te::ops::kWinogradInSuffix) : te::Tensor();
  KILN_CHECK(v.defined()) << what << ": '" << conv.name() << "' is not a Winograd conv2d";
  KILN_CHECK(tiled.shape() == conv.shape()) << what << ": the tiled stage must have the conv's shape";
  return {yt, m, v, input_with_suffix(v, te::ops::kPadSuffix)};
}

WinogradGemmTile tile_winograd_gemm(Schedule& s, const te::Tensor& m, Stage out, const ir::IterVar& task, int64_t ocp,
                                    int64_t twr) {
  Stage sm = s[m];
  sm.set_scope("local");
  sm.compute_at(out, task);
  auto mx = sm.op_axis();  // n, e, block, tile row, tile column, lane
  auto [obo, obi] = sm.split(mx[2], ocp);
  auto [two, twi] = sm.split(mx[4], twr);
  sm.unroll(obi);
  sm.unroll(twi);
  return {sm, mx[0], mx[1], mx[3], obo, two, obi, twi, mx[5]};
}

void schedule_conv_winograd_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target,
                                Config& cfg) {
  const int64_t lanes = target.lanes(32);
  const auto [yt, m, v, pad] = winograd_stages(conv, tiled, "schedule_conv_winograd_cpu");
  int64_t nblk = m.shape()[2], tw = m.shape()[4], co = m.shape()[5], c = v.shape()[2], ow = conv.shape()[3];

  // The reductions' register tile: oc_blocks weight vectors by tile_tw tiles of a row (one
  // broadcast each), by the target's register model (register_tile.h), its efficiency scaled by
  // the tiles an overhanging last tile computes in vain; of equals, the most accumulators (each
  // broadcast of V, streamed from L2, feeding more weight vectors). Measured (resnet18, AVX2
  // code on Zen 4, tuned): the previous 2 x 7 (17 registers of 16) ran at half the tuner's best,
  // 1 x 14 on layer1 and 1 x 7 on layer3; on AVX-512 (Xeon) 2 x 7 beat 4 x 7 by 6-20%. A row of
  // 7 tiles on AVX2 (resnet50's 14x14 layers, 1 thread, Zen 4): 2 x 4 tiles, one in vain, 1.89
  // ms against 2.50 for 1 x 7.
  const int64_t max_tw = target.facts.vector_registers - 2;
  RegisterTile best;
  std::vector<double> best_rank;
  for (int64_t ocp : {1, 2, 4}) {
    if (nblk % ocp != 0) continue;
    for (int64_t t = 1; t <= std::min(max_tw, tw); ++t) {
      RegisterTile tile{ocp, t};
      if (tile.accumulators() > max_accumulators(target, ocp)) continue;
      double used = double(tw) / double((tw + t - 1) / t * t);
      std::vector<double> rank = {-tile_efficiency(target, tile) * used, -double(tile.accumulators()), -double(t)};
      if (best_rank.empty() || rank < best_rank) best_rank = rank, best = tile;
    }
  }
  int64_t twr = cfg.define_split("tile_tw", tw, 2, {(tw + best.scalars - 1) / best.scalars, best.scalars}, max_tw,
                                 overhanging_widths(tw, max_tw))[1];
  int64_t ocp = cfg.define_knob("oc_blocks", {1, 2, 4}, best.vectors);
  while (nblk % ocp != 0) ocp /= 2;
  // The write-out: columns per tile, a whole vector of them where the width allows.
  int64_t pref = ow % co == 0 ? co : largest_divisor(ow, max_tw);
  int64_t owr = cfg.define_split("tile_ow", ow, 2, {ow / pref, pref}, std::max<int64_t>(16, co))[1];
  bool vec_out = cfg.define_knob("vec_out", {0, 1}, vectorized_write_out(owr, co) ? 1 : 0) == 1;
  bool pad_in_task = pad.defined() && cfg.define_knob("pad_at", {0, 1}, 0) == 1;

  // What a parallel task covers: a row of tiles for all output channels (0: each task
  // transforms the input rows it reads and re-reads all of U), or oc_blocks channel blocks for
  // the whole image (1: the input transformed once at the root; each task reads only its part
  // of U). Default 1 when U is over 1 MiB: measured (2 threads, in resnet18) layer3's 4 MiB U
  // 0.81-0.84 ms by rows vs 0.67-0.69 by channels (U streams from L3 once, not once per row);
  // layer2's 1 MiB U 0.49-0.53 by rows vs 0.93-1.01 by channels, layer1's 0.48-0.51 vs
  // 1.15-1.55 (V of the whole image, 3 MiB, no longer stays in cache).
  bool by_channels = define_task_over(cfg, 16 * c * nblk * co * 4);
  Stage out = s[tiled];
  ir::IterVar task = schedule_winograd_write_out(s, tiled, conv, yt, co, ocp, owr, by_channels, vec_out);

  // The reductions, register-tiled like the direct conv: ocp weight vectors x twr broadcasts.
  WinogradGemmTile g = tile_winograd_gemm(s, m, out, task, ocp, twr);
  ir::IterVar rc = g.stage.reduce_axis()[0];
  std::vector<ir::IterVar> order = {g.n, g.row, g.e, g.block_outer, g.column_outer};
  if (int64_t pc = sum_chunk_channels(c, 1)) {
    auto [rco, rci] = g.stage.split(rc, pc);
    order.insert(order.end(), {rco, rci});
    g.stage.partial_sums(rco);
  } else {
    order.push_back(rc);
  }
  order.insert(order.end(), {g.block_inner, g.column_inner, g.lane});
  g.stage.reorder(order);
  g.stage.vectorize(g.lane);

  // The input transform: per channel, all 16 outputs of a run of tiles at once (they share the
  // 16 loads of the tiles' 4x4 inputs), vectorized over tiles.
  Stage sv = s[v];
  sv.set_scope(by_channels ? "global" : "local");
  if (by_channels) sv.compute_root();
  else sv.compute_at(out, task);
  auto vx = sv.op_axis();  // n, e, channel, tile row, tile column
  ir::IterVar vtx = vx[4];
  if (tw > lanes) {
    auto [txo, txi] = sv.split(vx[4], lanes);
    sv.reorder({vx[0], vx[2], vx[3], txo, vx[1], txi});
    vtx = txi;
  } else {
    sv.reorder({vx[0], vx[2], vx[3], vx[1], vx[4]});
  }
  sv.unroll(vx[1]);
  sv.vectorize(vtx);
  if (by_channels) fuse_parallel(sv, {vx[0], vx[2]});

  place_pad(s, pad, out, task, !pad_in_task || by_channels, lanes);
  // A filter transformed per call (a weight that is no compile-time constant): once, at the root.
  compute_root_parallel(s, input_with_suffix(m, te::ops::kPackSuffix), 1);
}

}  // namespace kiln::schedule
