#include "schedule/templates/int8_cpu.h"

#include <algorithm>

#include "schedule/templates/anchor_cpu.h"
#include "schedule/templates/register_tile.h"
#include "schedule/templates/winograd_cpu.h"
#include "kiln/support/error.h"
#include "kiln/te/ops/nn_winograd.h"
#include "kiln/te/reduce.h"

namespace kiln::schedule {

using ir::DataType;
using ir::Expr;

te::ops::Int8Layout int8_layout(const Target& target) {
  switch (target.facts.int8_dot) {
    case Int8Dot::kAvx512Vnni: return {16, DataType::u8(), 4};
    case Int8Dot::kAvxVnni: return {8, DataType::u8(), 4};
    case Int8Dot::kAvx2: return {8, DataType::i16(), 2};
    case Int8Dot::kNeonDot: return {4, DataType::i8(), 4};
    case Int8Dot::kNone: break;
  }
  return {target.lanes(32), DataType::u8(), 4};
}

namespace {

// The region's indices with its last one a run of `lanes` elements: the intrinsic's operands
// are contiguous (a's G channels; b's L x G bytes, row-major and whole in its last two dims).
std::vector<Expr> run_of(const TensorIntrinBuffer& t, int lanes) {
  std::vector<Expr> idx = t.base;
  idx.back() = ir::ramp(idx.back(), Expr(1), lanes);
  return idx;
}

}  // namespace

TensorIntrin int8_dot_intrin(const te::ops::Int8Layout& layout, DataType weight) {
  const int64_t L = layout.lanes, G = layout.group;
  auto a = te::placeholder({G}, layout.data, "a");
  auto b = te::placeholder({L, G}, weight, "b");
  auto k = te::reduce_axis(G, "k");
  const DataType i32 = DataType::i32();
  auto c = te::compute({L}, [&](ir::Var j) { return te::sum(ir::cast(i32, a(k)) * ir::cast(i32, b(j, k)), {k}); },
                       "c", {"j"});
  auto emit = [L, G](bool accumulate) {
    return [L, G, accumulate](const std::vector<TensorIntrinBuffer>& in, const std::vector<TensorIntrinBuffer>& out) {
      KILN_CHECK(in[1].strides.size() >= 2 && in[1].strides[in[1].strides.size() - 2] == G)
          << "int8_dot: the weight block must be [L, " << G << "] row-major";
      const int lanes = static_cast<int>(L), group = static_cast<int>(G);
      std::vector<Expr> ci = run_of(out[0], lanes);
      Expr acc = accumulate ? ir::buffer_load(out[0].buffer, ci) : ir::make_zero(DataType::i32(lanes));
      Expr a_run = ir::buffer_load(in[0].buffer, run_of(in[0], group));
      Expr b_run = ir::buffer_load(in[1].buffer, run_of(in[1], group * lanes));
      return ir::buffer_store(out[0].buffer, ir::int8_dot(acc, a_run, b_run), ci);
    };
  };
  return {"int8_dot", c, emit(false), emit(true)};
}

namespace {

// How AVX2's int16-pair dot ranks a tile: by its accumulators per vector instruction of a step.
// A step issues one instruction per weight block (vpmovsxbw) and per broadcast, and two per
// accumulator (vpmaddwd into a temporary register, then vpaddd), so unlike an FMA tile it is
// bound by issue slots before any one pipe's throughput. The temporary takes a register of its
// own where a broadcast serves several blocks; with one block the broadcast's own register takes
// the product. bert_mini_int8's dense layers (128 rows, K 256 and 1024) on a Zen 3, one thread,
// medians of 12 processes, blocks x rows: 1 x 8 (the FMA model's choice) 8.8 ms, 2 x 4 (this
// rank's) 6.7, 4 x 2 6.6, 2 x 2 9.3; the int8 convs of mobilenet_v2 and resnet18 within noise.
std::vector<double> int16_pair_tile_rank(const Target& target, int64_t blocks, int64_t cols) {
  const int64_t acc = blocks * cols, temporary = blocks > 1 ? 1 : 0;
  if (acc + blocks + 1 + temporary > target.facts.vector_registers || acc > max_accumulators(target, blocks))
    return {1.0};
  return {-double(acc) / double(blocks + cols + 2 * acc), -double(cols), -double(acc)};
}

// The default tile: `blocks` x `columns` accumulators among the divisors of `extent` and 1, 2 or
// 4 blocks dividing nblk, within the register file (beside the accumulators, each weight block
// and a's broadcast take one register), ranked by the FMA tile's register model where the dot
// is one instruction (vpdpbusd, sdot) and by int16_pair_tile_rank where it is AVX2's two.
std::pair<int64_t, int64_t> default_tile(const Target& target, int64_t nblk, int64_t extent) {
  const bool int16_pairs = int8_layout(target).data == DataType::i16();
  std::pair<int64_t, int64_t> best{1, 1};
  std::vector<double> best_rank;
  for (int64_t blocks : {1, 2, 4}) {
    if (nblk % blocks != 0) continue;
    for (int64_t cols = 1; cols <= extent; ++cols) {
      if (extent % cols != 0 || blocks * cols + blocks + 1 > target.facts.vector_registers) continue;
      std::vector<double> rank =
          int16_pairs ? int16_pair_tile_rank(target, blocks, cols) : tile_rank(target, {blocks, cols});
      if (best_rank.empty() || rank < best_rank) best_rank = rank, best = {blocks, cols};
    }
  }
  return best;
}

// The packed weight and its sums at the root (a graph compile precomputes both for a constant
// weight); the packed data at the root in parallel, its padding inlined into it.
void place_operands(Schedule& s, const te::Tensor& blocked, const te::Tensor& result) {
  te::Tensor pack = input_with_suffix(blocked, te::ops::kInt8PackSuffix);
  te::Tensor pad = input_with_suffix(pack, te::ops::kPadSuffix);
  if (pad.defined() && !pad.op().as<te::PlaceholderOpNode>()) s[pad].compute_inline();
  compute_root_parallel(s, pack, 1);
  compute_root_parallel(s, input_with_suffix(blocked, te::ops::kPackSuffix), 1);
  te::Tensor wsum = input_with_suffix(result, te::ops::kInt8WeightSumSuffix);
  if (wsum.defined() && wsum.op().as<te::ComputeOpNode>()) s[wsum].compute_root();
}

// The blocked stage of an int8 conv/dense result, and the layout it computes in (its lanes and
// its packed data's type).
std::pair<te::Tensor, te::ops::Int8Layout> blocked_of(const te::Tensor& result, const char* what) {
  te::Tensor blocked = input_with_suffix(result, te::ops::kBlockedSuffix);
  KILN_CHECK(blocked.defined()) << what << ": '" << result.name() << "' is not its op's result";
  te::Tensor pack = input_with_suffix(blocked, te::ops::kInt8PackSuffix);
  return {blocked, {blocked.shape().back(), pack.dtype(), pack.shape().back()}};
}

// The tile knobs: `split` (columns of a conv, rows of a dense) over `extent`, and oc_blocks blocks
// of L outputs (the largest of the choice dividing nblk); defaults from default_tile.
std::pair<int64_t, int64_t> define_int8_tile(Config& cfg, const Target& target, const char* split, int64_t nblk,
                                             int64_t extent) {
  auto [dblocks, dcols] = default_tile(target, nblk, extent);
  int64_t cols = cfg.define_split(split, extent, 2, {extent / dcols, dcols}, target.facts.vector_registers - 2)[1];
  int64_t blocks = cfg.define_knob("oc_blocks", {1, 2, 4}, dblocks);
  while (nblk % blocks != 0) blocks /= 2;
  return {blocks, cols};
}

}  // namespace

void schedule_conv2d_int8_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target,
                              Config& cfg) {
  auto [blocked, layout] = blocked_of(conv, "schedule_conv2d_int8_cpu");
  KILN_CHECK(tiled.shape() == conv.shape()) << "schedule_conv2d_int8_cpu: the tiled stage must have the conv's shape";
  const int64_t L = layout.lanes;
  auto [ocp, owr] = define_int8_tile(cfg, target, "tile_ow", blocked.shape()[1], conv.shape()[3]);

  if (!conv.same_as(tiled)) s[conv].compute_inline();
  Stage out = s[tiled];
  auto ax = out.op_axis();  // n, c, h, w; blocked: n, c block, h, w, lane
  const bool blocked_out = conv.ndim() == 5;
  // A tile's outputs: ocp blocks of L channels (in NCHW), or the blocks of y channels that
  // cover them (NCHW[y]c; y is L unless the target's vectors are wider than its int8_dot's).
  int64_t per = L * ocp;
  if (blocked_out) {
    per = std::max<int64_t>(1, L * ocp / conv.shape()[4]);
    while (conv.shape()[1] % per != 0) --per;
  }
  auto [oco, oci] = out.split(ax[1], per);
  auto [owo, owi] = out.split(ax[3], owr);
  std::vector<ir::IterVar> order = {ax[0], oco, ax[2], owo, oci, owi};
  if (blocked_out) order.push_back(ax[4]);
  out.reorder(order);
  out.unroll(owi);
  // Blocked, each pixel's y outputs are one contiguous vector: requantized and stored whole.
  if (blocked_out) out.vectorize(ax[4]);
  fuse_parallel(out, {ax[0], oco, ax[2]});

  Stage b = s[blocked];
  b.set_scope("local");
  b.compute_at(out, owo);
  auto bx = b.op_axis();     // n, block, oy, ox, lane
  auto r = b.reduce_axis();  // channel groups, ky, kx, the group's G
  b.reorder({bx[0], bx[2], r[0], r[1], r[2], bx[1], bx[3], bx[4], r[3]});
  b.unroll(bx[1]);
  b.unroll(bx[3]);
  // The reduction loops around the register tile stay loops: resnet18's 3 x 3 64 -> 64 conv for
  // AVX2 unrolled had 150 stack accesses among its 144 vpmaddwd, none in the rolled loop's 16
  // (whole model times on the shared Zen 3 were within their noise either way).
  keep_rolled(b, {r[0], r[1], r[2]});
  b.tensorize(bx[4], int8_dot_intrin(layout));
  place_operands(s, blocked, conv);
}

void schedule_dense_int8_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& dense, const Target& target,
                             Config& cfg) {
  auto [blocked, layout] = blocked_of(dense, "schedule_dense_int8_cpu");
  KILN_CHECK(tiled.shape() == dense.shape()) << "schedule_dense_int8_cpu: the tiled stage must have the dense's shape";
  const size_t lead = dense.ndim() - 2;
  const int64_t L = layout.lanes;
  auto [ocp, mr] = define_int8_tile(cfg, target, "tile_m", blocked.shape()[lead + 1], dense.shape()[lead]);

  if (!dense.same_as(tiled)) s[dense].compute_inline();
  Stage out = s[tiled];
  auto ax = out.op_axis();  // lead..., m, n
  auto [mo, mi] = out.split(ax[lead], mr);
  auto [no, ni] = out.split(ax[lead + 1], L * ocp);
  std::vector<ir::IterVar> order(ax.begin(), ax.begin() + lead);
  order.insert(order.end(), {mo, no, mi, ni});
  out.reorder(order);
  out.unroll(mi);
  out.vectorize(ni);
  std::vector<ir::IterVar> par(ax.begin(), ax.begin() + lead);
  par.insert(par.end(), {mo, no});
  ir::IterVar task = fuse_parallel(out, par);

  Stage b = s[blocked];
  b.set_scope("local");
  b.compute_at(out, task);
  auto bx = b.op_axis();     // lead..., m, block, lane
  auto r = b.reduce_axis();  // channel groups, the group's G
  std::vector<ir::IterVar> border(bx.begin(), bx.begin() + lead);
  border.insert(border.end(), {r[0], bx[lead], bx[lead + 1], bx[lead + 2], r[1]});
  b.reorder(border);
  b.unroll(bx[lead]);
  b.unroll(bx[lead + 1]);
  keep_rolled(b, {r[0]});
  b.tensorize(bx[lead + 2], int8_dot_intrin(layout));
  place_operands(s, blocked, dense);
}

void schedule_conv_winograd_int8_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv,
                                     const Target& target, Config& cfg) {
  const auto [yt, m, v, pad] = winograd_stages(conv, tiled, "schedule_conv_winograd_int8_cpu");
  const int64_t nblk = m.shape()[2], tw = m.shape()[4], L = m.shape()[5], cp = v.shape()[2], ow = conv.shape()[3];
  const te::ops::Int8Layout layout{L, DataType::i16(), 2};

  // The reductions' register tile: oc_blocks blocks of L outputs x tile_tw tiles of a row, as
  // the direct int8 conv's (default_tile); a row's last tile may overhang.
  auto [dblocks, dcols] = default_tile(target, nblk, tw);
  const int64_t max_tw = target.facts.vector_registers - 2;
  int64_t twr = cfg.define_split("tile_tw", tw, 2, {(tw + dcols - 1) / dcols, dcols}, max_tw,
                                 overhanging_widths(tw, max_tw))[1];
  int64_t ocp = cfg.define_knob("oc_blocks", {1, 2, 4}, dblocks);
  while (nblk % ocp != 0) ocp /= 2;
  int64_t pref = ow % L == 0 ? L : largest_divisor(ow, max_tw);
  int64_t owr = cfg.define_split("tile_ow", ow, 2, {ow / pref, pref}, std::max<int64_t>(16, L))[1];
  // What a parallel task covers, as the float Winograd conv: a row of tiles for all outputs, or
  // oc_blocks blocks for the whole image once U' is over 1 MiB.
  bool by_channels = define_task_over(cfg, 16 * cp * nblk * L * 2 * 2);
  Stage out = s[tiled];
  ir::IterVar task = schedule_winograd_write_out(s, tiled, conv, yt, L, ocp, owr, by_channels, false);

  // The 16 reductions over channel pairs, each a register tile tensorized onto int8_dot.
  WinogradGemmTile g = tile_winograd_gemm(s, m, out, task, ocp, twr);
  auto r = g.stage.reduce_axis();  // channel pairs, the pair's two
  g.stage.reorder({g.n, g.row, g.e, g.block_outer, g.column_outer, r[0], g.block_inner, g.column_inner, g.lane, r[1]});
  keep_rolled(g.stage, {r[0]});
  g.stage.tensorize(g.lane, int8_dot_intrin(layout, DataType::i16()));

  // The input transform: per channel pair and tile row, all 16 outputs of each tile (they share
  // its 4x4 x 2 loads), the pair's two innermost (LLVM interleaves them across tiles).
  Stage sv = s[v];
  sv.set_scope(by_channels ? "global" : "local");
  if (by_channels) sv.compute_root();
  else sv.compute_at(out, task);
  auto vx = sv.op_axis();  // n, e, channel pair, tile row, tile column, the pair's two
  sv.reorder({vx[0], vx[2], vx[3], vx[4], vx[1], vx[5]});
  sv.unroll(vx[1]);
  sv.unroll(vx[5]);
  if (by_channels) fuse_parallel(sv, {vx[0], vx[2]});

  place_pad(s, pad, out, task, true, 1);
  // A filter transformed per call (a weight that is no compile-time constant): once, at the root.
  compute_root_parallel(s, input_with_suffix(m, te::ops::kPackSuffix), 1);
}

}  // namespace kiln::schedule
