// kiln bench OUT.so|MODEL.onnx [--target T] [--threads T] [--repeat N]: median latency of a
// compiled model (an .onnx model is compiled for --target first) on seeded random inputs.
// Prints "median X ms". --profile then times every node separately (the runtime's per-node
// profile) and prints each kernel's median and share, slowest first; --profile-json FILE also
// writes them as JSON, which `kiln compile --dump-dot fuse_ops G.dot --dot-profile FILE` draws.
// --roofline measures the machine's ceilings and sets each kernel against them (roofline.h);
// --roofline-svg FILE also draws the plot.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <iostream>
#include <vector>

#include "kiln/runtime/graph_executor.h"
#include "kiln/runtime/module_loader.h"
#include "kiln/target/target.h"

#include "commands.h"
#include "graph_pictures.h"
#include "kiln/autotune/measure_process.h"
#include "module_file.h"
#include "module_io.h"
#include "roofline.h"

namespace kiln::cli {

namespace {

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// A second executor of the same library, so the plain median above is never timed with clocks
// around the nodes. Runs until each node has opts.repeat samples, and at least as long as the
// plain timing did.
// `json_path` (--profile-json), when not empty, gets the medians too; `module` is the name the
// user gave, for the file.
// Returns each node's median seconds, in plan order.
std::vector<double> print_profile(const std::string& path, const autotune::TimerOptions& opts,
                                  const std::string& json_path, const std::string& module,
                                  const std::vector<relay::HostTensor>& inputs) {
  runtime::GraphExecutor exec = runtime::GraphExecutor::load(path);
  for (int i = 0; i < exec.num_inputs(); ++i) exec.set_input(i, view_of(inputs.at(i)));
  for (int i = 0; i < opts.warmup; ++i) exec.run();
  exec.set_profiling(true);
  int runs = std::max(opts.repeat, 10) * 5;
  std::vector<double> wall;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    exec.run();
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  exec.set_profiling(false);
  std::sort(wall.begin(), wall.end());
  std::cout << "\nprofile (" << runs << " runs, median per node)\n" << exec.profile_table()
            << "median profiled run " << wall[wall.size() / 2] * 1e3 << " ms\n";
  std::vector<KernelTime> kernels;
  std::vector<double> medians;
  for (const runtime::GraphExecutor::NodeProfile& p : exec.profile()) {
    std::vector<double> v = p.seconds;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    kernels.push_back({p.kernel, p.label, v[v.size() / 2] * 1e3});
    medians.push_back(v[v.size() / 2]);
  }
  if (json_path.empty()) return medians;
  write_profile_json(json_path, module, kiln_get_num_threads(), runs, kernels);
  std::cout << "wrote the profile to " << json_path << "\n";
  return medians;
}

// Checked before anything is timed. A device module first: it may carry no costs either (a
// kernel split over several launches drops them), and compiling it again would not help. Then
// a module from before plan format 3, which has no costs.
void check_roofline_module(const runtime::LoadedModule& m) {
  if (m.plan().device_type != kDLCPU) throw Error("--roofline measures CPU ceilings: " + m.path() + " is a device module");
  if (!m.plan().has_costs)
    throw Error("--roofline needs the per-kernel FLOPs and bytes that modules of this kiln version carry; " +
                m.path() + " was built by kiln " + m.kiln_version() + " without them: compile it again");
}

void print_roofline(const runtime::GraphPlan& plan, const std::vector<double>& medians, const std::string& svg_path,
                    const std::string& module) {
  Target target = Target::parse(plan.target);
  const int threads = kiln_get_num_threads();
  std::cout << "\nmeasuring the ceilings on " << threads << " thread" << (threads == 1 ? "" : "s") << " ...\n";
  Ceilings c = measure_ceilings(threads, target.facts);
  std::vector<RooflineKernel> kernels;
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    const runtime::GraphNode& n = plan.nodes[i];
    kernels.push_back({n.kernel, n.label, medians.at(i), n.flops, static_cast<double>(n.bytes)});
  }
  std::cout << roofline_table(kernels, c);
  if (svg_path.empty()) return;
  write_text(svg_path, roofline_svg(kernels, c, "kiln roofline: " + module), "--roofline-svg");
  std::cout << "wrote the roofline plot to " << svg_path << "\n";
}

}  // namespace

void add_bench(CLI::App& app, int* status) {
  struct Args {
    std::string module, target, profile_json, roofline_svg;
    int threads = 0, repeat = 20;
    int64_t batch = 0;
    bool profile = false, roofline = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("bench", "time a compiled model (median latency)");
  c->add_option("module", args->module, "the compiled model (.so), or an .onnx model to compile for --target")
      ->required();
  c->add_option("--target", args->target, "compile an .onnx model for this target; a .so must have been built for it");
  c->add_option("--threads", args->threads, "threads (default: KILN_NUM_THREADS, else all cores)");
  c->add_option("--repeat", args->repeat, "timed samples (each at least 0.1 s of runs)");
  c->add_option("--batch", args->batch, "N: run a dynamic-batch module at batch N (default: its smallest batch)");
  c->add_flag("--profile", args->profile, "also time every kernel and print them, slowest first");
  c->add_option("--profile-json", args->profile_json,
                "FILE: with --profile, also write each kernel's median time as JSON (for kiln compile --dot-profile)")
      ->needs("--profile");
  c->add_flag("--roofline", args->roofline,
              "measure the machine's FMA peak and memory bandwidth and set every kernel's FLOPs, bytes and time "
              "against them");
  c->add_option("--roofline-svg", args->roofline_svg, "FILE: with --roofline, also draw the log-log roofline plot")
      ->needs("--roofline");
  c->callback([args, status] {
    *status = guarded("bench", [&] {
      if (args->threads > 0) kiln_set_num_threads(args->threads);
      ModuleFile file(args->module, args->target);
      std::shared_ptr<const runtime::LoadedModule> loaded;
      if (args->roofline) {
        loaded = runtime::LoadedModule::load(file.path());
        check_roofline_module(*loaded);
        if (!args->roofline_svg.empty()) write_text(args->roofline_svg, "", "--roofline-svg");  // unwritable: say so before timing
      }
      LoadedModel m(file.path());
      std::vector<relay::HostTensor> inputs = m.random_inputs(args->batch);
      for (int i = 0; i < m.num_inputs(); ++i) m.set_input(i, inputs[i]);
      if (args->batch > 0) std::cout << "batch " << args->batch << "\n";
      autotune::TimerOptions opts;
      opts.warmup = 3;
      opts.repeat = std::max(1, args->repeat);
      opts.min_duration_s = 0.1;
      const double cpu0 = process_cpu_seconds();
      auto t = autotune::time_function([&] { m.run(); }, opts);
      const double cpu = process_cpu_seconds() - cpu0;
      int calls = opts.warmup;
      for (int c : t.calls) calls += c;
      std::cout << "threads " << kiln_get_num_threads() << ", " << opts.repeat << " samples\n";
      std::cout << "median " << t.median * 1e3 << " ms\n";
      // CPU time per run (all threads, waits included): on a shared machine, with one thread, a
      // steadier figure than the wall clock, which counts the time other processes held the core.
      std::cout << "cpu " << cpu / calls * 1e3 << " ms per run\n";
      if (args->profile || args->roofline) {
        std::vector<double> medians = print_profile(file.path(), opts, args->profile_json, args->module, inputs);
        if (args->roofline) print_roofline(loaded->plan(), medians, args->roofline_svg, args->module);
      }
      return kOk;
    });
  });
}

}  // namespace kiln::cli
