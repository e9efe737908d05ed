// Config space operations for search: sampling, mutation, enumeration, crossover, conversions.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "kiln/autotune/space_ops.h"
#include "kiln/support/error.h"

using namespace kiln::autotune;

namespace {

// split "tile" of 16 into 2: [1,16] [2,8] [4,4] [8,2] [16,1]; "vec" in {1,2,4,8}; "fixed" = {3}.
ConfigSpace small_space() {
  ConfigSpace space;
  Config rec(&space);
  rec.define_split("tile", 16, 2, {4, 4});
  rec.define_knob("vec", {1, 2, 4, 8}, 4);
  rec.define_knob("fixed", {3}, 3);
  return space;
}

}  // namespace

TEST_CASE("space ops: sampling is uniform and seeded", "[autotune][space]") {
  ConfigSpace space = small_space();
  REQUIRE(space.size() == 20);
  std::mt19937_64 r1(42), r2(42), r3(43);
  std::vector<Point> a, b, c;
  for (int i = 0; i < 50; ++i) {
    a.push_back(sample_point(space, r1));
    b.push_back(sample_point(space, r2));
    c.push_back(sample_point(space, r3));
  }
  CHECK(a == b);
  CHECK(a != c);

  std::mt19937_64 rng(7);
  std::map<size_t, int> tile_counts;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    Point p = sample_point(space, rng);
    REQUIRE(p.size() == 3);
    CHECK(p[2] == 0);
    ++tile_counts[p[0]];
  }
  REQUIRE(tile_counts.size() == 5);
  // Each of 5 candidates: expected 4000, binomial sd about 57; 6 sd of slack.
  for (auto [idx, count] : tile_counts) CHECK(std::abs(count - n / 5) < 350);

  for (int i = 0; i < 1000; ++i) {
    double u = uniform_real(rng);
    CHECK(u >= 0.0);
    CHECK(u < 1.0);
    CHECK(uniform_index(rng, 3) < 3);
  }
}

TEST_CASE("space ops: mutation changes one knob, to a neighbour when asked", "[autotune][space]") {
  ConfigSpace space = small_space();
  std::mt19937_64 rng(1);
  const Point start = {2, 1, 0};  // tile [4,4], vec 2
  std::set<size_t> tile_neighbours, vec_neighbours;
  for (int i = 0; i < 400; ++i) {
    Point m = mutate_point(space, start, rng, /*p_neighbour=*/1.0);
    REQUIRE(point_distance(start, m) == 1);
    CHECK(m[2] == 0);  // a one-candidate knob never moves
    if (m[0] != start[0]) tile_neighbours.insert(m[0]);
    if (m[1] != start[1]) vec_neighbours.insert(m[1]);
  }
  // [4,4]'s nearest factorizations move one factor 2: [2,8] and [8,2]. vec steps to 1 or 4.
  CHECK(tile_neighbours == std::set<size_t>{1, 3});
  CHECK(vec_neighbours == std::set<size_t>{0, 2});

  std::set<size_t> any_tile;
  for (int i = 0; i < 400; ++i) {
    Point m = mutate_point(space, start, rng, /*p_neighbour=*/0.0);
    REQUIRE(point_distance(start, m) == 1);
    if (m[0] != start[0]) any_tile.insert(m[0]);
  }
  CHECK(any_tile == std::set<size_t>{0, 1, 3, 4});

  // Edge of a choice knob: only one neighbour.
  for (int i = 0; i < 50; ++i) {
    Point m = mutate_point(space, {2, 3, 0}, rng, 1.0);
    if (m[1] != 3) CHECK(m[1] == 2);
  }
  // Nothing to mutate in a space of one point.
  ConfigSpace one;
  Config(&one).define_knob("only", {5}, 5);
  CHECK(mutate_point(one, {0}, rng) == Point{0});
  CHECK_THROWS_AS(mutate_point(space, {5, 0, 0}, rng), kiln::Error);
}

TEST_CASE("space ops: enumeration, indexing and crossover", "[autotune][space]") {
  ConfigSpace space = small_space();
  std::vector<Point> all = enumerate_space(space);
  REQUIRE(all.size() == 20);
  CHECK(std::set<Point>(all.begin(), all.end()).size() == 20);
  for (uint64_t i = 0; i < all.size(); ++i) CHECK(space.encode(all[i]) == i);
  CHECK_THROWS_AS(enumerate_space(space, 19), kiln::Error);

  std::mt19937_64 rng(3);
  const Point a = {0, 0, 0}, b = {4, 3, 0};
  bool mixed = false;
  for (int i = 0; i < 50; ++i) {
    Point c = crossover(space, a, b, rng);
    CHECK((c[0] == a[0] || c[0] == b[0]));
    CHECK((c[1] == a[1] || c[1] == b[1]));
    mixed |= (c[0] == a[0]) != (c[1] == a[1]);  // one knob from each parent
  }
  CHECK(mixed);
}

TEST_CASE("space ops: points, choices and configs convert both ways", "[autotune][space]") {
  ConfigSpace space = small_space();
  const Point p = {1, 3, 0};
  auto choices = point_to_choices(space, p);
  CHECK(choices == std::map<std::string, size_t>{{"tile", 1}, {"vec", 3}, {"fixed", 0}});
  CHECK(choices_to_point(space, choices) == p);
  CHECK(choices_to_point(space, {{"vec", 0}}) == Point{2, 0, 0});  // tile takes its default [4,4]
  CHECK(point_str(space, p) == "tile=[2,8] vec=8 fixed=3");

  Config cfg = point_to_config(space, p);
  CHECK(cfg.define_split("tile", 16, 2, {4, 4}) == std::vector<int64_t>{2, 8});
  CHECK(cfg.define_knob("vec", {1, 2, 4, 8}, 4) == 8);

  try {
    choices_to_point(space, {{"tyle", 0}});
    FAIL("expected an error");
  } catch (const kiln::Error& e) {
    CHECK(std::string(e.what()).find("'tyle'") != std::string::npos);
  }
  CHECK_THROWS_AS(choices_to_point(space, {{"vec", 4}}), kiln::Error);
  CHECK_THROWS_AS(point_to_config(space, {0, 0}), kiln::Error);
}
