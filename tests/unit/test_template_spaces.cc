// Every point of a template's knob space computes the right result: for the conv (NCHW and
// blocked NCHWc), depthwise, dense and matmul CPU templates, random points of the recorded space (seeded,
// so failures reproduce; the default point always included) are built, run and compared with a
// plain-loop double reference (test_ops_b_ref.h), rtol 1e-5. The autotuner may pick any point,
// so none may be wrong. Shapes are small but make every knob have several candidates.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <random>

#include "kiln/te/ops/nn_conv.h"
#include "test_ops_b_ref.h"
#include "schedule/templates/conv2d_cpu.h"
#include "schedule/templates/depthwise_cpu.h"
#include "test_ops_b_util.h"

using namespace kiln;
using opsb_test::conv_attrs;
using opsb_test::random_tensor;
using relay::HostTensor;

namespace {
const auto f32 = relay::DataType::f32();
constexpr double kRtol = 1e-5, kAtol = 1e-5;
// Random points per template besides the default; KILN_SPACE_POINTS=200 soaks.
int points() {
  const char* env = std::getenv("KILN_SPACE_POINTS");
  return env ? std::atoi(env) : 12;
}

// Records the template's space on (outputs, anchor), checks it declares `knobs`, then builds
// and checks the default and points() random points.
void check_space(const std::vector<te::Tensor>& outputs, const te::Tensor& anchor, const opsb_test::Lowered& l,
                 const std::vector<HostTensor>& inputs, const HostTensor& want, const std::vector<std::string>& knobs,
                 uint32_t seed) {
  schedule::ConfigSpace space;
  schedule::Config rec(&space);
  l.strategy.schedule(outputs, anchor, l.target, rec);
  for (const std::string& k : knobs) {
    INFO("knob " << k);
    REQUIRE(space.find(k) != nullptr);
    CHECK(space.find(k)->candidates.size() > 1);  // the shapes are chosen so every knob has a choice
  }
  INFO("space of " << space.size() << " points");
  std::mt19937_64 rng(seed);
  for (int p = 0, n = points(); p <= n; ++p) {
    schedule::Config cfg = p == 0 ? schedule::Config() : schedule::Config::from_index(space, rng() % space.size());
    schedule::Schedule s = l.strategy.schedule(outputs, anchor, l.target, cfg);
    INFO("config " << cfg.str());
    CHECK(opsb_test::compare(opsb_test::run(s, l, inputs)[0], want, kRtol, kAtol) == "");
  }
}
}  // namespace

TEST_CASE("conv template: random points of its space match the reference (with a bias + relu tail)", "[spaces]") {
  // 40 output channels: 3 blocks of 16 (zero-padded), so oc_blocks 2 and 4 fall back.
  // H 12 and W 10 give tile_oh {1,2,3,4} and tile_ow {1,2,5,10}.
  for (auto [oc, stride] : {std::pair<int64_t, int64_t>{40, 1}, {64, 2}}) {
    relay::Shape xs = {1, 5, 12 * stride, 10 * stride}, ws = {oc, 5, 3, 3};
    auto l = opsb_test::lower_call("nn.conv2d", {relay::tensor_type(f32, xs), relay::tensor_type(f32, ws)},
                                   conv_attrs({stride, stride}, {1, 1, 1, 1}, {1, 1}, 1));
    te::Tensor conv = l.outputs[0];
    te::Tensor bias = te::placeholder({oc}, f32, "bias");
    te::Tensor out = te::compute(conv.shape(), [&](ir::Var n, ir::Var c, ir::Var h, ir::Var w) {
      return ir::max(conv(n, c, h, w) + bias(c), ir::make_zero(f32));
    }, "relu");
    HostTensor x = random_tensor(f32, xs, 1), w = random_tensor(f32, ws, 2), b = random_tensor(f32, {oc}, 3);
    opsb_ref::Dense want(opsb_ref::conv(x, w, {stride, stride}, {1, 1, 1, 1}, {1, 1}, 1));
    opsb_ref::for_each(want.shape, [&](const opsb_ref::Index& i) { want.at(i) = std::max(0.0, want.at(i) + b.double_at(i[1])); });
    opsb_test::Lowered run = l;
    run.inputs.push_back(bias);
    run.outputs = {out};
    INFO("oc " << oc << " stride " << stride);
    check_space({out}, conv, run, {x, w, b}, want.to(f32),
                {"tile_ow", "tile_oh", "oc_blocks", "reduce_order", "unroll_kw", "vec_out", "tile_ic", "pad_at", "rows_outer"},
                10 + oc);
  }
}

TEST_CASE("conv template: every column tile of a prime width, overhanging ones included, matches the reference",
          "[spaces]") {
  // W 13 has no divisor but 1 and 13; tile_ow also offers the vectorizable widths that overhang
  // it (the last tile of a row is guarded), each with a scalar and a vectorized write-out.
  relay::Shape xs = {1, 3, 7, 13}, ws = {20, 3, 3, 3};
  auto l = opsb_test::lower_call("nn.conv2d", {relay::tensor_type(f32, xs), relay::tensor_type(f32, ws)},
                                 conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1));
  HostTensor x = random_tensor(f32, xs, 1), w = random_tensor(f32, ws, 2);
  HostTensor want = opsb_ref::Dense(opsb_ref::conv(x, w, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1)).to(f32);
  schedule::ConfigSpace space;
  schedule::Config rec(&space);
  l.strategy.schedule(l.outputs, l.outputs[0], l.target, rec);
  const schedule::Knob* tile_ow = space.find("tile_ow");
  REQUIRE(tile_ow != nullptr);
  int overhanging = 0;
  for (size_t i = 0; i < tile_ow->candidates.size(); ++i) {
    const auto& c = tile_ow->candidates[i];
    overhanging += c[0] * c[1] != 13;
    for (size_t vec = 0; vec < 2; ++vec) {
      schedule::Config cfg = schedule::Config::with_choices({{"tile_ow", i}, {"vec_out", vec}});
      schedule::Schedule s = l.strategy.schedule(l.outputs, l.outputs[0], l.target, cfg);
      INFO("config " << cfg.str());
      CHECK(opsb_test::compare(opsb_test::run(s, l, {x, w})[0], want, kRtol, kAtol) == "");
    }
  }
  CHECK(overhanging >= 1);
}

TEST_CASE("conv2d_nchwc template: random points of its space match the reference", "[spaces]") {
  const int64_t c = 8, h = 8, w = 10, oc = 64, ci = 4, co = 16;
  HostTensor x = random_tensor(f32, {1, c, h, w}, 4), wt = random_tensor(f32, {oc, c, 3, 3}, 5);
  opsb_ref::Dense xd(x), wd(wt), wantd(opsb_ref::conv(x, wt, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1));
  opsb_ref::Dense xb({1, c / ci, h, w, ci}), wb({oc / co, c / ci, 3, 3, ci, co}), wantb({1, oc / co, h, w, co});
  opsb_ref::for_each(xd.shape, [&](const opsb_ref::Index& i) { xb.at({i[0], i[1] / ci, i[2], i[3], i[1] % ci}) = xd.at(i); });
  opsb_ref::for_each(wd.shape, [&](const opsb_ref::Index& i) {
    wb.at({i[0] / co, i[1] / ci, i[2], i[3], i[1] % ci, i[0] % co}) = wd.at(i);
  });
  opsb_ref::for_each(wantd.shape, [&](const opsb_ref::Index& i) { wantb.at({i[0], i[1] / co, i[2], i[3], i[1] % co}) = wantd.at(i); });
  auto xp = te::placeholder(xb.shape, ir::DataType::f32(), "x");
  auto wp = te::placeholder(wb.shape, ir::DataType::f32(), "w");
  te::Tensor y = te::ops::conv2d_nchwc(xp, wp, te::ops::ConvNdAttrs{{1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {}});
  opsb_test::Lowered l;
  l.inputs = {xp, wp};
  l.outputs = {y};
  l.strategy.schedule = [](const std::vector<te::Tensor>& outs, const te::Tensor& anchor, const Target& t,
                           schedule::Config& cfg) {
    return schedule::schedule_anchor_cpu(outs, anchor, schedule::schedule_conv_nchwc_cpu, t, cfg);
  };
  check_space({y}, y, l, {xb.to(f32), wb.to(f32)}, wantb.to(f32), {"tile_ow", "tile_oh", "oc_blocks", "reduce_order", "unroll_kw", "pad_at"},
              20);
}

TEST_CASE("depthwise_nchwc template: random points of its space match the reference", "[spaces]") {
  // Stride 1 and 2 and a block of 8 channels; padding made in the task or at the root.
  for (int64_t stride : {1, 2}) {
    const int64_t c = 16, b = 8, h = 12, w = 10;
    HostTensor x = random_tensor(f32, {1, c, h, w}, 8), wt = random_tensor(f32, {c, 1, 3, 3}, 9);
    opsb_ref::Dense xd(x), wd(wt), wantd(opsb_ref::conv(x, wt, {stride, stride}, {1, 1, 1, 1}, {1, 1}, c));
    const int64_t oh = wantd.shape[2], ow = wantd.shape[3];
    opsb_ref::Dense xb({1, c / b, h, w, b}), wb({c / b, 3, 3, b}), wantb({1, c / b, oh, ow, b});
    opsb_ref::for_each(xd.shape, [&](const opsb_ref::Index& i) { xb.at({i[0], i[1] / b, i[2], i[3], i[1] % b}) = xd.at(i); });
    opsb_ref::for_each(wd.shape, [&](const opsb_ref::Index& i) { wb.at({i[0] / b, i[2], i[3], i[0] % b}) = wd.at(i); });
    opsb_ref::for_each(wantd.shape, [&](const opsb_ref::Index& i) { wantb.at({i[0], i[1] / b, i[2], i[3], i[1] % b}) = wantd.at(i); });
    auto xp = te::placeholder(xb.shape, ir::DataType::f32(), "x");
    auto wp = te::placeholder(wb.shape, ir::DataType::f32(), "w");
    te::Tensor y = te::ops::depthwise_conv2d_nchwc(xp, wp, te::ops::ConvNdAttrs{{stride, stride}, {1, 1, 1, 1}, {1, 1}, c, {}});
    opsb_test::Lowered l;
    l.inputs = {xp, wp};
    l.outputs = {y};
    l.strategy.schedule = [](const std::vector<te::Tensor>& outs, const te::Tensor& anchor, const Target& t,
                             schedule::Config& cfg) {
      return schedule::schedule_anchor_cpu(outs, anchor, schedule::schedule_depthwise_nchwc_cpu, t, cfg);
    };
    check_space({y}, y, l, {xb.to(f32), wb.to(f32)}, wantb.to(f32), {"tile_ow", "tile_oh", "task_rows", "pad_at"}, 20);
  }
}

TEST_CASE("depthwise template: random points of its space match the reference", "[spaces]") {
  // W 32: vec_lanes {1, 4, 8, 16}, two vectors a row at the default; stride 2 exercises the
  // stride-phase pad; W 28: vec_lanes {1, 4, 14}, 14 by default.
  for (auto [stride, width] : {std::pair<int64_t, int64_t>{1, 32}, {2, 32}, {1, 28}}) {
    relay::Shape xs = {1, 6, 8 * stride, width * stride}, ws = {6, 1, 3, 3};
    auto l = opsb_test::lower_call("nn.conv2d", {relay::tensor_type(f32, xs), relay::tensor_type(f32, ws)},
                                   conv_attrs({stride, stride}, {1, 1, 1, 1}, {1, 1}, 6));
    HostTensor x = random_tensor(f32, xs, 6), w = random_tensor(f32, ws, 7);
    HostTensor want = opsb_ref::conv(x, w, {stride, stride}, {1, 1, 1, 1}, {1, 1}, 6);
    INFO("stride " << stride << " width " << width);
    check_space(l.outputs, l.outputs[0], l, {x, w}, want, {"vec_lanes", "tile_ow", "tile_oh", "unroll_window", "tile_order", "pad_at"},
                30 + stride + width);
  }
}

TEST_CASE("pool template: random points of its space match the reference", "[spaces]") {
  // A strided max pool whose output row (W 13) one AVX-512 vector holds, and a stride-1 padded
  // average (W 14, 14 lanes), each with a relu tail.
  struct Case {
    const char* op;
    const char* kind;
    relay::Shape xs;
    opsb_ref::PoolSpec spec;
  };
  for (const Case& c : {Case{"nn.max_pool2d", "max", {1, 3, 27, 27}, {{3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, false, 2}},
                        Case{"nn.avg_pool2d", "avg", {1, 3, 14, 14}, {{3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false, true, 2}}}) {
    relay::Attrs a;
    a.set_ints("kernel", c.spec.kernel).set_ints("strides", c.spec.strides).set_ints("padding", c.spec.pads);
    a.set_ints("dilation", c.spec.dil).set_int("ceil_mode", c.spec.ceil_mode);
    a.set_int("count_include_pad", c.spec.count_include_pad).set_int("p", 2);
    auto l = opsb_test::lower_call(c.op, {relay::tensor_type(f32, c.xs)}, a);
    te::Tensor pool = l.outputs[0];
    te::Tensor out = te::compute(pool.shape(), [&](ir::Var n, ir::Var ch, ir::Var h, ir::Var w) {
      return ir::max(pool(n, ch, h, w), ir::make_zero(f32));
    }, "relu");
    HostTensor x = random_tensor(f32, c.xs, 60);
    opsb_ref::Dense want(opsb_ref::pool(x, c.kind, c.spec));
    opsb_ref::for_each(want.shape, [&](const opsb_ref::Index& i) { want.at(i) = std::max(0.0, want.at(i)); });
    opsb_test::Lowered run = l;
    run.outputs = {out};
    INFO(c.op);
    check_space({out}, pool, run, {x}, want.to(f32), {"vec_ow", "unroll_window"}, 61);
  }
}

TEST_CASE("pool_nchwc template: random points of its space match the reference", "[spaces]") {
  // resnet's 3x3 s2 max pool and densenet's 2x2 s2 average pool, on 2 blocks of 8 channels.
  struct Case {
    const char* op;
    const char* kind;
    opsb_ref::PoolSpec spec;
  };
  const int64_t c = 16, b = 8, h = 11, w = 12;
  for (const Case& k : {Case{"nn.max_pool2d", "max", {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false, 2}},
                        Case{"nn.avg_pool2d", "avg", {{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, false, 2}}}) {
    relay::Attrs a;
    a.set_ints("kernel", k.spec.kernel).set_ints("strides", k.spec.strides).set_ints("padding", k.spec.pads);
    a.set_ints("dilation", k.spec.dil).set_int("ceil_mode", k.spec.ceil_mode);
    a.set_int("count_include_pad", k.spec.count_include_pad).set_str("layout", "NCHW8c");
    auto l = opsb_test::lower_call(k.op, {relay::tensor_type(f32, {1, c / b, h, w, b})}, a);
    HostTensor x = random_tensor(f32, {1, c, h, w}, 62);
    opsb_ref::Dense xd(x), wantd(opsb_ref::pool(x, k.kind, k.spec));
    opsb_ref::Dense xb({1, c / b, h, w, b}), wantb({1, c / b, wantd.shape[2], wantd.shape[3], b});
    opsb_ref::for_each(xd.shape, [&](const opsb_ref::Index& i) { xb.at({i[0], i[1] / b, i[2], i[3], i[1] % b}) = xd.at(i); });
    opsb_ref::for_each(wantd.shape, [&](const opsb_ref::Index& i) { wantb.at({i[0], i[1] / b, i[2], i[3], i[1] % b}) = wantd.at(i); });
    INFO(k.op);
    check_space(l.outputs, l.outputs[0], l, {xb.to(f32)}, wantb.to(f32), {"tile_ow", "task_rows"}, 63);
  }
}

TEST_CASE("dense template: random points of its space match the reference", "[spaces]") {
  // 96 columns: 6 panels of 16, so panels 4 falls back to 2; M 6 and K 24 give several tiles.
  auto l = opsb_test::lower_call("nn.dense", {relay::tensor_type(f32, {6, 24}), relay::tensor_type(f32, {96, 24})}, {});
  HostTensor x = random_tensor(f32, {6, 24}, 8), w = random_tensor(f32, {96, 24}, 9);
  check_space(l.outputs, l.outputs[0], l, {x, w}, opsb_ref::dense(x, w), {"tile_i", "panels", "tile_k", "unroll_k"}, 40);
}

TEST_CASE("matmul template: random points of its space match the reference (packed B, K chunks, tile order)",
          "[spaces]") {
  // Two runtime inputs, so B is packable. 16x128x64: powers of two, K chunks {none, 64}; 12x96x40
  // (with a bias + relu tail): tile_j {1,2,4,5,8,10,20,40}, tile_i {1,2,3,4,6,12}, K chunks
  // {none, 48} that tile_k 16 does not divide; batched, B with a batch dim of its own.
  struct Case {
    relay::Shape a, b;
    bool tail;
  };
  for (const Case& c : {Case{{16, 128}, {128, 64}, false}, Case{{12, 96}, {96, 40}, true},
                        Case{{2, 6, 96}, {2, 96, 24}, false}}) {
    auto l = opsb_test::lower_call("nn.matmul", {relay::tensor_type(f32, c.a), relay::tensor_type(f32, c.b)}, {});
    te::Tensor mm = l.outputs[0];
    HostTensor a = random_tensor(f32, c.a, 11), b = random_tensor(f32, c.b, 12);
    opsb_ref::Dense want(opsb_ref::matmul(a, b));
    opsb_test::Lowered run = l;
    std::vector<HostTensor> inputs = {a, b};
    if (c.tail) {
      int64_t n = c.b.back();
      te::Tensor bias = te::placeholder({n}, f32, "bias");
      run.inputs.push_back(bias);
      run.outputs = {te::compute(mm.shape(), [&](ir::Var i, ir::Var j) {
        return ir::max(mm(i, j) + bias(j), ir::make_zero(f32));
      }, "relu")};
      inputs.push_back(random_tensor(f32, {n}, 13));
      opsb_ref::for_each(want.shape, [&](const opsb_ref::Index& i) {
        want.at(i) = std::max(0.0, want.at(i) + inputs[2].double_at(i[1]));
      });
    }
    INFO("a " << relay::shape_str(c.a) << " b " << relay::shape_str(c.b));
    check_space(run.outputs, mm, run, inputs, want.to(f32),
                {"tile_j", "tile_i", "tile_k", "pack_b", "tile_kc", "order"}, 50 + static_cast<uint32_t>(c.b.back()));
  }
}

TEST_CASE("matmul with a constant B as dense: random points of its space match the reference (odd N, padded rows)",
          "[spaces]") {
  // A [1, 13, 256] x constant B [256, 37]: 13 rows padded to whole register tiles, 37 columns
  // in zero-padded panels, the batch dim in the parallel loop, K long enough for chunks (and
  // sweeps). B packed at compile time (as prepack_weights does) and, for a weight that is not
  // packed, inside the kernel.
  relay::Shape as = {1, 13, 256}, bs = {256, 37};
  HostTensor a = random_tensor(f32, as, 14), b = random_tensor(f32, bs, 15);
  relay::Expr av = relay::make_var("a", relay::tensor_type(f32, as)), bc = relay::make_constant(b);
  relay::Expr call = relay::make_call("nn.matmul", {av, bc}, {}, "node");
  relay::FusedGroup group;
  group.calls = {call};
  group.root = group.anchor = call;
  group.pattern = call.as<relay::CallNode>()->op->pattern;
  group.inputs = {av, bc};
  opsb_test::Lowered l;
  l.call = call;
  l.strategy = lower::select_strategy(group, l.target);
  REQUIRE(l.strategy.template_name == "dense");
  REQUIRE(l.strategy.packing.has_value());
  HostTensor want = opsb_ref::matmul(a, b);
  const auto* c = call.as<relay::CallNode>();
  for (bool prepacked : {true, false}) {
    INFO("prepacked " << prepacked);
    HostTensor w = prepacked ? l.strategy.packing->pack(b) : b;
    l.inputs = {te::placeholder(as, f32, "a"), te::placeholder(w.shape(), f32, "b")};
    const lower::OpLowering& f = prepacked ? l.strategy.packing->lower_packed : l.strategy.lower;
    l.outputs = f(l.inputs, c->attrs, c->type);
    check_space(l.outputs, l.outputs[0], l, {a, w}, want, {"tile_i", "panels", "tile_k", "sweep"}, 60 + prepacked);
  }
}

TEST_CASE("depthwise and global pooling defaults follow the target's lanes and registers", "[spaces]") {
  // A 3x3 depthwise conv over 32x32: a row of whole registers on every level. AVX2 (8 lanes, 16
  // registers), AVX-512 (16 lanes, 32 registers) and NEON (4 lanes, 32 registers).
  relay::Shape xs = {1, 8, 32, 32}, ws = {8, 1, 3, 3};
  std::map<std::string, int64_t> lanes_of;
  for (const char* spec : {"llvm -mcpu=x86-64-v3", "llvm -mcpu=x86-64-v4", "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1"}) {
    Target t = Target::parse(spec);
    INFO(spec << ": " << t.summary());
    auto l = opsb_test::lower_call("nn.conv2d", {relay::tensor_type(f32, xs), relay::tensor_type(f32, ws)},
                                   conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 8), t);
    schedule::ConfigSpace space;
    schedule::Config rec(&space);
    l.strategy.schedule(l.outputs, l.outputs[0], t, rec);
    const auto& a = rec.answers();
    const int64_t vw = a.at("vec_lanes")[0], nv = a.at("tile_ow")[1], ohr = a.at("tile_oh")[1];
    lanes_of[spec] = vw;
    CHECK(vw == t.lanes(32));
    // The tile's accumulators: enough for the FMA pipe, within half the register file, which
    // the tuner's row tiles reach.
    CHECK(nv * ohr <= t.facts.vector_registers / 2);
    CHECK(nv * ohr >= std::min(t.facts.fma_in_flight(), t.facts.vector_registers / 2));
    int64_t most_rows = 0;
    for (const auto& c : space.find("tile_oh")->candidates) most_rows = std::max(most_rows, c[1]);
    CHECK(most_rows == t.facts.vector_registers / 2);
    for (const auto& c : space.find("vec_lanes")->candidates) CHECK(c[0] <= t.lanes(32));
    for (const char* k : {"tile_ow", "tile_oh"})
      for (const auto& c : space.find(k)->candidates) CHECK(c[1] <= t.facts.vector_registers);  // scalars: 2x half

    // Global pooling: partial sums in one register of lanes x chains accumulators.
    auto g = opsb_test::lower_call("nn.global_avg_pool", {relay::tensor_type(f32, {1, 8, 14, 14})}, {}, t);
    te::Tensor sum = g.outputs[0].op().input_tensors()[0];
    te::Tensor lane = sum.op().input_tensors()[0], part = lane.op().input_tensors()[0];
    REQUIRE(part.op().name() == "global_avg_pool.sum.part");
    CHECK(part.shape()[3] == t.lanes(32));
    const int64_t chains = part.shape()[2];
    CHECK(chains >= 1);
    CHECK(chains <= t.facts.fma_in_flight());
    CHECK((chains == 1 || chains * t.lanes(32) * 4 <= 14 * 14));  // each chain at least 4 vectors long
  }
  CHECK(lanes_of["llvm -mcpu=x86-64-v3"] == 8);
  CHECK(lanes_of["llvm -mcpu=x86-64-v4"] == 16);
}
