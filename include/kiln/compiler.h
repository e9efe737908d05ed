// Compiling a graph-IR model into kernels, a graph plan and weights: kiln's main job.
//
//   relay::Module m = relay::from_onnx("model.onnx");
//   CompiledModel c = compile(m, CompileOptions{});
//   export_library(c, "model.so");          // kernels + graph + weights in one .so
//
// compile() runs the graph passes (infer_types, fold_constants, fold_batch_norm, simplify,
// eliminate_common_subexpr, remove_dead, alter_layout, fuse_ops, plan_memory), lowers every
// fused group to te (te/ops/lowering.h), schedules it (default template, or the tuning log's
// best record), and lowers it to a PrimFunc through the loop-level pipeline (codegen/driver.h).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kiln/target/target.h"
#include "kiln/ir/stmt.h"
#include "kiln/relay/lower_graph.h"
#include "kiln/relay/module.h"
#include "kiln/runtime/graph_plan.h"

namespace kiln {

struct CompileOptions {
  Target target = Target::host();
  // Print the graph after the named pass (or "all") to dump_to (stderr when null).
  std::string dump_ir_stage;
  std::ostream* dump_to = nullptr;
  // A tuning log (autotune records); empty: default schedules.
  std::string tuning_log;
  // Blocked NCHW[x]c convolutions (relay::alter_layout); off until the op library lowers them.
  bool alter_layout = false;
  // 3x3 stride-1 convolutions with a constant weight computed as Winograd F(2x2, 3x3)
  // (te/ops/nn_winograd.h: fewer multiplies, slightly different rounding); false: all direct.
  bool winograd = true;
};

struct CompiledModel {
  runtime::GraphPlan plan;
  std::vector<ir::PrimFunc> kernels;  // after codegen::optimize_ir, one per fused group
  std::vector<uint8_t> weights;       // constants, at the offsets the plan's entries give
  std::vector<std::string> notes;     // fallbacks and decisions worth telling the user
};

CompiledModel compile(const relay::Module& module, const CompileOptions& options = CompileOptions());

// The graph half of compile(): the passes up to fuse_ops, the lowering check and weight
// prepacking. compile() and the autotuner's task extraction (autotune/graph_tasks.h) both start
// here, so the tuned workloads are exactly the kernels compile() builds.
struct FusedProgram {
  relay::FusedModule fused;
  relay::PrepackedWeights prepacked;  // keyed by calls of `fused`
};
FusedProgram fuse_model(const relay::Module& module, const CompileOptions& options = CompileOptions());

// Builds the kernels for the plan's target and writes one shared library holding kernels, graph
// plan, weights and metadata; the runtime (kiln_runtime.h) loads it.
void export_library(const CompiledModel& model, const std::string& path);

}  // namespace kiln
