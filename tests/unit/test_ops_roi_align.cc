// image.roi_align against a literal transcription of the ONNX reference
// (onnx/reference/ops/op_roi_align.py): avg and max, half_pixel or not, rois reaching past the
// image and smaller than a pixel, several batches; naive schedule and the strategy's template.
// Tolerances: rtol 1e-5, atol 1e-5.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "test_ops_b_util.h"

using namespace kiln;
using opsb_test::check_op;
using opsb_test::random_tensor;
using relay::Attrs;
using relay::HostTensor;

namespace {

struct Spec {
  std::string mode = "avg";
  int64_t oh = 3, ow = 2, ratio = 2;
  double scale = 0.5;
  bool half_pixel = true;
};

HostTensor roi_align_ref(const HostTensor& xt, const HostTensor& rt, const HostTensor& bt, const Spec& s) {
  relay::Shape xs = xt.shape();
  int64_t C = xs[1], H = xs[2], W = xs[3], R = rt.shape()[0];
  std::vector<double> x = xt.to_doubles(), r = rt.to_doubles(), b = bt.to_doubles(), y;
  for (int64_t n = 0; n < R; ++n) {
    double off = s.half_pixel ? 0.5 : 0.0;
    double sw = r[n * 4 + 0] * s.scale - off, sh = r[n * 4 + 1] * s.scale - off;
    double rw = r[n * 4 + 2] * s.scale - off - sw, rh = r[n * 4 + 3] * s.scale - off - sh;
    if (!s.half_pixel) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
    double bh = rh / double(s.oh), bw = rw / double(s.ow);
    int64_t batch = static_cast<int64_t>(b[n]);
    for (int64_t c = 0; c < C; ++c) {
      const double* p = x.data() + (batch * C + c) * H * W;
      for (int64_t ph = 0; ph < s.oh; ++ph) {
        for (int64_t pw = 0; pw < s.ow; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < s.ratio; ++iy) {
            for (int64_t ix = 0; ix < s.ratio; ++ix) {
              double yy = sh + double(ph) * bh + (double(iy) + 0.5) * bh / double(s.ratio);
              double xx = sw + double(pw) * bw + (double(ix) + 0.5) * bw / double(s.ratio);
              double w[4] = {0, 0, 0, 0};
              int64_t pos[4] = {0, 0, 0, 0};
              if (!(yy < -1.0 || yy > double(H) || xx < -1.0 || xx > double(W))) {
                yy = std::max(yy, 0.0), xx = std::max(xx, 0.0);
                int64_t yl = static_cast<int64_t>(yy), xl = static_cast<int64_t>(xx), yh, xh;
                if (yl >= H - 1) yh = yl = H - 1, yy = double(yl);
                else yh = yl + 1;
                if (xl >= W - 1) xh = xl = W - 1, xx = double(xl);
                else xh = xl + 1;
                double ly = yy - double(yl), lx = xx - double(xl), hy = 1 - ly, hx = 1 - lx;
                w[0] = hy * hx, w[1] = hy * lx, w[2] = ly * hx, w[3] = ly * lx;
                pos[0] = yl * W + xl, pos[1] = yl * W + xh, pos[2] = yh * W + xl, pos[3] = yh * W + xh;
              }
              if (s.mode == "avg") {
                for (int k = 0; k < 4; ++k) acc += w[k] * p[pos[k]];
              } else {
                double v = w[0] * p[pos[0]];
                for (int k = 1; k < 4; ++k) v = std::max(v, w[k] * p[pos[k]]);
                acc = first ? v : std::max(acc, v);
                first = false;
              }
            }
          }
          y.push_back(s.mode == "avg" ? acc / double(s.ratio * s.ratio) : acc);
        }
      }
    }
  }
  return HostTensor::from_doubles(xt.dtype(), {R, C, s.oh, s.ow}, y);
}

Attrs attrs(const Spec& s) {
  Attrs a;
  a.set_str("mode", s.mode).set_int("output_height", s.oh).set_int("output_width", s.ow);
  a.set_int("sampling_ratio", s.ratio).set_float("spatial_scale", s.scale).set_int("half_pixel", s.half_pixel);
  return a;
}

}  // namespace

TEST_CASE("image.roi_align: avg and max, half_pixel or not, rois past the image and below a pixel", "[roi_align]") {
  HostTensor x = random_tensor(relay::DataType::f32(), {2, 3, 8, 7}, 40);
  // In x's pixels / scale 0.5: inside, reaching past both borders, smaller than a pixel, a
  // point, and one entirely outside.
  HostTensor rois = HostTensor::from_doubles(relay::DataType::f32(), {5, 4},
                                             {2, 3, 9, 12, -6, -4, 20, 18, 4.2, 5.1, 4.9, 5.6, 7, 7, 7, 7,
                                              30, 30, 40, 44});
  HostTensor batch = HostTensor::from_doubles(relay::DataType::i64(), {5}, {0, 1, 1, 0, 1});
  for (const char* mode : {"avg", "max"}) {
    for (bool half : {true, false}) {
      for (int64_t ratio : {1, 2, 3}) {
        Spec s;
        s.mode = mode;
        s.half_pixel = half;
        s.ratio = ratio;
        INFO(mode << " half_pixel " << half << " sampling_ratio " << ratio);
        CHECK(check_op("image.roi_align", {x, rois, batch}, attrs(s), {roi_align_ref(x, rois, batch, s)}, 1e-5, 1e-5) ==
              "");
      }
    }
  }
}

TEST_CASE("image.roi_align: the type relation names bad rois, indices and attributes", "[roi_align]") {
  using Catch::Matchers::Contains;
  auto call = [](const relay::Shape& rs, const relay::Shape& bs, const Spec& s) {
    std::vector<relay::Expr> vars = {
        relay::make_var("x", relay::tensor_type(relay::DataType::f32(), {1, 2, 6, 6})),
        relay::make_var("r", relay::tensor_type(relay::DataType::f32(), rs)),
        relay::make_var("b", relay::tensor_type(relay::DataType::i64(), bs))};
    return relay::make_call("image.roi_align", vars, attrs(s), "ra");
  };
  CHECK(call({4, 4}, {4}, Spec{})->type.str() == "float32[4,2,3,2]");
  REQUIRE_THROWS_WITH(call({4, 5}, {4}, Spec{}), Contains("roi_align rois [4,5] must be [R, 4]"));
  REQUIRE_THROWS_WITH(call({4, 4}, {3}, Spec{}), Contains("roi_align batch_indices [3] must be [4]"));
  Spec bad;
  bad.mode = "min";
  REQUIRE_THROWS_WITH(call({4, 4}, {4}, bad), Contains("unknown roi_align mode 'min'"));
  bad = Spec{};
  bad.ratio = 0;
  REQUIRE_THROWS_WITH(call({4, 4}, {4}, bad), Contains("roi_align sampling_ratio must be positive"));
}
