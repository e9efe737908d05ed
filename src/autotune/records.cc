#include "kiln/autotune/records.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kiln/support/error.h"

namespace kiln::autotune {

using nlohmann::json;

double TuningRecord::median_cost() const {
  if (costs.empty()) return std::numeric_limits<double>::infinity();
  std::vector<double> c = costs;
  std::sort(c.begin(), c.end());
  const size_t n = c.size();
  return n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
}

std::map<std::string, KnobChoice> point_to_record_config(const ConfigSpace& space, const Point& p) {
  std::map<std::string, KnobChoice> out;
  for (const auto& [name, idx] : point_to_choices(space, p)) out[name] = {idx, space.find(name)->candidates[idx]};
  return out;
}

Point record_config_to_point(const ConfigSpace& space, const std::map<std::string, KnobChoice>& config) {
  std::map<std::string, size_t> choices;
  for (const auto& [name, c] : config) {
    const Knob* k = space.find(name);
    KILN_USER_CHECK(k) << "record names knob '" << name << "', which the template no longer has";
    KILN_USER_CHECK(c.index < k->candidates.size() && k->candidates[c.index] == c.values)
        << "record's choice for knob '" << name << "' (index " << c.index
        << ") is not a candidate of the template any more";
    choices[name] = c.index;
  }
  return choices_to_point(space, choices);
}

std::string to_json_line(const TuningRecord& r) {
  json cfg = json::object();
  for (const auto& [name, c] : r.config) cfg[name] = {{"index", c.index}, {"values", c.values}};
  for (double c : r.costs) KILN_USER_CHECK(std::isfinite(c)) << "tuning record of '" << r.workload_key << "' has a non-finite cost";
  json j = {{"task", r.task},     {"workload", r.workload_key}, {"target", r.target},
            {"config", cfg},      {"costs", r.costs},           {"error", r.error},
            {"gflops", std::isfinite(r.gflops) ? r.gflops : 0.0},
            {"timestamp", r.timestamp}, {"version", r.version}};
  return j.dump();
}

namespace {

enum class Want { String, Object, Array, Number, Integer, Unsigned };

bool has_type(const json& v, Want w) {
  switch (w) {
    case Want::String: return v.is_string();
    case Want::Object: return v.is_object();
    case Want::Array: return v.is_array();
    case Want::Number: return v.is_number();
    case Want::Integer: return v.is_number_integer();
    case Want::Unsigned: return v.is_number_unsigned();
  }
  return false;
}

const json& field(const json& j, const char* name, Want w) {
  auto it = j.find(name);
  KILN_USER_CHECK(it != j.end()) << "missing field '" << name << "'";
  KILN_USER_CHECK(has_type(*it, w)) << "field '" << name << "' has the wrong type (" << it->type_name() << ")";
  return *it;
}

}  // namespace

TuningRecord parse_record(const std::string& line) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  KILN_USER_CHECK(!j.is_discarded()) << "not valid JSON";
  KILN_USER_CHECK(j.is_object()) << "not a JSON object";
  TuningRecord r;
  r.task = field(j, "task", Want::String).get<std::string>();
  r.workload_key = field(j, "workload", Want::String).get<std::string>();
  r.target = field(j, "target", Want::String).get<std::string>();
  for (const auto& [name, c] : field(j, "config", Want::Object).items()) {
    KILN_USER_CHECK(c.is_object()) << "config knob '" << name << "' is not an object";
    const json& idx = field(c, "index", Want::Unsigned);
    const json& vals = field(c, "values", Want::Array);
    KnobChoice k;
    k.index = idx.get<size_t>();
    for (const json& v : vals) {
      KILN_USER_CHECK(v.is_number_integer()) << "config knob '" << name << "' has a non-integer value";
      k.values.push_back(v.get<int64_t>());
    }
    r.config[name] = std::move(k);
  }
  for (const json& c : field(j, "costs", Want::Array)) {
    KILN_USER_CHECK(c.is_number()) << "field 'costs' holds a non-number";
    r.costs.push_back(c.get<double>());
  }
  r.error = field(j, "error", Want::String).get<std::string>();
  r.gflops = field(j, "gflops", Want::Number).get<double>();
  r.timestamp = field(j, "timestamp", Want::Integer).get<int64_t>();
  r.version = field(j, "version", Want::String).get<std::string>();
  return r;
}

namespace {

TuningLog parse_lines(std::istream& f) {
  TuningLog log;
  std::string line;
  for (size_t n = 1; std::getline(f, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      log.records.push_back(parse_record(line));
    } catch (const Error& e) {
      log.malformed.push_back({n, e.what()});
    }
  }
  return log;
}

}  // namespace

TuningLog read_log(const std::string& path) {
  std::ifstream f(path);
  if (!f) return {};
  return parse_lines(f);
}

TuningLog parse_log(const std::string& text) {
  std::istringstream f(text);
  return parse_lines(f);
}

TuningLog read_log_checked(const std::string& path, bool must_exist) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  KILN_USER_CHECK(exists || !must_exist) << "tuning log '" << path << "' does not exist";
  if (!exists) return {};
  KILN_USER_CHECK(!std::filesystem::is_directory(path, ec)) << "tuning log '" << path << "' is a directory";
  KILN_USER_CHECK(std::ifstream(path).good()) << "cannot read tuning log '" << path << "'";
  TuningLog log = read_log(path);
  KILN_USER_CHECK(!log.records.empty() || log.malformed.empty())
      << "'" << path << "' is not a tuning log: line " << log.malformed[0].line << ": " << log.malformed[0].message;
  return log;
}

void append_record(const std::string& path, const TuningRecord& r) {
  // One write(2) of the whole line on an O_APPEND descriptor: a tuner killed at any moment
  // leaves the line whole or absent (a stream may flush a long line in pieces), and two tuners
  // appending to one log never interleave their lines.
  std::string line = to_json_line(r) + "\n";
  int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  KILN_USER_CHECK(fd >= 0) << "cannot open tuning log '" << path << "' for appending: " << std::strerror(errno);
  // A log whose last line was torn elsewhere (no newline at its end) gets one first, so the torn
  // line stays one malformed line (read_log skips it) instead of swallowing this record.
  off_t size = ::lseek(fd, 0, SEEK_END);
  char last = '\n';
  if (size > 0 && ::pread(fd, &last, 1, size - 1) == 1 && last != '\n') line.insert(line.begin(), '\n');
  ssize_t written = ::write(fd, line.data(), line.size());
  int write_errno = errno;
  ::close(fd);
  KILN_USER_CHECK(written == static_cast<ssize_t>(line.size()))
      << "writing to tuning log '" << path << "' failed" << (written < 0 ? std::string(": ") + std::strerror(write_errno) : "");
}

std::map<std::string, TuningRecord> best_records(const std::vector<TuningRecord>& records, const std::string& target) {
  std::map<std::string, TuningRecord> best;
  for (const TuningRecord& r : records) {
    if (!r.ok() || (!target.empty() && r.target != target)) continue;
    auto it = best.find(r.workload_key);
    if (it == best.end()) {
      best.emplace(r.workload_key, r);
    } else if (r.median_cost() < it->second.median_cost()) {
      it->second = r;
    }
  }
  return best;
}

std::optional<TuningRecord> best_record(const std::vector<TuningRecord>& records, const std::string& workload_key,
                                        const std::string& target) {
  std::optional<TuningRecord> best;
  for (const TuningRecord& r : records) {
    if (!r.ok() || r.workload_key != workload_key || (!target.empty() && r.target != target)) continue;
    if (!best || r.median_cost() < best->median_cost()) best = r;
  }
  return best;
}

}  // namespace kiln::autotune
