// Default CPU schedule of an injective group: a fused group of elementwise, broadcast and
// injective computes (no reduction). Knobs (schedule/config.h):
//
//   vector_bytes   width of the vectorized inner loop in bytes: half, one or two of the
//                  target's vector registers                  default one (32 on AVX2, 64 on AVX-512)
//   parallel_min   outputs with fewer elements than this stay on one thread     default 8192
//                  (0: always parallel; the last candidate means never)
//
// Every compute stage that is not an output is inlined into its readers. Each output's
// innermost axis of extent > 1 is split by the vector width in elements (the largest power of
// two up to it that divides the axis: a guarded tail would keep the loop serial) and its inner
// part vectorized. A row too short for a full vector (a 14x14 plane) first fuses with the row
// above it when every load reads the two as its last two indices (an SE block's
// [N, C, H, W] * [N, C, 1, 1], a channel shuffle) and that gains lanes. Of the axes outside the
// vector loop, the outer ones fuse into one loop until it has 8 iterations per core (the
// target's cores), which runs in parallel when the output is big enough to pay for waking the
// thread pool; the rest stay nested loops (no div/mod per iteration to recover their indices).
// (Splitting the axis rather than the fused loop keeps vector accesses contiguous ramps instead
// of div/mod of a ramp.) When no power of two of at least 2 divides that axis, it and the axes
// after it stay plain inner loops (LLVM vectorizes those itself).
#pragma once

#include <vector>

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// Schedules the group of `outputs` (all stages of `s` belong to the group; placeholders are its
// inputs). kiln::Error if a stage is a reduction: use reduction_cpu for those groups.
void injective_cpu(Schedule& s, const std::vector<te::Tensor>& outputs, const Target& target, Config& cfg);

// The loop structure above for one root stage only (fuse, split, vectorize, parallel); other
// stages are left alone. Used by reduction_cpu for the elementwise tail of a reduction.
void schedule_injective_stage(Schedule& s, const te::Tensor& t, const Target& target, Config& cfg);

// The vector_bytes knob's candidates: half, one and two of the target's vector registers.
std::vector<int64_t> vector_byte_choices(const Target& target);

// Inlines every compute stage of `s` that is neither a schedule output nor a reduction nor
// multi-output (the injective producers of a group).
void inline_injective_stages(Schedule& s);

}  // namespace kiln::schedule
