// Tuning tasks of a model: the distinct tunable kernels kiln::compile builds, each a Task the
// tuner (tuner.h) runs for real: the group's te program, its schedule template with the tuner's
// Config (lower::schedule_group, the target's strategy), the loop pipeline, LLVM, and a timed
// run on random inputs whose outputs must match the default schedule's (kernel_measure.h).
//
//   std::vector<GraphTask> tasks = extract_tasks(relay::from_onnx("model.onnx"), CompileOptions{});
//   for (const GraphTask& t : tasks) tune(t.task, tuner_options);
//   LogSchedules log("log.json", target);   // apply_log.h
//   compile(module, {.schedules = &log});   // applies the best record of each task
//
// Kernels are deduplicated by workload key, a deterministic string naming the template, the
// anchor op, its argument types (prepacked weights as packed), its attributes and the kernel's
// output type, e.g.
//   conv:nn.conv2d(float32[1,64,56,56],float32[4,64,3,3,16];dilation=[1,1], groups=1, ...)->float32[1,64,56,56]
// The elementwise tail fused after the anchor (bias, relu, a residual add) is not part of the
// key: it does not change the knobs, and its cost is small next to the anchor's. A task measures
// the first kernel of its key.
#pragma once

#include <string>
#include <vector>

#include "kiln/autotune/kernel_measure.h"
#include "kiln/autotune/task.h"
#include "kiln/compiler.h"

namespace kiln::autotune {

struct GraphTaskOptions {
  // How each candidate is timed (warm caches by default). No warmup call: measure_kernel's
  // correctness run on the same buffers comes first and is one. At most about a second a
  // candidate: a bad SGEMM 1024 config takes seconds a call, and is then timed once.
  TimerOptions timer = [] {
    TimerOptions t;
    t.warmup = 0;
    t.max_total_s = 1.0;
    return t;
  }();
  // Time each call with the kernel's constant inputs (weights) demoted from every core's L1/L2
  // to the shared cache first (measure_kernel's cold_inputs; `kiln tune --cold-weights`), as in
  // a model where the other kernels' weights pass through between two calls of this one. Off by
  // default: on resnet18 it chose better schedules for the 7x7x512 convs (0.80-0.88 ms in the
  // model vs 0.93-0.98 tuned warm) and the 1x1 stride-2 ones, worse for the stride-2 3x3 convs
  // (0.55 vs 0.41) and the 14x14 ones, no better in all; evicting to memory (clflush) was worse.
  bool cold_weights = false;
  Tolerance tolerance;    // candidate vs default schedule
  uint64_t input_seed = 1;
  // Also tune injective and reduction groups (their templates have knobs too: vector width and
  // the parallel threshold); off by default, they are memory-bound and cheap.
  bool all_groups = false;
};

struct GraphTask {
  Task task;
  int occurrences = 0;  // kernels of the model with this workload key
  std::string label;    // the ops of the first such kernel, "nn.conv2d+add+nn.relu"
};

// The workload key of a group when it is tunable: an anchored group with a template (conv,
// dense, matmul, depthwise, pool, norm, ...), or any group with `all_groups`, whose template
// declares at least one knob with a choice on `target`. Empty otherwise.
std::string tunable_workload_key(const relay::FusedGroup& group, const lower::Strategy& strategy,
                                 const lower::PrepackedWeights& prepacked, const Target& target,
                                 bool all_groups = false);

// The distinct tunable workloads of a program, in order of first occurrence, built for the
// program's target (the one fuse_model lowered it for).
std::vector<GraphTask> extract_tasks(const FusedProgram& program, const GraphTaskOptions& options = {});
// fuse_model (the passes compile() runs, for compile_options.target) then the above.
std::vector<GraphTask> extract_tasks(const relay::Module& module, const CompileOptions& compile_options = {},
                                     const GraphTaskOptions& options = {});

// The template a workload key names: "conv" of "conv:nn.conv2d(...)". Tasks of one template
// share a cost model when tuned together (transfer): their features mean the same things.
std::string workload_template(const std::string& workload_key);

// The knobs of a group's schedule template on `target` (a recording run of schedule_group).
ConfigSpace group_config_space(const relay::FusedGroup& group, const lower::Strategy& strategy,
                               const lower::PrepackedWeights& prepacked, const Target& target);

// The task of one group on `target` (it need not be tunable; a space of one point tunes
// trivially): its candidates are built by kiln::lower_group, as compile() builds the kernel.
Task group_task(const relay::FusedGroup& group, const lower::StrategyOptions& strategy_options,
                const lower::PrepackedWeights& prepacked, const Target& target, const GraphTaskOptions& options = {});

}  // namespace kiln::autotune
