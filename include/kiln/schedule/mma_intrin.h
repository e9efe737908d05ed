// Tensor intrinsics of the warp-level matrix multiply-accumulate mma.sync.aligned.m16n8k16 of
// NVIDIA GPUs from sm_80 on (float16 / bfloat16 inputs, float32 accumulators), for
// Stage::tensorize (tensor_intrin.h).
//
// A warp's accumulators live in a buffer of scope "warp" (Stage::set_scope): its logical shape
// is the warp's tile of C, whole 16 x 8 tiles, and each of the 32 lanes holds 4 floats of each
// tile, in the PTX ISA's fragment layout (mma_c_element), tiles in row-major order: lane l keeps
// element i of tile t at its own index 4 t + i. The intrinsics alone index such a buffer, per
// lane, inside ir::kWarpFragment (ir::lower_warp_buffers then allocates 1/32 of it per lane).
// Each is emitted as per-lane code in a loop bound to threadIdx.x of extent 32 (the lanes: the
// block's x extent must be 32), so every lane of the warp runs it.
//
// The product: A and B are read by each lane directly from wherever they are (shared memory in
// the GEMM template) in the fragment layouts of mma_a_element and mma_b_element. Its per-lane code
// is ir::kMmaSync: the call the CUDA dialect prints as mma.sync, around the same sums as plain
// loops (each lane's 4 elements of C from the rows and columns of A and B they need), which every
// other dialect prints, so that the OpenCL twin on PoCL checks the surrounding schedule.
#pragma once

#include "kiln/ir/expr.h"
#include "kiln/schedule/tensor_intrin.h"

namespace kiln::schedule {

// Where lane `lane` (0..31) holds element i (a constant or a loop variable) of an operand of mma.m16n8k16 (PTX ISA, "Matrix
// fragments for mma.m16n8k16 with floating point type"), with groupID = lane / 4 and
// threadID_in_group = lane % 4:
//   A (16 x 16, row-major), i < 8: row groupID + 8 (i / 2 % 2), column 2 threadID_in_group + i % 2 + 8 (i / 4)
//   B (16 x 8, K x N), i < 4:      row (k) 2 threadID_in_group + i % 2 + 8 (i / 2), column (n) groupID
//   C and D (16 x 8), i < 4:        row groupID + 8 (i / 2), column 2 threadID_in_group + i % 2
// Elements 2j and 2j + 1 of A and of B share the lane's 32-bit register j, 2j in the low half.
struct MmaElement {
  ir::Expr row, col;
};
MmaElement mma_a_element(const ir::Expr& lane, const ir::Expr& i);
MmaElement mma_b_element(const ir::Expr& lane, const ir::Expr& i);
MmaElement mma_c_element(const ir::Expr& lane, const ir::Expr& i);

// C[i, j] (+)= sum over k < 16 of float32(A[i, k]) * float32(B[j, k]), C 16 x 8 in a warp buffer,
// A 16 x 16 and B 8 x 16 of type `in` (float16 or bfloat16); with b_kn, B is K x N:
// float32(B[k, j]). Named "mma_m16n8k16_<in>_<nt|nn>". Its init zeroes the lane's 4
// accumulators; its update is the mma; its body both.
TensorIntrin mma_m16n8k16(ir::DataType in, bool b_kn);

// Hopper's warpgroup mma (wgmma.mma_async.m64nNk16, sm_90a), declared per warp: C[i, j] (+)=
// sum over k < 16 of float32(A[i, k]) * float32(B[j, k]) for C 16 x N in a warp buffer (the same
// layout as N / 8 tiles of mma_m16n8k16), A 16 x 16 and B N x 16 (with b_kn, K x N) of type
// `in`. Four consecutive warps (a warpgroup: warp ids 4w..4w+3, their rows 16 apart, the first
// at a multiple of 64) issue it together: each names the warpgroup's 64 rows of A by its own
// rows' base less its row % 64. A and B must be shared buffers in core matrices
// (Stage::core_matrix_layout). N is a multiple of 8 up to 256. With in_flight, each K slice's
// run of them stays in flight while the loop's next iteration begins (ir::kWgmmaCall): the
// surrounding pipeline must have 3 or more buffers (inject_double_buffer). Named
// "wgmma_m64n<N>k16_<in>_<nt|nn>".
TensorIntrin wgmma_m64nNk16(ir::DataType in, bool b_kn, int64_t n, bool in_flight = false);

// C[i, j] = F[i, j] over a 16 x 8 tile: the float32 fragments F of a warp buffer stored by their
// lanes into C (any buffer), each lane its 4 elements. Named "mma_store_m16n8_float32".
TensorIntrin mma_store_m16n8();

}  // namespace kiln::schedule
