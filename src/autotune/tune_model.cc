// Tuning a whole model (see tune_model.h).
#include "kiln/autotune/tune_model.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "kiln/autotune/gpu_measure.h"
#include "kiln/autotune/records.h"
#include "kiln/support/error.h"

namespace kiln::autotune {

std::vector<PlotSeries> tune_model(const relay::Module& module, const std::string& name, const TuneModelOptions& o,
                                   const std::function<void(const std::string&)>& line,
                                   const std::function<void(const std::string&)>& note) {
  using Clock = std::chrono::steady_clock;
  KILN_USER_CHECK(o.trials >= 1) << "trials must be at least 1, got " << o.trials;
  // A log that exists must be one (resumed); a missing one is created by the first record.
  TuningLog existing = read_log_checked(o.log, /*must_exist=*/false);
  const std::filesystem::path log_dir = std::filesystem::absolute(o.log).parent_path();
  KILN_USER_CHECK(std::filesystem::is_directory(log_dir)) << "cannot write tuning log '" << o.log << "': no directory '"
                                                          << log_dir.string() << "'";
  const Target& target = o.compile.target;
  if (target.is_gpu()) check_gpu_device(target);
  std::vector<GraphTask> tasks = extract_tasks(module, o.compile, o.tasks);
  int kernels = 0;
  for (const GraphTask& t : tasks) kernels += t.occurrences;
  line(fmt::format("{}: {} tuning task{} ({} kernel{}), {} trials each, log {} ({} records)", name, tasks.size(),
                   tasks.size() == 1 ? "" : "s", kernels, kernels == 1 ? "" : "s", o.trials, o.log,
                   existing.records.size()));
  for (size_t i = 0; i < tasks.size(); ++i)
    line(fmt::format("  task {}: {} x{}: {} ({} configs)", i + 1, tasks[i].label, tasks[i].occurrences,
                     tasks[i].task.workload_key, tasks[i].task.space().size()));

  const auto t0 = Clock::now();
  // Trials still to come: a task stops at its space size (the spaces are often small).
  std::vector<int> budget;
  int measured = 0, remaining = 0;
  for (const GraphTask& t : tasks) {
    budget.push_back(static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(o.trials), t.task.space().size())));
    remaining += budget.back();
  }
  std::vector<PlotSeries> curves;
  // One cost model per template (transfer): trained on every measurement of the earlier tasks
  // of that template, grouped by task, it ranks a new task's candidates from its first batch
  // instead of guessing at random.
  std::map<std::string, CostModel> models;
  std::set<std::string> notes_given;
  for (size_t i = 0; i < tasks.size(); ++i) {
    TunerOptions t;
    t.trials = o.trials;
    t.log_path = o.log;
    t.target = target.str();
    t.seed = o.seed + i;  // each task its own stream, all fixed by the seed
    t.timeout_s = o.timeout_s;
    t.build_jobs = o.build_jobs;
    t.memory_limit_mb = o.memory_limit_mb;
    t.measure_default_first = true;  // never record a schedule slower than the default as best
    if (o.on_progress)
      t.on_progress = [&o, &tasks, i](const TuneProgress& p) { o.on_progress(i, tasks.size(), tasks[i].label, p); };
    TuneResult r = tune(tasks[i].task, t, &models[workload_template(tasks[i].task.workload_key)]);
    for (const std::string& n : r.notes)  // each task reads the log: a bad line is noted once
      if (notes_given.insert(n).second) note(n);
    measured += r.trials - r.resumed;
    remaining -= budget[i];
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    // Time left: this run's mean seconds per measured trial times the trials still to come.
    const double left = measured > 0 ? elapsed / measured * remaining : 0;
    line(fmt::format("[{}/{}] {}: {}/{} trials ({} resumed, {} errors{}), best {:.2f} GFLOPS (default {}), {:.1f} s "
                     "elapsed, about {:.0f} s left",
                     i + 1, tasks.size(), tasks[i].label, r.trials, o.trials, r.resumed, r.errors,
                     r.stopped_early ? ", stopped early" : r.trials < o.trials ? ", space exhausted" : "",
                     r.best ? r.best->gflops : 0.0,
                     r.default_gflops > 0 ? fmt::format("{:.2f}", r.default_gflops) : "not measured", elapsed, left));
    curves.push_back({fmt::format("task {}: {} x{}", i + 1, tasks[i].label, tasks[i].occurrences), r.best_gflops_curve});
  }
  return curves;
}

}  // namespace kiln::autotune
