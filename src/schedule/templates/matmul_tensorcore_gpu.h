// The tensor-core schedule of float16 / bfloat16 products (dense, matmul, batch matmul and 2-d
// convs as implicit GEMMs, with float32 sums), which matmul_gpu.h's templates take when the
// product fits (knob tensor_core):
// warps compute their tiles of C with mma.m16n8k16 (mma_intrin.h) from operand tiles staged in
// shared memory. Knobs (schedule/config.h):
//
//   warps_m, warps_n   the block's warps along rows and columns
//   mma_m, mma_n       each warp's 16 x 8 tiles along rows and columns
//   mma_k              the slice of K staged per step: 16, 32, 64
//   (double_buffer,    matmul_gpu.h's knobs: the slices double-buffered (pipeline_stages buffers,
//    pipeline_stages)  3 by default here), loaded with cp.async on sm_80+
//   warpgroup_mma      sm_90a (and OpenCL's twin) only: Hopper's wgmma instead, off by default
//   wgmma_n            its warpgroups' columns: 64, 128 or 256 (at most what divides N)
//   wgmma_in_flight    with warpgroup_mma and 3+ buffers: each K slice's wgmma left in flight
//                      while the next slice's are issued (1, the default), or waited for (0)
//   wgmma_swizzle      with warpgroup_mma and K slices of 128 bytes: K-major tiles in wgmma's
//                      128-byte swizzle (1, the default), or in core matrices (0)
// With warpgroup_mma, a block is 1 or 2 warpgroups (4 warps each, 64 rows: 2 where M is whole
// blocks of 128) by wgmma_n columns, K slices of 64 (or 32, 16 as K allows); each warpgroup's
// K step is one wgmma_m64nNk16 (mma_intrin.h) reading the operand tiles where they are, in
// shared memory: K-major tiles of 128-byte K slices in the 128-byte swizzle
// (Stage::swizzle_128b_layout), the others as core matrices (Stage::core_matrix_layout); each
// K slice's run left in flight until the next slice's is issued. On an H200 the first form
// (core matrices alone, each run waited for before its slice's barrier) was slower than
// mma.sync (203 against 330 TFLOP/s on the float16 GEMM 4096): hence off by default; the
// swizzle and the runs in flight are not yet measured.
// Default block: the largest whose grid still has a block per multiprocessor, 128 x 256 (2 x 4
// warps of 4 x 8 tiles) or 128 x 128 (4 x 2 warps of 2 x 8) with K slices of 64, else 64 x 64
// (2 x 2 warps of 2 x 4) with slices of 32
// (each at most what the padded product needs: a block no larger than M x N rounded up).
//
// Per block of (16 mma_m warps_m) x (8 mma_n warps_n) outputs, with 32 x warps_n x warps_m
// threads (x the lanes, y and z the warp): every K slice of A and B is copied into shared memory
// by all threads, 16 bytes a copy (cp.async where it can: ir::inject_double_buffer); each warp
// multiplies its tiles from there into its accumulators (scope warp: registers); then stores them
// into a float32 tile of the block in shared memory, from which all threads compute the
// output (the cast and any fused epilogue), neighbouring threads neighbouring columns.
#pragma once

#include <optional>

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/schedule/tensor_intrin.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// The mma intrinsic `anchor` (a product of two matrices, matmul_gpu_applies) computes with, when
// it does: a float32 sum over k of float32(A[..., i, k]) * float32(B[..., j, k]) (or B[..., k, j])
// with A and B of one type, float16 or bfloat16, over whole tiles (M, N and K multiples of 16, 8
// and 16: te::ops::ProductPad), read by `tiled`, another stage. Otherwise nullopt.
std::optional<TensorIntrin> mma_intrin_for(const te::Tensor& tiled, const te::Tensor& anchor);

// The schedule above; `buffers` the slices' buffers (below 2: one, not pipelined; matmul_gpu.h's
// knobs double_buffer and pipeline_stages). `anchor` is [batch..., M, N]
// (the tiles are its buffers' last two dims); `tiled` has the same axes with the rows moved to
// axis `row_axis` (nd - 2 for a matmul; 1 for a conv's [n, oc, oh, ow] over a product batched
// over (n, oh): te::ops::conv2d_gemm). kiln::Error when the chosen knobs exceed the target's
// threads or shared memory.
void schedule_matmul_tensorcore_gpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& anchor, size_t row_axis,
                                    const TensorIntrin& mma, int buffers, const Target& target, Config& cfg);

}  // namespace kiln::schedule
