// XGBoost-backed cost model (see cost_model.h). XGBoost is private to this file: the public
// header does not include its C API, and only the compiler library links it.
#include "kiln/autotune/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "kiln/support/error.h"

namespace kiln::autotune {
namespace {

void xgb_check(int rc, const char* what) {
  KILN_USER_CHECK(rc == 0) << "xgboost " << what << " failed: " << XGBGetLastError();
}

// Owns a DMatrix handle for one scope.
struct DMatrix {
  DMatrixHandle h = nullptr;
  DMatrix(const std::vector<float>& data, size_t rows, size_t cols) {
    xgb_check(XGDMatrixCreateFromMat(data.data(), rows, cols, std::numeric_limits<float>::quiet_NaN(), &h),
              "creating a DMatrix");
  }
  ~DMatrix() {
    if (h) XGDMatrixFree(h);
  }
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
};

constexpr const char* kFeatureAttr = "kiln_num_features";

}  // namespace

struct CostModel::Impl {
  struct Group {
    std::string name;
    std::vector<std::vector<float>> rows;
    std::vector<double> throughput;
  };
  CostModelOptions options;
  std::vector<Group> groups;
  size_t num_features = 0;
  BoosterHandle booster = nullptr;
  std::string base;  // the warm-start model (JSON) that train() continues from
  int base_rounds = 0;

  ~Impl() {
    if (booster) XGBoosterFree(booster);
  }

  void set_params(BoosterHandle h) const {
    auto set = [&](const char* k, const std::string& v) { xgb_check(XGBoosterSetParam(h, k, v.c_str()), "setting a parameter"); };
    set("verbosity", "0");
    set("objective", options.objective);
    set("tree_method", "hist");
    set("max_depth", std::to_string(options.max_depth));
    set("eta", std::to_string(options.eta));
    set("min_child_weight", std::to_string(options.min_child_weight));
    set("subsample", std::to_string(options.subsample));
    set("nthread", std::to_string(options.nthread));
    set("seed", std::to_string(options.seed));
  }

  void replace(BoosterHandle h) {
    if (booster) XGBoosterFree(booster);
    booster = h;
  }

  std::string serialize() const {
    KILN_USER_CHECK(booster) << "the cost model has not been trained or loaded";
    xgb_check(XGBoosterSetAttr(booster, kFeatureAttr, std::to_string(num_features).c_str()), "setting an attribute");
    bst_ulong len = 0;
    const char* data = nullptr;
    xgb_check(XGBoosterSaveModelToBuffer(booster, "{\"format\": \"json\"}", &len, &data), "saving the model");
    return std::string(data, len);
  }

  void deserialize(const std::string& bytes, const std::string& origin) {
    BoosterHandle h = nullptr;
    xgb_check(XGBoosterCreate(nullptr, 0, &h), "creating a booster");
    if (XGBoosterLoadModelFromBuffer(h, bytes.data(), bytes.size()) != 0) {
      std::string why = XGBGetLastError();
      XGBoosterFree(h);
      KILN_THROW() << "cannot load the cost model from " << origin << ": " << why;
    }
    int ok = 0;
    const char* attr = nullptr;
    xgb_check(XGBoosterGetAttr(h, kFeatureAttr, &attr, &ok), "reading an attribute");
    if (!ok) {
      XGBoosterFree(h);
      KILN_THROW() << origin << " is an XGBoost model but not a kiln cost model (no " << kFeatureAttr << ")";
    }
    num_features = std::stoul(attr);
    replace(h);
  }
};

CostModel::CostModel(CostModelOptions options) : impl_(std::make_unique<Impl>()) { impl_->options = std::move(options); }
CostModel::~CostModel() = default;
CostModel::CostModel(CostModel&&) noexcept = default;
CostModel& CostModel::operator=(CostModel&&) noexcept = default;

void CostModel::add(const std::string& group, const std::vector<std::vector<float>>& features,
                    const std::vector<double>& throughput) {
  KILN_USER_CHECK(features.size() == throughput.size())
      << "cost model samples of '" << group << "': " << features.size() << " feature vectors for "
      << throughput.size() << " throughputs";
  for (const auto& row : features) {
    if (impl_->num_features == 0) impl_->num_features = row.size();
    KILN_USER_CHECK(row.size() == impl_->num_features && !row.empty())
        << "cost model samples of '" << group << "': a feature vector of length " << row.size() << ", expected "
        << impl_->num_features;
    for (size_t i = 0; i < row.size(); ++i) {
      // XGBoost rejects infinities (NaN would silently mean "missing").
      KILN_USER_CHECK(std::isfinite(row[i])) << "cost model samples of '" << group << "': feature " << i << " is " << row[i];
    }
  }
  auto it = std::find_if(impl_->groups.begin(), impl_->groups.end(), [&](const Impl::Group& g) { return g.name == group; });
  if (it == impl_->groups.end()) {
    impl_->groups.push_back({group, {}, {}});
    it = impl_->groups.end() - 1;
  }
  it->rows.insert(it->rows.end(), features.begin(), features.end());
  it->throughput.insert(it->throughput.end(), throughput.begin(), throughput.end());
}

size_t CostModel::num_samples() const {
  size_t n = 0;
  for (const auto& g : impl_->groups) n += g.rows.size();
  return n;
}

void CostModel::clear_samples() { impl_->groups.clear(); }

void CostModel::train() {
  const size_t n = num_samples(), cols = impl_->num_features;
  KILN_USER_CHECK(n > 0) << "cannot train the cost model without samples";
  // Rows grouped by task, contiguous as XGBoost's group info requires; labels relative to the
  // group's best, so that every task spans [0, 1] whatever its absolute speed.
  std::vector<float> data, labels;
  std::vector<unsigned> group_sizes;
  data.reserve(n * cols);
  for (const auto& g : impl_->groups) {
    if (g.rows.empty()) continue;
    double best = 0;
    for (double t : g.throughput) if (std::isfinite(t)) best = std::max(best, t);
    for (size_t i = 0; i < g.rows.size(); ++i) {
      data.insert(data.end(), g.rows[i].begin(), g.rows[i].end());
      double t = g.throughput[i];
      labels.push_back(best > 0 && std::isfinite(t) && t > 0 ? static_cast<float>(t / best) : 0.0f);
    }
    group_sizes.push_back(static_cast<unsigned>(g.rows.size()));
  }
  DMatrix dtrain(data, n, cols);
  xgb_check(XGDMatrixSetFloatInfo(dtrain.h, "label", labels.data(), labels.size()), "setting labels");
  xgb_check(XGDMatrixSetUIntInfo(dtrain.h, "group", group_sizes.data(), group_sizes.size()), "setting groups");
  BoosterHandle h = nullptr;
  xgb_check(XGBoosterCreate(&dtrain.h, 1, &h), "creating a booster");
  try {
    if (!impl_->base.empty()) xgb_check(XGBoosterLoadModelFromBuffer(h, impl_->base.data(), impl_->base.size()), "loading the base model");
    impl_->set_params(h);
    for (int i = 0; i < impl_->options.rounds; ++i) {
      xgb_check(XGBoosterUpdateOneIter(h, impl_->base_rounds + i, dtrain.h), "training");
    }
  } catch (...) {
    XGBoosterFree(h);
    throw;
  }
  impl_->replace(h);
}

bool CostModel::trained() const { return impl_->booster != nullptr; }

int CostModel::boosted_rounds() const {
  if (!impl_->booster) return 0;
  int r = 0;
  xgb_check(XGBoosterBoostedRounds(impl_->booster, &r), "counting rounds");
  return r;
}

size_t CostModel::num_features() const { return impl_->num_features; }

std::vector<float> CostModel::predict(const std::vector<std::vector<float>>& features) const {
  KILN_USER_CHECK(impl_->booster) << "the cost model must be trained or loaded before it predicts";
  if (features.empty()) return {};
  std::vector<float> data;
  data.reserve(features.size() * impl_->num_features);
  for (const auto& row : features) {
    KILN_USER_CHECK(row.size() == impl_->num_features)
        << "cost model input has " << row.size() << " features; the model was trained on " << impl_->num_features;
    data.insert(data.end(), row.begin(), row.end());
  }
  DMatrix d(data, features.size(), impl_->num_features);
  bst_ulong len = 0;
  const float* out = nullptr;
  xgb_check(XGBoosterPredict(impl_->booster, d.h, 0, 0, 0, &len, &out), "predicting");
  KILN_CHECK(len == features.size()) << "xgboost returned " << len << " predictions for " << features.size() << " rows";
  return std::vector<float>(out, out + len);
}

void CostModel::save(const std::string& path) const {
  std::string bytes = impl_->serialize();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  KILN_USER_CHECK(f) << "cannot write the cost model to '" << path << "'";
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  KILN_USER_CHECK(f.good()) << "writing the cost model to '" << path << "' failed";
}

void CostModel::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  KILN_USER_CHECK(f) << "cannot read the cost model '" << path << "'";
  std::ostringstream ss;
  ss << f.rdbuf();
  impl_->deserialize(ss.str(), "'" + path + "'");
}

void CostModel::warm_start() {
  impl_->base = impl_->serialize();
  impl_->base_rounds = boosted_rounds();
}

namespace {

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) r[order[k]] = (i + j) / 2.0;  // ties share their mean rank
    i = j + 1;
  }
  return r;
}

}  // namespace

double spearman_correlation(const std::vector<double>& a, const std::vector<double>& b) {
  KILN_USER_CHECK(a.size() == b.size() && a.size() >= 2) << "rank correlation needs two lists of equal length >= 2";
  std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += ra[i] / n, mb += rb[i] / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  KILN_USER_CHECK(a.size() == b.size() && a.size() >= 2) << "rank correlation needs two lists of equal length >= 2";
  // tau-b: concordant minus discordant pairs, normalized for ties in either list.
  double conc = 0, disc = 0, ties_a = 0, ties_b = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = i + 1; j < a.size(); ++j) {
      double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;
      if (da == 0) { ++ties_a; continue; }
      if (db == 0) { ++ties_b; continue; }
      (da > 0) == (db > 0) ? ++conc : ++disc;
    }
  }
  double denom = std::sqrt((conc + disc + ties_a) * (conc + disc + ties_b));
  return denom > 0 ? (conc - disc) / denom : 0.0;
}

}  // namespace kiln::autotune
