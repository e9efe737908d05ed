#include "schedule/templates/depthwise_cpu.h"

#include <algorithm>

#include "schedule/templates/anchor_cpu.h"
#include "kiln/support/error.h"
#include "kiln/te/ops/nn_conv.h"

namespace kiln::schedule {

namespace {
// The widest divisor of n that is at most cap: a power of two, or (pow2 false) any other.
int64_t widest_divisor(int64_t n, int64_t cap, bool pow2) {
  for (int64_t w = std::min(n, cap); w >= 2; --w) {
    bool is_pow2 = (w & (w - 1)) == 0;
    if (n % w == 0 && is_pow2 == pow2) return w;
  }
  return 1;
}

// Accumulators of a default tile (twice as many for scalars, which have no latency per lane),
// or with `cap` the most any tile of the space may have. The default: the FMA latency x issue
// rate, at least a quarter of the vector registers. The cap: half the vector registers (the
// other half holds the window's input vectors and broadcast weights). Tall tiles over wide rows
// share the window's input rows (kh loads per output row become (ohr + kh - 1) / ohr), but a
// costly inlined tail wants the registers: measured on an AMD EPYC Zen 4 (AVX-512, 2 threads),
// 16 accumulators against 8, convnext_tiny's bare 7x7 96@56 0.23 -> 0.15 ms (bench_ops), while
// efficientnet_b0's 3x3 layers with a SiLU tail slowed (in the model): 96@56 s2 0.22 -> 0.37,
// 32@112 0.17 -> 0.26, and mobilenet_v2's 192@28, 576@14, 384@14 by 15-20%. So the tuner
// explores up to the cap.
int64_t tile_budget(const Target& target, bool scalar, bool cap) {
  const CpuFacts& f = target.facts;
  const int64_t most =
      std::max<int64_t>({1, f.vector_registers / 2, std::min<int64_t>(f.fma_in_flight(), f.vector_registers - 4)});
  const int64_t base = std::min<int64_t>(most, std::max<int64_t>(f.fma_in_flight(), f.vector_registers / 4));
  return (scalar ? 2 : 1) * (cap ? most : base);
}
}  // namespace

DepthwiseDefaults depthwise_defaults(const Target& target, int64_t ow, int64_t oh) {
  const int64_t lanes = target.lanes(32);
  DepthwiseDefaults d;
  // Narrower vectors than a quarter register lose to scalars the compiler packs itself.
  d.min_vector = std::max<int64_t>(2, lanes / 4);
  d.accumulators = tile_budget(target, false, true);
  // The width that fills most of a register: the widest power of two dividing W, or W's widest
  // other divisor when that uses more lanes (W 14: one 14-lane op, not seven 2-lane ones).
  // Measured (1 thread, AVX-512 Xeon) on mobilenet_v2's layers: W 28 (4 -> 14 lanes) 0.069 ->
  // 0.051 ms, W 14 (scalars -> 14) 0.073 -> 0.037, W 7 0.049 -> 0.028.
  int64_t pw = widest_divisor(ow, lanes, true), odd = widest_divisor(ow, lanes, false);
  if (pw < d.min_vector) pw = 1;
  d.vec_lanes = odd > pw && odd >= d.min_vector && pw * 2 < lanes ? odd : pw;
  // Vectors per tile row, then rows.
  int64_t want = tile_budget(target, d.vec_lanes == 1, false);
  d.tile_ow = largest_divisor(ow / d.vec_lanes, want);
  d.tile_oh = largest_divisor(oh, std::max<int64_t>(1, want / d.tile_ow));
  return d;
}

void schedule_depthwise_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target,
                            Config& cfg) {
  const int64_t lanes = target.lanes(32);
  te::Tensor pad = input_with_suffix(conv, te::ops::kPadSuffix);
  int d = conv.ndim() - 2;
  int64_t ow = conv.shape().back();
  DepthwiseDefaults def = depthwise_defaults(target, ow, d >= 2 ? conv.shape()[d] : 1);
  // Vector widths: scalars, the powers of two from a quarter register up that divide W, and
  // W's widest other divisor that fits a register (an odd width: 14 of a 28 row).
  std::vector<int64_t> widths = {1};
  for (int64_t w = def.min_vector; w <= lanes; w *= 2)
    if (ow % w == 0) widths.push_back(w);
  int64_t odd = widest_divisor(ow, lanes, false);
  if (odd >= def.min_vector) widths.push_back(odd);
  int64_t vw = cfg.define_knob("vec_lanes", widths, def.vec_lanes);
  // Tiles of tile_budget's accumulators by default (at the default width, depthwise_defaults'
  // tile); at most the cap's vectors per row and rows (scalars: twice as many).
  const int64_t acc_cap = (vw == 1 ? 2 : 1) * def.accumulators;
  const int64_t budget = tile_budget(target, vw == 1, false);
  int64_t nv_pref = largest_divisor(ow / vw, budget);
  int64_t nv = cfg.define_split("tile_ow", ow / vw, 2, {ow / vw / nv_pref, nv_pref}, acc_cap)[1];
  int64_t ohr = 1;
  if (d >= 2) {
    int64_t oh = conv.shape()[d];
    int64_t pr = largest_divisor(oh, std::max<int64_t>(1, budget / nv));
    ohr = cfg.define_split("tile_oh", oh, 2, {oh / pr, pr}, acc_cap)[1];
  }

  te::Tensor core = conv;
  if (conv.same_as(tiled)) {
    core = s.cache_write(conv, "local");
  } else {
    s[conv].set_scope("local");
  }
  Stage out = s[tiled];
  auto ax = out.op_axis();
  auto [owo, owi] = out.split(ax.back(), nv * vw);
  std::vector<ir::IterVar> order = {ax[0], ax[1]};
  for (int i = 0; i + 2 < d; ++i) order.push_back(ax[2 + i]);
  ir::IterVar ohi;
  if (d >= 2) {
    // Tiles row by row (default), or column strip by column strip: the strip's rows reuse the
    // window's columns of the rows above in L1, the row order streams whole rows.
    bool columns_outer = cfg.define_knob("tile_order", {0, 1}, 0) == 1;
    auto [oho, ohi2] = out.split(ax[d], ohr);
    ohi = ohi2;
    order.push_back(columns_outer ? owo : oho);
    order.push_back(columns_outer ? oho : owo);
    order.push_back(ohi);
  } else {
    order.push_back(owo);
  }
  order.push_back(owi);
  out.reorder(order);
  if (ohi.defined()) out.unroll(ohi);
  if (vw > 1) {
    auto [owm, owv] = out.split(owi, vw);
    out.unroll(owm);
    out.vectorize(owv);
  } else {
    out.unroll(owi);
  }
  ir::IterVar plane = fuse_parallel(out, {ax[0], ax[1]});

  Stage c = s[core];
  c.compute_at(out, owo);
  auto cx = c.op_axis();  // n, c, spatial...
  auto r = c.reduce_axis();
  std::vector<ir::IterVar> corder = {cx[0], cx[1]};
  for (int i = 0; i + 2 < d; ++i) corder.push_back(cx[2 + i]);
  corder.insert(corder.end(), r.begin(), r.end());
  if (d >= 2) corder.push_back(cx[d]);
  corder.push_back(cx.back());
  c.reorder(corder);
  // The window taps: unrolled (each tap's weight a register broadcast) or loops.
  if (cfg.define_knob("unroll_window", {0, 1}, 1) == 1) {
    for (const ir::IterVar& rv : r) c.unroll(rv);
  }
  if (d >= 2) c.unroll(cx[d]);
  if (vw > 1) {
    auto [cm, cv] = c.split(cx.back(), vw);
    c.unroll(cm);
    c.vectorize(cv);
  } else {
    c.unroll(cx.back());
  }

  if (pad.defined()) {
    // The padded plane: made by the plane's task just before it is read (0), all planes at the
    // root in one parallel pass before the conv (1), or just the rows (columns) each outer tile
    // reads, in that tile (2: in L1, rows of neighbouring tiles' windows made twice). bench_ops,
    // 2 threads, AMD EPYC Zen 4, 2 against 0: 3x3 s2 96@112 0.088 against 0.105 ms with AVX-512
    // code, 0.30 against 0.24 with AVX2 code; the stride-1 layers 5-50% slower; so a tuner choice.
    // Rows copy whole vectors: masked loads and stores at the borders, and for the stride
    // phases of a strided conv, stride-s loads (a contiguous load and a shuffle in codegen).
    int64_t at = cfg.define_knob("pad_at", {0, 1, 2}, 0);
    place_pad(s, pad, out, at == 2 ? order[order.size() - (d >= 2 ? 4 : 2)] : plane, at == 1, lanes);
  }
}

void schedule_depthwise_nchwc_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target,
                                  Config& cfg) {
  KILN_CHECK(conv.ndim() == 5 && tiled.shape() == conv.shape()) << "schedule_depthwise_nchwc_cpu: not a blocked conv";
  te::Tensor pad = input_with_suffix(conv, te::ops::kPadSuffix);
  const int64_t oh = conv.shape()[2], ow = conv.shape()[3];
  // A tile is nv pixels x ohr rows of one channel block, one accumulator each: every tap loads
  // the block's weight vector once for the whole tile and one input vector per pixel.
  const int64_t budget = tile_budget(target, false, false), cap = tile_budget(target, false, true);
  int64_t pv = largest_divisor(ow, budget);
  int64_t nv = cfg.define_split("tile_ow", ow, 2, {ow / pv, pv}, cap)[1];
  int64_t pr = largest_divisor(oh, std::max<int64_t>(1, budget / nv));
  int64_t ohr = cfg.define_split("tile_oh", oh, 2, {oh / pr, pr}, cap)[1];

  te::Tensor core = conv;
  if (conv.same_as(tiled)) {
    core = s.cache_write(conv, "local");
  } else {
    s[conv].set_scope("local");
  }
  // Output rows per parallel task (blocked_task_rows): the padded input rows a task makes
  // (pad_at 0) serve all its tiles. A choice that is not a multiple of tile_oh rounds down to
  // one (at least one tile).
  const int64_t per_task = blocked_task_rows(target, conv, pad, ohr);
  int64_t rows = cfg.define_split("task_rows", oh, 2, {oh / per_task, per_task}, 0)[1];
  rows = std::max(ohr, rows / ohr * ohr);
  ir::IterVar task = schedule_blocked_window(s, tiled, core, rows, ohr, nv);
  // The padded input: the rows each task reads, made in the task (0), all of it at the root
  // before the conv (1), or no copy: each tap's load under the window's bounds test (2, a
  // masked load). Default 2 for 3x3 windows and with mask registers. bench_ops, 2 threads, Zen
  // 4, 0 -> 2 (ms): AVX-512 code, mobilenet_v2's dw 96@112 s2 0.124 -> 0.075, 144@56 0.060 ->
  // 0.040, convnext's 7x7 96@56 0.148 -> 0.137; AVX2 code 0.105 -> 0.057, 0.069 -> 0.049, but
  // the 7x7 0.160 -> 0.195 and efficientnet's 5x5 672@14 0.038 -> 0.040.
  if (pad.defined()) {
    const auto* pk = conv.op().as<te::ComputeOpNode>();
    int64_t taps = 1;
    for (const ir::IterVar& r : pk->reduce_axis) taps *= ir::as_const_int(r->dom.extent).value_or(1);
    // A plane that converts what it reads (an integer conv's int8 x - zero point as float) is
    // made once per task (0), not converted again at each of a pixel's taps (2).
    const bool converts = pad.op().input_tensors()[0].dtype() != pad.dtype();
    int64_t at = cfg.define_knob("pad_at", {0, 1, 2}, !converts && (taps <= 9 || target.facts.mask_registers) ? 2 : 0);
    if (at == 2) s[pad].compute_inline();
    else place_pad(s, pad, s[tiled], task, at == 1, target.lanes(32));
  }
}

}  // namespace kiln::schedule
