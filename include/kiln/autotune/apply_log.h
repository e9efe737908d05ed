// Applying a tuning log in kiln::compile: the best record of each workload key (graph_tasks.h)
// measured for the compile target's instruction set picks the knobs of the kernels with that
// key. What was applied, what fell back to the default schedule and what was skipped (records of
// other targets, and why) is said in notes for the user.
//
// A record applies to a target of the same isa() (triple, CPU and features: the same machine
// code): a schedule is correct on any CPU, but was only measured fast on its own. Records of a
// target whose isa() matches but whose caches or cores differ (another machine with the same
// CPU model) apply, with a note.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/autotune/records.h"
#include "kiln/compiler.h"
#include "kiln/lower/prepack_weights.h"
#include "kiln/lower/schedule_group.h"

namespace kiln::autotune {

class LogSchedules : public lower::ScheduleChooser {
 public:
  // Keeps the best successful record per workload key of `log` (read from `path`, which the
  // notes name) among those measured for `target`'s instruction set.
  LogSchedules(const TuningLog& log, const std::string& path, const Target& target);
  // Reads `path` first (read_log_checked: it must exist and be a tuning log).
  LogSchedules(const std::string& path, const Target& target);

  // The knobs for `group`: true and *cfg set from its key's best record; false (the default
  // schedule) when the group is not tunable, or when the log has no usable record for it (noted).
  bool config_for(const relay::FusedGroup& group, const lower::Strategy& strategy, const lower::PrepackedWeights& prepacked,
                  schedule::Config* cfg) override;

  // One summary note (kernels tuned / left default), then one per workload without a record and
  // per skipped part of the log (other targets, malformed lines, stale records).
  std::vector<std::string> notes() const override;

 private:
  std::string path_;
  Target target_;
  std::map<std::string, TuningRecord> best_;
  std::map<std::string, int> other_isa_;       // target spec -> records skipped (another instruction set)
  std::map<std::string, int> other_machine_;   // target spec -> records applied, tuned on other caches/cores
  size_t malformed_ = 0;
  int applied_ = 0;
  std::map<std::string, int> applied_keys_, missing_;  // workload key -> kernels
  std::map<std::string, std::string> stale_;           // workload key -> why its record did not fit
};

// A tuning log applied to one compile of `m`: the one way `kiln compile`, `kiln check` and Python
// apply a log. The file is read once. Its recorded graph-level choices for `m` (graph_choices.h)
// are set in *options, except those the user gave (`explicit_choices`, knob names), and
// options->schedules points at its schedules, which give each tunable kernel its knobs. Keep it
// alive until compile() returns; compile's notes say what its schedules did, notes() what the
// graph choices did.
class AppliedTuningLog {
 public:
  AppliedTuningLog(const std::string& path, const relay::Module& m, CompileOptions* options,
                   const std::vector<std::string>& explicit_choices = {});
  AppliedTuningLog(const AppliedTuningLog&) = delete;
  AppliedTuningLog& operator=(const AppliedTuningLog&) = delete;
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  TuningLog log_;
  LogSchedules schedules_;
  std::vector<std::string> notes_;
};

}  // namespace kiln::autotune
