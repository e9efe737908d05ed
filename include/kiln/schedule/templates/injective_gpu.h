// GPU schedule of an injective group (elementwise, broadcast and injective computes, no
// reduction). Knobs (schedule/config.h):
//
//   threads      threads per block: 64 .. the target's max_threads_per_block       default 256
//   vector       elements per thread per grid step: 1, 2, 4, 8     default 16 bytes of the
//                output's type (4 floats), halved while that leaves fewer than two blocks
//                per multiprocessor
//   max_blocks   the grid's cap: 1, 2, 4, 8, 16 or 32 times the target's multiprocessors
//                                                        default 16 times (a few waves of blocks)
//
// Every compute stage that is not an output is inlined into its readers. Each output's axes
// fuse into one index, split as ((chunk * grid + block) * vector + v) * threads + thread:
// a block covers `vector` runs of `threads` neighbouring elements, one element of each run per
// thread, so every access of the unrolled v loop is coalesced. kiln's C printer has no vector
// types for GPU kernels (a vectorized loop is refused there), so the elements of a thread are
// `threads` apart, not a float4: contiguous per-thread elements as scalar loads would spread a
// warp's access over `vector` times the cache lines. An output of more than max_blocks blocks
// loops over chunks of grid * threads * vector elements (a grid-stride loop, as a serial loop
// outside the block index); every step past the end is guarded. An output with fewer elements
// than a block's share gets fewer threads (a multiple of the warp) and a shorter v loop.
#pragma once

#include <vector>

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// Schedules the group of `outputs` (all stages of `s` belong to it). kiln::Error if a stage is
// a reduction: those groups take the generic GPU schedule (generic_gpu.h).
void schedule_injective_gpu(Schedule& s, const std::vector<te::Tensor>& outputs, const Target& target, Config& cfg);

}  // namespace kiln::schedule
