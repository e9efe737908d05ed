#include "kiln/autotune/explorer.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/support/error.h"

namespace kiln::autotune {

Explorer::Explorer(ConfigSpace space, ExplorerOptions options)
    : space_(std::move(space)), opt_(options), rng_(options.seed) {
  KILN_USER_CHECK(opt_.num_chains >= 1 && opt_.steps >= 1) << "explorer needs at least one chain and one step";
  KILN_USER_CHECK(opt_.epsilon >= 0 && opt_.epsilon <= 1) << "explorer epsilon must be in [0, 1], got " << opt_.epsilon;
  KILN_USER_CHECK(opt_.local_share >= 0 && opt_.local_share <= 1)
      << "explorer local_share must be in [0, 1], got " << opt_.local_share;
  for (const Knob& k : space_.knobs()) {
    KILN_USER_CHECK(!k.candidates.empty()) << "knob '" << k.name << "' has no candidates";
  }
  const auto& knobs = space_.knobs();
  bool start_ok = opt_.start.empty() || opt_.start.size() == knobs.size();
  for (size_t i = 0; start_ok && i < opt_.start.size(); ++i) start_ok = opt_.start[i] < knobs[i].candidates.size();
  KILN_USER_CHECK(start_ok) << "explorer start point is not a point of the space (" << knobs.size() << " knobs)";
}

bool Explorer::random_unmeasured(const std::set<Point>& taken, Point* out) {
  // Rejection sampling is fast while most of the space is unmeasured; near the end of a small
  // space, pick among what is left.
  for (int tries = 0; tries < 64; ++tries) {
    Point p = sample_point(space_, rng_);
    if (!measured_.count(p) && !taken.count(p)) {
      *out = std::move(p);
      return true;
    }
  }
  if (space_.size() > (uint64_t{1} << 20)) return false;
  std::vector<Point> left;
  for (uint64_t i = 0; i < space_.size(); ++i) {
    Point p = space_.decode(i);
    if (!measured_.count(p) && !taken.count(p)) left.push_back(std::move(p));
  }
  if (left.empty()) return false;
  *out = left[uniform_index(rng_, left.size())];
  return true;
}

// Runs the chains and returns every unmeasured point they visited, best score first.
std::vector<Point> Explorer::anneal(const ScoreFn& score) {
  while (chains_.size() < static_cast<size_t>(opt_.num_chains)) chains_.push_back(sample_point(space_, rng_));
  // One chain restarts from the best measured point: search around what is known to be good.
  if (!best_point_.empty()) chains_[0] = best_point_;
  std::map<Point, double> visited;
  auto score_all = [&](const std::vector<Point>& pts) {
    std::vector<double> s = score(pts);
    KILN_CHECK(s.size() == pts.size()) << "score function returned " << s.size() << " scores for " << pts.size() << " points";
    for (size_t i = 0; i < pts.size(); ++i) {
      if (!std::isfinite(s[i])) s[i] = -std::numeric_limits<double>::infinity();
      if (!measured_.count(pts[i])) visited[pts[i]] = s[i];
    }
    return s;
  };
  std::vector<double> cur = score_all(chains_);
  // Temperature in units of the score spread, so that the schedule fits any score scale.
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double s : cur) {
    if (std::isfinite(s)) lo = std::min(lo, s), hi = std::max(hi, s);
  }
  const double spread = hi > lo ? hi - lo : 1.0;
  for (int step = 0; step < opt_.steps; ++step) {
    const double frac = opt_.steps > 1 ? static_cast<double>(step) / (opt_.steps - 1) : 1.0;
    const double temp = spread * opt_.t_start * std::pow(opt_.t_end / opt_.t_start, frac);
    std::vector<Point> next;
    next.reserve(chains_.size());
    for (const Point& p : chains_) next.push_back(mutate_point(space_, p, rng_, opt_.p_neighbour));
    std::vector<double> s = score_all(next);
    for (size_t c = 0; c < chains_.size(); ++c) {
      const double delta = s[c] - cur[c];
      // Metropolis acceptance; the draw is taken for every chain to keep the stream fixed.
      const double u = uniform_real(rng_);
      if (delta >= 0 || (std::isfinite(delta) && temp > 0 && u < std::exp(delta / temp))) {
        chains_[c] = next[c];
        cur[c] = s[c];
      }
    }
  }
  return best_first(std::move(visited));
}

std::vector<Point> Explorer::score_everything(const ScoreFn& score) {
  if (all_.empty()) all_ = enumerate_space(space_);
  std::vector<Point> pts;
  pts.reserve(all_.size());
  for (const Point& p : all_) {
    if (!measured_.count(p)) pts.push_back(p);
  }
  return rank(score, std::move(pts));
}

std::vector<Point> Explorer::rank(const ScoreFn& score, std::vector<Point> pts) {
  std::vector<double> s = score(pts);
  KILN_CHECK(s.size() == pts.size()) << "score function returned " << s.size() << " scores for " << pts.size() << " points";
  std::map<Point, double> scored;
  for (size_t i = 0; i < pts.size(); ++i) scored.emplace(std::move(pts[i]), std::isfinite(s[i]) ? s[i] : -std::numeric_limits<double>::infinity());
  return best_first(std::move(scored));
}

std::vector<Point> Explorer::neighbours(const Point& from, const ScoreFn& score, size_t radius) {
  const std::vector<Knob>& knobs = space_.knobs();
  std::vector<Point> pts;
  auto add = [&](const Point& p) {
    if (!measured_.count(p)) pts.push_back(p);
  };
  for (size_t a = 0; a < knobs.size(); ++a) {
    for (size_t va = 0; va < knobs[a].candidates.size(); ++va) {
      if (va == from[a]) continue;
      Point p = from;
      p[a] = va;
      if (radius == 1) add(p);
      for (size_t b = a + 1; radius == 2 && b < knobs.size(); ++b) {
        for (size_t vb = 0; vb < knobs[b].candidates.size(); ++vb) {
          if (vb == from[b]) continue;
          Point q = p;
          q[b] = vb;
          add(q);
        }
      }
    }
  }
  if (pts.empty()) return pts;
  if (!score) {
    std::shuffle(pts.begin(), pts.end(), rng_);
    return pts;
  }
  return rank(score, std::move(pts));
}

std::vector<Point> Explorer::best_first(std::map<Point, double> scored) {
  std::vector<std::pair<double, Point>> order;
  order.reserve(scored.size());
  for (auto& [p, s] : scored) order.emplace_back(s, p);
  // Trees give many points the same score (a leaf each), often hundreds at the top. Breaking
  // those ties in point order would pick the lowest-indexed corner of the tie every batch;
  // a seeded shuffle before the stable sort picks among them at random, reproducibly.
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[uniform_index(rng_, i)]);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<Point> out;
  out.reserve(order.size());
  for (auto& [s, p] : order) out.push_back(std::move(p));
  return out;
}

std::vector<Point> Explorer::next_batch(size_t n, const ScoreFn& score) {
  std::vector<Point> batch;
  std::set<Point> taken;
  if (n == 0 || exhausted()) return batch;
  // The incumbent: with a model, the best measured point (else the start point); without one,
  // the start point (or none), so that what is proposed before the model depends on the seed
  // alone, never on measured times.
  const Point& incumbent = score && !best_point_.empty() ? best_point_ : opt_.start;
  const size_t n_local =
      incumbent.empty() ? 0 : std::min(n, static_cast<size_t>(std::floor(opt_.local_share * n + 0.5)));
  // Without a score only the incumbent's share is chosen; the rest is random.
  const size_t n_random = score ? static_cast<size_t>(std::floor(opt_.epsilon * n + 0.5)) : n - n_local;
  const size_t n_guided = n - std::min(n, n_random);
  // Takes points of `pts` in order until the batch holds `limit`: first only those at least
  // `diversity` knobs from every point already chosen, then any distinct one.
  auto take_diverse = [&](const std::vector<Point>& pts, size_t limit) {
    for (size_t min_dist : {opt_.diversity, size_t{1}}) {
      for (const Point& p : pts) {
        if (batch.size() >= limit) return;
        if (taken.count(p)) continue;
        if (!std::all_of(batch.begin(), batch.end(), [&](const Point& q) { return point_distance(p, q) >= min_dist; })) continue;
        batch.push_back(p);
        taken.insert(p);
      }
    }
  };
  // The incumbent's share first: its best-scored unmeasured neighbours; then the best-scored
  // points of the space.
  const size_t local_limit = std::min(n_guided, n_local);
  for (size_t radius = 1; radius <= 2 && batch.size() < local_limit; ++radius)
    take_diverse(neighbours(incumbent, score, radius), local_limit);
  if (score && n_guided > batch.size())
    take_diverse(space_.size() <= opt_.exhaustive_limit ? score_everything(score) : anneal(score), n_guided);
  // The random share, and whatever the guided part could not fill.
  Point p;
  while (batch.size() < n && random_unmeasured(taken, &p)) {
    taken.insert(p);
    batch.push_back(p);
  }
  return batch;
}

void Explorer::update(const std::vector<Point>& points, const std::vector<double>& results) {
  KILN_USER_CHECK(points.size() == results.size())
      << "explorer update: " << points.size() << " points but " << results.size() << " results";
  for (size_t i = 0; i < points.size(); ++i) {
    measured_.insert(points[i]);
    const double r = results[i];
    if (std::isfinite(r) && r > 0 && (best_point_.empty() || r > best_)) {
      best_ = r;
      best_point_ = points[i];
      since_best_ = 0;
    } else {
      ++since_best_;
    }
  }
}

bool Explorer::should_stop() const { return opt_.early_stopping > 0 && since_best_ >= opt_.early_stopping; }

}  // namespace kiln::autotune
