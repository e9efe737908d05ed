// Cost-model-guided search against random search, on real kernels, at equal trial budgets.
//
//   bench_tuner [--trials N] [--seeds S] [--filter SUB[,SUB...]] [--timeout SEC] [--min-train M] [--no-transfer]
//               [--build-jobs J]
//   bench_tuner --dataset DIR [--samples N] --filter SUB   (offline diagnosis of the cost model)
//
// --build-jobs: candidates built at once (default: the number of cores); runs are timed one at a
// time either way (TunerOptions::build_jobs).
//
// Tasks: SGEMM 512 and 1024 (nn.matmul of two inputs), three resnet18 3x3 convolutions (64ch at
// 56x56, 128ch at 28x28, 256ch at 14x14, batch 1, NCHW, constant weights prepacked as in a
// model) and mobilenet_v2's depthwise 3x3 over 144 channels at 56x56. Each is a single-op relay
// module put through extract_tasks, exactly the task path of `kiln tune`. The three convs are the
// direct conv template's tasks (as `--no-winograd` compiles them; spaces of 3456-6048 points);
// the same layers as Winograd tasks (what `kiln compile` builds by default; 192-720 points) run
// after them and get a line of their own, outside the closing line's set. For every task and
// seed, one run of N trials (default 128) with the explorer guided by the XGBoost model (trained
// from M measurements on, default the tuner's; one model per seed and template carried over from
// the earlier tasks of that template, in the order listed, as `kiln tune` does) and one
// with random search (the same tuner with the model never trained and no neighbourhood share:
// uniform random points), no log, seeds outer and the
// two searches taking turns at going first (so that load drift hits both alike); best-so-far GFLOPS
// is read at 32, 64 and N trials of each run; each task's default config is measured once, for
// scale. Prints a table of means over seeds and closes with
//   guided/random best GFLOPS at 64 trials: X
// the geometric mean over tasks of (mean guided best) / (mean random best) at 64 trials. A task
// whose space has no more points than the budget is measured exhaustively by both: its ratio
// would be 1 without timing noise (the table says so, and a separate line gives the geometric
// mean over the searched tasks only). The machine is shared: compare within one run only.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <random>

#include "kiln/autotune/features.h"
#include "kiln/autotune/graph_tasks.h"
#include "kiln/autotune/records.h"
#include "kiln/autotune/tuner.h"
#include "kiln/relay/op.h"

using namespace kiln;
using namespace kiln::autotune;

namespace {

relay::Expr var(const std::string& n, relay::Shape s) { return relay::make_var(n, relay::tensor_type(relay::DataType::f32(), s)); }

relay::Expr weights(relay::Shape s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = std::sin(0.37 * static_cast<double>(i)) * 0.1;
  return relay::make_constant(relay::HostTensor::from_doubles(relay::DataType::f32(), s, v));
}

relay::Module sgemm(int64_t n) {
  relay::Expr a = var("a", {n, n}), b = var("b", {n, n});
  return relay::Module::make({a, b}, {relay::make_call("nn.matmul", {a, b})}, {"c"});
}

relay::Module conv3x3(int64_t c, int64_t hw, int64_t stride, int64_t groups) {
  relay::Expr x = var("x", {1, c, hw, hw});
  relay::Attrs a;
  a.set_ints("strides", {stride, stride}).set_ints("padding", {1, 1, 1, 1}).set_ints("dilation", {1, 1}).set_int("groups", groups);
  return relay::Module::make({x}, {relay::make_call("nn.conv2d", {x, weights({c, c / groups, 3, 3})}, a)}, {"y"});
}

// --filter: comma-separated substrings; a task runs when its name contains any of them.
bool selected(const std::string& name, const std::string& filter) {
  if (filter.empty()) return true;
  size_t start = 0;
  while (start <= filter.size()) {
    size_t end = filter.find(',', start);
    if (end == std::string::npos) end = filter.size();
    const std::string part = filter.substr(start, end - start);
    if (!part.empty() && name.find(part) != std::string::npos) return true;
    start = end + 1;
  }
  return false;
}

struct Bench {
  std::string name;
  relay::Module module;
  bool winograd = false;  // CompileOptions::winograd: the 3x3 convs as Winograd tasks
  bool target_set = true; // counted in the closing line (the issue's set of six)
};

double at(const std::vector<double>& curve, size_t trials) {
  if (curve.empty()) return 0;
  return curve[std::min(trials, curve.size()) - 1];  // an exhausted space keeps its best
}

// Diagnosis mode (--dataset DIR): measures `samples` random configs of one task twice (two
// random-search runs with the same seed visit the same points), logs to DIR, then judges the
// cost model offline on that fixed data: trained on k random samples, how well does it rank the
// rest (Spearman) and how fast is the best of its top 8, against the best of 64 random. This
// separates "the model cannot rank" from "the explorer does not find what the model likes"
// without the noise of a live search.
int dataset(const Task& task, const std::string& dir, int samples, double timeout, int build_jobs) {
  const ConfigSpace space = task.space();
  std::string stem = dir + "/" + task.name + "_" + std::to_string(space.size());
  std::vector<TuningLog> logs;
  for (const char* rep : {"_a.jsonl", "_b.jsonl"}) {
    TuningLog log = read_log(stem + rep);
    if (log.records.size() < static_cast<size_t>(samples)) {
      TunerOptions o;
      o.trials = samples;
      o.seed = 12345;
      o.timeout_s = timeout;
      o.build_jobs = build_jobs;
      o.log_path = stem + rep;
      o.min_train_samples = std::numeric_limits<int>::max();  // random configs:
      o.explorer.local_share = 0;                              // none from the default's neighbourhood
      tune(task, o);
      log = read_log(stem + rep);
    }
    logs.push_back(std::move(log));
  }
  std::map<Point, double> second;
  for (const TuningRecord& r : logs[1].records) second[record_config_to_point(space, r.config)] = r.ok() ? r.gflops : 0;
  std::vector<Point> pts;
  std::vector<double> g1, g2, g;
  for (const TuningRecord& r : logs[0].records) {
    Point p = record_config_to_point(space, r.config);
    auto it = second.find(p);
    if (it == second.end()) continue;
    pts.push_back(p);
    g1.push_back(r.ok() ? r.gflops : 0);
    g2.push_back(it->second);
    g.push_back(std::max(g1.back(), g2.back()));  // the less disturbed of two runs
  }
  std::printf("%zu points measured twice; repeatability: spearman %.3f", pts.size(), spearman_correlation(g1, g2));
  double rel = 0;
  for (size_t i = 0; i < g.size(); ++i) rel += g[i] > 0 ? std::fabs(g1[i] - g2[i]) / g[i] / g.size() : 0;
  std::printf(", mean |a-b|/max %.3f, best %.1f GFLOPS\n", rel, *std::max_element(g.begin(), g.end()));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<float>> feats;
  for (const Point& p : pts) feats.push_back(extract_features(task.instantiate(space, p).func));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("feature extraction: %.2f ms per point (%zu features)\n", ms / pts.size(), feats[0].size());
  // Knob values as features: log2 of each split factor / choice value.
  std::vector<std::vector<float>> knobs;
  for (const Point& p : pts) {
    std::vector<float> row;
    for (size_t k = 0; k < p.size(); ++k)
      for (int64_t v : space.knobs()[k].candidates[p[k]]) row.push_back(std::log2(1.0f + static_cast<float>(v)));
    knobs.push_back(row);
  }
  std::vector<std::vector<float>> both = feats;
  for (size_t i = 0; i < both.size(); ++i) both[i].insert(both[i].end(), knobs[i].begin(), knobs[i].end());
  std::mt19937_64 rng(7);
  const int draws = 40;
  struct Kind {
    const char* name;
    const std::vector<std::vector<float>>* x;
    std::string objective;
  };
  const Kind kinds[] = {{"loop features, rank:pairwise", &feats, "rank:pairwise"},
                        {"loop features, reg:squarederror", &feats, "reg:squarederror"},
                        {"knob values, rank:pairwise", &knobs, "rank:pairwise"},
                        {"loop+knob, rank:pairwise", &both, "rank:pairwise"}};
  // Best of 64 random: the reference a guided search must beat.
  double rand64 = 0;
  for (int d = 0; d < 200; ++d) {
    std::vector<size_t> idx(pts.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::shuffle(idx.begin(), idx.end(), rng);
    double b = 0;
    for (size_t i = 0; i < std::min<size_t>(64, idx.size()); ++i) b = std::max(b, g[idx[i]]);
    rand64 += b / 200;
  }
  std::printf("best of 64 random (mean of 200 draws): %.1f GFLOPS\n", rand64);
  for (const Kind& kind : kinds) {
    for (int k : {8, 16, 32, 64}) {
      if (static_cast<size_t>(k) + 16 > pts.size()) continue;
      double rho = 0, top8 = 0, top1 = 0, rand8 = 0;
      for (int d = 0; d < draws; ++d) {
        std::vector<size_t> idx(pts.size());
        for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
        std::shuffle(idx.begin(), idx.end(), rng);
        CostModelOptions mo;
        mo.objective = kind.objective;
        mo.seed = static_cast<uint64_t>(d);
        CostModel m(mo);
        std::vector<std::vector<float>> rows;
        std::vector<double> thr;
        for (int i = 0; i < k; ++i) rows.push_back((*kind.x)[idx[i]]), thr.push_back(g[idx[i]]);
        m.add("t", rows, thr);
        m.train();
        std::vector<std::vector<float>> rest;
        std::vector<double> truth;
        for (size_t i = k; i < idx.size(); ++i) rest.push_back((*kind.x)[idx[i]]), truth.push_back(g[idx[i]]);
        std::vector<float> pred = m.predict(rest);
        std::vector<double> predd(pred.begin(), pred.end());
        rho += spearman_correlation(predd, truth) / draws;
        std::vector<size_t> order(rest.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return predd[a] > predd[b]; });
        double b8 = 0, r8 = 0;
        for (size_t i = 0; i < 8; ++i) b8 = std::max(b8, truth[order[i]]), r8 = std::max(r8, truth[i]);
        top8 += b8 / draws;
        top1 += truth[order[0]] / draws;
        rand8 += r8 / draws;
        double bk = 0;
        for (int i = 0; i < k; ++i) bk = std::max(bk, g[idx[i]]);
        (void)bk;
      }
      std::printf("%-34s k=%-3d spearman %.3f  top-1 %.1f  best of top-8 %.1f  (best of 8 random %.1f)\n", kind.name, k,
                  rho, top1, top8, rand8);
    }
  }
  // The guided loop replayed on the pool: 8 random, then batches of 8 = the model's top
  // unmeasured points of the whole pool (exhaustive scoring), retrained after each batch.
  for (const Kind& kind : kinds) {
    if (kind.objective != "rank:pairwise") continue;
    for (size_t diversity : {size_t{1}, size_t{2}})
    for (int n_rand : {0, 1}) {
      double best32 = 0, best64 = 0, r32 = 0, r64 = 0;
      for (int d = 0; d < draws; ++d) {
        std::vector<size_t> idx(pts.size());
        for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
        std::shuffle(idx.begin(), idx.end(), rng);
        std::vector<bool> used(pts.size(), false);
        std::vector<size_t> picked(idx.begin(), idx.begin() + 8);
        for (size_t i : picked) used[i] = true;
        size_t next_random = 8;
        while (picked.size() < 64) {
          CostModelOptions mo;
          mo.seed = static_cast<uint64_t>(d);
          CostModel m(mo);
          std::vector<std::vector<float>> rows;
          std::vector<double> thr;
          for (size_t i : picked) rows.push_back((*kind.x)[i]), thr.push_back(g[i]);
          m.add("t", rows, thr);
          m.train();
          std::vector<size_t> cand;
          std::vector<std::vector<float>> cx;
          for (size_t i = 0; i < pts.size(); ++i)
            if (!used[i]) cand.push_back(i), cx.push_back((*kind.x)[i]);
          std::vector<float> pred = m.predict(cx);
          std::vector<size_t> order(cand.size());
          for (size_t i = 0; i < order.size(); ++i) order[i] = i;
          std::shuffle(order.begin(), order.end(), rng);  // ties broken at random
          std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pred[a] > pred[b]; });
          // Diverse first, as the explorer does: skip points within `diversity` knobs of one
          // already in this batch, then relax.
          const size_t start = picked.size();
          for (size_t min_dist : {diversity, size_t{1}}) {
            for (size_t o : order) {
              if (picked.size() - start >= static_cast<size_t>(8 - n_rand)) break;
              if (used[cand[o]]) continue;
              bool far = true;
              for (size_t q = start; q < picked.size(); ++q) far = far && point_distance(pts[cand[o]], pts[picked[q]]) >= min_dist;
              if (far) picked.push_back(cand[o]), used[cand[o]] = true;
            }
          }
          for (int r = 0; r < n_rand; ++r) {
            while (used[idx[next_random]]) ++next_random;
            picked.push_back(idx[next_random]), used[idx[next_random]] = true;
          }
        }
        double b = 0;
        for (size_t i = 0; i < 64; ++i) {
          b = std::max(b, g[picked[i]]);
          if (i == 31) best32 += b / draws;
        }
        best64 += b / draws;
        double rb = 0;
        for (size_t i = 0; i < 64; ++i) {
          rb = std::max(rb, g[idx[i]]);
          if (i == 31) r32 += rb / draws;
        }
        r64 += rb / draws;
      }
      std::printf("replay diversity %zu %-30s %d random/batch: best@32 %.1f @64 %.1f   random @32 %.1f @64 %.1f\n", diversity, kind.name, n_rand,
                  best32, best64, r32, r64);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 128, seeds = 3;
  int min_train = TunerOptions().min_train_samples;
  double timeout = 10;
  int build_jobs = default_build_jobs();
  std::string filter, dataset_dir;
  int samples = 200;
  bool transfer = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_tuner: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--trials") trials = std::atoi(next());
    else if (a == "--seeds") seeds = std::atoi(next());
    else if (a == "--filter") filter = next();
    else if (a == "--timeout") timeout = std::atof(next());
    else if (a == "--min-train") min_train = std::atoi(next());
    else if (a == "--dataset") dataset_dir = next();
    else if (a == "--samples") samples = std::atoi(next());
    else if (a == "--no-transfer") transfer = false;
    else if (a == "--build-jobs") build_jobs = std::atoi(next());
    else {
      std::fprintf(stderr, "usage: bench_tuner [--trials N] [--seeds S] [--filter SUB[,SUB...]] [--timeout SEC] [--min-train M] [--no-transfer] [--build-jobs J] | --dataset DIR [--samples N]\n");
      return 2;
    }
  }
  if (trials < 64 || seeds < 1 || build_jobs < 1) {
    std::fprintf(stderr, "bench_tuner: --trials must be >= 64 (the summary reads 64), --seeds and --build-jobs >= 1\n");
    return 2;
  }
  std::vector<Bench> benches = {
      {"sgemm_512", sgemm(512)},
      {"sgemm_1024", sgemm(1024)},
      {"resnet18_conv_64x56", conv3x3(64, 56, 1, 1)},
      {"resnet18_conv_128x28", conv3x3(128, 28, 1, 1)},
      {"resnet18_conv_256x14", conv3x3(256, 14, 1, 1)},
      {"mobilenet_v2_dw_144x56", conv3x3(144, 56, 1, 144)},
      // The same three resnet18 layers as `kiln compile` builds them by default: Winograd.
      {"resnet18_winograd_64x56", conv3x3(64, 56, 1, 1), true, false},
      {"resnet18_winograd_128x28", conv3x3(128, 28, 1, 1), true, false},
      {"resnet18_winograd_256x14", conv3x3(256, 14, 1, 1), true, false},
  };
  auto tasks_of = [](const Bench& b) {
    CompileOptions copts;
    copts.winograd = b.winograd;
    return extract_tasks(b.module, copts);
  };
  if (!dataset_dir.empty()) {
    for (const Bench& b : benches) {
      if (!selected(b.name, filter)) continue;
      std::printf("%s\n", b.name.c_str());
      int rc = dataset(tasks_of(b)[0].task, dataset_dir, samples, timeout, build_jobs);
      if (rc) return rc;
    }
    return 0;
  }
  const size_t marks[] = {32, 64, static_cast<size_t>(trials)};
  std::printf("guided: XGBoost-ranked explorer, %s; random: random search\n",
              transfer ? "one cost model per seed and template carried from task to task (as kiln tune does)" : "a fresh cost model per task (--no-transfer)");
  std::printf("%-24s %8s %-7s %9s %9s %9s  (mean best GFLOPS over %d seeds)\n", "task", "space", "search", "@32", "@64",
              ("@" + std::to_string(trials)).c_str(), seeds);
  // Guided search carries one cost model per seed and template from task to task, as `kiln tune`
  // does (transfer: a task's first batch is ranked by what the earlier tasks of its template
  // measured: SGEMM 512 for 1024, the first convs for the later ones); random search has nothing
  // to carry. --no-transfer gives each guided run a fresh model.
  std::vector<std::map<std::string, CostModel>> carried(static_cast<size_t>(seeds));
  double log_ratio_sum = 0, log_ratio_searched = 0, log_ratio_other = 0;
  int tasks_done = 0, tasks_searched = 0, tasks_other = 0;
  for (const Bench& b : benches) {
    if (!selected(b.name, filter)) continue;
    std::vector<GraphTask> tasks = tasks_of(b);
    if (tasks.size() != 1) {
      std::fprintf(stderr, "bench_tuner: %s gave %zu tasks, expected 1\n", b.name.c_str(), tasks.size());
      return 1;
    }
    const Task& task = tasks[0].task;
    const uint64_t space = task.space().size();
    // The default config once, for scale: what compile() builds without a tuning log.
    TunerOptions d;
    d.trials = 1;
    d.timeout_s = timeout;
    d.build_jobs = build_jobs;
    d.measure_default_first = true;
    const double default_gflops = tune(task, d).default_gflops;
    double mean[2][3] = {};
    int errors[2] = {};
    // Seeds outer, methods inner and taking turns at going first: both searches see the same
    // drift of a shared machine's load, and neither always runs right after the other.
    for (int s = 0; s < seeds; ++s) {
      for (int turn = 0; turn < 2; ++turn) {
        const int guided = (s + turn) % 2 == 0 ? 1 : 0;
        TunerOptions o;
        o.trials = trials;
        o.seed = static_cast<uint64_t>(s) + 1;
        o.timeout_s = timeout;
        o.build_jobs = build_jobs;
        // Random search: the same explorer, with a model that never gets enough samples to train
        // and no neighbourhood share (not even around the template's default before the start).
        o.min_train_samples = guided ? min_train : std::numeric_limits<int>::max();
        if (!guided) o.explorer.local_share = 0;
        TuneResult r = guided && transfer ? tune(task, o, &carried[static_cast<size_t>(s)][workload_template(task.workload_key)]) : tune(task, o);
        errors[guided] += r.errors;
        for (int m = 0; m < 3; ++m) mean[guided][m] += at(r.best_gflops_curve, marks[m]) / seeds;
      }
    }
    for (int guided = 1; guided >= 0; --guided) {
      std::printf("%-24s %8llu %-7s %9.2f %9.2f %9.2f  (%d errors)%s\n", b.name.c_str(),
                  static_cast<unsigned long long>(space), guided ? "guided" : "random", mean[guided][0], mean[guided][1],
                  mean[guided][2], errors[guided], space <= 64 ? "  space <= 64: exhaustive at 64" : "");
    }
    std::fflush(stdout);
    const double ratio = mean[0][1] > 0 ? mean[1][1] / mean[0][1] : 1.0;
    std::printf("%-24s guided/random at 64: %.3f   default config %.2f GFLOPS   [%s]\n", b.name.c_str(), ratio,
                default_gflops, task.workload_key.c_str());
    if (!b.target_set) {
      log_ratio_other += std::log(ratio);
      ++tasks_other;
      continue;
    }
    log_ratio_sum += std::log(ratio);
    ++tasks_done;
    if (space > 64) {
      log_ratio_searched += std::log(ratio);
      ++tasks_searched;
    }
  }
  if (tasks_done + tasks_other == 0) {
    std::fprintf(stderr, "bench_tuner: no task matches '%s'\n", filter.c_str());
    return 1;
  }
  if (tasks_other > 0)
    std::printf("guided/random at 64 trials over the %d Winograd task(s) (not in the set below): %.3f\n", tasks_other,
                std::exp(log_ratio_other / tasks_other));
  if (tasks_done == 0) return 0;
  // Both searches measure every point of a space of <= 64 configs by trial 64, so the ratio of
  // such tasks shows only the measurement noise: the searched tasks are the ones that count.
  if (tasks_searched > 0)
    std::printf("guided/random at 64 trials over the %d task(s) with more than 64 configs: %.3f\n", tasks_searched,
                std::exp(log_ratio_searched / tasks_searched));
  std::printf("guided/random best GFLOPS at 64 trials: %.3f\n", std::exp(log_ratio_sum / tasks_done));
  return 0;
}
