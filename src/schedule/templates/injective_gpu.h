// GPU schedule of an injective group (elementwise, broadcast and injective computes, no
// reduction). Knobs (schedule/config.h):
//
//   threads      threads per block: 64 .. the target's max_threads_per_block       default 256
//   vector       elements per thread per grid step: 1, 2, 4, 8     default 16 bytes of the
//                output's type (4 floats), halved while that leaves fewer than two blocks
//                per multiprocessor
//   contiguous   1: a thread's `vector` elements are neighbours, one vector access (float4)
//                per operand, where the innermost axis divides by `vector`; 0: always threads
//                apart                                                           default 1
//   max_blocks   the grid's cap: 1, 2, 4, 8, 16 or 32 times the target's multiprocessors
//                                                        default 16 times (a few waves of blocks)
//
// Every compute stage that is not an output is inlined into its readers. Contiguous: the
// innermost axis splits into runs of `vector` (a vectorized loop), the other axes and the runs
// fuse into one index, split as (chunk * grid + block) * threads + thread; an access whose index
// is the innermost axis plus a multiple of `vector` (the output, an elementwise operand, an
// operand broadcast along the outer axes) is one vector access of the C printer; an operand
// broadcast along the innermost axis is one scalar read; any other access (transposed, strided)
// is read lane by lane. A warp's vector accesses cover neighbouring runs, so they stay
// coalesced. Otherwise each output's axes fuse into one index, split as
// ((chunk * grid + block) * vector + v) * threads + thread: a block covers `vector` runs of
// `threads` neighbouring elements, one element of each run per thread, so every scalar access
// of the unrolled v loop is coalesced (neighbouring elements of a thread read as scalars would
// spread a warp's access over `vector` times the cache lines). An output of more
// than max_blocks blocks loops over chunks of the grid's elements (a grid-stride loop, as a
// serial loop outside the block index); every step past the end is guarded. An output with
// fewer elements than a block's share gets fewer threads (a multiple of the warp) and, threads
// apart, a shorter v loop.
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
