// The explorer on a synthetic space with a known optimum: guided search reaches it in far fewer
// trials than random search; seeded runs repeat exactly; batches are new, distinct and diverse;
// early stopping.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "kiln/autotune/cost_model.h"
#include "kiln/autotune/explorer.h"

using namespace kiln::autotune;

namespace {

// 7 * 7 * 9 * 5 * 5 = 11025 points; without the "vec" knob 2205.
ConfigSpace synthetic_space(bool with_vec = true) {
  ConfigSpace space;
  Config rec(&space);
  rec.define_split("tile_x", 64, 2);
  rec.define_split("tile_y", 64, 2);
  rec.define_split("tile_k", 256, 2);
  rec.define_knob("unroll", {0, 1, 2, 4, 8}, 0);
  if (with_vec) rec.define_knob("vec", {1, 2, 4, 8, 16}, 1);
  return space;
}

double log2_inner(const ConfigSpace& s, const Point& p, size_t knob) {
  return std::log2(static_cast<double>(s.knobs()[knob].candidates[p[knob]].back()));
}

// The "measured" throughput: a smooth peak at inner tiles 8, 4, 16, unroll index 2, vec index 4,
// with an interaction (wide vectors want the x tile at least as wide). Only the optimum itself is
// within 5% of the best.
double true_throughput(const ConfigSpace& s, const Point& p) {
  const double dx = log2_inner(s, p, 0) - 3, dy = log2_inner(s, p, 1) - 2, dk = log2_inner(s, p, 2) - 4;
  const double du = double(p[3]) - 2, dv = double(p[4]) - 4;
  double f = 100.0 * std::exp(-0.3 * (dx * dx + dy * dy + dk * dk + du * du + dv * dv));
  if (double(p[4]) > log2_inner(s, p, 0) + 1) f *= 0.5;
  return f;
}

// A fixed scorer: the truth distorted by a deterministic factor in [0.5, 1.5) per point, like a
// cost model that is right about the trend and wrong about details.
double noisy_score(const ConfigSpace& s, const Point& p) {
  uint64_t h = s.encode(p) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  double noise = static_cast<double>(h % 1000) / 1000.0;  // [0, 1)
  return true_throughput(s, p) * (0.5 + noise);
}

// What a learned scorer sees of a point: knob values as numbers (the tuner uses IR features).
std::vector<float> knob_features(const ConfigSpace& s, const Point& p) {
  std::vector<float> f;
  for (size_t k = 0; k < p.size(); ++k) {
    for (int64_t v : s.knobs()[k].candidates[p[k]]) f.push_back(static_cast<float>(std::log2(1.0 + double(v))));
  }
  return f;
}

enum class Mode { Random, Noisy, Model };

// Trials until a point within 5% of the optimum is measured (cap if never).
int trials_to_optimum(uint64_t seed, Mode mode, int cap) {
  ExplorerOptions o;
  o.seed = seed;
  if (mode == Mode::Random) o.local_share = 0;  // uniform random points, as bench_tuner's random search
  Explorer ex(synthetic_space(), o);
  const ConfigSpace& s = ex.space();
  double best = 0;
  for (const Point& p : enumerate_space(s)) best = std::max(best, true_throughput(s, p));
  CostModel model;
  Explorer::ScoreFn score;
  if (mode == Mode::Noisy) {
    score = [&](const std::vector<Point>& pts) {
      std::vector<double> out;
      for (const Point& p : pts) out.push_back(noisy_score(s, p));
      return out;
    };
  }
  int trials = 0;
  while (trials < cap) {
    std::vector<Point> batch = ex.next_batch(8, score);
    std::vector<double> results;
    std::vector<std::vector<float>> feats;
    for (const Point& p : batch) {
      results.push_back(true_throughput(s, p));
      feats.push_back(knob_features(s, p));
      ++trials;
      if (results.back() >= 0.95 * best) return trials;
    }
    ex.update(batch, results);
    if (mode == Mode::Model) {
      // The tuner's loop in small: retrain on every measurement, score by prediction.
      model.add("synthetic", feats, results);
      model.train();
      score = [&](const std::vector<Point>& pts) {
        std::vector<std::vector<float>> x;
        for (const Point& p : pts) x.push_back(knob_features(s, p));
        std::vector<float> pred = model.predict(x);
        return std::vector<double>(pred.begin(), pred.end());
      };
    }
  }
  return cap;
}

}  // namespace

TEST_CASE("explorer: guided search finds the optimum far sooner than random search", "[autotune][explorer]") {
  // Only the optimum is within 5%: random search needs about half the 11025 points on average.
  double noisy = 0, learned = 0, random = 0;
  const int seeds = 5;
  for (int seed = 1; seed <= seeds; ++seed) {
    noisy += trials_to_optimum(seed, Mode::Noisy, 3000) / double(seeds);
    learned += trials_to_optimum(seed, Mode::Model, 400) / double(seeds);
    random += trials_to_optimum(seed, Mode::Random, 3000) / double(seeds);
  }
  INFO("mean trials to within 5% of the optimum: noisy scorer " << noisy << ", cost model retrained per batch "
       << learned << ", random " << random);
  CHECK(random > 1000);
  CHECK(noisy * 10 < random);
  CHECK(learned * 10 < random);
}

TEST_CASE("explorer: seeded runs are reproducible, batches are new, distinct and diverse", "[autotune][explorer]") {
  auto run = [](uint64_t seed) {
    ExplorerOptions o;
    o.seed = seed;
    o.epsilon = 0.25;
    Explorer ex(synthetic_space(), o);
    const ConfigSpace& s = ex.space();
    Explorer::ScoreFn score = [&](const std::vector<Point>& pts) {
      std::vector<double> out;
      for (const Point& p : pts) out.push_back(noisy_score(s, p));
      return out;
    };
    std::vector<Point> all;
    for (int b = 0; b < 6; ++b) {
      std::vector<Point> batch = ex.next_batch(8, b == 0 ? Explorer::ScoreFn() : score);
      REQUIRE(batch.size() == 8);
      for (const Point& p : batch) CHECK_FALSE(ex.is_measured(p));
      if (b > 0) {
        // The guided 6 of 8 keep 2 knobs apart from each other.
        for (size_t i = 0; i < 6; ++i)
          for (size_t j = i + 1; j < 6; ++j) CHECK(point_distance(batch[i], batch[j]) >= 2);
      }
      std::vector<double> r;
      for (const Point& p : batch) r.push_back(true_throughput(s, p));
      ex.update(batch, r);
      all.insert(all.end(), batch.begin(), batch.end());
    }
    CHECK(std::set<Point>(all.begin(), all.end()).size() == all.size());
    CHECK(ex.num_measured() == 48);
    return all;
  };
  std::vector<Point> a = run(11), b = run(11), c = run(12);
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE("explorer: epsilon share of random points", "[autotune][explorer]") {
  // A scorer that only likes the neighbourhood of one point: guided picks stay within 2 knobs
  // of it, random picks almost never are (a random point matches 3 of 5 knobs with p < 2%).
  const Point target = {1, 2, 3, 1, 2};
  auto far_count = [&](double epsilon) {
    ExplorerOptions o;
    o.seed = 5;
    o.epsilon = epsilon;
    o.steps = 150;
    Explorer ex(synthetic_space(), o);
    auto batch = ex.next_batch(8, [&](const std::vector<Point>& pts) {
      std::vector<double> out;
      for (const Point& p : pts) out.push_back(-double(point_distance(p, target)));
      return out;
    });
    int far = 0;
    for (const Point& p : batch) far += point_distance(p, target) >= 3;
    return far;
  };
  CHECK(far_count(0.0) == 0);
  CHECK(far_count(0.5) >= 2);
  CHECK(far_count(1.0) >= 6);
}

TEST_CASE("explorer: a share of each guided batch comes from the best measured point's neighbourhood", "[autotune][explorer]") {
  // The scorer likes one corner; the best measurement so far is at the opposite one. The local
  // share (2 of 8) are unmeasured neighbours of the incumbent, the rest follow the scorer.
  const Point liked = {0, 0, 0, 0, 0}, incumbent = {6, 6, 8, 4, 4};
  auto near_incumbent = [&](double share) {
    ExplorerOptions o;
    o.seed = 3;
    o.epsilon = 0;
    o.local_share = share;
    Explorer ex(synthetic_space(), o);
    ex.update({incumbent, liked}, {10.0, 1.0});
    auto batch = ex.next_batch(8, [&](const std::vector<Point>& pts) {
      std::vector<double> out;
      for (const Point& p : pts) out.push_back(-double(point_distance(p, liked)));
      return out;
    });
    REQUIRE(batch.size() == 8);
    int near = 0;
    for (const Point& p : batch) {
      CHECK(p != incumbent);
      near += point_distance(p, incumbent) <= 1;
    }
    return near;
  };
  CHECK(near_incumbent(0.0) == 0);
  CHECK(near_incumbent(0.25) == 2);
  CHECK(near_incumbent(1.0) == 8);
  ExplorerOptions bad;
  bad.local_share = 1.5;
  CHECK_THROWS_WITH(Explorer(synthetic_space(), bad), Catch::Contains("local_share must be in [0, 1]"));
}

TEST_CASE("explorer: without a model the neighbourhood share is around the start point, with one the best measured",
          "[autotune][explorer]") {
  const Point start = {3, 3, 3, 2, 2};
  ExplorerOptions o;
  o.seed = 5;
  o.start = start;
  Explorer ex(synthetic_space(), o);
  std::vector<Point> first = ex.next_batch(8, nullptr);  // no model yet
  REQUIRE(first.size() == 8);
  CHECK(point_distance(first[0], start) == 1);  // 2 of 8 (local_share 0.25), first
  CHECK(point_distance(first[1], start) == 1);
  CHECK(std::find(first.begin(), first.end(), start) == first.end());  // neighbours, not the start itself
  // Measured results do not move it while there is no model (proposals depend on the seed only);
  // with a model, the share follows the best measured point.
  const Point best = {6, 6, 8, 4, 4};
  ex.update({best}, {5.0});
  std::vector<Point> still = ex.next_batch(8, nullptr);
  CHECK(point_distance(still[0], start) == 1);
  CHECK(point_distance(still[1], start) == 1);
  std::vector<Point> next = ex.next_batch(8, [](const std::vector<Point>& pts) { return std::vector<double>(pts.size(), 0.0); });
  CHECK(point_distance(next[0], best) == 1);
  CHECK(point_distance(next[1], best) == 1);
  // local_share 0 (random search): no neighbourhood at all, the batch is the seed's random draw.
  ExplorerOptions none = o;
  none.local_share = 0;
  ExplorerOptions no_start = none;
  no_start.start.clear();
  CHECK(Explorer(synthetic_space(), none).next_batch(8, nullptr) == Explorer(synthetic_space(), no_start).next_batch(8, nullptr));
  ExplorerOptions wrong = o;
  wrong.start = {1, 2};
  CHECK_THROWS_WITH(Explorer(synthetic_space(), wrong), Catch::Contains("start point is not a point of the space"));
}

TEST_CASE("explorer: small spaces run out cleanly, and early stopping", "[autotune][explorer]") {
  ConfigSpace tiny;
  Config rec(&tiny);
  rec.define_knob("a", {1, 2, 3}, 1);
  rec.define_knob("b", {1, 2}, 1);
  Explorer ex(tiny, {});
  auto flat = [](const std::vector<Point>& pts) { return std::vector<double>(pts.size(), 1.0); };
  std::set<Point> seen;
  for (int i = 0; i < 4 && !ex.exhausted(); ++i) {
    auto batch = ex.next_batch(4, flat);
    for (const Point& p : batch) CHECK(seen.insert(p).second);
    ex.update(batch, std::vector<double>(batch.size(), 1.0));
  }
  CHECK(seen.size() == 6);
  CHECK(ex.exhausted());
  CHECK(ex.next_batch(4, flat).empty());

  ExplorerOptions o;
  o.early_stopping = 10;
  Explorer es(synthetic_space(), o);
  std::vector<Point> batch = es.next_batch(8, {});
  es.update(batch, {5, 1, 1, 1, 1, 1, 1, 1});  // best 5 at the first trial
  CHECK(es.trials_since_improvement() == 7);
  CHECK_FALSE(es.should_stop());
  batch = es.next_batch(8, {});
  es.update(batch, {1, 1, 0, std::nan(""), 6, 1, 1, 1});  // improves at trial 5 of this batch
  CHECK(es.best_result() == 6);
  CHECK(es.best_point() == batch[4]);
  CHECK(es.trials_since_improvement() == 3);
  batch = es.next_batch(8, {});
  es.update(batch, std::vector<double>(8, 1.0));
  CHECK(es.trials_since_improvement() == 11);
  CHECK(es.should_stop());
}

TEST_CASE("explorer: a small space is scored exhaustively, ties broken by the seed", "[autotune][explorer]") {
  // 2205 points, under the exhaustive limit.
  ConfigSpace space = synthetic_space(/*with_vec=*/false);
  REQUIRE(space.size() <= ExplorerOptions().exhaustive_limit);
  // A scorer whose top 8 are far apart from each other and from anything a random start would
  // reach in a few annealing steps: points with every knob at its last candidate but one.
  std::set<Point> top;
  for (size_t k = 0; k < 4; ++k) {
    Point p;
    for (const Knob& kn : space.knobs()) p.push_back(kn.candidates.size() - 1);
    p[k] = 0;
    top.insert(p);
    p[k] = 1;
    top.insert(p);
  }
  REQUIRE(top.size() == 8);
  size_t calls = 0, largest = 0;
  Explorer::ScoreFn score = [&](const std::vector<Point>& pts) {
    ++calls;
    largest = std::max(largest, pts.size());
    std::vector<double> out;
    for (const Point& p : pts) out.push_back(top.count(p) ? 1.0 : 0.0);
    return out;
  };
  ExplorerOptions o;
  o.seed = 3;
  o.epsilon = 0;
  o.diversity = 1;
  Explorer ex(space, o);
  std::vector<Point> batch = ex.next_batch(8, score);
  CHECK(calls == 1);                   // one call ...
  CHECK(largest == space.size());      // ... with every (unmeasured) point
  CHECK(std::set<Point>(batch.begin(), batch.end()) == top);
  ex.update(batch, std::vector<double>(8, 1.0));
  // Now all but the measured score 0: a tie over the whole rest, broken at random (not the
  // lowest-indexed points), the same way for the same seed.
  auto tie_batch = [&](uint64_t seed) {
    ExplorerOptions t = o;
    t.seed = seed;
    Explorer e(space, t);
    e.update(batch, std::vector<double>(8, 1.0));
    return e.next_batch(8, score);
  };
  std::vector<Point> a = tie_batch(5), b = tie_batch(5), c = tie_batch(6);
  CHECK(a == b);
  CHECK(a != c);
  size_t low = 0;
  for (const Point& p : a) low += space.encode(p) < 64;
  CHECK(low < 8);
  for (const Point& p : a) CHECK_FALSE(top.count(p));
  // With the limit at 0 the same space is annealed: many calls, none with the whole space.
  calls = largest = 0;
  ExplorerOptions sa = o;
  sa.exhaustive_limit = 0;
  Explorer ex_sa(space, sa);
  ex_sa.next_batch(8, score);
  CHECK(calls > 1);
  CHECK(largest < space.size());
}
