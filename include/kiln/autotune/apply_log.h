// Applying a tuning log in kiln::compile: the best record of each workload key (graph_tasks.h)
// for the compile target picks the knobs of the kernels with that key. What was applied, what
// fell back to the default schedule and what was ignored is said in notes for the user.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/autotune/records.h"
#include "kiln/relay/lower_graph.h"

namespace kiln::autotune {

class LogSchedules {
 public:
  // Reads `path` (read_log_checked: it must exist and be a tuning log) and keeps the best
  // successful record per workload key among those measured for `target` (a Target::str()).
  LogSchedules(const std::string& path, const std::string& target);

  // The knobs for `group`: true and *cfg set from its key's best record; false (the default
  // schedule) when the group is not tunable, or when the log has no usable record for it (noted).
  bool config_for(const relay::FusedGroup& group, const relay::PrepackedWeights& prepacked, schedule::Config* cfg);

  // One summary note (kernels tuned / left default), then one per workload without a record and
  // per ignored part of the log (other targets, malformed lines, stale records).
  std::vector<std::string> notes() const;

 private:
  std::string path_, target_;
  std::map<std::string, TuningRecord> best_;
  std::map<std::string, int> other_targets_;  // target -> records ignored
  size_t malformed_ = 0;
  int applied_ = 0;
  std::map<std::string, int> applied_keys_, missing_;  // workload key -> kernels
  std::map<std::string, std::string> stale_;           // workload key -> why its record did not fit
};

}  // namespace kiln::autotune
