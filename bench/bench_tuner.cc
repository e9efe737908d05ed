// Cost-model-guided search against random search, on real kernels, at equal trial budgets.
//
//   bench_tuner [--trials N] [--seeds S] [--filter SUBSTRING] [--timeout SEC] [--min-train M]
//
// Tasks: SGEMM 512 and 1024 (nn.matmul of two inputs), three resnet18 3x3 convolutions (64ch at
// 56x56, 128ch at 28x28, 256ch at 14x14, batch 1, NCHW, constant weights prepacked as in a
// model) and mobilenet_v2's depthwise 3x3 over 144 channels at 56x56. Each is a single-op relay
// module put through extract_tasks, exactly the task path of `kiln tune`. For every task and
// seed, one run of N trials (default 128) with the explorer guided by the XGBoost model (trained
// from M measurements on, default the tuner's) and one
// with random search (the same tuner with the model never trained), no log, seeds outer and the
// two searches taking turns at going first (so that load drift hits both alike); best-so-far GFLOPS
// is read at 32, 64 and N trials of each run. Prints a table of means over seeds and closes with
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

#include "kiln/autotune/graph_tasks.h"
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

struct Bench {
  std::string name;
  relay::Module module;
};

double at(const std::vector<double>& curve, size_t trials) {
  if (curve.empty()) return 0;
  return curve[std::min(trials, curve.size()) - 1];  // an exhausted space keeps its best
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 128, seeds = 3;
  int min_train = TunerOptions().min_train_samples;
  double timeout = 10;
  std::string filter;
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
    else {
      std::fprintf(stderr, "usage: bench_tuner [--trials N] [--seeds S] [--filter SUBSTRING] [--timeout SEC] [--min-train M]\n");
      return 2;
    }
  }
  if (trials < 64 || seeds < 1) {
    std::fprintf(stderr, "bench_tuner: --trials must be >= 64 (the summary reads 64) and --seeds >= 1\n");
    return 2;
  }
  std::vector<Bench> benches = {
      {"sgemm_512", sgemm(512)},
      {"sgemm_1024", sgemm(1024)},
      {"resnet18_conv_64x56", conv3x3(64, 56, 1, 1)},
      {"resnet18_conv_128x28", conv3x3(128, 28, 1, 1)},
      {"resnet18_conv_256x14", conv3x3(256, 14, 1, 1)},
      {"mobilenet_v2_dw_144x56", conv3x3(144, 56, 1, 144)},
  };
  const size_t marks[] = {32, 64, static_cast<size_t>(trials)};
  std::printf("%-24s %8s %-7s %9s %9s %9s  (mean best GFLOPS over %d seeds)\n", "task", "space", "search", "@32", "@64",
              ("@" + std::to_string(trials)).c_str(), seeds);
  double log_ratio_sum = 0, log_ratio_searched = 0;
  int tasks_done = 0, tasks_searched = 0;
  for (const Bench& b : benches) {
    if (!filter.empty() && b.name.find(filter) == std::string::npos) continue;
    std::vector<GraphTask> tasks = extract_tasks(b.module);
    if (tasks.size() != 1) {
      std::fprintf(stderr, "bench_tuner: %s gave %zu tasks, expected 1\n", b.name.c_str(), tasks.size());
      return 1;
    }
    const Task& task = tasks[0].task;
    const uint64_t space = task.space().size();
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
        // Random search: the same explorer, with a model that never gets enough samples to train.
        o.min_train_samples = guided ? min_train : std::numeric_limits<int>::max();
        TuneResult r = tune(task, o);
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
    std::printf("%-24s guided/random at 64: %.3f   [%s]\n", b.name.c_str(), ratio, task.workload_key.c_str());
    log_ratio_sum += std::log(ratio);
    ++tasks_done;
    if (space > 64) {
      log_ratio_searched += std::log(ratio);
      ++tasks_searched;
    }
  }
  if (tasks_done == 0) {
    std::fprintf(stderr, "bench_tuner: no task matches '%s'\n", filter.c_str());
    return 1;
  }
  // Both searches measure every point of a space of <= 64 configs by trial 64, so the ratio of
  // such tasks shows only the measurement noise: the searched tasks are the ones that count.
  if (tasks_searched > 0)
    std::printf("guided/random at 64 trials over the %d task(s) with more than 64 configs: %.3f\n", tasks_searched,
                std::exp(log_ratio_searched / tasks_searched));
  std::printf("guided/random best GFLOPS at 64 trials: %.3f\n", std::exp(log_ratio_sum / tasks_done));
  return 0;
}
