// A tuning task: one distinct tunable workload (an operator with its shapes and dtype) and its
// schedule template. The tuner sees a task only through this interface, so that the real
// pipeline (te compute + schedule template + lower + LLVM build + timed run) and the synthetic
// tasks of the tests plug in the same way.
//
// For a Config the template yields a Program, cheaply: the lowered loop program (features for
// the cost model come from it; the explorer asks for many of these) and a `build` hook that the
// tuner calls only for configs it decided to measure. `build` generates code and returns the
// measurement hook, which the tuner runs in an isolated child process (measure_process.h): it
// runs the kernel with time_function, checks its output against the default schedule's (throw
// kiln::Error("wrong result: ...") on a mismatch, so that a wrong kernel is rejected rather than
// recorded as fast), and returns the seconds per run of every sample.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/autotune/features.h"
#include "kiln/autotune/space_ops.h"
#include "kiln/ir/stmt.h"

namespace kiln::autotune {

// Runs the built candidate and returns seconds per run, one entry per timed sample.
using MeasureFn = std::function<std::vector<double>()>;

struct Program {
  // The lowered, flattened form code generation takes (after flatten_storage, vectorize_loops,
  // unroll_loops). May be left empty (no body) when features are not wanted.
  ir::PrimFunc func;
  // Generates code and returns the measurement hook; may throw kiln::Error (recorded as
  // "build failed: ..."). Runs in the tuner's process.
  std::function<MeasureFn()> build;
  // CUDA candidates: compiles the kernel (NVRTC, the target's sm) and returns ptxas's report,
  // which the cost model's features include. About 0.1 s a kernel: the tuner runs it in
  // isolated children, build_jobs at once, once for each point it ranks. Empty elsewhere.
  std::function<PtxasReport()> ptxas;
};

struct Task {
  std::string name;          // the operator, e.g. "matmul"
  std::string workload_key;  // identity in tuning logs: "matmul_1024_1024_1024_float32"
  double flops = 0;          // floating-point operations per run, for GFLOPS (0: unknown)
  // The schedule template: declares its knobs through cfg (define_split/define_knob) and builds
  // the Program for the choices cfg answers.
  std::function<Program(schedule::Config& cfg)> make;

  // The template's search space: runs `make` once with a recording Config (nothing is built).
  ConfigSpace space() const;
  // The Program of point p of `space`.
  Program instantiate(const ConfigSpace& space, const Point& p) const;
};

}  // namespace kiln::autotune
