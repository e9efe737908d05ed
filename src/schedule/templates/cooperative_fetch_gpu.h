// Shared-memory staging for GPU templates (matmul_gpu.h, depthwise_gpu.h, conv_direct_gpu.h): a
// tile copied into shared memory by every thread of the block together, and what a conv
// template stages.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// Fetches `st` (a shared copy computed at a loop of its reader) with every thread of a
// ty x tx block: its loops fused, split into threadIdx.x and threadIdx.y and a serial rest, so
// neighbouring threads copy neighbouring elements (coalesced reads). With `lanes` > 1, each
// thread copies `lanes` neighbours of a row as one vector (one 16-byte cp.async for 4 floats):
// the copied rows must be whole vectors.
void cooperative_fetch(Stage st, int64_t ty, int64_t tx, int64_t lanes = 1);

// The window sum a conv template tiles: `conv` itself when it is a reduction over
// `reduce_axes` axes with 4-d output, or the float32 sum that a float16 conv rounds (its one
// input); undefined when neither.
te::Tensor window_sum(const te::Tensor& conv, size_t reduce_axes);

// Elements of `t` that `sum` reads for a box of its outputs (extents from 0, one per output
// axis) and of its reduce axes (extents from 0 of the first ones; the rest whole): every index
// of the load bounded over the box, clipped to the tensor as lowering clips a region (a tile
// taller than the input reads it all).
int64_t staged_elements(const te::Tensor& sum, const te::Tensor& t, const std::vector<int64_t>& box,
                        const std::vector<int64_t>& reduce_box);

}  // namespace kiln::schedule
