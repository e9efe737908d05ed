// image.resize (every nearest rounding, linear and cubic, each coordinate transform) against a
// literal transcription of the ONNX reference algorithm; cumsum, topk, scatter_elements and
// scatter_nd against plain loops. Tolerances: rtol 1e-5, atol 1e-5 (resize weights are
// computed in double, applied in float32); integer and index results exactly.
#include <catch2/catch.hpp>

#include "test_ops_b_ref2.h"
#include "test_ops_b_util.h"

using namespace kiln;
using opsb_test::check_op;
using opsb_test::random_tensor;
using relay::Attrs;
using relay::HostTensor;

namespace {
const auto f32 = relay::DataType::f32();

Attrs resize_attrs(const opsb_ref::ResizeSpec& s) {
  Attrs a;
  a.set_ints("sizes", s.sizes).set_floats("scales", s.scales).set_str("mode", s.mode);
  a.set_str("coordinate_transformation_mode", s.coord).set_str("nearest_mode", s.nearest);
  a.set_float("cubic_coeff_a", s.cubic_a).set_int("exclude_outside", s.exclude_outside);
  a.set_float("extrapolation_value", s.extrapolation).set_floats("roi", s.roi);
  return a;
}
}  // namespace

TEST_CASE("image.resize: nearest modes, linear and cubic under every coordinate transform", "[ops_b]") {
  HostTensor x = random_tensor(f32, {1, 2, 5, 6}, 1);
  const char* coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                          "half_pixel_symmetric"};
  // Upsampling by 2 x 1.5, downsampling by 0.6 x 0.5 (sizes from floor(in * scale)).
  std::vector<std::pair<std::vector<double>, relay::Shape>> geoms = {{{1, 1, 2.0, 1.5}, {1, 2, 10, 9}},
                                                                     {{1, 1, 0.6, 0.5}, {1, 2, 3, 3}}};
  int n = 0;
  for (const auto& [scales, sizes] : geoms) {
    for (const char* coord : coords) {
      for (const char* mode : {"nearest", "linear", "cubic"}) {
        std::vector<std::string> nearest = {"round_prefer_floor"};
        if (std::string(mode) == "nearest") nearest = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
        for (const std::string& nm : nearest) {
          opsb_ref::ResizeSpec s;
          s.sizes = sizes;
          s.scales = scales;
          s.mode = mode;
          s.coord = coord;
          s.nearest = nm;
          s.exclude_outside = std::string(mode) == "cubic" && n % 2 == 1;
          INFO(mode << " " << coord << " " << nm << " scales " << scales[2] << "x" << scales[3]);
          CHECK(check_op("image.resize", {x}, resize_attrs(s), {opsb_ref::resize(x, s)}, 1e-5, 1e-5) == "");
          ++n;
        }
      }
    }
  }
}

TEST_CASE("image.resize: tf_crop_and_resize extrapolates outside the roi", "[ops_b]") {
  HostTensor x = random_tensor(f32, {1, 1, 4, 4}, 2);
  opsb_ref::ResizeSpec s;
  s.sizes = {1, 1, 3, 3};
  s.scales = {1, 1, 0.75, 0.75};
  s.mode = "linear";
  s.coord = "tf_crop_and_resize";
  s.roi = {0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7};
  s.extrapolation = 10;
  CHECK(check_op("image.resize", {x}, resize_attrs(s), {opsb_ref::resize(x, s)}, 1e-5, 1e-5) == "");
}

TEST_CASE("cumsum forwards, backwards, exclusive, int64 too", "[ops_b]") {
  HostTensor x = random_tensor(f32, {3, 7}, 3);
  for (int excl = 0; excl < 2; ++excl) {
    for (int rev = 0; rev < 2; ++rev) {
      for (int64_t axis : {0, 1}) {
        Attrs a = Attrs().set_int("axis", axis).set_int("exclusive", excl).set_int("reverse", rev);
        INFO("axis " << axis << " exclusive " << excl << " reverse " << rev);
        CHECK(check_op("cumsum", {x}, a, {opsb_ref::cumsum(x, axis, excl, rev)}, 1e-5, 1e-6) == "");
      }
    }
  }
  HostTensor xi = random_tensor(relay::DataType::i64(), {10}, 4, -50, 50);
  Attrs a = Attrs().set_int("axis", 0).set_int("exclusive", 0).set_int("reverse", 0);
  CHECK(check_op("cumsum", {xi}, a, {opsb_ref::cumsum(xi, 0, false, false)}, 0, 0) == "");
}

TEST_CASE("topk: largest and smallest, ties resolved to the lower index", "[ops_b]") {
  // Values on a coarse grid, so ties happen.
  HostTensor x = random_tensor(relay::DataType::i32(), {3, 9}, 5, 0, 4);
  HostTensor xf = HostTensor::from_doubles(f32, x.shape(), x.to_doubles());
  for (int largest = 0; largest < 2; ++largest) {
    Attrs a = Attrs().set_int("k", 4).set_int("axis", 1).set_int("largest", largest).set_int("sorted", 1);
    INFO("largest " << largest);
    CHECK(check_op("topk", {xf}, a, opsb_ref::topk(xf, 4, 1, largest), 0, 0) == "");
  }
}

TEST_CASE("scatter_elements and scatter_nd with every reduction", "[ops_b]") {
  HostTensor data = random_tensor(f32, {4, 5}, 6);
  HostTensor idx = HostTensor::from_int64s(relay::DataType::i64(), {2, 3}, {1, -1, 0, 1, 3, 0});
  HostTensor upd = random_tensor(f32, {2, 3}, 7);
  for (const char* red : {"none", "add", "mul", "max", "min"}) {
    INFO(red);
    Attrs a = Attrs().set_int("axis", 0).set_str("reduction", red);
    CHECK(check_op("scatter_elements", {data, idx, upd}, a, {opsb_ref::scatter_elements(data, idx, upd, 0, red)}, 1e-5,
                   1e-6) == "");
  }
  HostTensor nd_idx = HostTensor::from_int64s(relay::DataType::i64(), {3, 1}, {2, 0, 2});
  HostTensor nd_upd = random_tensor(f32, {3, 5}, 8);
  for (const char* red : {"none", "add", "max"}) {
    INFO(red);
    CHECK(check_op("scatter_nd", {data, nd_idx, nd_upd}, Attrs().set_str("reduction", red),
                   {opsb_ref::scatter_nd(data, nd_idx, nd_upd, red)}, 1e-5, 1e-6) == "");
  }
  HostTensor pt_idx = HostTensor::from_int64s(relay::DataType::i64(), {2, 2}, {1, 4, -1, 0});
  HostTensor pt_upd = random_tensor(f32, {2}, 9);
  CHECK(check_op("scatter_nd", {data, pt_idx, pt_upd}, Attrs().set_str("reduction", "none"),
                 {opsb_ref::scatter_nd(data, pt_idx, pt_upd, "none")}, 1e-5, 1e-6) == "");
}
