#include "kiln/schedule/templates/depthwise_gpu.h"

#include <algorithm>

#include "kiln/ir/arith.h"
#include "kiln/ir/functor.h"
#include "kiln/schedule/templates/cooperative_fetch_gpu.h"
#include "kiln/schedule/templates/generic_gpu.h"
#include "kiln/support/error.h"

namespace kiln::schedule {

namespace {

// The window sum: the conv itself, or the float32 sum a float16 conv rounds.
te::Tensor window_sum(const te::Tensor& conv) {
  auto is_sum = [](const te::Tensor& t) {
    const auto* c = t.op().as<te::ComputeOpNode>();
    return c && c->is_reduction() && c->reduce_axis.size() == 2;
  };
  if (is_sum(conv)) return conv;
  std::vector<te::Tensor> in = conv.op().input_tensors();
  return in.size() == 1 && is_sum(in[0]) ? in[0] : te::Tensor();
}

// Elements of `data` that a th x tw tile of `sum`'s outputs reads: every index of its load,
// bounded over the tile's rows and columns and the window.
int64_t halo_elements(const te::Tensor& sum, const te::Tensor& data, int64_t th, int64_t tw) {
  const auto& c = *sum.op().as<te::ComputeOpNode>();
  ir::arith::Analyzer ana;
  const int64_t tile[4] = {1, 1, th, tw};
  for (size_t d = 0; d < 4; ++d) ana.bind(c.axis[d]->var, ir::Range(ir::Expr(0), ir::Expr(tile[d])));
  for (const ir::IterVar& r : c.reduce_axis) ana.bind(r->var, r->dom);
  int64_t elements = 1;
  ir::post_order_visit(c.body[0], [&](const ir::Expr& e) {
    const auto* load = e.as<ir::ProducerLoadNode>();
    if (!load || !te::Tensor::from_producer(load->producer).same_as(data)) return;
    elements = 1;
    for (const ir::Expr& i : load->indices) {
      ir::arith::IntBound b = ana.const_int_bound(i);
      elements *= b.max_value - b.min_value + 1;
    }
  });
  return elements;
}

}  // namespace

void schedule_depthwise_gpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, const Target& target,
                            Config& cfg) {
  const te::Tensor sum = window_sum(conv);
  KILN_USER_CHECK(sum.defined() && conv.ndim() == 4)
      << "depthwise_gpu: '" << conv.op().name() << "' is not a 2-d depthwise convolution";
  const int64_t oh = conv.shape()[2], ow = conv.shape()[3];
  const int64_t th = cfg.define_knob("tile_h", {1, 2, 4, 8, 16, 32}, pow2_at_least(oh, 8));
  const int64_t tw = cfg.define_knob("tile_w", {4, 8, 16, 32, 64}, std::max<int64_t>(4, pow2_at_least(ow, 32)));
  std::vector<int64_t> thread_choices;
  for (int64_t t = 32; t <= target.gpu.max_threads_per_block; t *= 2) thread_choices.push_back(t);
  KILN_USER_CHECK(!thread_choices.empty()) << "target '" << target.str() << "' allows fewer than 32 threads per block";
  const int64_t t0 = std::clamp<int64_t>(th * tw / 2, 32, std::min<int64_t>(128, thread_choices.back()));
  const int64_t threads = std::min(cfg.define_knob("threads", thread_choices, t0), th * tw);

  // depthwise_conv_nd's body reads the (padded) data first, then the weight.
  const te::Tensor data = sum.op().input_tensors()[0];
  const int64_t shared = halo_elements(sum, data, th, tw) * data.dtype().bytes();
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
