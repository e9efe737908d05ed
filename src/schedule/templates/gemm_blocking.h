// Register and cache blocks of a matrix product C[M, N] += A[M, K] B[K, N] on a CPU, derived
// from the target's facts the way BLIS derives its micro-kernel and cache blocks (Low et al.,
// "Analytical modeling is enough for high-performance BLIS", TOMS 2016). The dense and matmul
// templates (dense_cpu.h) and the strategies that pad and pack their operands read these, so no
// register or lane count is a literal in them.
//
// Register block: an mr x (nv vectors of `lanes`) tile of C stays in vector registers while k
// runs; one k step loads nv vectors of B, broadcasts mr elements of A and issues mr*nv FMAs.
//  - registers: mr*nv accumulators + nv B vectors + 1 broadcast <= vector_registers;
//  - latency: mr*nv >= fma_in_flight() (FMA latency x issue rate) independent accumulators,
//    or the FMA pipes wait on dependent sums;
//  - among those, the most FMAs per load, mr*nv / (mr + nv) (ties: more accumulators).
// Rows: the largest divisor of M that fits, when it keeps at least twice the accumulators in
// flight; else tiles of up to the most rows that fit, balanced, over M padded to whole tiles
// (the padded rows cost: gpt2_mini's LM head, M = 128, on Zen 4, one thread, 78-84 ms with
// 6x64 tiles over 132 rows, 66-70 with 4x64; at M = 120 the two ran alike).
// AVX2 (16 registers of 8 floats, 4 cycles x 2/cycle): 6 x 2 vectors (6x16, BLIS's Haswell
// kernel; M = 1024 padded to 1026); AVX-512 (32 of 16): 6 x 4 vectors, 4 x 4 where M is a
// multiple of 4; NEON (32 of 4): 6 x 4 vectors (6x16).
// Measured on Zen 4 (AVX2 code, one thread, SGEMM, per-core CPU time): 512 with B in place,
// 6x16 101 GFLOPS, 4x16 90, the former default 8x16 (16 accumulators + 2 + 1 > 16 registers:
// spills) 59; 1024 with B packed, 6x16 105, 4x16 100, 3x32 (17 registers) 45; OpenBLAS
// (Haswell kernels) 107-110.
//
// Cache: the K x nr panel of B one tile reads is packed contiguous when it exceeds half of L1
// (rows N*4 bytes apart otherwise map onto few L1 sets; SGEMM 1024 on AVX2: 84 GFLOPS in
// place, 110 packed).
#pragma once

#include <cstdint>

#include "kiln/target/target.h"

namespace kiln::schedule {

struct RegisterBlock {
  int64_t mr = 1;  // rows of the tile (broadcasts of A per k step)
  int64_t nv = 1;  // vectors per row (the tile is nv * lanes columns)
};

// The most rows a tile of nv vectors may have on `target` (registers: mr*nv + nv + 1).
int64_t max_tile_rows(const Target& target, int64_t nv);

// The most vectors a tile row may have: the largest power of two with one row's accumulators,
// its B vectors and a broadcast in the registers (AVX2 4, AVX-512 8).
int64_t max_tile_vectors(const Target& target);

// The register block for a product with m rows and n columns (either may be smaller than the
// best block: nv is at most the vectors n needs, and max_nv when that is positive; mr is at most
// m, balanced over the tiles m needs). nv is a power of two.
RegisterBlock register_block(const Target& target, int64_t m, int64_t n, int64_t max_nv = 0);

// The register block of a matmul whose B is read in place (not packed into padded panels):
// nv * lanes must divide n (nv 1 when n is no multiple of the lanes).
RegisterBlock matmul_register_block(const Target& target, int64_t m, int64_t n);

// Rows of the tiles that cover m rows with at most `mr_max` each, evenly: m = 128 with
// mr_max 6 gives 6 (22 tiles, 132 rows computed), m = 8 gives 4 (no padding).
int64_t balanced_tile_rows(int64_t m, int64_t mr_max);

// m rounded up to a multiple of mr: the rows a product pads its result to so that every tile is
// whole (no guard in the register tile's loops; the extra rows read A's last row, clamped).
int64_t padded_rows(int64_t m, int64_t mr);

// Whether a tile's k x nr panel of B (4-byte elements) exceeds half of L1: then B is worth
// packing into contiguous panels first.
bool pack_pays(const Target& target, int64_t k, int64_t nr);

}  // namespace kiln::schedule
