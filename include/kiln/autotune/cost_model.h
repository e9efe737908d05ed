// The learned cost model: gradient-boosted trees (XGBoost, through its C API) that rank
// candidate programs by their feature vectors (features.h). It is trained on measured
// throughputs with a ranking objective, grouped by task, so it learns which candidate of a task
// is faster rather than absolute speeds, which differ between tasks by orders of magnitude.
//
// Transfer: a model trained on other tasks' measurements ranks a new task's candidates as is,
// and warm_start() makes it the base that later training continues from (more trees fitted to
// the new task's measurements on top of the old ones).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::autotune {

struct CostModelOptions {
  std::string objective = "rank:pairwise";
  int rounds = 80;             // boosting rounds per train() call
  int max_depth = 6;
  double eta = 0.2;            // learning rate
  double min_child_weight = 1;
  double subsample = 1.0;
  // One thread makes training bit-reproducible for a seed and does not compete with
  // measurements for the cores.
  int nthread = 1;
  uint64_t seed = 0;
};

class CostModel {
 public:
  explicit CostModel(CostModelOptions options = {});
  ~CostModel();
  CostModel(CostModel&&) noexcept;
  CostModel& operator=(CostModel&&) noexcept;
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  // Adds measured samples of one group (one task): feature vectors and throughputs, higher
  // is better (GFLOPS or 1/seconds; 0 for a failed candidate). Labels are normalized per group
  // by its best throughput. All vectors must have the same length.
  void add(const std::string& group, const std::vector<std::vector<float>>& features,
           const std::vector<double>& throughput);
  size_t num_samples() const;
  // Drops the samples (the trained model stays).
  void clear_samples();

  // Fits the model to every sample added so far: from scratch, or continuing from the
  // warm-start base. Throws kiln::Error when there are no samples.
  void train();
  bool trained() const;
  // Trees in the current model (base rounds included).
  int boosted_rounds() const;
  size_t num_features() const;

  // Scores, higher is predicted faster; only their order means something. Requires trained().
  std::vector<float> predict(const std::vector<std::vector<float>>& features) const;

  // The model as JSON in a file; load() replaces the current model (samples are kept).
  void save(const std::string& path) const;
  void load(const std::string& path);
  // Makes the current model (e.g. just loaded) the base that train() continues from.
  void warm_start();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Rank correlations of two score lists (ties get their mean rank / are skipped), in [-1, 1];
// used to judge the model and exposed for the benchmarks.
double spearman_correlation(const std::vector<double>& a, const std::vector<double>& b);
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace kiln::autotune
