// CPU schedules of the op library's matrix products (te/ops/nn_dense.h).
//
// dense: the GEMM pattern of matmul_cpu.h on dense's column-blocked core. The output is tiled
// into (mr rows x np panels of nr columns); each tile accumulates in registers (the blocked
// stage, scope "local", computed at the tile) from the packed weight panels, and is written
// out through the unpacking stage and any inlined elementwise tail (bias, activation).
//   tile_i     [M/mr, mr] rows per tile                      [largest divisor of M <= 8]
//   panels     1, 2 or 4 panels per tile (largest dividing)   [2 when the panel count is even]
//   tile_k     [K/ku, ku] reduction steps per inner loop      [largest divisor of K <= 4]
//   unroll_k   1: the ku steps unrolled; 0: a loop            [1]
//
// matmul (numpy batched matmul of two runtime operands): an mr x nr register tile, the last
// axis vectorized, the one before it unrolled, the batch dims fused into the parallel loop. By
// default each tile is a task that sums all of K and reads B in place; the cache-level knobs
// (only with rows, i.e. an output of rank >= 2) trade that for large K and N.
//   tile_i     [I/mr, mr]                                     [largest divisor <= 8]
//   tile_j     [J/nr, nr] (nr a multiple of the lanes where J allows)    [32, 16 or J's divisor]
//   tile_k     [K/ku, ku]                                     [largest divisor of K <= 4]
//   pack_b     1: B, when a kernel input, copied first into panels [N/nr, K, nr] (a root
//              stage): a tile's k steps read contiguous rows, not rows N*4 bytes apart   [0]
//   tile_kc    K chunk (a divisor of K of about 64..512), or 0: a task (row strip or column
//              panel) accumulates its block in a local buffer chunk by chunk, each chunk swept
//              over all its tiles while the shared operand slice is in cache        [0]
//   order      0: rows outer (tasks are row tiles/strips); 1: column panels outer  [0]
#pragma once

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// `dense` is what te::ops::dense returned; `tiled` is dense itself or the group's output of the
// same shape (its elementwise tail inlined).
void schedule_dense_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& dense, const Target& target, Config& cfg);

// `matmul` is what te::ops::batch_matmul returned; `tiled` as above.
void schedule_matmul_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& matmul, const Target& target, Config& cfg);

}  // namespace kiln::schedule
