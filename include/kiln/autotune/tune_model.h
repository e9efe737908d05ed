// Tuning a whole model: what `kiln tune` and Python's kiln.tune run. Extracts the model's
// distinct tunable kernels (graph_tasks.h), tunes each for `trials` trials (resumed trials in the
// log count), appending every measurement to the log, and reports one progress line per task.
// One cost model per template carries over from task to task (transfer). GPU targets tune alike:
// candidates are measured on the device by isolated children (gpu_measure.h).
//
// Under `mpirun -np N` (kiln built with MPI) the tasks are sharded: task i is tuned by rank i % N,
// on that rank's host, with the seed it has on one machine (so the records do not depend on N).
// Rank 0 alone reads and writes the log: it broadcasts the log's content at the start (no shared
// filesystem is assumed), the other ranks send it each record as it is measured and each task's
// progress line, and it appends and prints them between its own measurements. A rank that dies
// or fails ends the whole job (mpirun stops the others); the records rank 0 received are in the
// log, so the same command again resumes, and only the measurements in flight are lost.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/autotune/graph_tasks.h"
#include "kiln/autotune/plot.h"
#include "kiln/autotune/tuner.h"
#include "kiln/compiler.h"

namespace kiln::autotune {

struct TuneModelOptions {
  std::string log;  // JSON lines: resumed when it exists, appended to
  int trials = 32;  // per task, resumed ones included
  uint64_t seed = 0;
  double timeout_s = 10;
  int build_jobs = default_build_jobs();
  size_t memory_limit_mb = default_memory_limit_mb();
  CompileOptions compile;  // the target and the flags of the kernels `kiln compile` will build
  GraphTaskOptions tasks;
  // CPU targets, one process: first measure the graph-level choices (graph_choices.h), record
  // them in the log and tune the kernels of the chosen graph. `fixed_graph_choices`: the ones the
  // user set, not searched.
  bool graph_choices = true;
  std::vector<std::string> fixed_graph_choices;
  // After each batch of a task's measurements: the task's index among `tasks`, its label and its
  // progress (`kiln tune`'s bar on a terminal).
  std::function<void(size_t task, size_t tasks, const std::string& label, const TuneProgress&)> on_progress;
};

// Tunes `module` (`name` titles the first line, e.g. the model's path). `line` receives each
// progress line (no newline), `note` each note for the user (a skipped log line, once). Returns
// each task's best-so-far GFLOPS curve, for write_tuning_curves_svg.
std::vector<PlotSeries> tune_model(const relay::Module& module, const std::string& name, const TuneModelOptions& options,
                                   const std::function<void(const std::string&)>& line,
                                   const std::function<void(const std::string&)>& note);

}  // namespace kiln::autotune
