// Default CPU schedule of a reduction group: one or more reductions (sum, max, argmax, ...)
// with injective producers and an elementwise/injective tail (mean's division, a cast, sqrt).
// Knobs (schedule/config.h), besides injective_cpu's for the tail:
//
//   reduce_vector_bytes  vector width, in bytes, over the innermost kept axis when the
//                        reduced axes are not innermost: half, one or two of the target's
//                        vector registers                                  default one
//   reduce_parallel_min  reductions reading fewer input elements than this stay on one
//                        thread (0: always; the last candidate: never)     default 8192
//
// Injective producers are inlined into the reductions that read them. Each reduction stays a
// root stage: its kept (data) axes are fused into one parallel loop. When the innermost input
// axis is reduced, the reduce loops run inside, serial. When it is kept (e.g. a sum over axis 1
// of [N, C, HW]), the innermost kept axis is split by the vector width and its inner part,
// vectorized, moves inside the reduce loops: out[.., j:j+v] += x[.., k, j:j+v], contiguous loads
// (an axis no power of two divides moves inside whole, as a plain loop LLVM can vectorize).
// Outputs that are not reductions are scheduled like injective outputs.
#pragma once

#include <vector>

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

void reduction_cpu(Schedule& s, const std::vector<te::Tensor>& outputs, const Target& target, Config& cfg);

}  // namespace kiln::schedule
