// What fuzz_tuning_log does with one log file (shared with tests/unit/test_fuzz_regressions.cc):
// the tuning-log reader (autotune/records.cc: read_log, parse_record) and what
// `kiln compile --tuning-log` does with a log before any kernel asks for a record: LogSchedules
// reads it (checked), parses each record's target string and picks the best records.
#pragma once

#include <string>

#include "kiln/autotune/apply_log.h"
#include "kiln/autotune/records.h"
#include "kiln/target/target.h"

namespace kiln::fuzz {

inline void read_tuning_log(const std::string& path) {
  static const Target target = Target::parse("llvm -mcpu=x86-64-v3");
  autotune::TuningLog log = autotune::read_log(path);
  for (const autotune::TuningRecord& r : log.records) autotune::to_json_line(r);
  autotune::best_records(log.records);
  autotune::LogSchedules schedules(path, target);
  schedules.notes();
}

}  // namespace kiln::fuzz
