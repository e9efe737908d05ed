// Compiling a graph-IR model into kernels, a graph plan and weights: kiln's main job.
//
//   relay::Module m = relay::from_onnx("model.onnx");
//   CompiledModel c = compile(m, CompileOptions{});
//   export_library(c, "model.so");          // kernels + graph + weights in one .so
//
// compile() runs the pipeline's table (pipeline.h, src/pipeline.cc; docs/architecture.md
// "Pipeline"): graph passes, each fused group lowered to its loop IR, the loop and GPU passes, and
// code generation for the target (LLVM's machine code, or CUDA C / OpenCL C and NVRTC's images);
// export_library only packages what it made.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "kiln/codegen/build.h"
#include "kiln/codegen/gpu_build.h"
#include "kiln/ir/stmt.h"
#include "kiln/lower/prepack_weights.h"
#include "kiln/lower/schedule_group.h"
#include "kiln/pipeline.h"
#include "kiln/relay/module.h"
#include "kiln/runtime/graph_plan.h"
#include "kiln/target/target.h"

namespace kiln {

struct CompileOptions {
  Target target = Target::host();
  // Print the IR after the named stage (or "all") to dump_to (stderr when null).
  std::string dump_ir_stage;
  std::ostream* dump_to = nullptr;
  // Called with the graph after each graph stage that runs (graph_stages()), after fuse_ops with
  // its groups too (before weights are prepacked): what `kiln compile --dump-dot` draws.
  std::function<void(const std::string& stage, const relay::Module& m, const relay::FusedModule* fused)> on_graph;
  // Where tuned knobs come from (a tuning log: autotune::LogSchedules); null: default schedules.
  lower::ScheduleChooser* schedules = nullptr;
  // The data layout of 2-d convolutions (and the ops between them): kBlocked, NCHW[x]c with x
  // the target's vector lanes (relay::alter_layout), except the convs the target's strategy
  // computes better in NCHW (Winograd); kAuto, blocked where the layout transforms it needs move
  // at most 2.5x the elements the blocked convs write, else NCHW; kNCHW, every conv in NCHW.
  enum class Layout { kAuto, kNCHW, kBlocked };
  Layout layout = Layout::kAuto;
  // 3x3 stride-1 convolutions with a constant weight computed as Winograd F(2x2, 3x3) where the
  // target's strategy finds it pays (te/ops/nn_winograd.h: fewer multiplies, slightly
  // different rounding); false: all direct.
  bool winograd = true;
  // Parallel branches on one input combined into one wider conv/dense/matmul when at least this
  // many share it (relay::combine_parallel); 0: never. Off unless asked for or chosen by a tuning
  // log: on Zen 4 it changed googlenet's and inception_v3's latency by under 1.5% and made a
  // transformer's three projections 3% slower (docs/performance.md, "Parallel-branch fusion").
  int combine_branches = 0;
  // Quantized models' dequantize -> conv/dense computed by int8 kernels on CPU targets
  // (relay::realize_integer_ops); false: in float on the dequantized values.
  bool int8_kernels = true;
  // `--precision fp16`: activations and weights stored in float16, sums in float32
  // (relay::convert_to_float16); inputs and outputs stay float32.
  bool float16 = false;
  // Dynamic batch (runtime/graph_plan.h): the module was imported at batch 1 (every input's
  // leading dim is one sample's) and runs batches batch_min..batch_max; 0: static. CPU targets
  // only; the caller checks that the model computes each sample on its own
  // (relay::check_batch_separable).
  int64_t batch_min = 0;
  int64_t batch_max = 0;
  lower::StrategyOptions strategy_options() const;
};

struct CompiledModel {
  Target target;                      // what the code was generated for
  runtime::GraphPlan plan;
  std::vector<ir::PrimFunc> kernels;  // after the loop passes, one per fused group
  // CPU targets: the kernels compiled by LLVM (object code, and its IR and assembly to read).
  codegen::Module cpu;
  // GPU targets: the kernels split into launches, their source and (CUDA) images; the plan has
  // one node per launch.
  std::optional<codegen::GpuModule> device;
  std::vector<uint8_t> weights;       // constants, at the offsets the plan's entries give
  std::vector<std::string> notes;     // fallbacks and decisions worth telling the user
};

CompiledModel compile(const relay::Module& module, const CompileOptions& options = CompileOptions());

// "auto", "nchw" or "blocked" (the --layout option); kiln::Error naming the value otherwise.
// "fp32" -> false, "fp16" -> true (CompileOptions::float16); kiln::Error naming anything else.
bool parse_precision(const std::string& name);
CompileOptions::Layout parse_layout(const std::string& name);

// The graph half of compile(): the pipeline's graph stages up to prepack_weights (the lowering
// check and weight packing for the target). compile() and the autotuner's task extraction
// (autotune/graph_tasks.h) both start here, so the tuned workloads are exactly the kernels
// compile() builds.
struct FusedProgram {
  relay::FusedModule fused;
  lower::PrepackedWeights prepacked;  // keyed by calls of `fused`
  Target target;
  lower::StrategyOptions strategy_options;
  std::vector<std::string> notes;  // graph-level decisions worth telling the user
};
FusedProgram fuse_model(const relay::Module& module, const CompileOptions& options = CompileOptions());

// The compiled model packaged (the pipeline's last stage): its kernels' machine code or device
// images, plan, weights and metadata in one .so.
void export_library(const CompiledModel& model, const std::string& path);

}  // namespace kiln
