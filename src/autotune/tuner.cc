// The tuning loop (see tuner.h).
#include "kiln/autotune/tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "kiln/autotune/features.h"
#include "kiln/autotune/measure_process.h"
#include "kiln/runtime/version.h"
#include "kiln/support/error.h"

namespace kiln::autotune {
namespace {

using Clock = std::chrono::steady_clock;

// Runs one step of building a candidate: a kiln error, user or internal, comes back as
// "build failed: ..."; empty when the step succeeds.
std::string build_step(const std::function<void()>& step) {
  try {
    step();
  } catch (const Error& e) {
    return std::string("build failed: ") + e.what();
  } catch (const InternalError& e) {
    return std::string("build failed: ") + e.what();
  }
  return "";
}

// Dates a finished record and fills in its GFLOPS.
void finalize(const Task& task, TuningRecord& r) {
  r.timestamp = static_cast<int64_t>(std::time(nullptr));
  if (r.ok() && task.flops > 0) r.gflops = task.flops / r.median_cost() / 1e9;
}

// A candidate's record from what its isolated build and run gave.
void take_result(const IsolatedResult& m, TuningRecord& r) {
  if (!m.ok()) {
    r.error = m.error;
    return;
  }
  bool valid = !m.values.empty();
  for (double c : m.values) valid = valid && std::isfinite(c) && c > 0;
  if (valid) r.costs = m.values;
  else r.error = "the measurement returned no valid run times";
}

// Builds and measures a batch of candidates, in order; every failure becomes that record's
// error. The template is instantiated here, in the tuner's process (its hooks may share state
// made on first use, such as a kernel's reference outputs); code generation and the timed run
// are in each candidate's child, the builds in parallel (run_isolated_batch). Each record is
// appended to the log (when there is one) as soon as it and the ones before it are final: a
// tuner killed in mid-batch keeps what it measured, and the log's order stays the batch's.
std::vector<TuningRecord> measure(const Task& task, const ConfigSpace& space, const std::vector<Point>& pts,
                                  const TunerOptions& o) {
  std::vector<TuningRecord> records(pts.size());
  std::vector<IsolatedBuild> jobs;
  std::vector<size_t> job_of;  // the record of each job
  for (size_t i = 0; i < pts.size(); ++i) {
    TuningRecord& r = records[i];
    r.task = task.name;
    r.workload_key = task.workload_key;
    r.target = o.target;
    r.config = point_to_record_config(space, pts[i]);
    r.version = KILN_VERSION_STRING;
    std::function<MeasureFn()> build;
    r.error = build_step([&] {
      Program prog = task.instantiate(space, pts[i]);
      KILN_USER_CHECK(static_cast<bool>(prog.build)) << "the template gave no build hook";
      build = prog.build;
    });
    if (!r.error.empty()) continue;
    // The child builds as well as runs: code generation that hangs (LLVM's SLP vectorizer spent
    // minutes on one depthwise candidate's fully unrolled body) is cut off at the timeout like
    // a run that hangs, and recorded as an error.
    jobs.push_back([build]() -> IsolatedFn {
      MeasureFn run;
      std::string failed = build_step([&] {
        run = build();
        KILN_USER_CHECK(static_cast<bool>(run)) << "the build gave no measurement hook";
      });
      if (!failed.empty()) throw std::runtime_error(failed);
      return run;
    });
    job_of.push_back(i);
  }
  size_t logged = 0;  // records [0, logged) are final (and in the log)
  auto log_through = [&](size_t end) {
    for (; logged < end; ++logged) {
      finalize(task, records[logged]);
      if (!o.log_path.empty()) append_record(o.log_path, records[logged]);
      if (o.on_record) o.on_record(records[logged]);
    }
  };
  IsolationOptions isolation;
  isolation.memory_limit_bytes = std::min(o.memory_limit_mb, std::numeric_limits<size_t>::max() >> 20) << 20;
  isolation.on_result = [&](size_t j, const IsolatedResult& m) {
    take_result(m, records[job_of[j]]);
    log_through(job_of[j] + 1);  // with the failed instantiations before it
  };
  run_isolated_batch(jobs, o.build_jobs, o.timeout_s, isolation);
  log_through(records.size());
  return records;
}

// Each candidate's child starts as a copy of this process, whose memory counts against the
// child's limit: a limit the copy already fills would fail every candidate, so it is refused.
void check_memory_limit(size_t limit_mb) {
  if (limit_mb == 0 || !memory_limit_enforced()) return;
  const size_t held_mb = (data_segment_bytes() + (size_t{1} << 20) - 1) >> 20;
  KILN_USER_CHECK(limit_mb > held_mb) << "the memory limit per candidate, " << limit_mb << " MiB, is not above the "
                                      << held_mb << " MiB the tuner itself holds, which every candidate starts with";
}

// What the explorer and the model maximize: GFLOPS, or runs per second when flops are unknown;
// 0 for a failure (the model learns that such configs are bad).
double throughput(const Task& task, const TuningRecord& r) {
  if (!r.ok()) return 0;
  return task.flops > 0 ? task.flops / r.median_cost() / 1e9 : 1.0 / r.median_cost();
}

class Tuner {
 public:
  Tuner(const Task& task, const TunerOptions& o, CostModel* model)
      : task_(task), o_(o), space_(task.space()), explorer_(space_, explorer_options(o, space_)), own_(o.model),
        model_(model ? *model : own_) {
    KILN_USER_CHECK(o.trials >= 0 && o.batch_size >= 1 && o.build_jobs >= 1)
        << "tuning '" << task.workload_key << "': trials must be >= 0, batch_size and build_jobs >= 1";
    check_memory_limit(o.memory_limit_mb);
    if (!model && !o.base_model_path.empty()) {
      own_.load(o.base_model_path);
      own_.warm_start();
    }
  }

  TuneResult run() {
    const auto t0 = Clock::now();
    resume();
    int measured_now = 0;
    if (o_.measure_default_first && res_.trials < o_.trials && !explorer_.is_measured(default_point())) {
      std::vector<Point> first = {default_point()};
      std::vector<TuningRecord> records = measure(task_, space_, first, o_);
      learn(first, records);
      ++measured_now;
    }
    while (res_.trials < o_.trials && !explorer_.exhausted()) {
      if (explorer_.should_stop()) {
        res_.stopped_early = true;
        break;
      }
      const size_t n = static_cast<size_t>(std::min(o_.batch_size, o_.trials - res_.trials));
      Explorer::ScoreFn score;
      if (model_.trained()) score = [this](const std::vector<Point>& pts) { return this->score(pts); };
      std::vector<Point> batch = explorer_.next_batch(n, score);
      if (batch.empty()) break;
      std::vector<TuningRecord> records = measure(task_, space_, batch, o_);
      learn(batch, records);
      measured_now += static_cast<int>(batch.size());
      if (o_.on_progress) {
        TuneProgress pr;
        pr.task = task_.workload_key;
        pr.trials_done = res_.trials;
        pr.trials_total = o_.trials;
        pr.errors = res_.errors;
        pr.best_gflops = best_gflops();
        pr.elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
        pr.eta_s = pr.elapsed_s / measured_now * std::max(0, o_.trials - res_.trials);
        o_.on_progress(pr);
      }
    }
    return res_;
  }

 private:
  // The search starts around the template's default config (ExplorerOptions::start).
  static ExplorerOptions explorer_options(const TunerOptions& o, const ConfigSpace& space) {
    ExplorerOptions e = o.explorer;
    e.seed = o.seed;
    if (e.start.empty())
      for (const Knob& k : space.knobs()) e.start.push_back(k.default_index);
    return e;
  }

  double best_gflops() const { return res_.best ? res_.best->gflops : 0.0; }

  Point default_point() const {
    Point p;
    for (const Knob& k : space_.knobs()) p.push_back(k.default_index);
    return p;
  }

  // Features of a point, cached: the explorer asks for the same points again and again. Empty
  // when the template fails for it or gives no loop program.
  const std::vector<float>& features(const Point& p) {
    prefetch_features({p});
    return features_.at(p);
  }

  // Fills the feature cache for `pts`. A CUDA task's features include ptxas's report
  // (Program::ptxas): those compiles run in isolated children, build_jobs at once (NVRTC is
  // most of the cost, and a compiler crash must not end the tuner); a point whose compile
  // fails keeps its loop features with the report's zeros (measuring it records the error).
  void prefetch_features(const std::vector<Point>& pts) {
    std::vector<Point> fresh;
    std::vector<Program> progs;
    for (const Point& p : pts) {
      if (features_.count(p) || std::find(fresh.begin(), fresh.end(), p) != fresh.end()) continue;
      try {
        Program prog = task_.instantiate(space_, p);
        if (prog.func.body.defined()) {
          fresh.push_back(p);
          progs.push_back(std::move(prog));
          continue;
        }
      } catch (const Error&) {
        // Left empty: scored lowest; measuring it will record the error.
      }
      features_.emplace(p, std::vector<float>());
    }
    std::vector<IsolatedBuild> jobs;
    for (const Program& prog : progs) {
      if (!prog.ptxas) continue;
      jobs.push_back([hook = prog.ptxas]() -> IsolatedFn {
        const PtxasReport r = hook();
        return [r] { return std::vector<double>{double(r.registers), double(r.spill_bytes)}; };
      });
    }
    // In chunks: a batch's built children wait, each a process, until all its builds are over,
    // and exhaustive ranking asks for thousands of points at once.
    std::vector<IsolatedResult> reports;
    const size_t chunk = 4 * static_cast<size_t>(o_.build_jobs);
    for (size_t at = 0; at < jobs.size(); at += chunk) {
      std::vector<IsolatedBuild> part(jobs.begin() + static_cast<long>(at),
                                      jobs.begin() + static_cast<long>(std::min(jobs.size(), at + chunk)));
      for (IsolatedResult& r : run_isolated_batch(part, o_.build_jobs, o_.timeout_s)) reports.push_back(std::move(r));
    }
    for (size_t i = 0, j = 0; i < fresh.size(); ++i) {
      std::optional<PtxasReport> ptxas;
      if (progs[i].ptxas) {
        const IsolatedResult& r = reports[j++];
        ptxas = PtxasReport{};
        if (r.ok() && r.values.size() == 2) *ptxas = {int(r.values[0]), int(r.values[1])};
      }
      features_.emplace(fresh[i], extract_features(progs[i].func, ptxas ? &*ptxas : nullptr));
    }
  }

  std::vector<double> score(const std::vector<Point>& pts) {
    prefetch_features(pts);
    std::vector<double> out(pts.size(), -std::numeric_limits<double>::infinity());
    std::vector<std::vector<float>> rows;
    std::vector<size_t> where;
    for (size_t i = 0; i < pts.size(); ++i) {
      const std::vector<float>& f = features(pts[i]);
      if (f.empty()) continue;
      rows.push_back(f);
      where.push_back(i);
    }
    if (!rows.empty()) {
      std::vector<float> pred = model_.predict(rows);
      for (size_t k = 0; k < where.size(); ++k) out[where[k]] = pred[k];
    }
    return out;
  }

  // Accounts measured (or resumed) records: explorer, best, model.
  void learn(const std::vector<Point>& pts, const std::vector<TuningRecord>& records) {
    prefetch_features(pts);
    std::vector<double> thr;
    std::vector<std::vector<float>> rows;
    std::vector<double> row_thr;
    for (size_t i = 0; i < pts.size(); ++i) {
      const TuningRecord& r = records[i];
      thr.push_back(throughput(task_, r));
      ++res_.trials;
      if (!r.ok()) ++res_.errors;
      if (r.ok() && (!res_.best || r.median_cost() < res_.best->median_cost())) res_.best = r;
      res_.best_gflops_curve.push_back(best_gflops());
      if (r.ok() && pts[i] == default_point()) res_.default_gflops = throughput(task_, r);
      const std::vector<float>& f = features(pts[i]);
      if (!f.empty()) {
        rows.push_back(f);
        row_thr.push_back(thr.back());
      }
    }
    explorer_.update(pts, thr);
    if (!rows.empty()) model_.add(task_.workload_key, rows, row_thr);
    if (!rows.empty() && model_.num_samples() >= static_cast<size_t>(std::max(1, o_.min_train_samples))) model_.train();
  }

  void resume() {
    if (o_.log_path.empty() && !o_.resume_log) return;
    const TuningLog log = o_.resume_log ? *o_.resume_log : read_log(o_.log_path);
    for (const MalformedLine& m : log.malformed) {
      res_.notes.push_back(fmt::format("{}:{}: skipped: {}", o_.log_path, m.line, m.message));
    }
    std::vector<Point> pts;
    std::vector<TuningRecord> records;
    std::set<Point> seen;
    for (const TuningRecord& r : log.records) {
      if (r.workload_key != task_.workload_key || r.target != o_.target) continue;
      Point p;
      try {
        p = record_config_to_point(space_, r.config);
      } catch (const Error& e) {
        res_.notes.push_back(fmt::format("{}: a record of '{}' skipped: {}", o_.log_path, r.workload_key, e.what()));
        continue;
      }
      if (!seen.insert(p).second) continue;  // measured twice (merged logs): the first counts
      pts.push_back(std::move(p));
      records.push_back(r);
    }
    res_.resumed = static_cast<int>(pts.size());
    if (!pts.empty()) learn(pts, records);
  }

  const Task& task_;
  const TunerOptions& o_;
  ConfigSpace space_;
  Explorer explorer_;
  CostModel own_;
  CostModel& model_;
  std::map<Point, std::vector<float>> features_;
  TuneResult res_;
};

}  // namespace

int default_build_jobs() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

size_t default_memory_limit_mb() { return usable_memory_bytes() / 2 >> 20; }

TuneResult tune(const Task& task, const TunerOptions& options, CostModel* model) {
  Tuner t(task, options, model);
  return t.run();
}

}  // namespace kiln::autotune
