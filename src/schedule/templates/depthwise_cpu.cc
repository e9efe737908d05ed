#include "kiln/schedule/templates/depthwise_cpu.h"

#include <algorithm>

#include "kiln/schedule/templates/anchor_cpu.h"
#include "kiln/te/ops/nn_conv.h"

namespace kiln::schedule {

void schedule_depthwise_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target,
                            Config& cfg) {
  const int64_t lanes = target.lanes(32);
  te::Tensor pad = input_with_suffix(conv, te::ops::kPadSuffix);
  int d = conv.ndim() - 2;
  int64_t ow = conv.shape().back();
  // Columns: vectors of a power-of-two width (scalars when the row allows none >= 4), several
  // per tile; rows: a few per tile. Every (row, vector) of a tile is its own accumulation chain,
  // which hides the FMA latency.
  int64_t vw = vector_width(ow, lanes);
  if (vw < 4) vw = 1;
  // Vector width: the widest power of two <= 16 dividing W by default; narrower ones (or
  // scalars) trade lanes for more independent chains per tile.
  std::vector<int64_t> widths = {1};
  for (int64_t w = 4; w <= vw; w *= 2) widths.push_back(w);
  // Rows also get their largest divisor in 5..16 that is no power of two as a width, the
  // default when the power-of-two width is under 8: one zmm op with idle lanes beats scalars or
  // xmm. Measured (1 thread) on mobilenet_v2's depthwise layers: W 28 (4 -> 14 lanes) 0.069 ->
  // 0.051 ms, W 14 (scalars -> 14) 0.073 -> 0.037, W 7 0.049 -> 0.028; W 56 stays at 8 (14 lanes
  // measured no better).
  int64_t odd = 1;
  for (int64_t w = std::min<int64_t>(ow, lanes); w >= 5; --w) {
    if (ow % w == 0 && (w & (w - 1)) != 0) {
      odd = w;
      break;
    }
  }
  if (odd > 1) widths.push_back(odd);
  vw = cfg.define_knob("vec_lanes", widths, vw < 8 && odd > vw ? odd : vw);
  int64_t nv_pref = largest_divisor(ow / vw, vw == 1 ? 16 : 8);
  int64_t nv = cfg.define_split("tile_ow", ow / vw, 2, {ow / vw / nv_pref, nv_pref}, 16)[1];
  int64_t ohr = 1;
  if (d >= 2) {
    int64_t oh = conv.shape()[d];
    int64_t pr = largest_divisor(oh, std::max<int64_t>(1, (vw == 1 ? 16 : 8) / nv));
    ohr = cfg.define_split("tile_oh", oh, 2, {oh / pr, pr}, 16)[1];
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
    // The padded plane: made by the plane's task just before it is read (default: in L1/L2),
    // or all planes at the root in one parallel pass before the conv.
    // Rows copy whole vectors: masked loads and stores at the borders, and for the stride
    // phases of a strided conv, stride-s loads (a contiguous load and a shuffle in codegen).
    place_pad(s, pad, out, plane, cfg.define_knob("pad_at", {0, 1}, 0) == 1, lanes);
  }
}

}  // namespace kiln::schedule
