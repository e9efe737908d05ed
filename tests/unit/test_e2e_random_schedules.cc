// Random legal schedule sequences applied to matmul and conv2d, compiled to machine code: the
// numbers never change. Each seed draws a sequence of primitives (split, reorder, fuse,
// vectorize, unroll, parallel, cache_write + compute_at, and for conv2d where the padding is
// computed); a draw the schedule rejects as illegal is skipped and counted, and most draws must
// apply. Tolerance rtol/atol 1e-5 against the plain-loop reference.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <random>

#include "kiln/support/error.h"
#include "test_te_fixtures.h"
#include "test_e2e_util.h"

using namespace kiln;

namespace {

const auto f32 = ir::DataType::f32();

// Seeds per test: the default keeps the suite quick; KILN_RANDOM_SCHEDULE_SEEDS=N soaks longer.
uint32_t seeds(uint32_t fallback) {
  const char* env = std::getenv("KILN_RANDOM_SCHEDULE_SEEDS");
  return env ? static_cast<uint32_t>(std::atoi(env)) : fallback;
}

struct Drawer {
  std::mt19937 rng;
  int applied = 0, rejected = 0;
  std::string log;

  explicit Drawer(uint32_t seed) : rng(seed) {}
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }

  // Tries one primitive; kiln::Error means the draw was illegal for this stage.
  void attempt(const std::string& what, const std::function<void()>& f) {
    try {
      f();
      ++applied;
      log += what + "; ";
    } catch (const Error&) {
      ++rejected;
    }
  }

  static int64_t extent(const ir::IterVar& iv) { return ir::as_const_int(iv->dom.extent).value_or(1); }

  // One random loop transformation of stage `st`.
  void step(schedule::Stage st) {
    const auto& leaves = st.leaf_axes();
    ir::IterVar iv = leaves[pick(static_cast<int>(leaves.size()))];
    switch (pick(6)) {
      case 0: {
        int64_t f = 1 + pick(static_cast<int>(extent(iv)) + 3);
        attempt("split " + iv->var.name() + " by " + std::to_string(f), [&] { st.split(iv, f); });
        break;
      }
      case 1: {
        std::vector<ir::IterVar> order = leaves;
        std::shuffle(order.begin(), order.end(), rng);
        attempt("reorder", [&] { st.reorder(order); });
        break;
      }
      case 2: {
        if (leaves.size() < 2) break;
        size_t p = pick(static_cast<int>(leaves.size()) - 1);
        attempt("fuse " + leaves[p]->var.name(), [&] { st.fuse(leaves[p], leaves[p + 1]); });
        break;
      }
      case 3: attempt("vectorize " + leaves.back()->var.name(), [&] { st.vectorize(leaves.back()); }); break;
      case 4:
        if (extent(iv) <= 16) attempt("unroll " + iv->var.name(), [&] { st.unroll(iv); });
        break;
      case 5: attempt("parallel " + leaves.front()->var.name(), [&] { st.parallel(leaves.front()); }); break;
    }
  }
};

}  // namespace

TEST_CASE("random schedules of matmul never change the numbers", "[e2e][random]") {
  const int m = 19, n = 24, k = 13;
  auto av = ref::random_floats(m * k, 31), bv = ref::random_floats(k * n, 32);
  auto want = ref::matmul(av, bv, m, n, k);
  int applied = 0, rejected = 0;
  for (uint32_t seed = 1; seed <= seeds(24); ++seed) {
    Drawer d(seed);
    auto a = te::placeholder({m, k}, f32, "A"), b = te::placeholder({k, n}, f32, "B");
    auto c = test_ops::matmul(a, b, "C");
    auto s = schedule::create({c});
    schedule::Stage local;
    if (d.pick(2)) {
      local = s[s.cache_write(c, "local")];
      d.log += "cache_write; ";
    }
    for (int i = 0, steps = 2 + d.pick(5); i < steps; ++i) d.step(s[c]);
    if (local.defined()) {
      auto leaves = s[c].leaf_axes();
      auto at = leaves[d.pick(static_cast<int>(leaves.size()))];
      d.attempt("compute_at " + at->var.name(), [&] { local.compute_at(s[c], at); });
      for (int i = 0, steps = d.pick(4); i < steps; ++i) d.step(local);
    }
    INFO("seed " << seed << ": " << d.log);
    CHECK(e2e::close(e2e::run_f32(s, {a, b, c}, {av, bv}), want));
    applied += d.applied;
    rejected += d.rejected;
  }
  INFO("applied " << applied << ", rejected " << rejected);
  CHECK(applied > 3 * rejected);  // the draws exercise real schedules, not mostly rejections
}

TEST_CASE("random schedules of conv2d never change the numbers", "[e2e][random]") {
  ref::Conv2dShape sh{1, 3, 10, 9, 5, 3, 3, 1, 1, 1, 1};
  auto xv = ref::random_floats(3 * 10 * 9, 33), wv = ref::random_floats(5 * 3 * 9, 34);
  auto want = ref::conv2d_nchw(xv, wv, sh);
  int applied = 0, rejected = 0;
  for (uint32_t seed = 1; seed <= seeds(16); ++seed) {
    Drawer d(seed + 100);
    auto x = te::placeholder({1, 3, 10, 9}, f32, "x");
    auto w = te::placeholder({5, 3, 3, 3}, f32, "w");
    test_ops::Conv2dAttrs attrs;
    attrs.pad = {1, 1, 1, 1};
    auto y = test_ops::conv2d_nchw(x, w, attrs);
    auto s = schedule::create({y});
    for (int i = 0, steps = 2 + d.pick(5); i < steps; ++i) d.step(s[y]);
    auto pad = s[y.op().input_tensors()[0]];
    switch (d.pick(3)) {
      case 0: d.attempt("inline pad", [&] { pad.compute_inline(); }); break;
      case 1: {
        auto leaves = s[y].leaf_axes();
        auto at = leaves[d.pick(static_cast<int>(leaves.size()))];
        d.attempt("pad at " + at->var.name(), [&] { pad.compute_at(s[y], at); });
        break;
      }
      default: break;  // computed at the root
    }
    INFO("seed " << seed << ": " << d.log);
    CHECK(e2e::close(e2e::run_f32(s, {x, w, y}, {xv, wv}), want));
    applied += d.applied;
    rejected += d.rejected;
  }
  INFO("applied " << applied << ", rejected " << rejected);
  CHECK(applied > 3 * rejected);
}
