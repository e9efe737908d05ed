// Shared-memory staging for GPU templates (matmul_gpu.h, depthwise_gpu.h): a tile copied into
// shared memory by every thread of the block together.
#pragma once

#include <cstdint>

#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// Fetches `st` (a shared copy computed at a loop of its reader) with every thread of a
// ty x tx block: its loops fused, split into threadIdx.x and threadIdx.y and a serial rest, so
// neighbouring threads copy neighbouring elements (coalesced reads).
void cooperative_fetch(Stage st, int64_t ty, int64_t tx);

}  // namespace kiln::schedule
