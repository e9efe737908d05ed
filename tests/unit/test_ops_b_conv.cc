// nn.conv1d/2d (groups, depthwise, dilation, asymmetric pads), conv transposes, and the conv
// template with a fused elementwise tail: each lowered by the host's strategy, compiled naive and
// with the CPU template, and compared with a double-precision plain-loop reference.
// Tolerances: rtol 1e-4, atol 1e-5 (float32 accumulation over at most a few hundred terms).
#include <catch2/catch.hpp>

#include "kiln/te/ops/nn_conv.h"
#include "test_ops_b_ref.h"
#include "schedule/templates/conv2d_cpu.h"
#include "test_ops_b_util.h"

using namespace kiln;
using opsb_test::check_op;
using opsb_test::conv_attrs;
using opsb_test::random_tensor;
using relay::Attrs;
using relay::HostTensor;

namespace {
const auto f32 = relay::DataType::f32();
constexpr double kRtol = 1e-4, kAtol = 1e-5;

struct Conv2dCase {
  relay::Shape x, w;
  std::vector<int64_t> s, p, d;
  int64_t groups;
};
}  // namespace

TEST_CASE("nn.conv2d: strides, asymmetric pads, dilation, groups and odd channel counts", "[ops_b]") {
  std::vector<Conv2dCase> cases = {
      {{1, 16, 9, 9}, {32, 16, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},     // resnet-like block
      {{2, 5, 11, 13}, {6, 5, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1},      // batch 2, stride 2
      {{1, 3, 12, 10}, {20, 3, 3, 2}, {1, 2}, {0, 1, 2, 0}, {2, 1}, 1},     // asymmetric, dilated, OC % 16
      {{1, 8, 7, 7}, {24, 8, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},       // 1x1, padded channel block
      {{1, 8, 8, 8}, {8, 4, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2},        // grouped
      {{1, 8, 10, 10}, {16, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 8},     // depthwise x2 multiplier
      {{1, 6, 9, 14}, {6, 1, 5, 3}, {1, 1}, {2, 1, 2, 1}, {1, 2}, 6},       // depthwise, dilated
      {{1, 3, 23, 23}, {16, 3, 7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1},     // stem-like 7x7 s2
      {{1, 4, 11, 13}, {4, 1, 3, 3}, {2, 3}, {1, 0, 2, 1}, {1, 2}, 4},      // depthwise, strided rows
      {{1, 3, 8, 130}, {3, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 3},      // depthwise, rows > 128
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Conv2dCase& c = cases[i];
    HostTensor x = random_tensor(f32, c.x, 10 + i), w = random_tensor(f32, c.w, 20 + i);
    HostTensor want = opsb_ref::conv(x, w, c.s, c.p, c.d, c.groups);
    INFO("case " << i);
    CHECK(check_op("nn.conv2d", {x, w}, conv_attrs(c.s, c.p, c.d, c.groups), {want}, kRtol, kAtol) == "");
  }
}

TEST_CASE("nn.conv1d: plain, strided with pads, grouped", "[ops_b]") {
  struct C {
    relay::Shape x, w;
    std::vector<int64_t> s, p, d;
    int64_t g;
  };
  std::vector<C> cases = {{{1, 4, 20}, {8, 4, 3}, {1}, {1, 1}, {1}, 1},
                          {{2, 6, 17}, {4, 3, 5}, {2}, {2, 0}, {2}, 2},
                          {{1, 4, 9}, {4, 1, 3}, {1}, {1, 1}, {1}, 4},
                          {{1, 4, 12}, {8, 1, 3}, {2}, {1, 1}, {2}, 4}};
  for (size_t i = 0; i < cases.size(); ++i) {
    const C& c = cases[i];
    HostTensor x = random_tensor(f32, c.x, 30 + i), w = random_tensor(f32, c.w, 40 + i);
    INFO("case " << i);
    CHECK(check_op("nn.conv1d", {x, w}, conv_attrs(c.s, c.p, c.d, c.g), {opsb_ref::conv(x, w, c.s, c.p, c.d, c.g)},
                   kRtol, kAtol) == "");
  }
}

TEST_CASE("nn.conv2d_transpose / conv1d_transpose: strides, pads, output_padding, dilation, groups", "[ops_b]") {
  struct C {
    relay::Shape x, w;
    std::vector<int64_t> s, p, d, op;
    int64_t g;
    const char* op_name;
  };
  std::vector<C> cases = {
      {{1, 3, 5, 5}, {3, 4, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 1, "nn.conv2d_transpose"},
      {{1, 4, 4, 6}, {4, 2, 3, 2}, {3, 2}, {0, 1, 2, 0}, {1, 2}, {0, 1}, 2, "nn.conv2d_transpose"},
      {{2, 2, 7}, {2, 3, 4}, {2}, {1, 2}, {1}, {1}, 1, "nn.conv1d_transpose"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const C& c = cases[i];
    HostTensor x = random_tensor(f32, c.x, 50 + i), w = random_tensor(f32, c.w, 60 + i);
    Attrs a = conv_attrs(c.s, c.p, c.d, c.g);
    a.set_ints("output_padding", c.op);
    INFO("case " << i);
    CHECK(check_op(c.op_name, {x, w}, a, {opsb_ref::conv_transpose(x, w, c.s, c.p, c.d, c.g, c.op)}, kRtol, kAtol) ==
          "");
  }
}

TEST_CASE("conv template with a fused bias + residual add + relu tail matches the reference", "[ops_b]") {
  // The group a graph compiler forms for a resnet block: relu(conv(x, w) + bias[c] + res).
  for (auto [oc, ow] : {std::pair<int64_t, int64_t>{32, 14}, {20, 9}}) {
    relay::Shape xs = {1, 8, 9, ow}, ws = {oc, 8, 3, 3};
    auto lowered = opsb_test::lower_call("nn.conv2d", {relay::tensor_type(f32, xs), relay::tensor_type(f32, ws)},
                                         conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1));
    te::Tensor conv = lowered.outputs[0];
    te::Tensor bias = te::placeholder({oc}, f32, "bias");
    te::Tensor res = te::placeholder(conv.shape(), f32, "res");
    te::Tensor biased = te::compute(conv.shape(), [&](ir::Var n, ir::Var c, ir::Var h, ir::Var w) {
      return conv(n, c, h, w) + bias(c);
    }, "bias_add");
    te::Tensor added = te::compute(conv.shape(), [&](ir::Var n, ir::Var c, ir::Var h, ir::Var w) {
      return biased(n, c, h, w) + res(n, c, h, w);
    }, "add");
    te::Tensor out = te::compute(conv.shape(), [&](ir::Var n, ir::Var c, ir::Var h, ir::Var w) {
      return ir::max(added(n, c, h, w), ir::make_zero(f32));
    }, "relu");
    schedule::Config cfg;
    schedule::Schedule s = lowered.strategy.schedule({out}, conv, lowered.target, cfg);
    HostTensor x = random_tensor(f32, xs, 1), w = random_tensor(f32, ws, 2), b = random_tensor(f32, {oc}, 3),
               r = random_tensor(f32, conv.shape(), 4);
    opsb_test::Lowered l = lowered;
    l.inputs = {lowered.inputs[0], lowered.inputs[1], bias, res};
    l.outputs = {out};
    std::vector<HostTensor> got = opsb_test::run(s, l, {x, w, b, r});
    opsb_ref::Dense want(opsb_ref::conv(x, w, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1));
    opsb_ref::Dense rd(r);
    opsb_ref::for_each(want.shape, [&](const opsb_ref::Index& i) {
      want.at(i) = std::max(0.0, want.at(i) + b.double_at(i[1]) + rd.at(i));
    });
    INFO("oc " << oc << " ow " << ow << " config " << cfg.str());
    CHECK(opsb_test::compare(got[0], want.to(f32), kRtol, kAtol) == "");
    // Every knob setting of the template computes the same thing.
    schedule::ConfigSpace space;
    schedule::Config rec(&space);
    lowered.strategy.schedule({out}, conv, lowered.target, rec);
    for (uint64_t p = 0; p < space.size(); ++p) {
      schedule::Config pick = schedule::Config::from_index(space, p);
      schedule::Schedule sp = lowered.strategy.schedule({out}, conv, lowered.target, pick);
      INFO("config " << pick.str());
      CHECK(opsb_test::compare(opsb_test::run(sp, l, {x, w, b, r})[0], want.to(f32), kRtol, kAtol) == "");
      if (p >= 7) break;  // a handful of points is enough: the space is large
    }
  }
}

TEST_CASE("conv lowerings name what they do not support", "[ops_b]") {
  auto x = te::placeholder({1, 4, 8, 8}, ir::DataType::f32(), "x");
  auto w = te::placeholder({8, 3, 3, 3}, ir::DataType::f32(), "w");
  te::ops::ConvNdAttrs a{{1, 1}, {0, 0, 0, 0}, {1, 1}, 1, {}};
  CHECK_THROWS_WITH(te::ops::conv_nd(x, w, a, {8, 8}, "myconv"), Catch::Contains("myconv") && Catch::Contains("groups"));
  a.padding = {-1, 0, 0, 0};
  auto w2 = te::placeholder({8, 4, 3, 3}, ir::DataType::f32(), "w2");
  CHECK_THROWS_WITH(te::ops::conv_nd(x, w2, a, {8, 8}, "myconv"), Catch::Contains("negative padding"));
  a.padding = {0, 0, 0, 0};
  CHECK_THROWS_WITH(te::ops::conv_nd(x, w2, a, {0, 8}, "myconv"), Catch::Contains("block and row multiple must be positive"));
}

TEST_CASE("conv2d_nchwc (blocked layout) matches the NCHW reference, alone and with a tail", "[ops_b]") {
  const int64_t n = 1, c = 8, h = 9, w = 11, oc = 32, ci = 4, co = 16;
  HostTensor x = random_tensor(f32, {n, c, h, w}, 70), wt = random_tensor(f32, {oc, c, 3, 3}, 71);
  HostTensor want = opsb_ref::conv(x, wt, {1, 2}, {1, 1, 1, 1}, {1, 1}, 1);
  // Relayout by hand: x -> [N, C/ci, H, W, ci], w -> [OC/co, C/ci, KH, KW, ci, co].
  opsb_ref::Dense xd(x), wd(wt), wantd(want);
  opsb_ref::Dense xb({n, c / ci, h, w, ci}), wb({oc / co, c / ci, 3, 3, ci, co});
  opsb_ref::for_each(xd.shape, [&](const opsb_ref::Index& i) { xb.at({i[0], i[1] / ci, i[2], i[3], i[1] % ci}) = xd.at(i); });
  opsb_ref::for_each(wd.shape, [&](const opsb_ref::Index& i) {
    wb.at({i[0] / co, i[1] / ci, i[2], i[3], i[1] % ci, i[0] % co}) = wd.at(i);
  });
  auto xp = te::placeholder(xb.shape, ir::DataType::f32(), "x");
  auto wp = te::placeholder(wb.shape, ir::DataType::f32(), "w");
  te::ops::ConvNdAttrs a{{1, 2}, {1, 1, 1, 1}, {1, 1}, 1, {}};
  te::Tensor y = te::ops::conv2d_nchwc(xp, wp, a);
  te::Tensor relu = te::compute(y.shape(), [&](const std::vector<ir::Var>& v) {
    return ir::max(y(std::vector<ir::Expr>(v.begin(), v.end())), ir::make_zero(ir::DataType::f32()));
  }, "relu");
  opsb_ref::Dense wantb(y.shape()), wantr(y.shape());
  opsb_ref::for_each(wantd.shape, [&](const opsb_ref::Index& i) {
    wantb.at({i[0], i[1] / co, i[2], i[3], i[1] % co}) = wantd.at(i);
    wantr.at({i[0], i[1] / co, i[2], i[3], i[1] % co}) = std::max(0.0, wantd.at(i));
  });
  for (bool tail : {false, true}) {
    opsb_test::Lowered l;
    l.inputs = {xp, wp};
    l.outputs = {tail ? relu : y};
    schedule::Config cfg;
    auto s = schedule::schedule_anchor_cpu(l.outputs, y, schedule::schedule_conv_nchwc_cpu, Target::host(), cfg);
    auto got = opsb_test::run(s, l, {xb.to(f32), wb.to(f32)});
    INFO("tail " << tail);
    CHECK(opsb_test::compare(got[0], (tail ? wantr : wantb).to(f32), kRtol, kAtol) == "");
  }
}

TEST_CASE("strategies' packed weights: conv and dense lowered on weights packed at compile time", "[ops_b]") {
  struct C {
    std::string op;
    relay::Shape x, w;
    Attrs attrs;
  };
  std::vector<C> cases = {{"nn.conv2d", {1, 6, 7, 9}, {20, 3, 3, 3}, conv_attrs({1, 2}, {1, 0, 1, 2}, {1, 1}, 2)},
                          {"nn.conv2d", {1, 4, 6, 6}, {40, 4, 1, 1}, conv_attrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1)},
                          {"nn.conv1d", {2, 3, 11}, {8, 3, 3}, conv_attrs({2}, {1, 1}, {1}, 1)},
                          {"nn.dense", {3, 10}, {37, 10}, Attrs()}};
  for (size_t i = 0; i < cases.size(); ++i) {
    const C& c = cases[i];
    HostTensor x = random_tensor(f32, c.x, 80 + i), w = random_tensor(f32, c.w, 90 + i), packed;
    opsb_test::Lowered l = opsb_test::lower_packed(c.op, x.type(), w, c.attrs, &packed);
    REQUIRE(l.strategy.packing->arg == 1);
    HostTensor want = c.op == "nn.dense" ? opsb_ref::dense(x, w)
                                         : opsb_ref::conv(x, w, c.attrs.get_ints("strides"), c.attrs.get_ints("padding"),
                                                          c.attrs.get_ints("dilation"), c.attrs.get_int("groups"));
    schedule::Config cfg;
    INFO("case " << i);
    CHECK(opsb_test::compare(opsb_test::run(l.template_schedule(cfg), l, {x, packed})[0],
                             want, kRtol, kAtol) == "");
    CHECK(opsb_test::compare(opsb_test::run(schedule::create(l.outputs), l, {x, packed})[0], want, kRtol, kAtol) == "");
  }
  // Depthwise convolutions read their weight as is.
  opsb_test::Lowered dw = opsb_test::lower_call("nn.conv2d", {relay::tensor_type(f32, {1, 4, 5, 5}), relay::tensor_type(f32, {4, 1, 3, 3})},
                                                conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 4));
  CHECK(dw.strategy.template_name == "depthwise");
  CHECK_FALSE(dw.strategy.packing.has_value());
}

TEST_CASE("nn.conv2d_NCHWc and layout_transform (relay::alter_layout's ops) lower and compute", "[ops_b]") {
  const int64_t c = 6, oc = 32, ci = 3, co = 16;
  HostTensor x = random_tensor(f32, {1, c, 8, 10}, 100), wt = random_tensor(f32, {oc, c, 3, 3}, 101);
  HostTensor want = opsb_ref::conv(x, wt, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
  Attrs to_blocked = Attrs().set_str("src_layout", "NCHW").set_str("dst_layout", "NCHW3c");
  opsb_ref::Dense xd(x), xb({1, c / ci, 8, 10, ci});
  opsb_ref::for_each(xd.shape, [&](const opsb_ref::Index& i) { xb.at({i[0], i[1] / ci, i[2], i[3], i[1] % ci}) = xd.at(i); });
  CHECK(check_op("layout_transform", {x}, to_blocked, {xb.to(f32)}, 0, 0) == "");
  opsb_ref::Dense wd(wt), wb({oc / co, c / ci, 3, 3, ci, co}), wantd(want), yb({1, oc / co, 8, 10, co});
  opsb_ref::for_each(wd.shape, [&](const opsb_ref::Index& i) {
    wb.at({i[0] / co, i[1] / ci, i[2], i[3], i[1] % ci, i[0] % co}) = wd.at(i);
  });
  opsb_ref::for_each(wantd.shape, [&](const opsb_ref::Index& i) { yb.at({i[0], i[1] / co, i[2], i[3], i[1] % co}) = wantd.at(i); });
  Attrs a = conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
  a.set_str("data_layout", "NCHW3c").set_str("out_layout", "NCHW16c").set_str("kernel_layout", "OIHW3i16o");
  CHECK(check_op("nn.conv2d_NCHWc", {xb.to(f32), wb.to(f32)}, a, {yb.to(f32)}, kRtol, kAtol) == "");
  Attrs back = Attrs().set_str("src_layout", "NCHW16c").set_str("dst_layout", "NCHW8c");
  opsb_ref::Dense y8({1, oc / 8, 8, 10, 8});
  opsb_ref::for_each(wantd.shape, [&](const opsb_ref::Index& i) { y8.at({i[0], i[1] / 8, i[2], i[3], i[1] % 8}) = wantd.at(i); });
  CHECK(check_op("layout_transform", {yb.to(f32)}, back, {y8.to(f32)}, 0, 0) == "");
}
