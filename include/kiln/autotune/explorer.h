// The explorer decides which configurations to measure next. Simulated annealing over the
// config space, scored by a scoring function (the cost model's prediction on the candidate's
// features), in several chains that persist between batches (or, for a small space, every
// point scored); the best-scored points never measured before make the batch, kept diverse (no
// near-duplicates). A share of each batch is the best-scored neighbours of the best point
// measured so far (local_share; without a model yet, of a given start point),
// and a fraction epsilon uniformly random unmeasured points, so that the model's blind spots are
// still visited. Deterministic for a seed and the same results.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "kiln/autotune/space_ops.h"

namespace kiln::autotune {

struct ExplorerOptions {
  uint64_t seed = 0;
  int num_chains = 8;         // annealing chains, scored together in one call per step
  int steps = 48;             // annealing steps per chain per batch
  double t_start = 1.0;       // temperature at the first and last step, in units of the spread
  double t_end = 0.02;        // of the chains' scores (so any score scale works)
  double p_neighbour = 0.5;   // mutation: a neighbouring candidate (else a random one)
  double epsilon = 0.1;       // fraction of each batch drawn at random among unmeasured points
  size_t diversity = 2;       // batch points differ in at least this many knobs when possible
  // Fraction of each guided batch taken from the best-measured point's neighbourhood (one knob
  // changed, else two), best-scored first: the model ranks the whole space with errors of tens
  // of percent, while a measured incumbent's neighbours are likely good (the landscapes of tile
  // sizes and orders are smooth). Random search (no score) ignores it.
  double local_share = 0.25;
  // Where the neighbourhood share is taken before there is a model (in random order) or,
  // with one, before any point is measured; empty: nowhere, batches without a model are random.
  // The tuner gives the template's default config, a hand-written choice usually near the good
  // region (resnet18's convs: the default 330-370 GFLOPS, random search's best of 64 trials
  // 305-340). Its neighbours, not the point itself, are proposed. Without a model the share
  // never follows measured results, so those batches depend on the seed alone. Random search
  // sets local_share 0.
  Point start;
  int early_stopping = 0;     // stop after this many trials without a better result (0: never)
  // Spaces of at most this many points are not annealed: every unmeasured point is scored in
  // one call and the best-scored ones make the batch. Short annealing visits a few hundred
  // points of a space of thousands and misses most of what the model ranks highest; scoring
  // them all costs one feature extraction per point (cached by the tuner, ~3 ms each for a
  // conv) and one prediction per batch. 0: always anneal.
  uint64_t exhaustive_limit = 8192;
};

class Explorer {
 public:
  // Scores points, higher = predicted faster; called with many points at once.
  using ScoreFn = std::function<std::vector<double>(const std::vector<Point>&)>;

  Explorer(ConfigSpace space, ExplorerOptions options = {});

  // Up to n distinct points never measured (fewer only when the space runs out). With no
  // score function (no model yet), all are random.
  std::vector<Point> next_batch(size_t n, const ScoreFn& score);

  // Results of measured points: throughput, higher is better; <= 0 or NaN for a failure. A
  // measured point is never proposed again, whatever its result.
  void update(const std::vector<Point>& points, const std::vector<double>& results);

  bool is_measured(const Point& p) const { return measured_.count(p) != 0; }
  size_t num_measured() const { return measured_.size(); }
  bool exhausted() const { return measured_.size() >= space_.size(); }
  // Early stopping: early_stopping trials in a row have not beaten the best result.
  bool should_stop() const;
  int trials_since_improvement() const { return since_best_; }
  double best_result() const { return best_; }
  const Point& best_point() const { return best_point_; }
  const ConfigSpace& space() const { return space_; }

 private:
  std::vector<Point> anneal(const ScoreFn& score);
  std::vector<Point> score_everything(const ScoreFn& score);
  // The unmeasured points exactly `radius` (1 or 2) knobs away from `from`, best-scored first
  // (in random order without a score).
  std::vector<Point> neighbours(const Point& from, const ScoreFn& score, size_t radius);
  // Points best score first; equal scores in an order drawn from the seed.
  std::vector<Point> best_first(std::map<Point, double> scored);
  // Scores `pts` in one call; best first (a non-finite score counts as the lowest).
  std::vector<Point> rank(const ScoreFn& score, std::vector<Point> pts);
  bool random_unmeasured(const std::set<Point>& taken, Point* out);

  ConfigSpace space_;
  ExplorerOptions opt_;
  std::mt19937_64 rng_;
  std::set<Point> measured_;
  std::vector<Point> chains_;
  std::vector<Point> all_;  // the whole space, enumerated once, when it is scored exhaustively
  double best_ = 0;
  Point best_point_;
  int since_best_ = 0;
};

}  // namespace kiln::autotune
