// kiln tune MODEL.onnx --log LOG.json [--trials N] [--target T] [--seed S] [--plot OUT.svg]
//           [--build-jobs J] [--memory-limit-mb M] [--input-shape NAME=D0,D1,...]
//
// Extracts the model's distinct tunable kernels (autotune/tune_model.h), tunes each for N trials
// (resumed trials in LOG count), appending every measurement to LOG, prints one line per task
// and optionally the best-so-far curves as an SVG. `kiln compile --tuning-log LOG` applies it.
// GPU targets (cuda, opencl) tune alike: each candidate is built (NVRTC for CUDA) and measured
// on the device by an isolated child that opens the device itself (autotune/gpu_measure.h).
// A run killed at any point loses only the candidates it was measuring: the same command again
// resumes from LOG and measures only what is missing.
// Under `mpirun -np N` the ranks share the tasks and rank 0 writes LOG (autotune/tune_model.h).
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "bind.h"
#include "commands.h"
#include "graph_choice_flags.h"
#include "kiln/autotune/tune_model.h"
#include "kiln/relay/frontend/onnx.h"
#include "kiln/support/error.h"
#include "progress_bar.h"

namespace kiln::cli {
namespace {

struct TuneArgs {
  std::string model, log, target = "llvm", plot;
  std::vector<std::string> input_shapes;
  int trials = 32;
  uint64_t seed = 0;
  double timeout_s = 10;
  int build_jobs = autotune::default_build_jobs();
  // Signed, so that a negative value is refused rather than wrapped to a huge limit.
  int64_t memory_limit_mb = static_cast<int64_t>(autotune::default_memory_limit_mb());
  bool all_groups = false;
  bool cold_weights = false;
  GraphChoiceFlags graph;
  bool no_graph_choices = false;
  bool no_int8 = false;
};

int run_tune(const TuneArgs& a) {
  KILN_USER_CHECK(a.trials >= 1) << "--trials must be at least 1, got " << a.trials;
  KILN_USER_CHECK(a.timeout_s > 0) << "--timeout must be positive";
  KILN_USER_CHECK(a.build_jobs >= 1) << "--build-jobs must be at least 1, got " << a.build_jobs;
  KILN_USER_CHECK(a.memory_limit_mb >= 0) << "--memory-limit-mb must be 0 (no limit) or more, got " << a.memory_limit_mb;
  autotune::TuneModelOptions o;
  o.log = a.log;
  o.trials = a.trials;
  o.seed = a.seed;
  o.timeout_s = a.timeout_s;
  o.build_jobs = a.build_jobs;
  o.memory_limit_mb = static_cast<size_t>(a.memory_limit_mb);
  o.compile.target = Target::parse(a.target);
  a.graph.apply(&o.compile);
  o.compile.int8_kernels = !a.no_int8;
  o.graph_choices = !a.no_graph_choices;
  o.fixed_graph_choices = a.graph.given();
  o.tasks.all_groups = a.all_groups;
  o.tasks.cold_weights = a.cold_weights;
  relay::OnnxImportOptions iopts;
  // A batch range tunes one sample's kernels: what a module compiled with that range runs at
  // every batch (its kernels loop over the samples), so one sample is the representative batch.
  BatchRange batch;
  iopts.input_shapes = read_shape_specs(a.input_shapes, &batch);
  if (!batch.inputs.empty())
    std::cout << "note: dynamic batch " << batch.min << ".." << batch.max
              << ": tuning the kernels of one sample, which the dynamic-batch module runs at every batch" << std::endl;
  // On a terminal, a bar redrawn in place between the task lines; elsewhere the lines alone.
  // Not under mpirun: Open MPI gives each rank a pseudo-terminal whatever mpirun's own output is.
  const bool bar = is_interactive(stdout) && !std::getenv("OMPI_COMM_WORLD_SIZE");
  if (bar)
    o.on_progress = [](size_t i, size_t n, const std::string& label, const autotune::TuneProgress& p) {
      std::cout << "\r\033[K" << progress_bar(i + 1, n, label, p) << std::flush;
    };
  std::vector<autotune::PlotSeries> curves = autotune::tune_model(
      relay::from_onnx(a.model, iopts), a.model, o,
      [bar](const std::string& line) { std::cout << (bar ? "\r\033[K" : "") << line << std::endl; },
      [](const std::string& note) { std::cerr << "note: " << note << "\n"; });
  if (!a.plot.empty()) {
    autotune::write_tuning_curves_svg(a.plot, curves, "kiln tune " + std::filesystem::path(a.model).filename().string());
    std::cout << "plot: " << a.plot << "\n";
  }
  return kOk;
}

}  // namespace

void add_tune(CLI::App& app, int* status) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App* c = app.add_subcommand("tune", "autotune the schedules of a model's kernels into a tuning log");
  c->add_option("model", args->model, "the .onnx model")->required();
  c->add_option("--log", args->log, "tuning log (JSON lines): resumed when it exists, appended to")->required();
  c->add_option("--trials", args->trials, "measurements per task, resumed ones included (default 32)");
  c->add_option("--target", args->target, "code generation target (llvm: this CPU)");
  c->add_option("--seed", args->seed, "seed of the search: the same seed proposes the same configs");
  c->add_option("--plot", args->plot, "write best-so-far GFLOPS against trials as an SVG");
  c->add_option("--timeout", args->timeout_s,
                "seconds per candidate, its build and run together, before it counts as hung (default 10)");
  c->add_option("--build-jobs", args->build_jobs,
                fmt::format("candidates built (code generation) at once (default: the number of cores, {}); their "
                            "timed runs are one at a time either way",
                            args->build_jobs));
  c->add_option("--memory-limit-mb", args->memory_limit_mb,
                fmt::format("MiB a candidate may allocate, its build and run together (its start as a copy of the "
                            "tuner included), before it is recorded as out of memory (default: half the memory, {} "
                            "MiB; 0: no limit)",
                            args->memory_limit_mb));
  c->add_flag("--all-groups", args->all_groups, "also tune injective and reduction kernels");
  args->graph.add(c, "tune the direct convs `kiln compile --no-winograd` builds (and measure no Winograd graph)");
  c->add_flag("--no-graph-choices", args->no_graph_choices,
              "tune the kernels of the default graph only: do not first measure the graph-level alternatives (layout, "
              "Winograd, combined branches) and record the fastest");
  c->add_flag("--no-int8", args->no_int8, "compute quantized models' convs and dense layers in float on dequantized values, not as int8 kernels");
  c->add_flag("--cold-weights", args->cold_weights,
              "time candidates with the weights moved out of every core's L1/L2 before each call");
  add_input_shape_option(c, &args->input_shapes, /*batch_range=*/true);
  c->callback([args, status] { *status = guarded("tune", [&] { return run_tune(*args); }); });
}

}  // namespace kiln::cli
