// Measuring one real kernel for the tuner: the same seeded random inputs for every candidate of a
// task, the outputs a trusted build of the kernel (the default schedule) computes on them, and
// the measurement hook that runs a candidate once, rejects it when its outputs differ, and times
// it. Used by the graph tasks (graph_tasks.h); usable for any PrimFunc with static shapes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kiln/autotune/measure_process.h"
#include "kiln/autotune/task.h"
#include "kiln/codegen/build.h"

namespace kiln::autotune {

// Candidates of one task differ only in loop order, tiling, vectorization and FMA contraction,
// so the sums are the same terms in another order: float32 reassociation moves a result by a few
// ulps times the number of terms relative to the magnitudes summed. An element passes when
//   |got - want| <= rtol * |want| + atol_rel * max|want|
// (max over that output). A wrong index or a missed term moves results by O(|want|); an element
// a candidate never writes keeps the NaN it was poisoned with and fails.
struct Tolerance {
  double rtol = 1e-4;
  double atol_rel = 1e-4;
};

// Runs a kernel once on host buffers: its inputs, then its outputs, in parameter order.
using RunOnHost = std::function<void(const std::vector<void*>& args)>;

// Inputs (params [0, num_inputs) of a kernel) and the expected outputs (the rest).
class KernelReference {
 public:
  // Fills the inputs of `func` with values from `seed` (floating types uniform in [-1, 1]; other
  // types zero, so that index-like inputs stay in range) and records the outputs `run` computes
  // from them (a trusted build of the kernel, normally the default schedule), run in an isolated
  // child: a GPU reference opens the device there, never in the tuner. Throws kiln::Error
  // naming the kernel when that run fails.
  static std::shared_ptr<const KernelReference> make(const ir::PrimFunc& func, size_t num_outputs, uint64_t seed,
                                                     const RunOnHost& run, double timeout_s = 60);
  // The same, running `module`'s kernel `func.name` (a CPU build).
  static std::shared_ptr<const KernelReference> make(const codegen::Module& module, const ir::PrimFunc& func,
                                                     size_t num_outputs, uint64_t seed, double timeout_s = 60);

  struct Buffer;
  // The host buffers of one candidate run: the reference's inputs and fresh outputs poisoned
  // (NaN in every float element, 0xA5 bytes elsewhere: what a candidate leaves unwritten shows).
  struct Args {
    std::vector<void*> data;   // every parameter's buffer, in order
    std::vector<size_t> bytes; // and its size
    std::vector<std::unique_ptr<Buffer>> outputs;
    Args();
    Args(Args&&) noexcept;
    ~Args();
  };
  Args candidate_args() const;
  // Throws kiln::Error("wrong result: output N element I: got X, expected Y ...") when an output
  // of `args` differs from the reference beyond `tolerance`.
  void check(const Args& args, const Tolerance& tolerance) const;
  // The input buffer of parameter i < num_inputs(), and its size.
  const void* input(size_t i) const;
  size_t input_bytes(size_t i) const;

  size_t num_inputs() const;
  size_t num_outputs() const;
  ~KernelReference();
  KernelReference(const KernelReference&) = delete;
  KernelReference& operator=(const KernelReference&) = delete;

 private:
  KernelReference() = default;
  std::vector<std::unique_ptr<Buffer>> inputs_;
  std::vector<std::vector<double>> expected_;  // per output, as doubles
  std::vector<ir::Buffer> output_params_;
};

// The hook the tuner runs in its isolated child: runs `module`'s kernel `func.name` (same
// parameters as the reference's) once on the reference inputs, throws kiln::Error("wrong result:
// output N element I: got X, expected Y ...") on a mismatch, then returns time_function's
// samples (seconds per call). `cold_inputs` (parameter indices) are demoted from every core's
// private caches to the shared one before every sample, and each sample is then a single call
// (min_duration_s does not apply): a model's weights, which the other kernels' weights push out
// of L1/L2 between two calls of this one.
MeasureFn measure_kernel(const codegen::Module& module, const ir::PrimFunc& func,
                         std::shared_ptr<const KernelReference> reference, const TimerOptions& timer,
                         const Tolerance& tolerance = Tolerance(), const std::vector<size_t>& cold_inputs = {});

}  // namespace kiln::autotune
