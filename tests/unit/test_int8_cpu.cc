// Integer conv and dense (te/ops/nn_int8.h) under their CPU schedules, tensorized onto int8_dot
// (the depthwise conv: the float depthwise templates' exact float32 sums), in NCHW and blocked:
// exact against plain int64 reference loops at each x86 level this machine runs (znver4 and
// the host's own code: vpdpbusd where they have AVX-512 VNNI, inspected on every machine;
// x86-64-v3: AVX2's vpmaddwd; x86-64-v2: the plain widening form), for int8 and uint8 data with non-zero zero points, padding, strides and
// channel/output counts that are not multiples of 4 or L. Values span the whole int8/uint8
// range: x = 255 with w = 127 overflows the 16-bit pair sums of vpmaddubsw, the saturating form
// kiln must not use.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kiln/pipeline.h"
#include "schedule/templates/anchor_cpu.h"
#include "schedule/templates/depthwise_cpu.h"
#include "schedule/templates/int8_cpu.h"
#include "kiln/support/error.h"
#include "kiln/te/ops/nn_int8.h"
#include "kiln/te/ops/nn_winograd.h"
#include "test_codegen_util.h"

using namespace kiln;
using Catch::Matchers::Contains;
using runtime::NDArray;

namespace {

const ir::DataType kI8 = ir::DataType::i8(), kU8 = ir::DataType::u8();

// Values of dtype t: random over the whole range, or all at one extreme.
std::vector<int> values(size_t n, ir::DataType t, uint32_t seed, int fill = 1000) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(t.is_uint() ? 0 : -128, t.is_uint() ? 255 : 127);
  std::vector<int> v(n);
  for (int& x : v) x = fill == 1000 ? d(rng) : fill;
  return v;
}

NDArray array_of(const std::vector<int64_t>& shape, ir::DataType t, const std::vector<int>& v) {
  if (t.is_uint()) return NDArray::from_vector<uint8_t>(shape, test::dl_type(t), {v.begin(), v.end()});
  return NDArray::from_vector<int8_t>(shape, test::dl_type(t), {v.begin(), v.end()});
}

struct ConvCase {
  int64_t c, h, w, oc, k, stride, pad;
};

std::vector<int64_t> conv_reference(const ConvCase& q, const std::vector<int>& x, int zp, const std::vector<int>& w) {
  const int64_t oh = (q.h + 2 * q.pad - q.k) / q.stride + 1, ow = (q.w + 2 * q.pad - q.k) / q.stride + 1;
  std::vector<int64_t> out(q.oc * oh * ow, 0);
  for (int64_t o = 0; o < q.oc; ++o)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx) {
        int64_t acc = 0;
        for (int64_t c = 0; c < q.c; ++c)
          for (int64_t ky = 0; ky < q.k; ++ky)
            for (int64_t kx = 0; kx < q.k; ++kx) {
              int64_t iy = y * q.stride + ky - q.pad, ix = xx * q.stride + kx - q.pad;
              if (iy < 0 || iy >= q.h || ix < 0 || ix >= q.w) continue;  // padding is the real value 0
              acc += int64_t(x[(c * q.h + iy) * q.w + ix] - zp) * w[((o * q.c + c) * q.k + ky) * q.k + kx];
            }
        out[(o * oh + y) * ow + xx] = acc;
      }
  return out;
}

te::ops::ConvNdAttrs attrs_of(const ConvCase& q) {
  te::ops::ConvNdAttrs a;
  a.strides = {q.stride, q.stride};
  a.padding = {q.pad, q.pad, q.pad, q.pad};
  a.dilation = {1, 1};
  return a;
}

// Runs the conv module m (arguments x, w, conv) on data xv (zero point zp) and weights wv, and
// counts the outputs that differ from the int64 reference.
size_t wrong_outputs(const codegen::Module& m, const ConvCase& q, ir::DataType xt, int zp, const std::vector<int>& xv,
                     const std::vector<int>& wv, const std::vector<int64_t>& out_shape) {
  NDArray X = array_of({1, q.c, q.h, q.w}, xt, xv), W = array_of({q.oc, q.c, q.k, q.k}, kI8, wv);
  NDArray Y = NDArray::empty(out_shape, runtime::make_dtype(kDLInt, 32));
  test::run(m, "conv", {X, W, Y});
  std::vector<int32_t> got = Y.to_vector<int32_t>();
  std::vector<int64_t> want = conv_reference(q, xv, zp, wv);
  REQUIRE(got.size() == want.size());
  size_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != want[i];
  return wrong;
}

// The named x86 targets every machine builds and inspects (AVX-512 with VNNI, AVX2, SSE4.2), and
// the host's own CPU where it is none of them; each runs only where the host can
// (test::runs_here).
std::vector<std::string> x86_cpus() {
  std::vector<std::string> cpus = {"znver4", "x86-64-v3", "x86-64-v2"};
  const Target host = Target::host();
  if (host.is_x86() && std::find(cpus.begin(), cpus.end(), host.cpu) == cpus.end()) cpus.insert(cpus.begin(), host.cpu);
  return cpus;
}

// NCHW values (N = 1) in NCHW[b]c order.
std::vector<int> blocked(const std::vector<int>& v, int64_t c, int64_t hw, int64_t b) {
  std::vector<int> out(v.size());
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t i = 0; i < hw; ++i) out[((ch / b) * hw + i) * b + ch % b] = v[ch * hw + i];
  return out;
}

// Depthwise (one channel per group): the reference loop of a conv with c = 1 input channel
// per output, run for each channel.
std::vector<int64_t> depthwise_reference(const ConvCase& q, const std::vector<int>& x, int zp, const std::vector<int>& w) {
  const ConvCase one{1, q.h, q.w, 1, q.k, q.stride, q.pad};
  std::vector<int64_t> out;
  for (int64_t ch = 0; ch < q.c; ++ch) {
    std::vector<int> xc(x.begin() + ch * q.h * q.w, x.begin() + (ch + 1) * q.h * q.w);
    std::vector<int> wc(w.begin() + ch * q.k * q.k, w.begin() + (ch + 1) * q.k * q.k);
    std::vector<int64_t> o = conv_reference(one, xc, zp, wc);
    out.insert(out.end(), o.begin(), o.end());
  }
  return out;
}

}  // namespace

TEST_CASE("int8 conv2d tensorized onto the target's dot product is exact at each x86 level", "[int8]") {
  if (!Target::host().is_x86()) return;
  const std::vector<ConvCase> cases = {{3, 9, 9, 20, 3, 1, 1}, {16, 7, 7, 32, 1, 1, 0}, {5, 8, 8, 17, 3, 2, 1}};
  for (const std::string& cpu : x86_cpus()) {
    Target target = Target::parse("llvm -mcpu=" + cpu);
    te::ops::Int8Layout layout = schedule::int8_layout(target);
    for (ir::DataType xt : {kU8, kI8}) {
      for (size_t ci = 0; ci < cases.size(); ++ci) {
        const ConvCase& q = cases[ci];
        const int zp = xt.is_uint() ? 131 : -7;
        te::Tensor x = te::placeholder({1, q.c, q.h, q.w}, xt, "x");
        te::Tensor w = te::placeholder({q.oc, q.c, q.k, q.k}, kI8, "w");
        te::Tensor conv = te::ops::conv2d_int8(x, w, ir::make_const(xt, zp), attrs_of(q), layout, "conv");
        schedule::Config cfg;
        schedule::Schedule s = schedule::create({conv});
        schedule::schedule_conv2d_int8_cpu(s, conv, conv, target, cfg);
        codegen::Module m = kiln::build(s, {x, w, conv}, target, "conv");
        INFO(cpu << ", " << xt.str() << " data, case " << ci << ", config " << cfg.str());
        // The extremes (case 0): every product at the top of the range.
        int fill_x = ci == 0 ? (xt.is_uint() ? 255 : -128) : 1000, fill_w = ci == 0 ? (xt.is_uint() ? 127 : -128) : 1000;
        std::vector<int> xv = values(q.c * q.h * q.w, xt, 3 + ci, fill_x), wv = values(q.oc * q.c * q.k * q.k, kI8, 5 + ci, fill_w);
        if (ci == 0) {
          std::string text = m.assembly();
          if (target.facts.int8_dot == Int8Dot::kAvx512Vnni && xt.is_uint()) CHECK(test::contains(text, "vpdpbusd"));
          if (target.facts.int8_dot == Int8Dot::kAvx2) {
            // The pair form: a column's two int16 channels one broadcast load, a weight block one
            // sign extension; the byte shuffles of a four-channel form would show as vpshufb.
            CHECK(test::contains(text, "vpmaddwd"));
            CHECK(test::contains(text, "vpbroadcastd"));
            CHECK(test::contains(text, "vpmovsxbw"));
            CHECK_FALSE(test::contains(text, "vpshufb"));
          }
          CHECK_FALSE(test::contains(text, "vpmaddubsw"));
        }
        if (!test::runs_here(target)) continue;
        CHECK(wrong_outputs(m, q, xt, zp, xv, wv, conv.shape()) == 0);
      }
    }
  }
}

TEST_CASE("int8 Winograd conv2d on int16 pairs is exact, at the extremes too", "[int8]") {
  if (!Target::host().is_x86()) return;
  // AVX2's vpmaddwd (x86-64-v3) and the plain widening form (x86-64-v2) of the same int16 dots.
  const std::vector<ConvCase> cases = {{16, 9, 9, 20, 3, 1, 1}, {5, 8, 8, 17, 3, 1, 1}, {64, 14, 14, 64, 3, 1, 0},
                                       {9, 7, 10, 8, 3, 1, 1}};
  for (const std::string& cpu : std::vector<std::string>{"x86-64-v3", "x86-64-v2"}) {
    Target target = Target::parse("llvm -mcpu=" + cpu);
    for (ir::DataType xt : {kU8, kI8}) {
      for (size_t ci = 0; ci < cases.size(); ++ci) {
        const ConvCase& q = cases[ci];
        // Case 2 at the extremes: x - zp = 255 or -255 everywhere against weights of -128, the
        // largest transformed operands (|V| = 1020, |U'| = 1152).
        const bool extreme = ci == 2;
        const int zp = extreme ? (xt.is_uint() ? 0 : 127) : (xt.is_uint() ? 131 : -7);
        te::Tensor x = te::placeholder({1, q.c, q.h, q.w}, xt, "x");
        te::Tensor w = te::placeholder({q.oc, q.c, 3, 3}, kI8, "w");
        te::Tensor u = te::ops::winograd_int8_weight_transform(w, 8, "conv");
        te::Tensor conv = te::ops::conv2d_winograd_int8_packed(x, ir::make_const(xt, zp), u, q.oc, attrs_of(q), "conv");
        schedule::Config cfg;
        schedule::Schedule s = schedule::create({conv});
        schedule::schedule_conv_winograd_int8_cpu(s, conv, conv, target, cfg);
        codegen::Module m = kiln::build(s, {x, w, conv}, target, "conv");
        INFO(cpu << ", " << xt.str() << " data, case " << ci << ", config " << cfg.str());
        int fill_x = extreme ? (xt.is_uint() ? 255 : -128) : 1000, fill_w = extreme ? -128 : 1000;
        std::vector<int> xv = values(q.c * q.h * q.w, xt, 11 + ci, fill_x), wv = values(q.oc * q.c * 9, kI8, 13 + ci, fill_w);
        if (cpu == "x86-64-v3" && ci == 0) CHECK(test::contains(m.assembly(), "vpmaddwd"));
        if (!test::runs_here(target)) continue;
        CHECK(wrong_outputs(m, q, xt, zp, xv, wv, conv.shape()) == 0);
      }
    }
  }
}

TEST_CASE("int8 dense tensorized onto the target's dot product is exact at each x86 level", "[int8]") {
  if (!Target::host().is_x86()) return;
  for (const std::string& cpu : x86_cpus()) {
    Target target = Target::parse("llvm -mcpu=" + cpu);
    te::ops::Int8Layout layout = schedule::int8_layout(target);
    for (ir::DataType xt : {kU8, kI8}) {
      for (auto [m_rows, k, n] : std::vector<std::array<int64_t, 3>>{{6, 37, 40}, {8, 64, 32}, {1, 256, 19}}) {
        const int zp = xt.is_uint() ? 3 : -100;
        te::Tensor x = te::placeholder({m_rows, k}, xt, "x");
        te::Tensor w = te::placeholder({n, k}, kI8, "w");
        te::Tensor d = te::ops::dense_int8(x, w, ir::make_const(xt, zp), layout, "dense");
        schedule::Config cfg;
        schedule::Schedule s = schedule::create({d});
        schedule::schedule_dense_int8_cpu(s, d, d, target, cfg);
        codegen::Module mod = kiln::build(s, {x, w, d}, target, "dense");
        if (!test::runs_here(target)) continue;
        INFO(cpu << ", " << xt.str() << " data, " << m_rows << "x" << k << "x" << n << ", config " << cfg.str());
        std::vector<int> xv = values(m_rows * k, xt, 7), wv = values(n * k, kI8, 9);
        NDArray X = array_of({m_rows, k}, xt, xv), W = array_of({n, k}, kI8, wv);
        NDArray Y = NDArray::empty(d.shape(), runtime::make_dtype(kDLInt, 32));
        test::run(mod, "dense", {X, W, Y});
        std::vector<int32_t> got = Y.to_vector<int32_t>();
        size_t wrong = 0;
        for (int64_t i = 0; i < m_rows; ++i)
          for (int64_t j = 0; j < n; ++j) {
            int64_t acc = 0;
            for (int64_t q = 0; q < k; ++q) acc += int64_t(xv[i * k + q] - zp) * wv[j * k + q];
            wrong += got[i * n + j] != acc;
          }
        CHECK(wrong == 0);
      }
    }
  }
}

TEST_CASE("int8_dot tensorization refuses a nest that is not L lanes by G channels", "[int8]") {
  Target target = Target::host();
  te::ops::Int8Layout layout = schedule::int8_layout(target);
  te::Tensor x = te::placeholder({4, 32}, kU8, "x");
  te::Tensor w = te::placeholder({2 * layout.lanes, 32}, kI8, "w");
  te::Tensor d = te::ops::dense_int8(x, w, ir::make_const(kU8, 0), layout, "dense");
  te::Tensor blocked = d.op().input_tensors()[0];
  // The blocked stage's loops as the template orders them: rows, channel groups, block, lanes, the group.
  auto nest = [&](schedule::Schedule& s) {
    schedule::Stage b = s[blocked];
    b.reorder({b.op_axis()[0], b.reduce_axis()[0], b.op_axis()[1], b.op_axis()[2], b.reduce_axis()[1]});
    return b;
  };
  schedule::Schedule s = schedule::create({d});
  // The intrinsic declared for twice the lanes: the lane axis does not fit.
  nest(s).tensorize(s[blocked].op_axis()[2], schedule::int8_dot_intrin({2 * layout.lanes, layout.data, layout.group}));
  REQUIRE_THROWS_WITH(kiln::build(s, {x, w, d}, target, "dense"),
                      Contains("does not match intrinsic 'int8_dot'") && Contains("has extent " + std::to_string(layout.lanes)));
  // The intrinsic declared for another data type than the layout packs: the operand's dtype differs.
  schedule::Schedule s2 = schedule::create({d});
  const ir::DataType other = layout.data == kI8 ? kU8 : kI8;
  nest(s2).tensorize(s2[blocked].op_axis()[2], schedule::int8_dot_intrin({layout.lanes, other, layout.group}));
  REQUIRE_THROWS_WITH(kiln::build(s2, {x, w, d}, target, "dense"), Contains("cannot be input 'a'"));
}

TEST_CASE("int8 conv and dense name the operand of a wrong dtype", "[int8]") {
  te::ops::Int8Layout layout{16, kU8, 4};
  te::Tensor xf = te::placeholder({2, 8}, ir::DataType::f32(), "xf");
  te::Tensor w = te::placeholder({4, 8}, kI8, "w");
  REQUIRE_THROWS_WITH(te::ops::dense_int8(xf, w, ir::make_const(kU8, 0), layout),
                      Contains("data 'xf' must be int8 or uint8, got float32"));
  te::Tensor x = te::placeholder({2, 8}, kU8, "x");
  te::Tensor wu = te::placeholder({4, 8}, kU8, "wu");
  REQUIRE_THROWS_WITH(te::ops::dense_int8(x, wu, ir::make_const(kU8, 0), layout), Contains("weight 'wu' must be int8"));
  REQUIRE_THROWS_WITH(te::ops::dense_int8(x, w, ir::make_const(kI8, 0), layout),
                      Contains("the data's zero point must be uint8"));
  // Blocked layouts: data not in the blocks the conv is told of, outputs not filling its blocks.
  te::ops::ConvNdAttrs a;
  a.strides = {1, 1};
  a.padding = {0, 0, 0, 0};
  a.dilation = {1, 1};
  te::Tensor xb = te::placeholder({1, 2, 5, 5, 8}, kU8, "xb");
  te::Tensor wc = te::placeholder({12, 16, 1, 1}, kI8, "wc");
  REQUIRE_THROWS_WITH(te::ops::conv2d_int8(xb, wc, ir::make_const(kU8, 0), a, layout, "conv", te::Tensor(), {4, 4}),
                      Contains("data 'xb' must be [N, C/4, H, W, 4]"));
  REQUIRE_THROWS_WITH(te::ops::conv2d_int8(xb, wc, ir::make_const(kU8, 0), a, layout, "conv", te::Tensor(), {8, 8}),
                      Contains("12 output channels do not fill blocks of 8"));
}

TEST_CASE("the integer Winograd conv names a bad operand or a channel count its sums could overflow", "[int8]") {
  te::ops::ConvNdAttrs a;
  a.strides = {1, 1};
  a.padding = {1, 1, 1, 1};
  a.dilation = {1, 1};
  te::Tensor w = te::placeholder({8, 16, 3, 3}, kI8, "w");
  te::Tensor u = te::ops::winograd_int8_weight_transform(w, 8, "conv");
  te::Tensor xf = te::placeholder({1, 16, 6, 6}, ir::DataType::f32(), "xf");
  REQUIRE_THROWS_WITH(te::ops::conv2d_winograd_int8_packed(xf, ir::make_const(ir::DataType::f32(), 0), u, 8, a),
                      Contains("needs int8 or uint8 data") && Contains("xf float32"));
  te::Tensor x = te::placeholder({1, 12, 6, 6}, kU8, "x");
  REQUIRE_THROWS_WITH(te::ops::conv2d_winograd_int8_packed(x, ir::make_const(kU8, 0), u, 8, a),
                      Contains("is not [16, OC/L, C/2, L, 2] int16 for 8 outputs of 12 channels"));
  const int64_t many = te::ops::kWinogradInt8MaxChannels + 2;
  te::Tensor xm = te::placeholder({1, many, 6, 6}, kU8, "xm");
  te::Tensor um = te::placeholder({16, 1, many / 2, 8, 2}, ir::DataType::i16(), "um");
  REQUIRE_THROWS_WITH(te::ops::conv2d_winograd_int8_packed(xm, ir::make_const(kU8, 0), um, 8, a),
                      Contains(std::to_string(many) + " channels could overflow"));
  REQUIRE_THROWS_WITH(te::ops::winograd_int8_weight_transform(te::placeholder({8, 16, 3, 3}, kU8, "wu"), 8),
                      Contains("needs an int8 weight [OC, C, 3, 3], got wu"));
}

TEST_CASE("int8 conv2d in blocked NCHW[b]c is exact, from NCHW or blocked data", "[int8]") {
  if (!Target::host().is_x86()) return;
  const ConvCase q{16, 7, 9, 24, 3, 2, 1};
  for (const std::string& cpu : x86_cpus()) {
    Target target = Target::parse("llvm -mcpu=" + cpu);
    te::ops::Int8Layout layout = schedule::int8_layout(target);
    const int64_t b = layout.lanes == 16 ? 8 : layout.lanes;  // 24 outputs: whole blocks of b
    for (int64_t in_block : {int64_t{0}, b}) {
      const ir::DataType xt = in_block ? kU8 : kI8;
      const int zp = xt.is_uint() ? 200 : -100;
      te::Tensor x = in_block ? te::placeholder({1, q.c / b, q.h, q.w, b}, xt, "x")
                              : te::placeholder({1, q.c, q.h, q.w}, xt, "x");
      te::Tensor w = te::placeholder({q.oc, q.c, q.k, q.k}, kI8, "w");
      te::Tensor conv = te::ops::conv2d_int8(x, w, ir::make_const(xt, zp), attrs_of(q), layout, "conv", te::Tensor(),
                                             {in_block, b});
      REQUIRE(conv.ndim() == 5);
      schedule::Config cfg;
      schedule::Schedule s = schedule::create({conv});
      schedule::schedule_conv2d_int8_cpu(s, conv, conv, target, cfg);
      codegen::Module m = kiln::build(s, {x, w, conv}, target, "conv");
      if (!test::runs_here(target)) continue;
      INFO(cpu << ", data block " << in_block << ", config " << cfg.str());
      std::vector<int> xv = values(q.c * q.h * q.w, xt, 21), wv = values(q.oc * q.c * 9, kI8, 22);
      NDArray X = array_of(x.shape(), xt, in_block ? blocked(xv, q.c, q.h * q.w, b) : xv);
      NDArray W = array_of(w.shape(), kI8, wv), Y = NDArray::empty(conv.shape(), runtime::make_dtype(kDLInt, 32));
      test::run(m, "conv", {X, W, Y});
      std::vector<int32_t> got = Y.to_vector<int32_t>();
      const int64_t pixels = conv.shape()[2] * conv.shape()[3];
      std::vector<int64_t> want = conv_reference(q, xv, zp, wv);
      size_t wrong = 0;
      for (int64_t o = 0; o < q.oc; ++o)
        for (int64_t i = 0; i < pixels; ++i) wrong += got[((o / b) * pixels + i) * b + o % b] != want[o * pixels + i];
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("int8 depthwise conv2d sums exactly, in NCHW and blocked, at the extremes too", "[int8]") {
  if (!Target::host().is_x86()) return;
  // Windows of 3x3 (stride 1 and 2) and 5x5; case 0 at the extremes: x - zp = 255 or -255
  // against weights of -128 in every tap.
  const std::vector<ConvCase> cases = {{16, 9, 11, 16, 3, 1, 1}, {8, 12, 13, 8, 3, 2, 1}, {24, 7, 7, 24, 5, 1, 2}};
  for (const std::string& cpu : x86_cpus()) {
    Target target = Target::parse("llvm -mcpu=" + cpu);
    const int64_t b = 8;
    for (int64_t block : {int64_t{0}, b}) {
      for (ir::DataType xt : {kU8, kI8}) {
        for (size_t ci = 0; ci < cases.size(); ++ci) {
          const ConvCase& q = cases[ci];
          const bool extreme = ci == 0;
          const int zp = extreme ? (xt.is_uint() ? 0 : 127) : (xt.is_uint() ? 131 : -7);
          te::Tensor x = block ? te::placeholder({1, q.c / b, q.h, q.w, b}, xt, "x")
                               : te::placeholder({1, q.c, q.h, q.w}, xt, "x");
          te::Tensor w = block ? te::placeholder({q.c / b, q.k, q.k, b}, kI8, "w")
                               : te::placeholder({q.c, 1, q.k, q.k}, kI8, "w");
          te::ops::ConvNdAttrs a = attrs_of(q);
          a.groups = q.c;
          te::Tensor dw = te::ops::depthwise_conv2d_int8(x, w, ir::make_const(xt, zp), a, target.lanes(32), "dw");
          schedule::Config cfg;
          schedule::Schedule s = schedule::schedule_anchor_cpu(
              {dw}, dw, block ? schedule::schedule_depthwise_nchwc_cpu : schedule::schedule_depthwise_cpu, target, cfg);
          codegen::Module m = kiln::build(s, {x, w, dw}, target, "dw");
          if (!test::runs_here(target)) continue;
          INFO(cpu << ", " << xt.str() << " data, block " << block << ", case " << ci << ", config " << cfg.str());
          int fill_x = extreme ? (xt.is_uint() ? 255 : -128) : 1000, fill_w = extreme ? -128 : 1000;
          std::vector<int> xv = values(q.c * q.h * q.w, xt, 31 + ci, fill_x), wv = values(q.c * q.k * q.k, kI8, 33 + ci, fill_w);
          NDArray X = array_of(x.shape(), xt, block ? blocked(xv, q.c, q.h * q.w, b) : xv);
          NDArray W = array_of(w.shape(), kI8, block ? blocked(wv, q.c, q.k * q.k, b) : wv);
          NDArray Y = NDArray::empty(dw.shape(), runtime::make_dtype(kDLInt, 32));
          test::run(m, "dw", {X, W, Y});
          std::vector<int32_t> got = Y.to_vector<int32_t>();
          std::vector<int64_t> want = depthwise_reference(q, xv, zp, wv);
          const int64_t pixels = dw.shape()[2] * dw.shape()[3];
          size_t wrong = 0;
          for (int64_t ch = 0; ch < q.c; ++ch)
            for (int64_t i = 0; i < pixels; ++i)
              wrong += got[block ? ((ch / b) * pixels + i) * b + ch % b : ch * pixels + i] != want[ch * pixels + i];
          CHECK(wrong == 0);
        }
      }
    }
  }
}

TEST_CASE("the int8 depthwise conv names an operand of a wrong dtype or shape", "[int8]") {
  te::ops::ConvNdAttrs a;
  a.strides = {1, 1};
  a.padding = {1, 1, 1, 1};
  a.dilation = {1, 1};
  a.groups = 8;
  te::Tensor x = te::placeholder({1, 8, 6, 6}, kU8, "x");
  te::Tensor w = te::placeholder({8, 1, 3, 3}, kI8, "w");
  REQUIRE_THROWS_WITH(te::ops::depthwise_conv2d_int8(te::placeholder({1, 8, 6, 6}, ir::DataType::f32(), "xf"), w,
                                                     ir::make_const(ir::DataType::f32(), 0), a, 8),
                      Contains("data 'xf' must be int8 or uint8, got float32"));
  REQUIRE_THROWS_WITH(te::ops::depthwise_conv2d_int8(x, te::placeholder({8, 1, 3, 3}, kU8, "wu"), ir::make_const(kU8, 0), a, 8),
                      Contains("weight 'wu' must be int8"));
  REQUIRE_THROWS_WITH(te::ops::depthwise_conv2d_int8(x, w, ir::make_const(kI8, 0), a, 8),
                      Contains("the data's zero point must be uint8, got int8"));
  REQUIRE_THROWS_WITH(te::ops::depthwise_conv2d_int8(te::placeholder({8, 6, 6}, kU8, "x3"), w, ir::make_const(kU8, 0), a, 8),
                      Contains("data 'x3' and weight 'w' must be [N, C, H, W] and [OC, 1, KY, KX]"));
}
