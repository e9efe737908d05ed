// Schedule knobs: one template run records its space; an index round-trips to the same choices.
#include <catch2/catch.hpp>

#include <set>

#include "kiln/schedule/config.h"
#include "kiln/support/error.h"

using namespace kiln::schedule;
using Catch::Matchers::Contains;

namespace {
// A toy template: two knobs, answers printed.
std::string toy_template(Config& cfg) {
  auto t = cfg.define_split("tile", 12, 2, {3, 4});
  int64_t u = cfg.define_knob("unroll", {0, 1}, 1);
  return std::to_string(t[0]) + "x" + std::to_string(t[1]) + " u" + std::to_string(u);
}
}  // namespace

TEST_CASE("factorizations enumerate ordered splits", "[config]") {
  CHECK(factorizations(12, 2).size() == 6);  // 1x12 2x6 3x4 4x3 6x2 12x1
  CHECK(factorizations(8, 3).size() == 10);
  CHECK(factorizations(12, 2, 4) == std::vector<std::vector<int64_t>>{{3, 4}, {4, 3}, {6, 2}, {12, 1}});
  for (auto& f : factorizations(24, 3)) CHECK(f[0] * f[1] * f[2] == 24);
}

TEST_CASE("a template records its space and builds its default", "[config]") {
  ConfigSpace space;
  Config rec(&space);
  CHECK(toy_template(rec) == "3x4 u1");
  REQUIRE(space.knobs().size() == 2);
  CHECK(space.size() == 12);
  CHECK(rec.str() == "tile=[3,4] unroll=1");
}

TEST_CASE("config indices round-trip through the space", "[config]") {
  ConfigSpace space;
  Config rec(&space);
  toy_template(rec);
  std::set<std::string> seen;
  for (uint64_t i = 0; i < space.size(); ++i) {
    CHECK(space.encode(space.decode(i)) == i);
    Config c = Config::from_index(space, i);
    seen.insert(toy_template(c));
  }
  CHECK(seen.size() == space.size());  // every index is a distinct schedule
  REQUIRE_THROWS_WITH(space.decode(12), Contains("outside the space of 12"));
  Config bad = Config::with_choices({{"unroll", 7}});
  REQUIRE_THROWS_WITH(toy_template(bad), Contains("knob 'unroll' has 2 candidates"));
}
