// Tuning records: one JSON object per line per measurement, appended to a log as the tuner goes,
// so a log survives a crash of the tuner and can be resumed, merged (cat) and read by
// `kiln compile --tuning-log`. A line looks like (one line in the file):
//
//   {"task":"matmul","workload":"matmul_1024_1024_1024_float32","target":"llvm -mcpu=native",
//    "config":{"tile_i":{"index":3,"values":[8,4,32]},"unroll":{"index":1,"values":[1]}},
//    "costs":[0.0121,0.0119,0.0120],"error":"","gflops":178.2,"timestamp":1718000000,
//    "version":"0.1.0"}
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/autotune/space_ops.h"

namespace kiln::autotune {

struct KnobChoice {
  size_t index = 0;             // candidate index in the knob's list
  std::vector<int64_t> values;  // the candidate itself, to detect a template that changed
  bool operator==(const KnobChoice& o) const { return index == o.index && values == o.values; }
};

struct TuningRecord {
  std::string task;          // the operator, e.g. "matmul"
  std::string workload_key;  // the task identity: op, shapes, dtype ("matmul_1024_1024_1024_float32")
  std::string target;        // the target string the candidate was built for
  std::map<std::string, KnobChoice> config;
  std::vector<double> costs;  // seconds per run, every sample
  std::string error;          // empty when the measurement succeeded
  double gflops = 0;
  int64_t timestamp = 0;  // unix seconds
  std::string version;    // kiln version that measured it

  bool ok() const { return error.empty() && !costs.empty(); }
  // Median of costs; +inf when there are none.
  double median_cost() const;
};

// The config of `p` in `space` as record entries, and back (checking each knob still has that
// candidate at that index; throws kiln::Error naming the knob otherwise).
std::map<std::string, KnobChoice> point_to_record_config(const ConfigSpace& space, const Point& p);
Point record_config_to_point(const ConfigSpace& space, const std::map<std::string, KnobChoice>& config);

std::string to_json_line(const TuningRecord& r);  // no trailing newline
// Throws kiln::Error saying what is wrong (bad JSON, a missing or mistyped field).
TuningRecord parse_record(const std::string& line);

struct MalformedLine {
  size_t line = 0;  // 1-based
  std::string message;
};

struct TuningLog {
  std::vector<TuningRecord> records;
  std::vector<MalformedLine> malformed;  // skipped, with their line numbers
};

// Reads every line; blank lines are ignored, malformed ones reported and skipped. A missing
// file is an empty log.
TuningLog read_log(const std::string& path);
// read_log of a log's content (what rank 0 of an MPI run broadcasts).
TuningLog parse_log(const std::string& text);
// read_log for a log the user named: kiln::Error when it is missing (if must_exist) or not
// readable, or when it has lines and none of them is a record ("'x.txt' is not a tuning log:
// line 1: not valid JSON"). Malformed lines among records stay in `malformed`.
TuningLog read_log_checked(const std::string& path, bool must_exist);
// Appends one line and flushes it.
void append_record(const std::string& path, const TuningRecord& r);

// The best successful record (smallest median cost; the earlier on ties) per workload key,
// restricted to `target` unless it is empty.
std::map<std::string, TuningRecord> best_records(const std::vector<TuningRecord>& records,
                                                 const std::string& target = "");
std::optional<TuningRecord> best_record(const std::vector<TuningRecord>& records, const std::string& workload_key,
                                        const std::string& target = "");

}  // namespace kiln::autotune
