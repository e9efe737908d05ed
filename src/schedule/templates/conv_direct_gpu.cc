#include "schedule/templates/conv_direct_gpu.h"

#include <algorithm>
#include <cmath>

#include "schedule/templates/cooperative_fetch_gpu.h"
#include "schedule/templates/generic_gpu.h"
#include "kiln/support/error.h"

namespace kiln::schedule {

namespace {

// How a block of `threads` threads shares a tile of oc x pixels outputs (powers of two): `ty`
// threads along channels, the rest along pixels, so that each thread's register block has about
// as many channels as pixels (ties to more channels: a weight is read by every pixel's thread at
// once, a broadcast).
int64_t threads_on_channels(int64_t threads, int64_t oc, int64_t pixels) {
  int64_t best = std::max<int64_t>(1, threads / pixels);
  double best_gap = INFINITY;
  for (int64_t ty = best; ty <= std::min(oc, threads); ty *= 2) {
    const double gap = std::abs(std::log2(double(oc / ty)) - std::log2(double(pixels / (threads / ty))));
    if (gap < best_gap) {
      best = ty;
      best_gap = gap;
    }
  }
  return best;
}

}  // namespace

void schedule_conv_direct_gpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target,
                              Config& cfg) {
  // conv_nd_plain's 2-d sum: over input channels and the two kernel axes.
  const te::Tensor sum = window_sum(conv, 3);
  KILN_USER_CHECK(sum.defined()) << "conv_direct_gpu: '" << conv.op().name() << "' is not a 2-d convolution";
  // conv_nd_plain's body reads the (padded) data first, then the weight [OC, C / groups, KH, KW].
  const std::vector<te::Tensor> operands = sum.op().input_tensors();
  const te::Tensor &data = operands[0], &weight = operands[1];
  const int64_t n = conv.shape()[0], oc = conv.shape()[1], oh = conv.shape()[2], ow = conv.shape()[3];
  const int64_t cg = weight.shape()[1], groups = data.shape()[1] / cg, og = oc / groups;

  // Defaults: about 1024 outputs a block, then smaller tiles (rows, columns to 8, channels to 4)
  // while the grid has fewer than two blocks per multiprocessor.
  std::vector<int64_t> oc_choices;
  for (int64_t t = 1; t <= 64; t *= 2)
    if (groups == 1 || og % t == 0) oc_choices.push_back(t);
  int64_t t_oc = std::min<int64_t>(oc_choices.back(), 16);
  int64_t t_w = pow2_at_least(ow, 16);
  int64_t t_h = pow2_at_least(oh, std::max<int64_t>(1, 1024 / (t_oc * t_w)));
  auto grid = [&] { return n * groups * ((og + t_oc - 1) / t_oc) * ((oh + t_h - 1) / t_h) * ((ow + t_w - 1) / t_w); };
  const int64_t enough = 2 * std::max(1, target.gpu.multiprocessors);
  while (grid() < enough && (t_h > 1 || t_w > 8 || t_oc > 4)) (t_h > 1 ? t_h : t_w > 8 ? t_w : t_oc) /= 2;
  // The bytes staged per slice of `rc` input channels: the block's input halo and weights.
  auto staged_bytes = [&](int64_t toc, int64_t th, int64_t tw, int64_t rc) {
    const std::vector<int64_t> box = {1, toc, th, tw};
    return (staged_elements(sum, data, box, {rc}) + staged_elements(sum, weight, box, {rc})) * data.dtype().bytes();
  };
  // Then fewer channels a slice, then smaller tiles, while the staged tiles take more than half
  // the shared memory (wide kernels, strides, dilation).
  int64_t t_rc = pow2_at_least(cg, 8);
  while (staged_bytes(t_oc, t_h, t_w, t_rc) > target.gpu.max_shared_bytes / 2 && t_rc * t_h * t_w * t_oc > 1)
    (t_rc > 1 ? t_rc : t_h > 1 ? t_h : t_w > 1 ? t_w : t_oc) /= 2;
  const int64_t toc = cfg.define_knob("tile_oc", oc_choices, t_oc);
  const int64_t th = cfg.define_knob("tile_h", {1, 2, 4, 8, 16, 32}, t_h);
  const int64_t tw = cfg.define_knob("tile_w", {1, 2, 4, 8, 16, 32}, t_w);
  const int64_t rc = cfg.define_knob("tile_rc", {1, 2, 4, 8, 16, 32}, t_rc);
  const int64_t shared = staged_bytes(toc, th, tw, rc);
  KILN_USER_CHECK(shared <= target.gpu.max_shared_bytes)
      << "conv_direct_gpu: a " << toc << " x " << th << " x " << tw << " tile staging " << shared
      << " bytes per slice of " << rc << " input channels exceeds the target's " << target.gpu.max_shared_bytes
      << " shared bytes";
  const int64_t outputs = toc * th * tw;
  const int64_t threads =
      std::min(define_threads_knob(cfg, target, 32, std::clamp<int64_t>(outputs / 8, 64, 256)), outputs);
  const int64_t ty = threads_on_channels(threads, toc, th * tw), tx = threads / ty;
  const int64_t tx_w = std::min(tw, tx), tx_h = tx / tx_w;

  // A float16 conv's rounding goes into the tail's thread; the sum stays in registers.
  if (!conv.same_as(sum) && !conv.same_as(tiled)) s[conv].compute_inline();
  te::Tensor acc = sum;
  if (sum.same_as(tiled)) acc = s.cache_write(sum, "local");
  else s[sum].set_scope("local");
  te::Tensor data_shared = s.cache_read(data, "shared", {acc});
  te::Tensor weight_shared = s.cache_read(weight, "shared", {acc});

  // Output channels split at group boundaries first, so a block's channels read one group's
  // inputs; each thread computes a contiguous register block (bound inference sizes its
  // registers by the box it covers).
  Stage out = s[tiled];
  std::vector<ir::IterVar> ax = out.op_axis();
  auto [g, j] = out.split(ax[1], og);
  auto [jo, jr] = out.split(j, toc);
  auto [jy, jreg] = out.split(jr, toc / ty);
  auto [ho, hr] = out.split(ax[2], th);
  auto [hy, hreg] = out.split(hr, th / tx_h);
  auto [wo, wr] = out.split(ax[3], tw);
  auto [wx, wreg] = out.split(wr, tw / tx_w);
  out.reorder({ax[0], g, jo, ho, wo, jy, hy, wx, jreg, hreg, wreg});
  const ir::IterVar block = out.fuse(out.fuse(out.fuse(out.fuse(ax[0], g), jo), ho), wo);
  const ir::IterVar x = out.fuse(hy, wx);
  out.bind(block, "blockIdx.x");
  out.bind(jy, "threadIdx.y");
  out.bind(x, "threadIdx.x");

  Stage a = s[acc];
  a.compute_at(out, x);
  std::vector<ir::IterVar> aax = a.op_axis();
  auto [rco, rci] = a.split(a.reduce_axis(0), rc);
  a.reorder({rco, rci, a.reduce_axis(1), a.reduce_axis(2), aax[1], aax[2], aax[3]});
  s[data_shared].compute_at(a, rco);
  s[weight_shared].compute_at(a, rco);
  cooperative_fetch(s[data_shared], ty, tx);
  cooperative_fetch(s[weight_shared], ty, tx);

}

}  // namespace kiln::schedule
