// The XGBoost cost model on synthetic problems whose true throughput is a known function of the
// features: ranking quality on held-out samples, save/load, transfer to another task.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <random>

#include <unistd.h>

#include "kiln/autotune/cost_model.h"
#include "kiln/support/error.h"

using namespace kiln::autotune;

namespace {

constexpr int kDims = 8;

// True throughput: nonlinear in 4 features, 4 features are noise. `scale` is the task's peak.
double truth(const std::vector<float>& x, double scale) {
  return scale * (1.0 + 2.0 * x[0] + 1.5 * x[1] * x[2] + std::sin(3.0 * x[3]) - x[0] * x[3]);
}

struct Samples {
  std::vector<std::vector<float>> x;
  std::vector<double> y;
};

// lo/hi per feature lets another "task" cover a different part of the feature space.
Samples make_samples(int n, uint32_t seed, double scale, float lo = 0.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Samples s;
  for (int i = 0; i < n; ++i) {
    std::vector<float> row(kDims);
    for (float& v : row) v = u(rng);
    s.y.push_back(truth(row, scale));
    s.x.push_back(std::move(row));
  }
  return s;
}

std::vector<double> as_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

std::string temp_path(const char* name) { return std::string("/tmp/kiln_test_") + name + "_" + std::to_string(::getpid()); }

}  // namespace

TEST_CASE("rank correlations on known lists", "[autotune][cost_model]") {
  CHECK(spearman_correlation({1, 2, 3, 4}, {10, 20, 30, 40}) == Approx(1.0));
  CHECK(spearman_correlation({1, 2, 3, 4}, {4, 3, 2, 1}) == Approx(-1.0));
  CHECK(kendall_tau({1, 2, 3, 4}, {4, 3, 2, 1}) == Approx(-1.0));
  // One swapped pair of six: tau = (5 - 1) / 6.
  CHECK(kendall_tau({1, 2, 3, 4}, {1, 3, 2, 4}) == Approx(4.0 / 6.0));
  CHECK(spearman_correlation({1, 2, 3, 4}, {1, 3, 2, 4}) == Approx(0.8));
  CHECK_THROWS_AS(spearman_correlation({1}, {1}), kiln::Error);
}

TEST_CASE("cost model: ranks held-out samples of a known function", "[autotune][cost_model]") {
  Samples train = make_samples(200, 1, 10.0);
  Samples test = make_samples(100, 2, 10.0);
  CostModel model;
  CHECK_FALSE(model.trained());
  CHECK_THROWS_AS(model.predict(test.x), kiln::Error);
  CHECK_THROWS_AS(model.train(), kiln::Error);
  model.add("task_a", train.x, train.y);
  CHECK(model.num_samples() == 200);
  model.train();
  REQUIRE(model.trained());
  CHECK(model.boosted_rounds() == CostModelOptions{}.rounds);
  std::vector<double> pred = as_double(model.predict(test.x));
  double rho = spearman_correlation(pred, test.y), tau = kendall_tau(pred, test.y);
  INFO("spearman " << rho << " kendall " << tau);
  CHECK(rho > 0.8);
  CHECK(tau > 0.6);

  // Training is reproducible: same samples, same options, same predictions.
  CostModel again;
  again.add("task_a", train.x, train.y);
  again.train();
  CHECK(again.predict(test.x) == model.predict(test.x));

  // Bad inputs name what is wrong.
  CHECK_THROWS_AS(model.predict({std::vector<float>(3, 0.f)}), kiln::Error);
  CHECK_THROWS_AS(model.add("task_a", {std::vector<float>(kDims, 0.f)}, {}), kiln::Error);
  std::vector<float> inf_row(kDims, 0.f);
  inf_row[2] = -INFINITY;
  CHECK_THROWS_WITH(model.add("task_a", {inf_row}, {1.0}), Catch::Contains("feature 2 is -inf"));
}

TEST_CASE("cost model: retraining as measurements arrive improves the ranking", "[autotune][cost_model]") {
  Samples all = make_samples(200, 3, 5.0);
  Samples test = make_samples(100, 4, 5.0);
  CostModel model;
  model.add("t", {all.x.begin(), all.x.begin() + 16}, {all.y.begin(), all.y.begin() + 16});
  model.train();
  double early = spearman_correlation(as_double(model.predict(test.x)), test.y);
  model.add("t", {all.x.begin() + 16, all.x.end()}, {all.y.begin() + 16, all.y.end()});
  model.train();
  double late = spearman_correlation(as_double(model.predict(test.x)), test.y);
  INFO("16 samples: " << early << ", 200 samples: " << late);
  CHECK(late > 0.8);
  CHECK(late > early);
}

TEST_CASE("cost model: save/load gives identical predictions", "[autotune][cost_model]") {
  Samples train = make_samples(120, 5, 1.0);
  Samples test = make_samples(50, 6, 1.0);
  CostModel model;
  model.add("t", train.x, train.y);
  model.train();
  const std::string path = temp_path("model.json");
  model.save(path);
  CostModel loaded;
  loaded.load(path);
  CHECK(loaded.trained());
  CHECK(loaded.num_features() == kDims);
  CHECK(loaded.boosted_rounds() == model.boosted_rounds());
  CHECK(loaded.predict(test.x) == model.predict(test.x));
  std::remove(path.c_str());

  CostModel empty;
  CHECK_THROWS_AS(empty.save(path), kiln::Error);
  CHECK_THROWS_AS(empty.load("/nonexistent/model.json"), kiln::Error);
  const std::string junk = temp_path("junk.json");
  std::FILE* f = std::fopen(junk.c_str(), "w");
  std::fputs("{\"not\": \"a model\"}", f);
  std::fclose(f);
  CHECK_THROWS_AS(empty.load(junk), kiln::Error);
  std::remove(junk.c_str());
}

TEST_CASE("cost model: transfer to another task, and warm start from it", "[autotune][cost_model]") {
  // Task A and task B share how features map to speed but not their peak (x100) nor their
  // feature ranges; per-group normalization and ranking make A's model useful for B.
  Samples a = make_samples(200, 7, 1.0);
  Samples b_test = make_samples(100, 8, 100.0, 0.1f, 0.9f);
  CostModel model_a;
  model_a.add("task_a", a.x, a.y);
  model_a.train();
  double transfer = spearman_correlation(as_double(model_a.predict(b_test.x)), b_test.y);
  INFO("A's model ranking B: " << transfer);
  CHECK(transfer > 0.75);

  const std::string path = temp_path("base.json");
  model_a.save(path);
  CostModel model_b;
  model_b.load(path);
  model_b.warm_start();
  Samples b_few = make_samples(24, 9, 100.0, 0.1f, 0.9f);
  model_b.add("task_b", b_few.x, b_few.y);
  model_b.train();
  CHECK(model_b.boosted_rounds() == 2 * CostModelOptions{}.rounds);  // continued from A's trees
  double warm = spearman_correlation(as_double(model_b.predict(b_test.x)), b_test.y);
  // From scratch on B's 24 samples alone, for comparison.
  CostModel cold;
  cold.add("task_b", b_few.x, b_few.y);
  cold.train();
  double scratch = spearman_correlation(as_double(cold.predict(b_test.x)), b_test.y);
  INFO("warm-started on 24 B samples: " << warm << ", from scratch: " << scratch);
  CHECK(warm > 0.75);
  CHECK(warm > scratch);
  std::remove(path.c_str());
}
