// Rounding error of long reductions in the CPU conv and dense templates (default schedules),
// against a double-precision plain-loop reference (test_ops_b_ref.h).
//
// Inputs are positive activations in [0, 1) (as after a ReLU: the products' partial sums do not
// cancel) and weights in [-1, 1) / sqrt(K), so outputs are O(1) whatever K. A float32 sum of K
// such products in one running accumulator gathers error growing with K (measured at K = 4096:
// 38-42 ulps of the largest output for the conv, 23 for the dense); summed in chunks of k
// (Stage::partial_sums) it grows as k + K/k instead (measured: 4.5-6.1 ulps). The bound,
// 10 * 2^-24 * max|y|, is what a chunked float32 sum should meet at this K, with margin.
#include <catch2/catch.hpp>

#include <cmath>

#include "test_ops_b_ref.h"
#include "test_ops_b_util.h"

using namespace kiln;
using opsb_test::random_tensor;
using relay::HostTensor;

namespace {
const auto f32 = relay::DataType::f32();
constexpr double kUlps = 10.0;

HostTensor scaled_weights(const relay::Shape& s, int64_t k, uint32_t seed) {
  double r = 1.0 / std::sqrt(static_cast<double>(k));
  return random_tensor(f32, s, seed, -r, r);
}

// Max |got - want| in units of 2^-24 * max|want|.
double error_ulps(const HostTensor& got, const HostTensor& want) {
  std::vector<double> g = got.to_doubles(), w = want.to_doubles();
  REQUIRE(g.size() == w.size());
  double err = 0, scale = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    err = std::max(err, std::abs(g[i] - w[i]));
    scale = std::max(scale, std::abs(w[i]));
  }
  return err / (scale * std::ldexp(1.0, -24));
}

double conv_error(int64_t c, int64_t oc, int64_t hw) {
  relay::Shape xs = {1, c, hw, hw}, ws = {oc, c, 1, 1};
  auto l = opsb_test::lower_call("nn.conv2d", {relay::tensor_type(f32, xs), relay::tensor_type(f32, ws)},
                                 opsb_test::conv_attrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1));
  HostTensor x = random_tensor(f32, xs, 1, 0.0, 1.0), w = scaled_weights(ws, c, 2);
  schedule::Config cfg;
  schedule::Schedule s = l.template_schedule(cfg);
  return error_ulps(opsb_test::run(s, l, {x, w})[0], opsb_ref::conv(x, w, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1));
}
}  // namespace

TEST_CASE("conv template: a 4096-channel reduction stays within float32 rounding", "[precision]") {
  // 32 output channels: one running tile per task (the row-tile structure); 256: enough tasks
  // for the input-channel-chunk structure (tile_ic) on a 7x7 plane.
  for (int64_t oc : {32, 256}) {
    double ulps = conv_error(4096, oc, 7);
    INFO("oc " << oc << ": max error " << ulps << " ulps of max|y|");
    CHECK(ulps < kUlps);
  }
}

TEST_CASE("conv_nchwc template: a 4096-channel reduction stays within float32 rounding", "[precision]") {
  // The blocked conv alter_layout makes, on blocks of 16 in and out, 1x1 over a 7x7 plane.
  const int64_t c = 4096, oc = 32, hw = 7, b = 16;
  HostTensor x = random_tensor(f32, {1, c, hw, hw}, 1, 0.0, 1.0), w = scaled_weights({oc, c, 1, 1}, c, 2);
  opsb_ref::Dense xd(x), wd(w), wantd(opsb_ref::conv(x, w, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1));
  opsb_ref::Dense xb({1, c / b, hw, hw, b}), wb({oc / b, c / b, 1, 1, b, b}), wantb({1, oc / b, hw, hw, b});
  opsb_ref::for_each(xd.shape, [&](const opsb_ref::Index& i) { xb.at({i[0], i[1] / b, i[2], i[3], i[1] % b}) = xd.at(i); });
  opsb_ref::for_each(wd.shape, [&](const opsb_ref::Index& i) { wb.at({i[0] / b, i[1] / b, 0, 0, i[1] % b, i[0] % b}) = wd.at(i); });
  opsb_ref::for_each(wantd.shape, [&](const opsb_ref::Index& i) { wantb.at({i[0], i[1] / b, i[2], i[3], i[1] % b}) = wantd.at(i); });
  relay::Attrs a = opsb_test::conv_attrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
  a.set_str("data_layout", "NCHW16c").set_str("out_layout", "NCHW16c").set_str("kernel_layout", "OIHW16i16o");
  auto l = opsb_test::lower_call("nn.conv2d_NCHWc", {relay::tensor_type(f32, xb.shape), relay::tensor_type(f32, wb.shape)}, a);
  schedule::Config cfg;
  schedule::Schedule s = l.template_schedule(cfg);
  double ulps = error_ulps(opsb_test::run(s, l, {xb.to(f32), wb.to(f32)})[0], wantb.to(f32));
  INFO("max error " << ulps << " ulps of max|y|");
  CHECK(ulps < kUlps);
}

TEST_CASE("dense template: a 4096-long reduction stays within float32 rounding", "[precision]") {
  int64_t k = 4096;
  auto l = opsb_test::lower_call("nn.dense", {relay::tensor_type(f32, {4, k}), relay::tensor_type(f32, {64, k})}, {});
  HostTensor x = random_tensor(f32, {4, k}, 3, 0.0, 1.0), w = scaled_weights({64, k}, k, 4);
  schedule::Config cfg;
  schedule::Schedule s = l.template_schedule(cfg);
  double ulps = error_ulps(opsb_test::run(s, l, {x, w})[0], opsb_ref::dense(x, w));
  INFO("max error " << ulps << " ulps of max|y|");
  CHECK(ulps < kUlps);
}
