// Graph-level choices measured on the target: records written, the search's choice applied by
// compile (a log without one: the fastest record), choices given by the user kept, bad records
// refused.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "kiln/autotune/graph_choices.h"
#include "test_graph_util.h"

using namespace kiln::graph_test;
using namespace kiln::autotune;

namespace {

// Two 1x1 convs on one input (combine_parallel has a group) after a 3x3 conv (Winograd's).
Module two_branch_model() {
  relay::Expr x = var("x", {1, 8, 10, 10});
  relay::Expr c = call("nn.relu", {call("nn.conv2d", {x, cst({16, 8, 3, 3}, wave(16 * 72, 0.2, 0))}, conv_attrs(1))});
  relay::Expr a = call("nn.conv2d", {c, cst({16, 16, 1, 1}, wave(256, 0.3, 1))}, conv_attrs(0));
  relay::Expr b = call("nn.conv2d", {c, cst({16, 16, 1, 1}, wave(256, 0.3, 2))}, conv_attrs(0));
  return Module::make({x}, {call("add", {a, b})}, {"y"});
}

struct TempLog {
  std::string path = (std::filesystem::temp_directory_path() / "kiln_test_graph_choices.json").string();
  TempLog() { std::remove(path.c_str()); }
  ~TempLog() { std::remove(path.c_str()); }
};

}  // namespace

TEST_CASE("graph choices: every alternative measured once, recorded, the fastest applied", "[autotune][graph_choices]") {
  Module m = two_branch_model();
  TempLog log;
  GraphTuneOptions o;
  o.log = log.path;
  o.repeat = 3;
  std::vector<std::string> lines;
  auto best = tune_graph_choices(m, o, [&](const std::string& l) { lines.push_back(l); });
  // The defaults, then 2 combine values, 2 layouts and Winograd off: 6 lines, then the summary.
  CAPTURE(lines);
  REQUIRE(lines.size() >= 7);
  CHECK(lines.back().find("graph choices: ") != std::string::npos);

  TuningLog written = read_log(log.path);
  std::set<std::string> measured;
  TuningLog measurements;  // the graph records alone: a log written before choices were recorded
  int choices = 0;
  for (const TuningRecord& r : written.records) {
    CHECK(r.workload_key == graph_workload_key(m));
    CHECK(r.ok());
    if (r.task == kGraphChoiceTask) {
      ++choices;
      CHECK(describe_graph_knobs(r.config) == describe_graph_knobs(best));
      continue;
    }
    CHECK(r.task == kGraphTask);
    measured.insert(describe_graph_knobs(r.config));
    measurements.records.push_back(r);
  }
  CHECK(choices == 1);
  CHECK(measured.size() == measurements.records.size());  // no configuration measured twice
  CHECK(measured.count("combine_branches=0 layout=auto winograd=on") == 1);  // the defaults

  // compile --tuning-log: the search's choice (not the fastest record, which it passes over
  // within kMinGain of the default), except the choices the user gave.
  kiln::CompileOptions applied;
  auto note = apply_logged_graph_choices(written, m, &applied, {});
  REQUIRE(note.has_value());
  CHECK(note->find("graph choices from the tuning log: ") == 0);
  CHECK(describe_graph_knobs(graph_knobs(applied)) == describe_graph_knobs(best));
  // A log with no choice recorded: its fastest graph record.
  const TuningRecord* fastest = &measurements.records[0];
  for (const TuningRecord& r : measurements.records)
    if (r.median_cost() < fastest->median_cost()) fastest = &r;
  kiln::CompileOptions from_old;
  REQUIRE(apply_logged_graph_choices(measurements, m, &from_old, {}).has_value());
  CHECK(describe_graph_knobs(graph_knobs(from_old)) == describe_graph_knobs(fastest->config));
  // The latest choice wins: a record choosing otherwise, appended, is what compile applies.
  TuningLog later = written;
  TuningRecord other_choice = later.records.back();
  other_choice.config = fastest->config;
  other_choice.config["layout"] = {1, {1}};  // nchw
  later.records.push_back(other_choice);
  kiln::CompileOptions from_later;
  apply_logged_graph_choices(later, m, &from_later, {});
  CHECK(from_later.layout == kiln::CompileOptions::Layout::kNCHW);

  kiln::CompileOptions mine;
  mine.combine_branches = 3;
  apply_logged_graph_choices(written, m, &mine, {"combine_branches"});
  CHECK(mine.combine_branches == 3);

  // Tuning again measures no configuration twice: the measured ones come from the log (those that
  // built the same module as another were not recorded, and are measured now).
  tune_graph_choices(m, o, [](const std::string&) {});
  std::map<std::string, int> times;
  for (const TuningRecord& r : read_log(log.path).records)
    if (r.task == kGraphTask) ++times[describe_graph_knobs(r.config)];
  for (const auto& [knobs, n] : times) CHECK(n == 1);

  // Another model (other shapes) finds no record.
  relay::Expr x = var("x", {1, 8, 12, 12});
  Module other = Module::make({x}, {call("nn.relu", {x})}, {"y"});
  kiln::CompileOptions untouched;
  CHECK_FALSE(apply_logged_graph_choices(written, other, &untouched, {}).has_value());
}

TEST_CASE("graph choices: a record naming an unknown choice or value is refused by name", "[autotune][graph_choices]") {
  kiln::CompileOptions o;
  CHECK_THROWS_WITH(apply_graph_knobs({{"fusion", {0, {0}}}}, &o), Catch::Contains("unknown graph choice 'fusion'"));
  CHECK_THROWS_WITH(apply_graph_knobs({{"layout", {7, {7}}}}, &o), Catch::Contains("graph choice layout: unknown value 7"));
  CHECK_THROWS_WITH(apply_graph_knobs({{"combine_branches", {1, {5}}}}, &o),
                    Catch::Contains("graph choice combine_branches: unknown value 5"));
}

TEST_CASE("graph choices: GPU targets are refused (measured on CPUs only)", "[autotune][graph_choices]") {
  GraphTuneOptions o;
  o.compile.target = kiln::Target::parse("opencl");
  CHECK_THROWS_WITH(tune_graph_choices(two_branch_model(), o, [](const std::string&) {}),
                    Catch::Contains("graph choices are measured on CPU targets only"));
}
