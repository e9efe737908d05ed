// CPU schedules of the op library's matrix products (te/ops/nn_dense.h).
//
// Both derive their defaults from the target's register block (gemm_blocking.h: 6 rows x 2
// vectors on AVX2, 6 x 4 on AVX-512); the strategy pads the rows (and dense's panel count) to
// it, so tiles are whole and only the final stores of the last row tile are guarded.
//
// dense (a weight in panels: nn.dense, or nn.matmul with a constant 2-D B): the output is tiled
// into (mr rows x np panels of nr columns, nr one vector); each tile accumulates in registers
// (the blocked stage, scope "local", computed at the tile) from the packed weight panels, and
// is written out through the unpacking stage and any inlined elementwise tail (bias,
// activation). Leading batch dims of x join the parallel loop.
//   tile_i     [Mp/mr, mr] rows per tile, mr up to max_tile_rows   [the register block's mr]
//   panels     1, 2, 4, ... max_tile_vectors panels per tile (the largest dividing)
//                                                                 [the register block's vectors]
//   tile_k     [K/ku, ku] reduction steps per inner loop          [largest divisor of K <= 4]
//   unroll_k   1: the ku steps unrolled; 0: a loop                [1]
//   sweep      1 (with K >= 256, summed in chunks): a task is a panel group over all rows, each
//              K chunk swept over its row tiles while the weight's slice stays in L1     [0]
//
// matmul (numpy batched matmul of two runtime operands): an mr x nr register tile, the last
// axis vectorized, the one before it unrolled, the batch dims fused into the parallel loop. By
// default each tile is a task that sums all of K; the cache-level knobs (only with rows, i.e.
// an output of rank >= 2) trade that for large K and N.
//   tile_i     [I/mr, mr]                                  [the register block's mr]
//   tile_j     [J/nr, nr]       [the register block's vectors, the most whole vectors J allows]
//   tile_k     [K/ku, ku]                                  [largest divisor of K <= 4]
//   pack_b     1: B, when a kernel input, copied first into panels [N/nr, K, nr] (a root
//              stage): a tile's k steps read contiguous rows, not rows N*4 bytes apart
//                                  [1 when the K x nr panel exceeds half of L1 and rows share it]
//   tile_kc    K chunk (a divisor of K of about 64..512), or 0: a task (row strip or column
//              panel) accumulates its block in a local buffer chunk by chunk, each chunk swept
//              over all its tiles while the shared operand slice is in cache
//              [0: SGEMM 1024 on Zen 4, AVX2, 2 threads, B packed: 0.96-0.99 of OpenBLAS
//              without chunks, 0.72-0.93 with chunks of 64, 128 or 256; the panel of K x nr
//              stays in L2 up to K = 4096]
//   order      0: rows outer (tasks are row tiles/strips); 1: column panels outer
//                                                                   [1 when B is packed]
#pragma once

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// `dense` is what te::ops::dense or dense_packed returned; `tiled` is dense itself or the group's output of the
// same shape (its elementwise tail inlined).
void schedule_dense_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& dense, const Target& target, Config& cfg);

// `matmul` is what te::ops::batch_matmul returned (its "<name>.acc" stage when it has one);
// `tiled` as above.
void schedule_matmul_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& matmul, const Target& target, Config& cfg);

}  // namespace kiln::schedule
