// The GPU schedule every fused group can take: one thread per output element of each stage
// that keeps a buffer, reductions summed serially by that thread. Knob (schedule/config.h):
//
//   threads   threads per block: 64 .. 1024 (at most the target's max_threads_per_block);
//             default 256, fewer for a stage with fewer elements (a multiple of the warp)
//
// Every compute stage that is not an output and not a reduction is inlined into its readers.
// Each remaining stage (outputs, and the reductions other stages read: a softmax's max and
// sum) fuses its data-parallel axes into one loop, split into blocks (blockIdx.x) of `threads`
// threads (threadIdx.x), with a guard for the last block; its reduce axes stay serial loops
// inside. Each such stage is a kernel of its own (ir::split_host_device), an intermediate one
// writing a workspace buffer the next reads. Correct for every group; the op-specific GPU
// templates (shared-memory tiles, cross-thread reductions) are what makes groups fast.
#pragma once

#include <vector>

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

void schedule_generic_gpu(Schedule& s, const std::vector<te::Tensor>& outputs, const Target& target, Config& cfg);

// The smallest power of two >= n, at most cap (thread counts, tile edges).
int64_t pow2_at_least(int64_t n, int64_t cap);
// The blocks of b that cover a (a grid's extent).
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The knob `threads` of a GPU template: the powers of two from `least` to the target's threads
// per block, `preferred` by default (capped at the largest). kiln::Error naming the target when
// it allows fewer than `least`.
int64_t define_threads_knob(Config& cfg, const Target& target, int64_t least, int64_t preferred);

// Binds one root stage as above: its data-parallel axes fused, split by `threads`.
void bind_elementwise_gpu(Stage st, int64_t threads, const Target& target);

// The GPU schedule of a group with an anchor op and a template for it (matmul_gpu.h): the
// group's other injective stages inlined, `tmpl` places the anchor with the tile loops on the
// group's single output when it has the anchor's shape or a corner of it (its elementwise tail
// computed from the anchor's registers), else on the anchor; stages no template touched are
// bound as above.
using GpuAnchorTemplate = void (*)(Schedule& s, const te::Tensor& tiled, const te::Tensor& anchor,
                                   const Target& target, Config& cfg);
Schedule schedule_anchor_gpu(const std::vector<te::Tensor>& outputs, const te::Tensor& anchor, GpuAnchorTemplate tmpl,
                             const Target& target, Config& cfg);

}  // namespace kiln::schedule
