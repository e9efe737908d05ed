// kiln's compiler as one ordered table of stages (src/pipeline.cc), from an imported graph to a
// packaged .so: graph passes, lowering each fused group to a scheduled te program and its loop
// IR, the loop passes, the GPU passes, code generation and packaging. Each stage has a name,
// the unit it transforms (the graph, a group, a loop-level function, a GPU kernel, the module)
// and a pass that takes that unit and the Target; a gate says for which targets and options it
// runs. compile() (compiler.h) runs the table, --dump-ir accepts its names (and "all"), and
// docs/architecture.md's stage table is printed from it (pipeline_markdown(); a test keeps the
// two equal). There is no second list.
#pragma once

#include <string>
#include <vector>

#include "kiln/codegen/build.h"
#include "kiln/codegen/gpu_build.h"
#include "kiln/lower/group_to_te.h"
#include "kiln/lower/prepack_weights.h"
#include "kiln/lower/schedule_group.h"
#include "kiln/schedule/schedule.h"
#include "kiln/support/stage_dump.h"
#include "kiln/target/target.h"

namespace kiln {

// What a stage transforms.
enum class StageUnit {
  kGraph,   // the relay module (fuse_ops: into fused groups; plan_memory, prepack_weights: of them)
  kGroup,   // one fused group: its strategy, te program and schedule
  kLoops,   // one loop-level function (ir::PrimFunc), a group's kernel
  kKernel,  // one GPU kernel with its launch record, after split_host_device
  kModule,  // every kernel at once: the plan, the GPU source and images, the CPU object code
  kPackage  // the .so (export_library)
};
const char* stage_unit_name(StageUnit unit);

struct PipelineStage {
  std::string name;
  StageUnit unit;
  std::string when;  // for which targets or options it runs: "always", "GPU targets", ...
  std::string does;  // what it does, in a line
};

// The stages in the order they run (their names are unique).
const std::vector<PipelineStage>& pipeline_table();
// The stage names in order, then "all": what --dump-ir accepts.
std::vector<std::string> pipeline_stages();
// The graph stages (unit kGraph, up to fuse_ops): those after which the IR is a relay graph
// (CompileOptions::on_graph, --dump-dot).
std::vector<std::string> graph_stages();
// The table as Markdown (docs/architecture.md, "Pipeline"; `kiln compile --list-stages`).
std::string pipeline_markdown();

// Options of the loop-level stages run on their own (loop_ir, build).
struct PipelineOptions {
  codegen::BuildOptions build;
  // Prints the IR after a stage (or after each: "all"). Nothing by default; KILN_DUMP_IR=<stage>
  // in the environment applies when this names no stage.
  StageDumper dump;
  // Receives what the passes report, e.g. a vectorized loop that had to stay serial.
  std::vector<std::string>* notes = nullptr;
};

// A schedule's loop IR for `target`: the table's stages from "loop_nest" through "final" (the loop
// passes; the function verified: a pass bug surfaces as an InternalError naming the culprit).
ir::PrimFunc loop_ir(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const std::string& name,
                            const Target& target = Target::host(), const PipelineOptions& options = PipelineOptions());
// loop_ir, then LLVM for `target` (CPU targets). The kernel is named `name`.
codegen::Module build(const schedule::Schedule& s, const std::vector<te::Tensor>& args,
                      const Target& target = Target::host(), const std::string& name = "main",
                      const PipelineOptions& options = PipelineOptions());
// The table's GPU stages on loop-level functions (lower_warp_buffers through nvrtc): kernels,
// launch records, the module's source and (CUDA) images. kiln::Error naming the function and the
// culprit for IR a GPU cannot run (verify_gpu), or a kernel NVRTC or ptxas rejects.
codegen::GpuModule build_gpu(const std::vector<ir::PrimFunc>& funcs, const Target& target,
                             const codegen::GpuBuildOptions& options = codegen::GpuBuildOptions());

// One fused group lowered: its strategy, te program, schedule and loop-level kernel. The one
// per-group lowering compile(), the tuner's tasks and bench_ops use.
struct LoweredGroup {
  lower::Strategy strategy;
  lower::GroupProgram program;
  schedule::Schedule schedule;
  ir::PrimFunc kernel;  // after the loop passes
};
struct GroupKnobs {
  schedule::Config* config = nullptr;            // these knobs (a tuner's candidate), or
  lower::ScheduleChooser* chooser = nullptr;     // the chooser's (a tuning log), or the defaults
};
// The table's group and loop stages (select_strategy through final) on `group`, its kernel named
// `name`; the GPU stages are not run. kiln::Error (UnsupportedError) naming the kernel, its ops
// and ONNX nodes when a stage refuses the group.
LoweredGroup lower_group(const relay::FusedGroup& group, const std::string& name, const Target& target,
                         const lower::StrategyOptions& strategy_options, const lower::PrepackedWeights& prepacked,
                         const GroupKnobs& knobs = GroupKnobs(), const PipelineOptions& options = PipelineOptions());

}  // namespace kiln
