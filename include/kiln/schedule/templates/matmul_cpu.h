// SGEMM for CPUs: C[M, N] = A[M, K] x B[K, N] with B packed into column panels, a register-blocked
// vectorized micro-kernel and a parallel outer loop. Every choice is a knob (schedule/config.h):
//
//   tile_i   rows of the micro-kernel (inner factor of M)       default 8
//   tile_j   columns of a panel = vector lanes x 2 (inner of N)  default 32
//   tile_k   reduction steps unrolled in the micro-kernel        default 4
//   order    0: row blocks outer (io, jo)  1: panels outer (jo, io)
#pragma once

#include <vector>

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

struct MatmulProgram {
  te::Tensor a, b, c;
  Schedule sched;
  std::vector<te::Tensor> args() const { return {a, b, c}; }
};

// Declares and schedules C = A x B (float32). `cfg` answers the knobs above (defaults if unset).
MatmulProgram matmul_cpu(int64_t m, int64_t n, int64_t k, Config& cfg);

}  // namespace kiln::schedule
