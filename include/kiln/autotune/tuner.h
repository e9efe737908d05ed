// The tuning loop for one task: the explorer proposes a batch, its candidates are built in
// parallel and then measured one at a time, each in an isolated child process, every
// measurement is appended to the log as soon as it is taken, the cost model is retrained on all
// of them, and again, until the trial budget is spent, the space is exhausted, or early
// stopping fires. An existing log resumes the run: its configs of this task count as trials and
// are never measured again, and they train the model from the start. So a tuner killed at any
// moment loses at most the candidates it was measuring, and the same call again finishes the
// job: the trial budget is the task's total, not this run's (unlike TVM's n_trial, which would
// measure a whole new budget after each restart).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/autotune/cost_model.h"
#include "kiln/autotune/explorer.h"
#include "kiln/autotune/records.h"
#include "kiln/autotune/task.h"

namespace kiln::autotune {

struct TuneProgress {
  std::string task;           // workload key
  int trials_done = 0;        // resumed ones included
  int trials_total = 0;
  int errors = 0;
  double best_gflops = 0;
  double elapsed_s = 0;       // this run
  double eta_s = 0;           // estimated time left for this task
};

// The number of cores (at least 1): TunerOptions::build_jobs by default.
int default_build_jobs();
// Half of the memory this machine lets the process use (usable_memory_bytes), in MiB:
// TunerOptions::memory_limit_mb by default. 0 (no limit) when that cannot be read.
size_t default_memory_limit_mb();

struct TunerOptions {
  int trials = 64;            // per task, resumed trials included
  int batch_size = 8;
  double timeout_s = 10.0;    // per candidate, for its isolated build and run together
  // Candidates of a batch built at once (code generation, in their children). Their timed runs
  // are always one at a time after the batch's builds, so this changes tuning time, not timings.
  int build_jobs = default_build_jobs();
  // The most memory one candidate's child may hold, in MiB, its start as a copy of the tuner
  // included (IsolationOptions::memory_limit_bytes); 0: no limit. A candidate that allocates
  // past it is an error record ("out of memory: ..."), not the end of the tuner or the machine;
  // a limit at or below what the tuner itself holds is refused, since every candidate would fail.
  size_t memory_limit_mb = default_memory_limit_mb();
  std::string log_path;       // appended to, and read first to resume; empty: no log
  // Resumes from these records instead of reading log_path (not owned): a rank of an MPI run
  // (tune_model.h) has the log's content from rank 0, not the file.
  const TuningLog* resume_log = nullptr;
  // Called with each record once it is final (and appended to log_path, if any): an MPI rank
  // streams its records to rank 0 with it, and rank 0 writes what the others sent meanwhile.
  std::function<void(const TuningRecord&)> on_record;
  std::string target = "llvm";
  uint64_t seed = 0;          // overrides explorer.seed
  ExplorerOptions explorer;   // early stopping lives here
  CostModelOptions model;
  int min_train_samples = 8;  // the model is trained (and used) from this many measurements on
  // Transfer: a saved model that ranks candidates from the first batch on; training continues
  // from it. Ignored when tune() is given a model.
  std::string base_model_path;
  std::function<void(const TuneProgress&)> on_progress;
  // Measure the template's default config as the first trial (unless resumed): the best record
  // is then never one slower than what compile() would build without the log (timing noise
  // aside), and the default's speed is known for comparison (TuneResult::default_gflops).
  bool measure_default_first = false;
};

struct TuneResult {
  std::optional<TuningRecord> best;  // the best successful record, resumed ones included
  int trials = 0;                    // resumed + measured now
  int resumed = 0;
  int errors = 0;                    // failed measurements (resumed ones included)
  bool stopped_early = false;
  std::vector<double> best_gflops_curve;  // best GFLOPS so far after each trial
  double default_gflops = 0;              // of the default config, when it was measured (or resumed)
  std::vector<std::string> notes;         // log lines skipped while resuming, and why
};

// Tunes `task`. With `model` given, it is used and trained in place (so that one model carries
// over from task to task); otherwise a fresh one is made (from base_model_path if set).
TuneResult tune(const Task& task, const TunerOptions& options, CostModel* model = nullptr);

}  // namespace kiln::autotune
