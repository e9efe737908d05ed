// image.grid_sample against a literal transcription of the ONNX reference
// (onnx/reference/ops/op_grid_sample.py): every mode, padding mode and align_corners, 4-d and
// 5-d, grids reaching past the borders; compiled under the naive schedule and the strategy's
// template. Tolerances: rtol 1e-5, atol 1e-5 (coordinates and weights in float64, applied in
// float32).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "test_ops_b_util.h"

using namespace kiln;
using opsb_test::check_op;
using opsb_test::random_tensor;
using relay::Attrs;
using relay::HostTensor;
using relay::Shape;

namespace {

const auto f32 = relay::DataType::f32();

struct Spec {
  std::string mode = "linear", padding = "zeros";
  bool align = false;
};

// A one-pixel axis with align_corners has no span to reflect in (the reference divides by 0):
// kiln, as PyTorch, reads its only pixel.
double reflect(double x, double lo, double hi) {
  double rng = hi - lo;
  if (rng <= 0) return lo;
  if (x < lo) {
    double dx = lo - x;
    int64_t n = static_cast<int64_t>(dx / rng);
    double r = dx - static_cast<double>(n) * rng;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    int64_t n = static_cast<int64_t>(dx / rng);
    double r = dx - static_cast<double>(n) * rng;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

std::vector<double> cubic_coeffs(double t) {
  const double A = -0.75;
  t = std::fabs(t);
  auto far = [A](double s) { return ((A * s - 5 * A) * s + 8 * A) * s - 4 * A; };
  auto near = [A](double s) { return ((A + 2) * s - (A + 3)) * s * s + 1; };
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

// The reference's GridSample of x [N, C, D1..Dk] by grid [N, O1..Ok, k].
HostTensor grid_sample_ref(const HostTensor& xt, const HostTensor& gt, const Spec& s) {
  Shape xs = xt.shape(), gs = gt.shape();
  size_t k = xs.size() - 2;
  std::vector<double> x = xt.to_doubles(), g = gt.to_doubles();
  Shape out = {xs[0], xs[1]};
  out.insert(out.end(), gs.begin() + 1, gs.end() - 1);
  int64_t points = 1, plane = 1;
  for (size_t i = 0; i < k; ++i) points *= gs[1 + i], plane *= xs[2 + i];
  std::vector<double> lo(k), hi(k), y;
  for (size_t i = 0; i < k; ++i) {
    lo[i] = s.align ? 0.0 : -0.5;
    hi[i] = s.align ? double(xs[2 + i] - 1) : double(xs[2 + i]) - 0.5;
  }
  // The pixel at integer index idx of the plane, or 0 outside (zeros), by the padding mode.
  auto pixel = [&](const double* p, const std::vector<int64_t>& idx) -> double {
    int64_t flat = 0;
    for (size_t i = 0; i < k; ++i) {
      int64_t d = xs[2 + i], v = idx[i];
      if (s.padding == "zeros") {
        if (v < 0 || v >= d) return 0.0;
      } else if (s.padding == "border") {
        v = std::min<int64_t>(std::max<int64_t>(v, 0), d - 1);
      } else {
        v = static_cast<int64_t>(reflect(double(v), lo[i], hi[i]));
      }
      flat = flat * d + v;
    }
    return p[flat];
  };
  for (int64_t n = 0; n < xs[0]; ++n) {
    for (int64_t c = 0; c < xs[1]; ++c) {
      const double* p = x.data() + (n * xs[1] + c) * plane;
      for (int64_t o = 0; o < points; ++o) {
        const double* gp = g.data() + (n * points + o) * int64_t(k);
        std::vector<double> xc(k);
        for (size_t i = 0; i < k; ++i) {
          double v = gp[k - 1 - i], d = double(xs[2 + i]);
          double u = s.align ? (v + 1) / 2.0 * (d - 1) : ((v + 1) * d - 1) / 2.0;
          if (s.mode == "nearest") u = std::nearbyint(u);
          if (u < lo[i] || u > hi[i]) {
            if (s.padding == "border") u = std::min(std::max(u, 0.0), d - 1);
            else if (s.padding == "reflection") u = reflect(u, lo[i], hi[i]);
          }
          xc[i] = u;
        }
        if (s.mode == "nearest") {
          std::vector<int64_t> idx(k);
          for (size_t i = 0; i < k; ++i) idx[i] = static_cast<int64_t>(xc[i]);
          y.push_back(pixel(p, idx));
          continue;
        }
        // Separable: sum over every combination of the taps of each axis.
        std::vector<std::vector<int64_t>> taps(k);
        std::vector<std::vector<double>> w(k);
        for (size_t i = 0; i < k; ++i) {
          int64_t x0 = static_cast<int64_t>(std::floor(xc[i]));
          double t = xc[i] - double(x0);
          if (s.mode == "linear") {
            taps[i] = {x0, x0 + 1};
            w[i] = {1 - t, t};
          } else {
            taps[i] = {x0 - 1, x0, x0 + 1, x0 + 2};
            w[i] = cubic_coeffs(t);
          }
        }
        double acc = 0;
        std::function<void(size_t, std::vector<int64_t>&, double)> sum = [&](size_t i, std::vector<int64_t>& idx,
                                                                           double wt) {
          if (i == k) {
            acc += wt * pixel(p, idx);
            return;
          }
          for (size_t j = 0; j < taps[i].size(); ++j) {
            idx[i] = taps[i][j];
            sum(i + 1, idx, wt * w[i][j]);
          }
        };
        std::vector<int64_t> idx(k);
        sum(0, idx, 1.0);
        y.push_back(acc);
      }
    }
  }
  return HostTensor::from_doubles(xt.dtype(), out, y);
}

Attrs attrs(const Spec& s) {
  return Attrs().set_str("mode", s.mode).set_str("padding_mode", s.padding).set_int("align_corners", s.align);
}

}  // namespace

TEST_CASE("image.grid_sample: every mode, padding and align_corners on 4-d and 5-d inputs", "[grid_sample]") {
  // Grid coordinates reach to +-1.6: past the borders, across more than one reflection.
  std::vector<std::pair<Shape, Shape>> geoms = {{{2, 3, 5, 4}, {2, 3, 6, 2}}, {{1, 2, 3, 4, 3}, {1, 2, 3, 2, 3}},
                                                {{1, 1, 1, 4}, {1, 2, 3, 2}}};
  uint32_t seed = 10;
  for (const auto& [xs, gs] : geoms) {
    HostTensor x = random_tensor(f32, xs, seed++);
    HostTensor g = random_tensor(f32, gs, seed++, -1.6, 1.6);
    for (const char* mode : {"nearest", "linear", "cubic"}) {
      for (const char* pad : {"zeros", "border", "reflection"}) {
        for (bool align : {false, true}) {
          Spec s{mode, pad, align};
          INFO(mode << " " << pad << " align_corners " << align << " x " << relay::shape_str(xs));
          CHECK(check_op("image.grid_sample", {x, g}, attrs(s), {grid_sample_ref(x, g, s)}, 1e-5, 1e-5) == "");
        }
      }
    }
  }
}

TEST_CASE("image.grid_sample: nearest rounds ties to even and samples integers", "[grid_sample]") {
  // x 1x1x1x8: coordinate ((g + 1) * 8 - 1) / 2 is k + 0.5 at g = (2k + 2) / 8 - 1.
  HostTensor x = HostTensor::from_doubles(relay::DataType::i32(), {1, 1, 1, 8}, {10, 11, 12, 13, 14, 15, 16, 17});
  std::vector<double> gv;
  for (int k = 0; k < 7; ++k) gv.insert(gv.end(), {(2.0 * k + 2) / 8 - 1, 0.0});
  HostTensor g = HostTensor::from_doubles(f32, {1, 1, 7, 2}, gv);
  Spec s{"nearest", "zeros", false};
  HostTensor want = grid_sample_ref(x, g, s);
  CHECK(want.to_doubles() == std::vector<double>{10, 12, 12, 14, 14, 16, 16});
  CHECK(check_op("image.grid_sample", {x, g}, attrs(s), {want}, 0, 0) == "");
}

TEST_CASE("image.grid_sample: the type relation names bad grids, modes and dtypes", "[grid_sample]") {
  using Catch::Matchers::Contains;
  auto call = [](const Shape& xs, const Shape& gs, const Spec& s, relay::DataType xt = f32) {
    std::vector<relay::Expr> vars = {relay::make_var("x", relay::tensor_type(xt, xs)),
                                     relay::make_var("g", relay::tensor_type(f32, gs))};
    return relay::make_call("image.grid_sample", vars, attrs(s), "gs");
  };
  REQUIRE_THROWS_WITH(call({1, 1, 4, 4}, {1, 3, 3, 3}, Spec{}), Contains("grid [1,3,3,3] must be [N, O1..O2, 2]"));
  REQUIRE_THROWS_WITH(call({1, 1, 4, 4}, {2, 3, 3, 2}, Spec{}), Contains("must be [N, O1..O2, 2]"));
  REQUIRE_THROWS_WITH(call({1, 1, 4, 4}, {1, 3, 3, 2}, Spec{"area", "zeros", false}),
                      Contains("unknown grid_sample mode 'area'"));
  REQUIRE_THROWS_WITH(call({1, 1, 4, 4}, {1, 3, 3, 2}, Spec{"linear", "wrap", false}),
                      Contains("unknown grid_sample padding_mode 'wrap'"));
  REQUIRE_THROWS(call({1, 1, 4, 4}, {1, 3, 3, 2}, Spec{"linear", "zeros", false}, relay::DataType::i32()));
  CHECK(call({1, 1, 4, 4}, {1, 3, 5, 2}, Spec{"nearest", "zeros", false}, relay::DataType::i32())->type.str() ==
        "int32[1,1,3,5]");
}

TEST_CASE("image.grid_sample: coordinates far outside read zeros, the edge or a reflection", "[grid_sample]") {
  HostTensor x = random_tensor(f32, {1, 2, 3, 4}, 30);
  HostTensor g = HostTensor::from_doubles(f32, {1, 2, 3, 2}, {1e9, 0.2, -1e9, -0.4, 0.1, 3e8, 0.5, -7e8, 1e9, 1e9, -4.5, 2.25});
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    for (const char* pad : {"zeros", "border", "reflection"}) {
      Spec s{mode, pad, false};
      INFO(mode << " " << pad);
      CHECK(check_op("image.grid_sample", {x, g}, attrs(s), {grid_sample_ref(x, g, s)}, 1e-5, 1e-5) == "");
    }
  }
}
