// The loop-level pipeline: from a te schedule to what code generation takes. Stage names (for
// dumps) in order, each after its pass:
//
//   lower            schedule::lower: te schedule -> ir::PrimFunc (multi-dimensional buffers)
//   flatten_storage  ir::flatten_storage: one flat index per access
//   loop_simplify    ir::simplify: loop-range-aware arithmetic simplification, guard removal
//   vectorize_loops  ir::vectorize_loops: vectorized loops -> vector IR
//   unroll_loops     ir::unroll_loops: unrolled loops -> copies
//   final            ir::simplify again, then ir::verify (a failure is a kiln bug)
//   codegen::build   LLVM: optimize, JIT, object code
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "kiln/codegen/build.h"
#include "kiln/schedule/schedule.h"
#include "kiln/support/stage_dump.h"

namespace kiln::codegen {

// The stage names above, in order.
const std::vector<std::string>& loop_stages();

struct PipelineOptions {
  BuildOptions build;
  // Prints the IR after a stage of loop_stages() (or after each: "all"). Nothing by default;
  // KILN_DUMP_IR=<stage> in the environment applies when this names no stage.
  StageDumper dump;
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
