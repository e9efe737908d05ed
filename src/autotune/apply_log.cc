// Applying a tuning log in compile() (see apply_log.h).
#include "kiln/autotune/apply_log.h"

#include <fmt/format.h>

#include "kiln/autotune/graph_choices.h"
#include "kiln/autotune/graph_tasks.h"
#include "kiln/support/error.h"

namespace kiln::autotune {
namespace {

// Record counts by target spec, counted by the few words a note names a target with (specs
// that differ only in features a note does not name count together). Made when the notes are,
// not per record: naming a spec parses it.
std::map<std::string, int> by_brief(const std::map<std::string, int>& by_spec) {
  std::map<std::string, int> out;
  for (const auto& [spec, n] : by_spec) out[Target::brief_of(spec)] += n;
  return out;
}

}  // namespace

LogSchedules::LogSchedules(const std::string& path, const Target& target)
    : LogSchedules(read_log_checked(path, /*must_exist=*/true), path, target) {}

LogSchedules::LogSchedules(const TuningLog& log, const std::string& path, const Target& target)
    : path_(path), target_(target) {
  malformed_ = log.malformed.size();
  std::vector<TuningRecord> usable;
  const std::string isa = target.isa();
  for (const TuningRecord& r : log.records) {
    if (Target::isa_of(r.target) != isa) {
      ++other_isa_[r.target];
      continue;
    }
    if (r.target != target.str()) ++other_machine_[r.target];
    usable.push_back(r);
  }
  best_ = best_records(usable);
}

bool LogSchedules::config_for(const relay::FusedGroup& group, const lower::Strategy& strategy,
                              const lower::PrepackedWeights& prepacked, schedule::Config* cfg) {
  const std::string key = tunable_workload_key(group, strategy, prepacked, target_);
  if (key.empty()) return false;
  auto it = best_.find(key);
  if (it == best_.end()) {
    ++missing_[key];
    return false;
  }
  try {
    // The template may have changed since the log was written: the record must still name
    // candidates of this group's knobs.
    ConfigSpace space = group_config_space(group, strategy, prepacked, target_);
    *cfg = point_to_config(space, record_config_to_point(space, it->second.config));
  } catch (const Error& e) {
    stale_[key] = e.what();
    ++missing_[key];
    return false;
  }
  ++applied_;
  ++applied_keys_[key];
  return true;
}

std::vector<std::string> LogSchedules::notes() const {
  int missing = 0;
  for (const auto& [key, n] : missing_) missing += n;
  std::vector<std::string> out;
  out.push_back(fmt::format("tuning log '{}': tuned schedules applied to {} kernel{} ({} workload{}); {} tunable "
                            "kernel{} without a record use the default schedule",
                            path_, applied_, applied_ == 1 ? "" : "s", applied_keys_.size(),
                            applied_keys_.size() == 1 ? "" : "s", missing, missing == 1 ? "" : "s"));
  for (const auto& [key, n] : missing_) {
    auto stale = stale_.find(key);
    out.push_back(fmt::format("no {}tuning record for {} ({} kernel{}): default schedule{}",
                              stale != stale_.end() ? "usable " : "", key, n, n == 1 ? "" : "s",
                              stale != stale_.end() ? " (" + stale->second + ")" : ""));
  }
  for (const auto& [target, n] : by_brief(other_isa_))
    out.push_back(fmt::format("tuning log '{}': {} record{} for target '{}' skipped: another instruction set than "
                              "the compile target '{}' (a schedule is only measured fast on its own CPU)",
                              path_, n, n == 1 ? "" : "s", target, target_.brief()));
  for (const auto& [target, n] : by_brief(other_machine_))
    out.push_back(fmt::format("tuning log '{}': {} record{} tuned on '{}' considered: same instruction set, other "
                              "caches or cores than '{}'",
                              path_, n, n == 1 ? "" : "s", target, target_.brief()));
  if (malformed_ > 0) out.push_back(fmt::format("tuning log '{}': {} malformed line{} skipped", path_, malformed_,
                                                malformed_ == 1 ? "" : "s"));
  return out;
}

AppliedTuningLog::AppliedTuningLog(const std::string& path, const relay::Module& m, CompileOptions* options,
                                   const std::vector<std::string>& explicit_choices)
    : log_(read_log_checked(path, /*must_exist=*/true)), schedules_(log_, path, options->target) {
  if (auto note = apply_logged_graph_choices(log_, m, options, explicit_choices)) notes_.push_back(*note);
  options->schedules = &schedules_;
}

}  // namespace kiln::autotune
