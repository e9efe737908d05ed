#include "schedule/templates/depthwise_gpu.h"

#include <algorithm>

#include "schedule/templates/cooperative_fetch_gpu.h"
#include "schedule/templates/generic_gpu.h"
#include "kiln/support/error.h"

namespace kiln::schedule {

void schedule_depthwise_gpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target,
                            Config& cfg) {
  // depthwise_conv_nd's sum: over the two kernel axes.
  const te::Tensor sum = window_sum(conv, 2);
  KILN_USER_CHECK(sum.defined() && conv.ndim() == 4)
      << "depthwise_gpu: '" << conv.op().name() << "' is not a 2-d depthwise convolution";
  const int64_t oh = conv.shape()[2], ow = conv.shape()[3];
  const int64_t th = cfg.define_knob("tile_h", {1, 2, 4, 8, 16, 32}, pow2_at_least(oh, 8));
  const int64_t tw = cfg.define_knob("tile_w", {4, 8, 16, 32, 64}, std::max<int64_t>(4, pow2_at_least(ow, 32)));
  const int64_t threads =
      std::min(define_threads_knob(cfg, target, 32, std::clamp<int64_t>(th * tw / 2, 32, 128)), th * tw);

  // depthwise_conv_nd's body reads the (padded) data first, then the weight.
  const te::Tensor data = sum.op().input_tensors()[0];
  const int64_t shared = staged_elements(sum, data, {1, 1, th, tw}, {}) * data.dtype().bytes();
  KILN_USER_CHECK(shared <= target.gpu.max_shared_bytes)
      << "depthwise_gpu: a " << th << " x " << tw << " tile staging " << shared
      << " bytes of input exceeds the target's " << target.gpu.max_shared_bytes << " shared bytes";

  // A float16 conv's rounding goes into the tail's thread; the sum stays in a register.
  if (!conv.same_as(sum) && !conv.same_as(tiled)) s[conv].compute_inline();
  te::Tensor acc = sum;
  if (sum.same_as(tiled)) acc = s.cache_write(sum, "local");
  else s[sum].set_scope("local");
  te::Tensor halo = s.cache_read(data, "shared", {acc});

  Stage out = s[tiled];
  std::vector<ir::IterVar> ax = out.op_axis();
  auto [ho, hi] = out.split(ax[2], th);
  auto [wo, wi] = out.split(ax[3], tw);
  out.reorder({ax[0], ax[1], ho, wo, hi, wi});
  const ir::IterVar block = out.fuse(out.fuse(out.fuse(ax[0], ax[1]), ho), wo);
  auto [rest, tx] = out.split(out.fuse(hi, wi), threads);
  out.reorder({tx, rest});
  out.bind(block, "blockIdx.x");
  out.bind(tx, "threadIdx.x");

  s[acc].compute_at(out, rest);
  s[halo].compute_at(out, block);
  cooperative_fetch(s[halo], 1, threads);
}

}  // namespace kiln::schedule
