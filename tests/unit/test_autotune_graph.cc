// The tuner on real kernels: tasks extracted from fused models (dedup by workload key), their
// config spaces, real measurement (a wrong kernel is rejected by the output check), seeded and
// resumed runs, and compile() applying a tuning log or saying why it did not.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>

#include "kiln/autotune/apply_log.h"
#include "kiln/pipeline.h"
#include "kiln/autotune/graph_tasks.h"
#include "kiln/autotune/plot.h"
#include "kiln/autotune/tuner.h"
#include "kiln/ir/printer.h"
#include "kiln/relay/frontend/onnx.h"
#include "kiln/runtime/version.h"
#include "test_graph_util.h"

using namespace kiln::graph_test;
using namespace kiln::autotune;
using kiln::CompileOptions;

namespace {

std::string repo_dir() {
  std::string file = __FILE__;  // <repo>/tests/unit/test_autotune_graph.cc
  return file.substr(0, file.rfind("/tests/unit/"));
}

// A fresh path in /tmp, removed when the test ends.
struct TempFile {
  std::string path;
  explicit TempFile(const char* name)
      : path(std::string("/tmp/kiln_test_graph_") + name + "_" + std::to_string(::getpid()) + ".json") {
    std::remove(path.c_str());
  }
  ~TempFile() { std::remove(path.c_str()); }
};

relay::Expr conv(relay::Expr x, int64_t out_c, int64_t in_c, double phase) {
  return call("nn.conv2d", {x, cst({out_c, in_c, 3, 3}, wave(out_c * in_c * 9, 0.2, phase))}, conv_attrs());
}

// conv 8->8 twice (different weights and epilogues: one workload), conv 8->16 once, a global
// pool (its template has a knob) and an elementwise kernel of its own (not tuned by default).
Module three_convs() {
  relay::Expr x = var("x", {1, 8, 16, 16});
  relay::Expr a = call("nn.relu", {conv(x, 8, 8, 0.0)});
  relay::Expr b = call("add", {conv(a, 8, 8, 1.0), a});
  relay::Expr c = call("nn.relu", {conv(b, 16, 8, 2.0)});
  relay::Expr p = call("nn.global_avg_pool", {c});
  return Module::make({x}, {p, call("sigmoid", {x})}, {"y", "z"});
}

Module one_conv() {
  relay::Expr x = var("x", {1, 8, 16, 16});
  return Module::make({x}, {call("nn.relu", {conv(x, 8, 8, 0.5)})}, {"y"});
}

Module dense(bool relu) {
  relay::Expr x = var("x", {4, 32});
  relay::Expr d = call("nn.dense", {x, cst({16, 32}, wave(512, 0.3, 0.7))});
  return Module::make({x}, {relu ? call("nn.relu", {d}) : d}, {"y"});
}

GraphTaskOptions quick() {
  GraphTaskOptions o;
  o.timer.repeat = 2;
  o.timer.min_duration_s = 0.001;
  return o;
}

std::vector<std::string> logged_configs(const std::string& path) {
  std::vector<std::string> out;
  for (const TuningRecord& r : read_log(path).records) {
    std::string s;
    for (const auto& [k, c] : r.config) s += k + "=" + std::to_string(c.index) + " ";
    out.push_back(s);
  }
  return out;
}

}  // namespace

TEST_CASE("extract_tasks: one task per workload key, with occurrence counts", "[autotune]") {
  CompileOptions direct;  // the direct conv template (by default these 3x3 convs are Winograd's)
  direct.winograd = false;
  direct.layout = CompileOptions::Layout::kNCHW;  // the NCHW conv template
  std::vector<GraphTask> tasks = extract_tasks(three_convs(), direct, quick());
  std::map<std::string, int> conv_counts;
  int kernels = 0;
  for (const GraphTask& t : tasks) {
    kernels += t.occurrences;
    if (t.task.name == "conv") conv_counts[t.task.workload_key] = t.occurrences;
    CHECK(t.task.flops > 0);
    CHECK(t.task.space().size() > 1);
    CHECK(t.task.name != "injective");  // the sigmoid kernel is not tuned by default
  }
  REQUIRE(conv_counts.size() == 2);
  std::multiset<int> counts;
  for (const auto& [key, n] : conv_counts) counts.insert(n);
  CHECK(counts == std::multiset<int>{1, 2});
  const std::string key88 = conv_counts.begin()->second == 2 ? conv_counts.begin()->first : conv_counts.rbegin()->first;
  CHECK(key88.rfind("conv:nn.conv2d(float32[1,8,16,16],", 0) == 0);
  CHECK(key88.find("->float32[1,8,16,16]") != std::string::npos);
  CHECK(workload_template(key88) == "conv");  // the cost model's transfer group in kiln tune
  // conv flops: 2 * outputs * (in_c * 3 * 3), plus the epilogue's elementwise stages.
  for (const GraphTask& t : tasks)
    if (t.task.workload_key == key88) CHECK(t.task.flops >= 2.0 * 8 * 16 * 16 * 8 * 9);
  CHECK(kernels == 3);  // three convs (the global pool's template has no choice: its blocks follow the target)

  // Deterministic keys; all_groups adds the injective kernel.
  std::vector<GraphTask> again = extract_tasks(three_convs(), direct, quick());
  REQUIRE(again.size() == tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) CHECK(again[i].task.workload_key == tasks[i].task.workload_key);
  GraphTaskOptions all = quick();
  all.all_groups = true;
  CHECK(extract_tasks(three_convs(), direct, all).size() == tasks.size() + 1);

  // By default the same convs are Winograd tasks: the kernels compile() builds are what is tuned.
  std::vector<GraphTask> wino = extract_tasks(three_convs(), CompileOptions{}, quick());
  REQUIRE(wino.size() == tasks.size());
  int wino_kernels = 0;
  for (const GraphTask& t : wino)
    if (t.task.name == "conv_winograd") {
      wino_kernels += t.occurrences;
      CHECK(workload_template(t.task.workload_key) == "conv_winograd");
    }
  CHECK(wino_kernels == 3);
}

TEST_CASE("extract_tasks: examples/tiny_cnn has its two convs, max pool, dense and softmax once each", "[autotune]") {
  std::vector<GraphTask> tasks =
      extract_tasks(kiln::relay::from_onnx(repo_dir() + "/examples/tiny_cnn/model.onnx"), CompileOptions{}, quick());
  std::map<std::string, int> by_template;
  for (const GraphTask& t : tasks) {
    CHECK(t.occurrences == 1);
    ++by_template[t.task.name];
  }
  // Its convs and max pool run in blocks (alter_layout); the global pool's template has no
  // choice left: its blocks follow the target.
  CHECK(by_template == std::map<std::string, int>{{"conv_nchwc", 2}, {"dense", 1}, {"pool_nchwc", 1}, {"softmax", 1}});
}

TEST_CASE("a real conv task: every point of its space lowers, and indexes round-trip", "[autotune]") {
  std::vector<GraphTask> tasks = extract_tasks(one_conv(), CompileOptions{}, quick());
  REQUIRE(tasks.size() == 1);
  const Task& task = tasks[0].task;
  ConfigSpace space = task.space();
  std::vector<Point> points = enumerate_space(space);
  REQUIRE(points.size() == space.size());
  REQUIRE(points.size() >= 4);
  std::set<std::string> programs;
  for (uint64_t i = 0; i < points.size(); ++i) {
    CHECK(space.encode(points[i]) == i);
    CHECK(space.decode(i) == points[i]);
    CHECK(record_config_to_point(space, point_to_record_config(space, points[i])) == points[i]);
    Program p = task.instantiate(space, points[i]);
    REQUIRE(p.func.body.defined());
    programs.insert(kiln::ir::to_string(p.func));
  }
  // The knobs change the kernel (not every pair of points need differ: some knobs are no-ops
  // for some tilings).
  CHECK(programs.size() > 1);
}

TEST_CASE("real measurement: a kernel computing something else is rejected as a wrong result", "[autotune]") {
  kiln::FusedProgram good = kiln::fuse_model(dense(true)), wrong = kiln::fuse_model(dense(false));
  REQUIRE(good.fused.groups.size() == 1);
  REQUIRE(wrong.fused.groups.size() == 1);
  auto kernel_of = [](const kiln::FusedProgram& p) {
    return kiln::lower_group(p.fused.groups[0], "k", p.target, p.strategy_options, p.prepacked).kernel;
  };
  kiln::ir::PrimFunc fg = kernel_of(good), fw = kernel_of(wrong);
  auto ref = KernelReference::make(kiln::codegen::build({fg}), fg, 1, 7);
  const TimerOptions timer = quick().timer;

  IsolatedResult ok = run_isolated(measure_kernel(kiln::codegen::build({fg}), fg, ref, timer), 30);
  CHECK(ok.error == "");
  CHECK(ok.values.size() == 2);
  IsolatedResult bad = run_isolated(measure_kernel(kiln::codegen::build({fw}), fw, ref, timer), 30);
  CHECK_THAT(bad.error, Catch::Matchers::StartsWith("wrong result: output 0 element"));

  // A candidate that runs past the timeout (here: a timer asking for a minute of calls) is cut
  // off and reported, not waited for.
  TimerOptions forever = timer;
  forever.min_duration_s = 60;
  IsolatedResult hung = run_isolated(measure_kernel(kiln::codegen::build({fg}), fg, ref, forever), 0.3);
  CHECK(hung.error == "timed out after 0.3 s");

  // Through the tuner: a task whose build swaps in the other computation records only errors.
  Task real = group_task(good.fused.groups[0], good.strategy_options, good.prepacked, good.target, quick());
  Task evil = real;
  evil.make = [real, fw, ref, timer](Config& cfg) {
    Program p = real.make(cfg);
    p.build = [fw, ref, timer] { return measure_kernel(kiln::codegen::build({fw}), fw, ref, timer); };
    return p;
  };
  TunerOptions o;
  o.trials = 2;
  o.batch_size = 2;
  TuneResult r = tune(evil, o);
  CHECK(r.errors == 2);
  CHECK_FALSE(r.best.has_value());
  // The real one, with the default config measured first (what kiln tune does).
  TempFile log("default_first");
  o.log_path = log.path;
  o.measure_default_first = true;
  TuneResult fine = tune(real, o);
  CHECK(fine.errors == 0);
  REQUIRE(fine.best.has_value());
  CHECK(fine.best->gflops > 0);
  CHECK(fine.default_gflops > 0);
  CHECK(fine.best->gflops >= fine.default_gflops);
  ConfigSpace space = real.space();
  CHECK(record_config_to_point(space, read_log(log.path).records.at(0).config) ==
        choices_to_point(space, {}));  // no choices: every knob at its default
}

TEST_CASE("tuning a real task: seeded runs measure the same configs, the log round-trips and resumes", "[autotune]") {
  std::vector<GraphTask> tasks = extract_tasks(one_conv(), CompileOptions{}, quick());
  REQUIRE(tasks.size() == 1);
  TempFile a("seed_a"), b("seed_b");
  TunerOptions o;
  o.trials = 6;  // below min_train_samples: the proposals depend on the seed only, not on timings
  o.batch_size = 3;
  o.seed = 11;
  o.log_path = a.path;
  TuneResult ra = tune(tasks[0].task, o);
  o.log_path = b.path;
  TuneResult rb = tune(tasks[0].task, o);
  CHECK(ra.trials == 6);
  CHECK(ra.errors == 0);
  CHECK(logged_configs(a.path) == logged_configs(b.path));
  CHECK(logged_configs(a.path).size() == 6);

  // Every line parses back to the record written, with the task's key and target.
  TuningLog log = read_log(a.path);
  CHECK(log.malformed.empty());
  for (const TuningRecord& r : log.records) {
    CHECK(r.workload_key == tasks[0].task.workload_key);
    CHECK(r.ok());
    TuningRecord back = parse_record(to_json_line(r));
    CHECK(back.config == r.config);
    CHECK(back.costs == r.costs);
  }
  // Resuming: the 6 logged configs count and are not measured again.
  o.log_path = a.path;
  o.trials = 8;
  TuneResult rc = tune(tasks[0].task, o);
  CHECK(rc.resumed == 6);
  CHECK(rc.trials == 8);
  std::vector<std::string> configs = logged_configs(a.path);
  CHECK(configs.size() == 8);
  CHECK(std::set<std::string>(configs.begin(), configs.end()).size() == 8);
}

TEST_CASE("tuning a real task with cold weights: one call a sample, weights demoted before each", "[autotune]") {
  GraphTaskOptions cold = quick();
  cold.cold_weights = true;
  cold.timer.min_duration_s = 10;  // ignored when cold: every sample is one call
  std::vector<GraphTask> tasks = extract_tasks(one_conv(), CompileOptions{}, cold);
  REQUIRE(tasks.size() == 1);
  TempFile log("cold");
  TunerOptions o;
  o.trials = 3;
  o.log_path = log.path;
  TuneResult r = tune(tasks[0].task, o);
  std::string errors;  // what failed, for the report (seen once in a loaded ctest run, not reproduced)
  for (const TuningRecord& rec : read_log(log.path).records)
    if (!rec.error.empty()) errors += rec.error + "\n";
  INFO(errors);
  CHECK(r.errors == 0);
  for (const TuningRecord& rec : read_log(log.path).records) {
    CHECK(rec.ok());
    CHECK(rec.costs.size() == 2);
    for (double c : rec.costs) CHECK(c < 0.5);  // one call, not 10 s of them
  }
}

TEST_CASE("compile --tuning-log applies the best record, or says why it used the default", "[autotune]") {
  Module m = one_conv();
  std::vector<GraphTask> tasks = extract_tasks(m, CompileOptions{}, quick());
  REQUIRE(tasks.size() == 1);
  const Task& task = tasks[0].task;
  ConfigSpace space = task.space();
  // A point other than the default: the last candidate of every knob.
  Point p;
  for (const Knob& k : space.knobs()) p.push_back(k.candidates.size() - 1);
  auto record = [&](const std::string& key, const std::string& target, double cost) {
    TuningRecord r;
    r.task = task.name;
    r.workload_key = key;
    r.target = target;
    r.config = point_to_record_config(space, p);
    r.costs = {cost};
    r.version = KILN_VERSION_STRING;
    return r;
  };
  const std::string host = kiln::Target::host().str();
  const std::string default_ir = kiln::ir::to_string(kiln::compile(m).kernels[0]);

  TempFile log("apply");
  append_record(log.path, record(task.workload_key, host, 1e-3));
  CompileOptions opts;
  LogSchedules applied(log.path, opts.target);
  opts.schedules = &applied;
  kiln::CompiledModel tuned = kiln::compile(m, opts);
  CHECK(kiln::ir::to_string(tuned.kernels[0]) != default_ir);
  CHECK_THAT(tuned.notes.back(), Catch::Matchers::Contains("tuned schedules applied to 1 kernel (1 workload)"));

  // A record of another workload and one for another instruction set: default schedule, and
  // both said, with why.
  TempFile other("fallback");
  append_record(other.path, record("conv:some other workload", host, 1e-3));
  append_record(other.path, record(task.workload_key, "llvm -mcpu=other", 1e-4));
  LogSchedules fallback_log(other.path, opts.target);
  opts.schedules = &fallback_log;
  kiln::CompiledModel fallback = kiln::compile(m, opts);
  CHECK(kiln::ir::to_string(fallback.kernels[0]) == default_ir);
  std::string notes;
  for (const std::string& n : fallback.notes) notes += n + "\n";
  CHECK_THAT(notes, Catch::Matchers::Contains("applied to 0 kernels (0 workloads); 1 tunable kernel without a record"));
  CHECK_THAT(notes, Catch::Matchers::Contains("no tuning record for " + task.workload_key + " (1 kernel): default schedule"));
  CHECK_THAT(notes, Catch::Matchers::Contains("1 record for target 'other' skipped: another instruction set than the "
                                              "compile target '" + opts.target.brief() + "'"));

  // The same instruction set on a machine with other caches or cores: applied, and said.
  kiln::Target elsewhere = opts.target;
  elsewhere.facts.cores += 2;
  TempFile moved("moved");
  append_record(moved.path, record(task.workload_key, elsewhere.str(), 1e-3));
  LogSchedules moved_log(moved.path, opts.target);
  opts.schedules = &moved_log;
  kiln::CompiledModel from_elsewhere = kiln::compile(m, opts);
  CHECK(kiln::ir::to_string(from_elsewhere.kernels[0]) != default_ir);
  notes.clear();
  for (const std::string& n : from_elsewhere.notes) notes += n + "\n";
  CHECK_THAT(notes, Catch::Matchers::Contains("tuned on '" + elsewhere.brief() + "' considered: same instruction set, "
                                              "other caches or cores than '" + opts.target.brief() + "'"));
  for (const std::string& n : from_elsewhere.notes) CHECK(n.size() < 300);  // no whole target specs

  // Logs that are missing or are not logs are errors naming the file.
  CHECK_THROWS_WITH(LogSchedules("/tmp/kiln_no_such_log.json", opts.target),
                    "tuning log '/tmp/kiln_no_such_log.json' does not exist");
  TempFile junk("junk");
  std::ofstream(junk.path) << "hello\n";
  CHECK_THROWS_WITH(LogSchedules(junk.path, opts.target), Catch::Matchers::Contains("is not a tuning log: line 1: not valid JSON"));
}

TEST_CASE("tuning curves: one polyline per task in a standalone SVG", "[autotune]") {
  std::string svg = tuning_curves_svg({{"task 1: conv", {1, 2, 2, 5}}, {"task 2: <dense>", {3}}, {"empty", {}}}, "t & t");
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  size_t lines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++lines;
  CHECK(lines == 2);
  CHECK(svg.find("&lt;dense&gt;") != std::string::npos);
  CHECK(svg.find("t &amp; t") != std::string::npos);
}
