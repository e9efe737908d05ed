// The GPU schedule of dense, matmul and batch matmul (C[..., i, j] = sum_k A[..., i, k] B[.., k, j],
// in any operand layout): shared-memory tiling with register blocking, as in TVM's CUDA dense.
// Knobs (schedule/config.h):
//
//   threads_m, threads_n        the block's threads along rows and columns   default 16 x 16
//                               (fewer for a thinner product)
//   rows_per_thread,            each thread's register block of outputs     default 8 x 4
//   cols_per_thread             (fewer where the product is thin or its grid small)
//   tile_k                      the slice of K staged in shared memory per step   default 16
//                               (1 .. 32; K itself when smaller)
//   double_buffer               two halves of each tile: the next slice loads while    default 1 on
//                               this one computes (ir::inject_double_buffer), with     CUDA sm_80+,
//                               cp.async on CUDA sm_80+                                else 0
//   pipeline_stages             the buffers double_buffer gives each tile: 2, 3 or 4;  default 2,
//                               with S, slice k + S - 1 loads while slice k computes   3 on tensor
//                                                                                      cores
//   vector_fetch                each thread copies 16 bytes of a tile row at once      default 1
//                               (one cp.async) where the rows are whole vectors
//
// A block computes a (threads_m * rows_per_thread) x (threads_n * cols_per_thread) tile of C
// (batch dims on blockIdx.z). For each K slice its threads together copy the A rows and B
// columns the tile needs into shared memory (cooperative fetch), then each thread accumulates
// its register block from there. Barriers come from ir::insert_thread_sync. An epilogue fused
// after the product (bias, activation) is computed from the registers.
#pragma once

#include <optional>

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// Whether `anchor` is a product this template tiles: a reduction over one axis of two operands
// of rank >= 2, with at least two output dims.
bool matmul_gpu_applies(const te::Tensor& anchor);

// The batch axes of a product's output stage (all but its rows, axis `row_axis`, and its
// columns, the last) fused into one on blockIdx.z, outermost; nullopt when it has none. The
// plain schedule and the tensor-core one (matmul_tensorcore_gpu.h) tile the rest alike.
std::optional<ir::IterVar> bind_product_batch(Stage out, size_t row_axis);

// The product a group's anchor stands for: the anchor itself, or the product under its chain of
// one-input stages (a float16 product's cast, the slice of its padding, a conv's transpose);
// the anchor when there is none.
te::Tensor product_under(const te::Tensor& anchor);

// An AnchorTemplate (anchor_cpu.h's signature): `tiled` is the group's output (the anchor
// itself, or its elementwise tail, into whose thread loops the product is computed), `anchor`
// the product.
void schedule_matmul_gpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& anchor, const Target& target,
                         Config& cfg);

// The same tiles for a 2-d convolution as an implicit GEMM (te::ops::conv2d_gemm: the product
// [n, oh, oc, ow] = sum_q wmat[oc, q] * im2col[n, oh, q, ow], read transposed as [n, oc, oh,
// ow]): rows are output channels, columns the output row's pixels, (n, oh) the batch; the shared
// tiles of im2col gather from the padded input, so no column matrix is ever stored. `anchor` is
// conv2d_gemm's result. Same knobs; a float16 / bfloat16 conv padded to whole tensor-core tiles
// takes matmul_tensorcore_gpu.h's schedule as a product does.
void schedule_conv_gemm_gpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& anchor, const Target& target,
                            Config& cfg);

}  // namespace kiln::schedule
