// The Winograd conv2d F(2x2, 3x3): lowered by the CPU strategy on a packed weight (the filter
// transformed on the host, as the graph compiler does for a constant weight) and on a weight
// transformed in the kernel, compiled naive and with its CPU template (default and random knob
// points, with a fused bias + residual add + relu tail), and compared with the double-precision
// plain-loop convolution of the untransformed weight.
// Tolerances: rtol 1e-4, atol 1e-5, as the direct conv's tests (the transforms only add and
// halve, so the error stays that of float32 sums over C channels).
#include <catch2/catch.hpp>

#include <random>

#include "lower/weight_packing.h"
#include "kiln/te/ops/nn_winograd.h"
#include "test_ops_b_ref.h"
#include "test_ops_b_util.h"

using namespace kiln;
using opsb_test::conv_attrs;
using opsb_test::random_tensor;
using relay::HostTensor;

namespace {
const auto f32 = relay::DataType::f32();
constexpr double kRtol = 1e-4, kAtol = 1e-5;

// conv2d(x, w) lowered on the transformed weight, which the returned inputs hold second.
struct WinogradCall {
  opsb_test::Lowered l;
  HostTensor u;
};

WinogradCall lower_winograd(const HostTensor& w, const relay::Shape& xs, const relay::Attrs& attrs) {
  WinogradCall out;
  out.l = opsb_test::lower_packed("nn.conv2d", relay::tensor_type(f32, xs), w, attrs, &out.u);
  REQUIRE(out.l.strategy.template_name == "conv_winograd");
  REQUIRE(out.u.shape().size() == 4);  // [16, OC/co, C, co]
  return out;
}

// The strategy's template for a conv2d of these shapes on `target`.
std::string conv_template(relay::Shape xs, relay::Shape ws, std::vector<int64_t> strides, std::vector<int64_t> dilation,
                          int64_t groups, const Target& target = Target::host()) {
  return opsb_test::lower_call("nn.conv2d", {relay::tensor_type(f32, xs), relay::tensor_type(f32, ws)},
                               conv_attrs(strides, {1, 1, 1, 1}, dilation, groups), target)
      .strategy.template_name;
}
}  // namespace

TEST_CASE("Winograd conv2d: odd sizes, asymmetric pads, batch 2, partial channel blocks, long reductions", "[ops_b]") {
  struct C {
    relay::Shape x;
    int64_t oc;
    std::vector<int64_t> pads;
  };
  std::vector<C> cases = {
      {{1, 16, 9, 9}, 32, {1, 1, 1, 1}},     // resnet-like block, odd output (tiles past the edge)
      {{2, 8, 8, 12}, 16, {1, 1, 1, 1}},     // batch 2, even output
      {{1, 8, 7, 10}, 20, {0, 1, 2, 0}},     // asymmetric pads; 20 channels: a zero-padded block
      {{1, 12, 10, 6}, 48, {0, 0, 0, 0}},    // no padding
      {{1, 160, 6, 6}, 32, {1, 1, 1, 1}},    // 160 channels: reductions in partial sums
      {{1, 8, 3, 40}, 16, {1, 1, 1, 1}},     // 20 tile columns: the input transform's vectors split
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const C& c = cases[i];
    relay::Shape ws = {c.oc, c.x[1], 3, 3};
    HostTensor x = random_tensor(f32, c.x, 100 + i), w = random_tensor(f32, ws, 200 + i);
    relay::Attrs attrs = conv_attrs({1, 1}, c.pads, {1, 1}, 1);
    WinogradCall wc = lower_winograd(w, c.x, attrs);
    HostTensor want = opsb_ref::conv(x, w, {1, 1}, c.pads, {1, 1}, 1);
    schedule::Config cfg;
    INFO("case " << i);
    CHECK(opsb_test::compare(opsb_test::run(wc.l.template_schedule(cfg), wc.l, {x, wc.u})[0], want, kRtol, kAtol) == "");
    CHECK(opsb_test::compare(opsb_test::run(schedule::create(wc.l.outputs), wc.l, {x, wc.u})[0], want, kRtol, kAtol) ==
          "");
    // A weight that is no constant: the filter transformed in the kernel ("<name>.wpack").
    opsb_test::Lowered unpacked = opsb_test::lower_call("nn.conv2d", {x.type(), w.type()}, attrs);
    REQUIRE(unpacked.strategy.template_name == "conv_winograd");
    CHECK(opsb_test::compare(opsb_test::run(unpacked.template_schedule(cfg), unpacked, {x, w})[0], want, kRtol, kAtol) ==
          "");
  }
}

TEST_CASE("Winograd template: random points of its space match the reference (bias + residual add + relu tail)",
          "[ops_b][spaces]") {
  // OW 20: tile_ow {1, 2, 4, 5, 10, 20 ...}; 10 tile columns: tile_tw {1, 2, 5, 10, and the
  // overhanging widths}; 64 channels:
  // 4 blocks, so oc_blocks 1, 2 and 4 all apply.
  const relay::Shape xs = {1, 8, 11, 20};
  const int64_t oc = 64;
  HostTensor x = random_tensor(f32, xs, 1), w = random_tensor(f32, {oc, 8, 3, 3}, 2), b = random_tensor(f32, {oc}, 3);
  WinogradCall wc = lower_winograd(w, xs, conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1));
  te::Tensor conv = wc.l.outputs[0];
  HostTensor r = random_tensor(f32, conv.shape(), 4);
  te::Tensor bias = te::placeholder({oc}, f32, "bias"), res = te::placeholder(conv.shape(), f32, "res");
  te::Tensor out = te::compute(conv.shape(), [&](ir::Var n, ir::Var c, ir::Var h, ir::Var ww) {
    return ir::max(conv(n, c, h, ww) + bias(c) + res(n, c, h, ww), ir::make_zero(f32));
  }, "relu");
  opsb_test::Lowered l = wc.l;
  l.inputs.push_back(bias);
  l.inputs.push_back(res);
  l.outputs = {out};
  opsb_ref::Dense want(opsb_ref::conv(x, w, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1)), rd(r);
  opsb_ref::for_each(want.shape, [&](const opsb_ref::Index& i) {
    want.at(i) = std::max(0.0, want.at(i) + b.double_at(i[1]) + rd.at(i));
  });

  schedule::ConfigSpace space;
  schedule::Config rec(&space);
  wc.l.strategy.schedule({out}, conv, wc.l.target, rec);
  for (const char* k : {"tile_tw", "oc_blocks", "tile_ow", "vec_out", "pad_at", "task_over"}) {
    INFO("knob " << k);
    REQUIRE(space.find(k) != nullptr);
    CHECK(space.find(k)->candidates.size() > 1);
  }
  std::mt19937_64 rng(7);
  for (int p = 0; p <= 12; ++p) {
    schedule::Config cfg = p == 0 ? schedule::Config() : schedule::Config::from_index(space, rng() % space.size());
    schedule::Schedule s = wc.l.strategy.schedule({out}, conv, wc.l.target, cfg);
    INFO("config " << cfg.str());
    CHECK(opsb_test::compare(opsb_test::run(s, l, {x, wc.u, b, r})[0], want.to(f32), kRtol, kAtol) == "");
  }
  // Every tile_tw, the overhanging ones (3, 4, 6, 7... of 10 tile columns: the last tile of a
  // row guarded) included, in both task structures.
  const schedule::Knob* tile_tw = space.find("tile_tw");
  int overhanging = 0;
  for (size_t i = 0; i < tile_tw->candidates.size(); ++i) {
    overhanging += tile_tw->candidates[i][0] * tile_tw->candidates[i][1] != 10;
    for (size_t by_channels : {0, 1}) {
      schedule::Config cfg = schedule::Config::with_choices({{"tile_tw", i}, {"task_over", by_channels}});
      INFO("config " << cfg.str());
      CHECK(opsb_test::compare(opsb_test::run(wc.l.strategy.schedule({out}, conv, wc.l.target, cfg), l, {x, wc.u, b, r})[0],
                               want.to(f32), kRtol, kAtol) == "");
    }
  }
  CHECK(overhanging >= 2);
  // Both task structures, explicitly (random points may miss one).
  for (size_t by_channels : {0, 1}) {
    schedule::Config cfg = schedule::Config::with_choices({{"task_over", by_channels}});
    INFO("task_over " << by_channels);
    CHECK(opsb_test::compare(opsb_test::run(wc.l.strategy.schedule({out}, conv, wc.l.target, cfg), l, {x, wc.u, b, r})[0],
                             want.to(f32), kRtol, kAtol) == "");
  }
}

TEST_CASE("Winograd conv2d: chosen only for 3x3 stride-1 undilated ungrouped convs with a small transformed weight",
          "[ops_b]") {
  CHECK(conv_template({1, 64, 56, 56}, {64, 64, 3, 3}, {1, 1}, {1, 1}, 1) == "conv_winograd");
  CHECK(conv_template({1, 256, 14, 14}, {256, 256, 3, 3}, {1, 1}, {1, 1}, 1) == "conv_winograd");  // U 4 MiB: the limit
  CHECK(conv_template({1, 512, 7, 7}, {512, 512, 3, 3}, {1, 1}, {1, 1}, 1) == "conv");              // 16 MiB: direct
  CHECK(conv_template({1, 64, 56, 56}, {64, 64, 1, 1}, {1, 1}, {1, 1}, 1) == "conv");               // 1x1
  CHECK(conv_template({1, 3, 56, 56}, {64, 3, 3, 3}, {1, 1}, {1, 1}, 1) == "conv");  // 3 input channels: transforms dominate
  CHECK(conv_template({1, 64, 56, 56}, {64, 64, 3, 3}, {2, 2}, {1, 1}, 1) == "conv");               // strided
  CHECK(conv_template({1, 64, 56, 56}, {64, 64, 3, 3}, {1, 1}, {2, 2}, 1) == "conv");               // dilated
  CHECK(conv_template({1, 64, 56, 56}, {64, 32, 3, 3}, {1, 1}, {1, 1}, 2) == "conv");               // grouped
  // The rule holds on every x86 level (the channel block only changes U's padding here).
  CHECK(conv_template({1, 64, 56, 56}, {64, 64, 3, 3}, {1, 1}, {1, 1}, 1, Target::parse("llvm -mcpu=x86-64-v3")) ==
        "conv_winograd");
}

TEST_CASE("Winograd conv2d: misuse names the culprit", "[ops_b]") {
  HostTensor w5 = random_tensor(f32, {8, 4, 5, 5}, 1);
  CHECK_THROWS_WITH(lower::pack_winograd_weight(w5, 16), Catch::Contains("pack_winograd_weight") && Catch::Contains("3, 3"));
  auto w5t = te::placeholder({8, 4, 5, 5}, ir::DataType::f32(), "w5");
  CHECK_THROWS_WITH(te::ops::winograd_weight_transform(w5t, 16, "myconv"), Catch::Contains("myconv") && Catch::Contains("w5"));
  auto x = te::placeholder({1, 4, 8, 8}, ir::DataType::f32(), "x");
  auto u = te::placeholder({16, 1, 3, 16}, ir::DataType::f32(), "u");
  te::ops::ConvNdAttrs a{{1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {}};
  CHECK_THROWS_WITH(te::ops::conv2d_winograd_packed(x, u, 16, a, 16, "myconv"),
                    Catch::Contains("myconv") && Catch::Contains("u") && Catch::Contains("4 inputs"));
  auto u4 = te::placeholder({16, 1, 4, 16}, ir::DataType::f32(), "u4");
  a.strides = {2, 2};
  CHECK_THROWS_WITH(te::ops::conv2d_winograd_packed(x, u4, 16, a, 16, "myconv"), Catch::Contains("stride 1"));
}
