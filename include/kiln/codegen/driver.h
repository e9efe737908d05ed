// The build driver: the whole tensor-program pipeline in one readable place.
//
//   schedule::lower          te schedule -> ir::PrimFunc (multi-dimensional buffers)
//   ir::flatten_storage      one flat index per access
//   ir::simplify             loop-range-aware arithmetic simplification, guard removal
//   ir::vectorize_loops      vectorized loops -> vector IR
//   ir::unroll_loops         unrolled loops -> copies
//   ir::simplify
//   ir::verify               well-formedness (a failure is a kiln bug)
//   codegen::build           LLVM: optimize, JIT, object code
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "kiln/codegen/build.h"
#include "kiln/schedule/schedule.h"

namespace kiln::codegen {

struct PipelineOptions {
  BuildOptions build;
  // Print the IR after the named pass ("lower", "flatten_storage", "simplify",
  // "vectorize_loops", "unroll_loops", "final") or after every pass ("all") to `dump_to`
  // (stderr when null). Empty: no dumps. KILN_DUMP_IR=<pass> in the environment does the same.
  std::string dump_ir_after;
  std::ostream* dump_to = nullptr;
  // Receives what the passes report, e.g. a vectorized loop that had to stay serial.
  std::vector<std::string>* notes = nullptr;
};

// The loop-level passes, in order, from a lowered PrimFunc to what code generation takes; the
// result is verified (a pass bug surfaces as an InternalError naming the culprit).
ir::PrimFunc optimize_ir(const ir::PrimFunc& lowered, const PipelineOptions& options = PipelineOptions());

// Lowers a schedule and runs optimize_ir on it.
ir::PrimFunc lower_to_ir(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const std::string& name,
                         const PipelineOptions& options = PipelineOptions());

// lower_to_ir, then compiles for `target`. The kernel is named `name`.
Module build(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const Target& target = Target::host(),
             const std::string& name = "main", const PipelineOptions& options = PipelineOptions());

}  // namespace kiln::codegen
