// Applying a tuning log in compile() (see apply_log.h).
#include "kiln/autotune/apply_log.h"

#include <fmt/format.h>

#include "kiln/autotune/graph_tasks.h"
#include "kiln/support/error.h"

namespace kiln::autotune {

LogSchedules::LogSchedules(const std::string& path, const std::string& target) : path_(path), target_(target) {
  TuningLog log = read_log_checked(path, /*must_exist=*/true);
  malformed_ = log.malformed.size();
  for (const TuningRecord& r : log.records)
    if (r.target != target) ++other_targets_[r.target];
  best_ = best_records(log.records, target);
}

bool LogSchedules::config_for(const relay::FusedGroup& group, const relay::PrepackedWeights& prepacked,
                              schedule::Config* cfg) {
  const std::string key = tunable_workload_key(group, prepacked);
  if (key.empty()) return false;
  auto it = best_.find(key);
  if (it == best_.end()) {
    ++missing_[key];
    return false;
  }
  try {
    // The template may have changed since the log was written: the record must still name
    // candidates of this group's knobs.
    ConfigSpace space = group_config_space(group, prepacked);
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
  for (const auto& [target, n] : other_targets_)
    out.push_back(fmt::format("tuning log '{}': {} record{} for target '{}' ignored (compiling for '{}')", path_, n,
                              n == 1 ? "" : "s", target, target_));
  if (malformed_ > 0) out.push_back(fmt::format("tuning log '{}': {} malformed line{} skipped", path_, malformed_,
                                                malformed_ == 1 ? "" : "s"));
  return out;
}

}  // namespace kiln::autotune
