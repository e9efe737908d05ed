// Tuning records: JSON line round trip, log append/read with malformed lines reported by line
// number, best record per task, and record configs checked against the template's space.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <limits>

#include <unistd.h>

#include "kiln/autotune/records.h"
#include "kiln/runtime/version.h"
#include "kiln/support/error.h"

using namespace kiln::autotune;

namespace {

TuningRecord make(const std::string& key, std::vector<double> costs, std::string error = "", std::string target = "llvm") {
  TuningRecord r;
  r.task = "matmul";
  r.workload_key = key;
  r.target = std::move(target);
  r.config["tile_i"] = {3, {8, 4, 32}};
  r.config["unroll"] = {1, {1}};
  r.costs = std::move(costs);
  r.error = std::move(error);
  r.gflops = r.costs.empty() ? 0 : 2.0 * 1024 * 1024 * 1024 / r.median_cost() / 1e9;
  r.timestamp = 1718000000;
  r.version = KILN_VERSION_STRING;
  return r;
}

std::string temp_path(const char* name) { return std::string("/tmp/kiln_test_") + name + "_" + std::to_string(::getpid()); }

}  // namespace

TEST_CASE("records: a record round-trips through its JSON line", "[autotune][records]") {
  TuningRecord r = make("matmul_1024_1024_1024_float32", {0.0121, 0.0119, 0.012000000000000001});
  std::string line = to_json_line(r);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.find("\"workload\":\"matmul_1024_1024_1024_float32\"") != std::string::npos);
  CHECK(line.find("\"tile_i\":{\"index\":3,\"values\":[8,4,32]}") != std::string::npos);
  CHECK(line.find(std::string("\"version\":\"") + KILN_VERSION_STRING + "\"") != std::string::npos);
  TuningRecord back = parse_record(line);
  CHECK(back.task == r.task);
  CHECK(back.workload_key == r.workload_key);
  CHECK(back.target == r.target);
  CHECK(back.config == r.config);
  CHECK(back.costs == r.costs);  // doubles are printed to round-trip exactly
  CHECK(back.error.empty());
  CHECK(back.gflops == r.gflops);
  CHECK(back.timestamp == r.timestamp);
  CHECK(back.version == r.version);
  CHECK(back.ok());
  CHECK(back.median_cost() == 0.012000000000000001);

  TuningRecord failed = parse_record(to_json_line(make("k", {}, "crashed: signal 11 (Segmentation fault)")));
  CHECK_FALSE(failed.ok());
  CHECK(failed.error == "crashed: signal 11 (Segmentation fault)");
  CHECK(failed.median_cost() == std::numeric_limits<double>::infinity());
  CHECK_THROWS_AS(to_json_line(make("k", {std::numeric_limits<double>::infinity()})), kiln::Error);
}

TEST_CASE("records: a log appends, reads back, and reports malformed lines by number", "[autotune][records]") {
  const std::string path = temp_path("log.json");
  std::remove(path.c_str());
  CHECK(read_log(path).records.empty());  // a missing log is empty
  append_record(path, make("a", {1.0}));
  {
    std::ofstream f(path, std::ios::app);
    f << "{\"task\": \"matmul\", truncated\n";                    // line 2: bad JSON
    f << "\n";                                                    // line 3: blank, ignored
    f << "{\"task\":\"matmul\",\"workload\":\"a\",\"target\":\"llvm\"}\n";  // line 4: no config
    f << "[1, 2]\n";                                              // line 5: not an object
  }
  append_record(path, make("b", {2.0, 3.0}));  // line 6
  std::string costs_str = to_json_line(make("c", {1.0}));
  costs_str.replace(costs_str.find("\"costs\":[1.0]"), 13, "\"costs\":\"1\"");
  {
    std::ofstream f(path, std::ios::app);
    f << costs_str << "\n";  // line 7: costs of the wrong type
  }
  TuningLog log = read_log(path);
  REQUIRE(log.records.size() == 2);
  CHECK(log.records[0].workload_key == "a");
  CHECK(log.records[1].workload_key == "b");
  CHECK(log.records[1].costs == std::vector<double>{2.0, 3.0});
  REQUIRE(log.malformed.size() == 4);
  CHECK(log.malformed[0].line == 2);
  CHECK(log.malformed[0].message == "not valid JSON");
  CHECK(log.malformed[1].line == 4);
  CHECK(log.malformed[1].message == "missing field 'config'");
  CHECK(log.malformed[2].line == 5);
  CHECK(log.malformed[2].message == "not a JSON object");
  CHECK(log.malformed[3].line == 7);
  CHECK(log.malformed[3].message == "field 'costs' has the wrong type (string)");
  std::remove(path.c_str());
}

TEST_CASE("records: a torn last line stays one malformed line, the next record after it is whole",
          "[autotune][records]") {
  const std::string path = temp_path("torn.json");
  std::remove(path.c_str());
  append_record(path, make("a", {1.0}));
  std::string torn = to_json_line(make("b", {2.0}));
  {
    std::ofstream f(path, std::ios::app);
    f << torn.substr(0, torn.size() / 2);  // a writer killed mid-line: no newline
  }
  append_record(path, make("c", {3.0}));
  TuningLog log = read_log(path);
  REQUIRE(log.records.size() == 2);
  CHECK(log.records[0].workload_key == "a");
  CHECK(log.records[1].workload_key == "c");
  REQUIRE(log.malformed.size() == 1);
  CHECK(log.malformed[0].line == 2);
  CHECK_NOTHROW(read_log_checked(path, true));
  std::remove(path.c_str());
}

TEST_CASE("records: best record per task ignores errors and other targets", "[autotune][records]") {
  std::vector<TuningRecord> rs = {
      make("a", {3.0, 1.0, 2.0}),            // median 2
      make("a", {}, "timed out after 2.0 s"),
      make("a", {1.5, 1.5}),                 // median 1.5: best for a on llvm
      make("a", {0.1}, "", "cuda"),          // fastest, but another target
      make("b", {5.0}),
      make("b", {5.0}),                      // tie: the earlier stays
      make("c", {}, "crashed: signal 6 (Aborted)"),
  };
  rs[5].timestamp = 1;
  auto best = best_records(rs, "llvm");
  REQUIRE(best.size() == 2);  // c has no successful record
  CHECK(best.at("a").median_cost() == 1.5);
  CHECK(best.at("b").timestamp == 1718000000);
  CHECK(best_records(rs).at("a").target == "cuda");  // no target filter
  CHECK(best_record(rs, "a", "llvm")->median_cost() == 1.5);
  CHECK_FALSE(best_record(rs, "c").has_value());
  CHECK_FALSE(best_record(rs, "zzz").has_value());
}

TEST_CASE("records: configs map to points of the template's space and back", "[autotune][records]") {
  ConfigSpace space;
  Config rec(&space);
  rec.define_split("tile_i", 1024, 3, {8, 4, 32});
  rec.define_knob("unroll", {0, 1}, 1);
  Point p = choices_to_point(space, {{"unroll", 0}});
  auto cfg = point_to_record_config(space, p);
  CHECK(cfg.at("unroll") == KnobChoice{0, {0}});
  CHECK(cfg.at("tile_i").values == std::vector<int64_t>{8, 4, 32});
  CHECK(record_config_to_point(space, cfg) == p);

  auto changed = cfg;
  changed["tile_i"].values = {4, 8, 32};  // the index now means another factorization
  CHECK_THROWS_WITH(record_config_to_point(space, changed), Catch::Contains("knob 'tile_i'"));
  auto unknown = cfg;
  unknown["vectorize"] = {0, {1}};
  CHECK_THROWS_WITH(record_config_to_point(space, unknown), Catch::Contains("knob 'vectorize'"));
}
