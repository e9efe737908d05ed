// Tuning a whole model (see tune_model.h).
#include "kiln/autotune/tune_model.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autotune/gpu_measure.h"
#include "kiln/autotune/graph_choices.h"
#include "kiln/autotune/records.h"
#include "kiln/support/error.h"
#include "mpi_ranks.h"

namespace kiln::autotune {

namespace {

std::string file_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Test only: rank 1 dies after sending this many records (KILN_MPI_TEST_DIE_AFTER), so that a
// test can check what a dead rank loses; 0: never.
long die_after() {
  const char* v = std::getenv("KILN_MPI_TEST_DIE_AFTER");
  return v ? std::atol(v) : 0;
}

// Rank 0 of an MPI run: writes the other ranks' records to the log and prints their tasks'
// lines as they come, and knows when every rank is done.
struct Collector {
  const std::string& log;
  const std::function<void(const std::string&)>& line;
  std::vector<PlotSeries>& curves;
  int ranks_done = 0;

  void take(const mpi::Message& m) {
    switch (m.tag) {
      case mpi::kRecord: append_record(log, parse_record(m.data)); break;
      case mpi::kTaskDone: {
        const nlohmann::json j = nlohmann::json::parse(m.data);
        line(j.at("line").get<std::string>());
        curves.at(j.at("task").get<size_t>()) = {j.at("name").get<std::string>(), j.at("curve").get<std::vector<double>>()};
        break;
      }
      case mpi::kRankDone: ++ranks_done; break;
    }
  }
  void drain() {
    while (std::optional<mpi::Message> m = mpi::poll()) take(*m);
  }
};

// What a tune refuses before it measures anything: no trials; a log that exists and is not one,
// or whose directory does not (rank 0 alone has the log).
void check_options(const TuneModelOptions& o, bool lead) {
  KILN_USER_CHECK(o.trials >= 1) << "trials must be at least 1, got " << o.trials;
  if (!lead) return;
  (void)read_log_checked(o.log, /*must_exist=*/false);
  const std::filesystem::path log_dir = std::filesystem::absolute(o.log).parent_path();
  KILN_USER_CHECK(std::filesystem::is_directory(log_dir))
      << "cannot write tuning log '" << o.log << "': no directory '" << log_dir.string() << "'";
}

std::vector<PlotSeries> tune_ranks(const mpi::Ranks& ranks, const relay::Module& module, const std::string& name,
                                   const TuneModelOptions& o, const std::function<void(const std::string&)>& line,
                                   const std::function<void(const std::string&)>& note) {
  using Clock = std::chrono::steady_clock;
  check_options(o, ranks.rank == 0);
  const bool distributed = ranks.size > 1, lead = ranks.rank == 0;
  // A log that exists must be one (resumed); a missing one is created by the first record. Only
  // rank 0 has it (no shared filesystem is assumed): it sends the others its content.
  TuningLog existing;
  if (lead) {
    existing = read_log_checked(o.log, /*must_exist=*/false);
  }
  if (distributed) existing = parse_log(mpi::broadcast(lead ? file_text(o.log) : ""));
  const Target& target = o.compile.target;
  if (target.is_gpu()) check_gpu_device(target);  // each rank measures on its own host's device
  std::vector<GraphTask> tasks = extract_tasks(module, o.compile, o.tasks);
  int kernels = 0;
  for (const GraphTask& t : tasks) kernels += t.occurrences;
  if (lead) {
    line(fmt::format("{}: {} tuning task{} ({} kernel{}), {} trials each, log {} ({} records){}", name, tasks.size(),
                     tasks.size() == 1 ? "" : "s", kernels, kernels == 1 ? "" : "s", o.trials, o.log,
                     existing.records.size(), distributed ? fmt::format(", on {} MPI ranks", ranks.size) : ""));
    for (size_t i = 0; i < tasks.size(); ++i)
      line(fmt::format("  task {}: {} x{}: {} ({} configs)", i + 1, tasks[i].label, tasks[i].occurrences,
                       tasks[i].task.workload_key, tasks[i].task.space().size()));
  }

  // This rank's tasks: task i is rank i % size's, fixed by the task order alone, and each task
  // has its own seed (o.seed + i): the records do not depend on the number of ranks.
  std::vector<size_t> mine;
  for (size_t i = static_cast<size_t>(ranks.rank); i < tasks.size(); i += static_cast<size_t>(ranks.size))
    mine.push_back(i);
  std::vector<PlotSeries> curves(tasks.size());
  Collector collector{o.log, line, curves};
  long sent = 0;
  const long die = ranks.rank == 1 ? die_after() : 0;

  const auto t0 = Clock::now();
  // Trials still to come (this rank's): a task stops at its space size (the spaces are often small).
  auto budget = [&](size_t i) {
    return static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(o.trials), tasks[i].task.space().size()));
  };
  int measured = 0, remaining = 0;
  for (size_t i : mine) remaining += budget(i);
  // One cost model per template (transfer): trained on every measurement of the earlier tasks
  // of that template, grouped by task, it ranks a new task's candidates from its first batch
  // instead of guessing at random.
  std::map<std::string, CostModel> models;
  std::set<std::string> notes_given;
  for (size_t i : mine) {
    TunerOptions t;
    t.trials = o.trials;
    t.log_path = lead ? o.log : "";
    t.target = target.str();
    t.seed = o.seed + i;  // each task its own stream, all fixed by the seed
    t.timeout_s = o.timeout_s;
    t.build_jobs = o.build_jobs;
    t.memory_limit_mb = o.memory_limit_mb;
    t.measure_default_first = true;  // never record a schedule slower than the default as best
    if (distributed) t.resume_log = &existing;
    if (distributed && lead) {
      t.on_record = [&](const TuningRecord&) { collector.drain(); };  // between its own measurements
    } else if (distributed) {
      t.on_record = [&](const TuningRecord& r) {
        mpi::send(mpi::kRecord, to_json_line(r));
        if (++sent == die) ::_exit(1);
      };
    }
    if (o.on_progress && lead)
      t.on_progress = [&o, &tasks, i](const TuneProgress& p) { o.on_progress(i, tasks.size(), tasks[i].label, p); };
    TuneResult r = tune(tasks[i].task, t, &models[workload_template(tasks[i].task.workload_key)]);
    for (const std::string& n : r.notes)  // each task reads the log: a bad line is noted once
      if (lead && notes_given.insert(n).second) note(n);
    measured += r.trials - r.resumed;
    remaining -= budget(i);
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    // Time left: this run's mean seconds per measured trial times the trials still to come.
    const double left = measured > 0 ? elapsed / measured * remaining : 0;
    const std::string summary = fmt::format(
        "[{}/{}] {}: {}/{} trials ({} resumed, {} errors{}), best {:.2f} GFLOPS (default {}), {:.1f} s "
        "elapsed, about {:.0f} s left{}",
        i + 1, tasks.size(), tasks[i].label, r.trials, o.trials, r.resumed, r.errors,
        r.stopped_early ? ", stopped early" : r.trials < o.trials ? ", space exhausted" : "",
        r.best ? r.best->gflops : 0.0,
        r.default_gflops > 0 ? fmt::format("{:.2f}", r.default_gflops) : "not measured", elapsed, left,
        distributed ? fmt::format(" (rank {})", ranks.rank) : "");
    PlotSeries curve{fmt::format("task {}: {} x{}", i + 1, tasks[i].label, tasks[i].occurrences), r.best_gflops_curve};
    if (lead) {
      line(summary);
      curves[i] = std::move(curve);
      if (distributed) collector.drain();
    } else {
      mpi::send(mpi::kTaskDone,
                nlohmann::json{{"task", i}, {"line", summary}, {"name", curve.name}, {"curve", curve.values}}.dump());
    }
  }
  if (!distributed) return curves;
  if (!lead) {
    mpi::send(mpi::kRankDone, "");
    return {};
  }
  // A rank that dies ends the job (mpirun stops every rank), so this never waits on a dead one;
  // what it sent before is in the log, and the same command again resumes from there.
  while (collector.ranks_done < ranks.size - 1) collector.take(mpi::receive());
  return curves;
}

}  // namespace

std::vector<PlotSeries> tune_model(const relay::Module& module, const std::string& name, const TuneModelOptions& o,
                                   const std::function<void(const std::string&)>& line,
                                   const std::function<void(const std::string&)>& note) {
  const mpi::Ranks ranks = mpi::ranks();
  if (ranks.size == 1) {
    if (!o.graph_choices || o.compile.target.is_gpu()) return tune_ranks(ranks, module, name, o, line, note);
    // The graph first: its kernels are the ones worth tuning. What tune_ranks would refuse is
    // refused before the model is measured.
    check_options(o, /*lead=*/true);
    GraphTuneOptions g;
    g.log = o.log;
    g.compile = o.compile;
    g.fixed = o.fixed_graph_choices;
    line(name + ": graph choices (" + graph_workload_key(module) + ")");
    TuneModelOptions chosen = o;
    apply_graph_knobs(tune_graph_choices(module, g, line), &chosen.compile);
    return tune_ranks(ranks, module, name, chosen, line, note);
  }
  try {
    if (ranks.rank == 0 && o.graph_choices && !o.compile.target.is_gpu())
      note("graph choices are not measured under MPI (each rank would time the whole model on its own host): "
           "run kiln tune once without mpirun for them");
    return tune_ranks(ranks, module, name, o, line, note);
  } catch (const std::exception& e) {
    mpi::abort_job(e.what());
  }
}

}  // namespace kiln::autotune
