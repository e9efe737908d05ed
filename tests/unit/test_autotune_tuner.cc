// The tuner end to end on synthetic tasks: a tiled-matmul template whose loop program is real
// (lowered by the real passes, so features are real) but whose "measurement" is a synthetic
// function of the config, no code generation. Finds the optimum; crashes, hangs, wrong results,
// build failures and candidates out of memory are recorded and the tuner goes on; each record is
// logged before the next candidate runs; seeded runs repeat; logs resume.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <thread>

#include <unistd.h>

#include "kiln/autotune/measure_process.h"
#include "kiln/autotune/tuner.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"
#include "test_crash.h"

using namespace kiln::autotune;
using namespace kiln::ir;

namespace {

struct Tiles {
  int64_t io, ii, jo, ji, ko, ki;
  bool vec, par;
};

// C[M,N] += A[M,K] * B[K,N] tiled io jo ko ii ki ji, ji vectorized and io parallel by choice.
PrimFunc lower_matmul(int64_t m, int64_t n, int64_t k, const Tiles& t) {
  Buffer a = Buffer::make("A", DataType::f32(), {m, k});
  Buffer b = Buffer::make("B", DataType::f32(), {k, n});
  Buffer c = Buffer::make("C", DataType::f32(), {m, n});
  Var io("io"), ii("ii"), jo("jo"), ji("ji"), ko("ko"), ki("ki");
  Expr i = io * int(t.ii) + ii, j = jo * int(t.ji) + ji, kk = ko * int(t.ki) + ki;
  Stmt s = buffer_store(c, buffer_load(c, {i, j}) + buffer_load(a, {i, kk}) * buffer_load(b, {kk, j}), {i, j});
  s = for_loop(ji, 0, int(t.ji), t.vec ? ForKind::Vectorized : ForKind::Serial, s);
  s = for_loop(ki, 0, int(t.ki), ForKind::Serial, s);
  s = for_loop(ii, 0, int(t.ii), ForKind::Serial, s);
  s = for_loop(ko, 0, int(t.ko), ForKind::Serial, s);
  s = for_loop(jo, 0, int(t.jo), ForKind::Serial, s);
  s = for_loop(io, 0, int(t.io), t.par ? ForKind::Parallel : ForKind::Serial, s);
  PrimFunc f{"matmul", {a, b, c}, s};
  return unroll_loops(vectorize_loops(simplify(flatten_storage(f))));
}

// Synthetic GFLOPS of a tiling: 16-wide vectors, a 4..8-row register block, a k tile of 16+
// that fits in L1, both cores. About 0.4% of the space is within 5% of the best.
double synthetic_gflops(const Tiles& t) {
  double lanes = t.vec ? (t.ji == 16 ? 1.0 : t.ji == 32 ? 0.9 : t.ji == 64 ? 0.8 : t.ji / 16.0) : 0.125;
  double ws = double(t.ii * t.ki + t.ki * t.ji + t.ii * t.ji) * 4;
  double cache = ws <= 16384 ? 1.0 : ws <= 262144 ? 0.7 : 0.4;
  double block = t.ii == 4 || t.ii == 8 ? 1.0 : t.ii == 2 ? 0.8 : t.ii == 1 ? 0.6 : 0.75;
  double kloop = t.ki >= 16 ? 1.0 : 0.6 + t.ki / 40.0;
  double par = t.par && t.io >= 2 ? 1.9 : 1.0;
  return 80.0 * lanes * cache * block * kloop * par;
}

// What goes wrong for which configs, to test that failures are recorded and survived.
struct Faults {
  bool crash_ii1 = false;        // segfault when the i tile is 1
  bool hang_ki1 = false;         // never returns when the k tile is 1
  bool wrong_ji2 = false;        // "wrong result" when the j tile is 2
  bool build_fail_scalar = false;  // the build throws for vec=0, par=0
  bool hang_build_ii2 = false;     // the build never returns when the i tile is 2
  bool hog_memory_ji4 = false;     // the run allocates without bound when the j tile is 4
  // Each run appends to this file how many lines the tuning log held when it started.
  std::string probe_log, probe_out;
  // Gives the task a ptxas hook (a CUDA task's) that appends its process id to this file, and
  // segfaults when the i tile is 1 if crash_ptxas_ii1.
  std::string ptxas_probe;
  bool crash_ptxas_ii1 = false;
};

// Allocates and touches 16 MiB blocks until an allocation fails: only under an enforced limit.
[[noreturn]] void hog_memory() {
  std::vector<std::unique_ptr<char[]>> held;
  for (;;) {
    held.emplace_back(new char[size_t{16} << 20]);
    std::memset(held.back().get(), 1, size_t{16} << 20);
  }
}

size_t lines_in(const std::string& path) {
  std::ifstream f(path);
  size_t n = 0;
  for (std::string line; std::getline(f, line);) ++n;
  return n;
}

Task matmul_task(int64_t m, int64_t n, int64_t k, Faults faults = {}) {
  Task task;
  task.name = "matmul";
  task.workload_key = "matmul_" + std::to_string(m) + "_" + std::to_string(n) + "_" + std::to_string(k) + "_float32";
  task.flops = 2.0 * m * n * k;
  task.make = [=](Config& cfg) {
    auto ti = cfg.define_split("tile_i", m, 2);
    auto tj = cfg.define_split("tile_j", n, 2);
    auto tk = cfg.define_split("tile_k", k, 2);
    bool vec = cfg.define_knob("vectorize", {0, 1}, 1);
    bool par = cfg.define_knob("parallel", {0, 1}, 1);
    Tiles t{ti[0], ti[1], tj[0], tj[1], tk[0], tk[1], vec, par};
    Program p;
    p.func = lower_matmul(m, n, k, t);
    const double flops = 2.0 * m * n * k;
    p.build = [=]() -> MeasureFn {
      if (faults.build_fail_scalar && !t.vec && !t.par) throw kiln::Error("codegen: no scalar fallback");
      if (faults.hang_build_ii2 && t.ii == 2) {
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      }
      return [=]() -> std::vector<double> {
        if (faults.crash_ii1 && t.ii == 1) kiln_test::segfault();
        if (faults.hang_ki1 && t.ki == 1) {
          for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
        }
        if (faults.wrong_ji2 && t.ji == 2) throw kiln::Error("wrong result: max abs error 3.5 at C[0]");
        if (faults.hog_memory_ji4 && t.ji == 4) hog_memory();
        if (!faults.probe_out.empty()) std::ofstream(faults.probe_out, std::ios::app) << lines_in(faults.probe_log) << "\n";
        double s = flops / (synthetic_gflops(t) * 1e9);
        return {s * 1.02, s, s * 0.99};
      };
    };
    if (!faults.ptxas_probe.empty())
      p.ptxas = [=]() {
        std::ofstream(faults.ptxas_probe, std::ios::app) << getpid() << "\n";
        if (faults.crash_ptxas_ii1 && t.ii == 1) kiln_test::segfault();
        return PtxasReport{t.vec ? 32 : 64, 0};
      };
    return p;
  };
  return task;
}

// The best synthetic GFLOPS over the whole space of a 64^3 task.
double best_possible(const Task& task) {
  ConfigSpace space = task.space();
  double best = 0;
  for (const Point& p : enumerate_space(space)) {
    Config cfg = point_to_config(space, p);
    auto ti = cfg.define_split("tile_i", 64, 2);
    auto tj = cfg.define_split("tile_j", 64, 2);
    auto tk = cfg.define_split("tile_k", 64, 2);
    bool vec = cfg.define_knob("vectorize", {0, 1}, 1);
    bool par = cfg.define_knob("parallel", {0, 1}, 1);
    best = std::max(best, synthetic_gflops({ti[0], ti[1], tj[0], tj[1], tk[0], tk[1], vec, par}));
  }
  return best;
}

std::string temp_log(const char* name) {
  std::string p = std::string("/tmp/kiln_test_") + name + "_" + std::to_string(::getpid()) + ".json";
  std::remove(p.c_str());
  return p;
}

// "tile_i=3 tile_j=0 ..." per record: comparable, orderable.
std::string config_key(const TuningRecord& r) {
  std::string key;
  for (const auto& [name, c] : r.config) key += name + "=" + std::to_string(c.index) + " ";
  return key;
}

std::vector<std::string> configs_in(const std::string& log) {
  std::vector<std::string> out;
  for (const TuningRecord& r : read_log(log).records) out.push_back(config_key(r));
  return out;
}

}  // namespace

TEST_CASE("tuner: finds a near-optimal config of a synthetic task, logging every trial", "[autotune][tuner]") {
  Task task = matmul_task(64, 64, 64);
  REQUIRE(task.space().size() == 7 * 7 * 7 * 2 * 2);
  const double optimum = best_possible(task);
  TunerOptions o;
  o.trials = 48;
  o.seed = 1;
  o.log_path = temp_log("tune");
  std::vector<TuneProgress> progress;
  o.on_progress = [&](const TuneProgress& p) { progress.push_back(p); };
  TuneResult r = tune(task, o);

  CHECK(r.trials == 48);
  CHECK(r.resumed == 0);
  CHECK(r.errors == 0);
  REQUIRE(r.best.has_value());
  INFO("best " << r.best->gflops << " GFLOPS of " << optimum);
  CHECK(r.best->gflops >= 0.95 * optimum);
  CHECK(r.best->workload_key == "matmul_64_64_64_float32");
  REQUIRE(r.best_gflops_curve.size() == 48);
  CHECK(r.best_gflops_curve.back() == Approx(r.best->gflops));
  for (size_t i = 1; i < r.best_gflops_curve.size(); ++i) CHECK(r.best_gflops_curve[i] >= r.best_gflops_curve[i - 1]);

  // One progress report per batch of 8, ending at the budget.
  REQUIRE(progress.size() == 6);
  for (size_t i = 0; i < progress.size(); ++i) {
    CHECK(progress[i].trials_done == int(8 * (i + 1)));
    CHECK(progress[i].trials_total == 48);
    CHECK(progress[i].task == task.workload_key);
    if (i) CHECK(progress[i].best_gflops >= progress[i - 1].best_gflops);
  }
  CHECK(progress.back().eta_s == 0.0);
  CHECK(progress.back().best_gflops == Approx(r.best->gflops));

  TuningLog log = read_log(o.log_path);
  CHECK(log.malformed.empty());
  REQUIRE(log.records.size() == 48);
  std::vector<std::string> cfgs = configs_in(o.log_path);
  CHECK(std::set<std::string>(cfgs.begin(), cfgs.end()).size() == 48);  // never the same config twice
  for (const TuningRecord& rec : log.records) {
    CHECK(rec.ok());
    CHECK(rec.costs.size() == 3);
    CHECK(rec.target == "llvm");
  }
  CHECK(best_record(log.records, task.workload_key)->config == r.best->config);
  std::remove(o.log_path.c_str());
}

TEST_CASE("tuner: crashing, hanging, wrong and unbuildable candidates are errors, and tuning goes on", "[autotune][tuner]") {
  Faults f;
  f.crash_ii1 = f.hang_ki1 = f.wrong_ji2 = f.build_fail_scalar = true;
  Task task = matmul_task(64, 64, 64, f);
  TunerOptions o;
  o.trials = 40;
  o.seed = 2;
  o.timeout_s = 0.2;
  o.build_jobs = 2;          // a crashing or hanging build must not take the builds beside it down
  o.explorer.epsilon = 1.0;  // all random: every kind of fault is met (fixed seed)
  o.log_path = temp_log("faults");
  TuneResult r = tune(task, o);
  CHECK(r.trials == 40);
  REQUIRE(r.best.has_value());
  CHECK(r.best->ok());

  std::map<std::string, int> kinds;
  int errors = 0;
  for (const TuningRecord& rec : read_log(o.log_path).records) {
    if (rec.ok()) continue;
    ++errors;
    CHECK(rec.costs.empty());
    CHECK(rec.gflops == 0);
    ++kinds[rec.error];
  }
  CHECK(errors == r.errors);
  CHECK(kinds["crashed: signal 11 (Segmentation fault)"] > 0);
  CHECK(kinds["timed out after 0.2 s"] > 0);
  CHECK(kinds["wrong result: max abs error 3.5 at C[0]"] > 0);
  CHECK(kinds["build failed: codegen: no scalar fallback"] > 0);
  CHECK(kinds.size() == 4);
  std::remove(o.log_path.c_str());
}

TEST_CASE("tuner: a CUDA task's ptxas reports are compiled in children, and a crashing compile is survived", "[autotune][tuner]") {
  Faults f;
  f.ptxas_probe = temp_log("ptxas_probe");
  f.crash_ptxas_ii1 = true;
  std::remove(f.ptxas_probe.c_str());
  Task task = matmul_task(64, 64, 64, f);
  TunerOptions o;
  o.trials = 24;  // the model is trained after 8 and then ranks candidates: features of many points
  o.seed = 3;
  o.build_jobs = 2;
  TuneResult r = tune(task, o);
  CHECK(r.trials == 24);
  REQUIRE(r.best.has_value());
  std::ifstream probe(f.ptxas_probe);
  std::set<long> pids;
  for (long pid; probe >> pid;) pids.insert(pid);
  CHECK(pids.size() > 24);         // one child per point whose features were asked for
  CHECK(pids.count(getpid()) == 0);  // never in the tuner's process
  std::remove(f.ptxas_probe.c_str());
}

TEST_CASE("tuner: a candidate whose build hangs is cut off at the timeout", "[autotune][tuner]") {
  Faults f;
  f.hang_build_ii2 = true;
  Task task = matmul_task(64, 64, 64, f);
  TunerOptions o;
  o.trials = 24;
  o.seed = 5;
  o.timeout_s = 0.2;
  o.build_jobs = 2;  // the hanging build is cut off while another builds beside it
  o.explorer.epsilon = 1.0;
  o.log_path = temp_log("build_hang");
  TuneResult r = tune(task, o);
  CHECK(r.trials == 24);
  CHECK(r.best.has_value());
  int hung = 0;
  for (const TuningRecord& rec : read_log(o.log_path).records) hung += rec.error == "timed out after 0.2 s";
  CHECK(hung == r.errors);
  CHECK(hung > 0);
  std::remove(o.log_path.c_str());
}

TEST_CASE("tuner: a candidate that exhausts its memory is an error record, and tuning goes on", "[autotune][tuner][memory]") {
  if (!memory_limit_enforced()) {
    WARN("skipped: the memory limit is not enforced under a sanitizer, and this test would exhaust the machine");
    return;
  }
  Faults f;
  f.hog_memory_ji4 = true;
  Task task = matmul_task(64, 64, 64, f);
  TunerOptions o;
  o.trials = 24;
  o.seed = 6;
  o.build_jobs = 2;
  o.explorer.epsilon = 1.0;  // all random: tile_j 4 is met (fixed seed)
  o.memory_limit_mb = (data_segment_bytes() >> 20) + 256;
  o.log_path = temp_log("memory");
  TuneResult r = tune(task, o);
  CHECK(r.trials == 24);
  REQUIRE(r.best.has_value());
  int out_of_memory = 0;
  for (const TuningRecord& rec : read_log(o.log_path).records) {
    if (rec.ok()) continue;
    INFO(rec.error);
    CHECK(rec.error.rfind("out of memory: the candidate exceeded its memory limit of " +
                              std::to_string(o.memory_limit_mb) + " MiB",
                          0) == 0);
    ++out_of_memory;
  }
  CHECK(out_of_memory == r.errors);
  CHECK(out_of_memory > 0);
  std::remove(o.log_path.c_str());

  // A limit the tuner's own copy already fills is refused before anything is measured.
  o.memory_limit_mb = 1;
  CHECK_THROWS_WITH(tune(task, o), Catch::Matches("the memory limit per candidate, 1 MiB, is not above the [0-9]+ MiB "
                                                  "the tuner itself holds, which every candidate starts with"));
}

TEST_CASE("tuner: each record is in the log before the next candidate runs", "[autotune][tuner]") {
  Faults f;
  f.probe_log = temp_log("probe_log");
  f.probe_out = temp_log("probe_out");
  Task task = matmul_task(64, 64, 64, f);
  TunerOptions o;
  o.trials = 16;  // two batches of 8
  o.seed = 1;
  o.build_jobs = 2;
  o.log_path = f.probe_log;
  TuneResult r = tune(task, o);
  CHECK(r.trials == 16);
  // The k-th run of the tune found the k records before it in the log, mid-batch too: a tuner
  // killed at any moment has logged everything it measured but the candidate in hand.
  std::vector<size_t> seen;
  std::ifstream probe(f.probe_out);
  for (size_t n; probe >> n;) seen.push_back(n);
  std::vector<size_t> expected(16);
  for (size_t k = 0; k < 16; ++k) expected[k] = k;
  CHECK(seen == expected);
  std::remove(f.probe_log.c_str());
  std::remove(f.probe_out.c_str());
}

TEST_CASE("tuner: a seeded tune is reproducible", "[autotune][tuner]") {
  Task task = matmul_task(64, 64, 64);
  auto run = [&](uint64_t seed, const char* name) {
    TunerOptions o;
    o.trials = 24;
    o.seed = seed;
    o.log_path = temp_log(name);
    TuneResult r = tune(task, o);
    auto cfgs = configs_in(o.log_path);
    std::remove(o.log_path.c_str());
    REQUIRE(cfgs.size() == 24);
    return std::make_pair(cfgs, r.best_gflops_curve);
  };
  auto a = run(7, "repro_a"), b = run(7, "repro_b"), c = run(8, "repro_c");
  CHECK(a.first == b.first);
  CHECK(a.second == b.second);
  CHECK(a.first != c.first);
}

TEST_CASE("tuner: build_jobs changes how fast, not what: 1 and 2 give the same seeded log", "[autotune][tuner]") {
  // Faults that fail fast (no hang: a timeout is the one outcome that depends on the machine's load).
  Faults f;
  f.crash_ii1 = f.wrong_ji2 = f.build_fail_scalar = true;
  Task task = matmul_task(64, 64, 64, f);
  auto run = [&](int build_jobs) {
    TunerOptions o;
    o.trials = 24;
    o.seed = 3;
    o.build_jobs = build_jobs;
    o.log_path = temp_log(build_jobs == 1 ? "jobs_1" : "jobs_2");
    TuneResult r = tune(task, o);
    std::vector<std::string> lines;
    for (const TuningRecord& rec : read_log(o.log_path).records) {
      std::string costs;
      for (double c : rec.costs) costs += std::to_string(c) + " ";
      lines.push_back(config_key(rec) + "| " + rec.error + " | " + costs);
    }
    std::remove(o.log_path.c_str());
    CHECK(r.trials == 24);
    CHECK(r.errors > 0);
    return std::make_pair(lines, r.best_gflops_curve);
  };
  auto one = run(1), two = run(2);
  REQUIRE(one.first.size() == 24);
  CHECK(one.first == two.first);  // the same configs, in the same order, with the same outcomes
  CHECK(one.second == two.second);

  TunerOptions bad;
  bad.build_jobs = 0;
  CHECK_THROWS_WITH(tune(task, bad), Catch::Contains("build_jobs >= 1"));
}

TEST_CASE("tuner: resumes from a log, skipping measured configs and reporting bad lines", "[autotune][tuner]") {
  Task task = matmul_task(64, 64, 64);
  Task other = matmul_task(32, 64, 64);  // another workload in the same log
  TunerOptions o;
  o.seed = 4;
  o.log_path = temp_log("resume");
  o.trials = 8;
  tune(other, o);
  o.trials = 16;
  TuneResult first = tune(task, o);
  CHECK(first.resumed == 0);  // the other workload's records do not count
  {
    std::ofstream f(o.log_path, std::ios::app);
    f << "{ not json\n";
  }
  o.trials = 32;
  TuneResult second = tune(task, o);
  CHECK(second.resumed == 16);
  CHECK(second.trials == 32);
  REQUIRE(second.notes.size() == 1);
  CHECK(second.notes[0] == o.log_path + ":25: skipped: not valid JSON");
  REQUIRE(second.best.has_value());
  CHECK(second.best->gflops >= first.best->gflops);

  TuningLog log = read_log(o.log_path);
  std::set<std::string> mine;
  for (const TuningRecord& r : log.records) {
    if (r.workload_key == task.workload_key) CHECK(mine.insert(config_key(r)).second);  // nothing measured twice
  }
  CHECK(mine.size() == 32);
  // Already at the budget: nothing more is measured.
  TuneResult third = tune(task, o);
  CHECK(third.resumed == 32);
  CHECK(read_log(o.log_path).records.size() == log.records.size());
  std::remove(o.log_path.c_str());
}

TEST_CASE("tuner: early stopping and a model carried over from another task", "[autotune][tuner]") {
  Task a = matmul_task(64, 64, 64);
  TunerOptions o;
  o.trials = 200;
  o.seed = 5;
  o.explorer.early_stopping = 16;
  TuneResult r = tune(a, o);
  CHECK(r.stopped_early);
  CHECK(r.trials < 200);
  CHECK(r.trials >= 16);

  // Transfer: a model trained on task a, saved, ranks task b's candidates from the first batch.
  CostModel shared;
  TunerOptions oa;
  oa.trials = 48;
  oa.seed = 6;
  tune(a, oa, &shared);
  REQUIRE(shared.trained());
  const std::string path = temp_log("model");
  shared.save(path);
  Task b = matmul_task(128, 64, 32);
  TunerOptions ob;
  ob.trials = 8;
  ob.seed = 6;
  ob.base_model_path = path;
  TuneResult warm = tune(b, ob);
  ob.base_model_path.clear();
  TuneResult cold = tune(b, ob);
  INFO("first batch of b: transferred " << warm.best->gflops << " GFLOPS, random " << cold.best->gflops);
  CHECK(warm.best->gflops > cold.best->gflops);
  std::remove(path.c_str());
}

TEST_CASE("tuner: the cost model on IR features beats random search at equal budget", "[autotune][tuner]") {
  // Same budget (32 trials), same seeds; random search is the explorer with epsilon 1.
  Task task = matmul_task(64, 64, 64);
  double log_ratio = 0;
  const int seeds = 4;
  for (int seed = 1; seed <= seeds; ++seed) {
    TunerOptions o;
    o.trials = 32;
    o.seed = seed;
    double guided = tune(task, o).best->gflops;
    o.explorer.epsilon = 1.0;
    double random = tune(task, o).best->gflops;
    log_ratio += std::log(guided / random) / seeds;
  }
  INFO("guided/random best GFLOPS at 32 trials (geometric mean of 4 seeds): " << std::exp(log_ratio));
  CHECK(std::exp(log_ratio) > 1.3);
}
