// Defaults from the target: the register-tile model (schedule/templates/register_tile.h) and the
// conv and Winograd templates' default tiles on AVX2, AVX-512 and NEON targets.
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>

#include "schedule/templates/conv2d_cpu.h"
#include "kiln/pipeline.h"
#include "kiln/te/ops/nn_conv.h"
#include "kiln/ir/printer.h"
#include "schedule/templates/anchor_cpu.h"
#include "schedule/templates/int8_cpu.h"
#include "schedule/templates/register_tile.h"
#include "test_gpu_util.h"
#include "test_ops_b_util.h"

using namespace kiln;
using schedule::RegisterTile;

namespace {
const auto f32 = relay::DataType::f32();
const Target kAvx2 = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v3");
const Target kAvx512 = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512");
const Target kNeon = Target::parse("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1");

int64_t knob(const std::string& cfg, const std::string& name, int part = -1) {
  std::smatch m;
  if (part < 0) {
    std::regex re(name + "=([0-9]+)");
    REQUIRE(std::regex_search(cfg, m, re));
    return std::stoll(m[1]);
  }
  std::regex re(name + "=\\[([0-9]+),([0-9]+)\\]");
  REQUIRE(std::regex_search(cfg, m, re));
  return std::stoll(m[1 + part]);
}

// The default config of the strategy's template for a conv2d of these shapes on `target`.
std::string default_config(const Target& target, relay::Shape xs, relay::Shape ws, int64_t stride, int64_t pad) {
  opsb_test::Lowered l = opsb_test::lower_call(
      "nn.conv2d", {relay::tensor_type(f32, xs), relay::tensor_type(f32, ws)},
      opsb_test::conv_attrs({stride, stride}, {pad, pad, pad, pad}, {1, 1}, 1), target);
  schedule::Config cfg;
  l.template_schedule(cfg);
  return l.strategy.template_name + ": " + cfg.str();
}
}  // namespace

TEST_CASE("register tiles: the model counts registers, FMA issue, loads and latency", "[target][spaces]") {
  CHECK(schedule::tile_registers({2, 6}) == 15);
  CHECK(schedule::tile_efficiency(kAvx2, {2, 6}) == 1.0);    // 12 FMAs at 2 a cycle, 8 loads
  CHECK(schedule::tile_efficiency(kAvx2, {2, 7}) == 0.0);    // 17 registers of 16: it spills
  CHECK(schedule::tile_efficiency(kAvx512, {2, 7}) == 1.0);  // 32 registers
  CHECK(schedule::tile_efficiency(kAvx2, {1, 2}) == 0.25);   // 2 chains for 8 FMAs in flight
  // The best-ranked tiles fit the register file and hide the FMA latency.
  std::vector<RegisterTile> all;
  for (int64_t v : {1, 2, 4})
    for (int64_t s = 1; s <= 30; ++s) all.push_back({v, s});
  for (const Target* t : {&kAvx2, &kAvx512, &kNeon}) {
    RegisterTile best = *std::min_element(all.begin(), all.end(), [&](const RegisterTile& a, const RegisterTile& b) {
      return schedule::tile_rank(*t, a) < schedule::tile_rank(*t, b);
    });
    INFO(t->summary() << ": " << best.vectors << " x " << best.scalars);
    CHECK(schedule::tile_registers(best) < t->facts.vector_registers);
    CHECK(best.accumulators() >= t->facts.fma_in_flight());
  }
}

TEST_CASE("conv defaults follow the target: tiles within each register file", "[target][spaces]") {
  struct Layer {
    relay::Shape x, w;
    int64_t stride, pad;
  };
  // resnet18's layers (direct and Winograd) and a mobilenet 1x1 conv.
  const std::vector<Layer> layers = {{{1, 64, 56, 56}, {64, 64, 3, 3}, 1, 1},   {{1, 64, 56, 56}, {128, 64, 3, 3}, 2, 1},
                                     {{1, 256, 14, 14}, {256, 256, 3, 3}, 1, 1}, {{1, 512, 7, 7}, {512, 512, 3, 3}, 1, 1},
                                     {{1, 3, 224, 224}, {64, 3, 7, 7}, 2, 3},    {{1, 32, 112, 112}, {16, 32, 1, 1}, 1, 0}};
  for (const Layer& l : layers) {
    for (const Target* t : {&kAvx2, &kAvx512, &kNeon}) {
      std::string cfg = default_config(*t, l.x, l.w, l.stride, l.pad);
      INFO(t->summary() << "\n  " << cfg);
      const bool wino = cfg.rfind("conv_winograd", 0) == 0;
      int64_t vectors = knob(cfg, "oc_blocks");
      int64_t scalars = wino ? knob(cfg, "tile_tw", 1) : knob(cfg, "tile_oh", 1) * knob(cfg, "tile_ow", 1);
      CHECK(schedule::tile_registers({vectors, scalars}) <= t->facts.vector_registers);
      CHECK(schedule::tile_efficiency(*t, {vectors, scalars}) > 0.5);
    }
  }
  // AVX2 and AVX-512 get different tiles for the same layer (16 vs 32 registers, 8 vs 16 lanes).
  CHECK(default_config(kAvx2, {1, 64, 56, 56}, {128, 64, 3, 3}, 2, 1) !=
        default_config(kAvx512, {1, 64, 56, 56}, {128, 64, 3, 3}, 2, 1));
}

TEST_CASE("conv defaults: widths without a vectorizable divisor overhang only where the write-out dominates",
          "[target][spaces]") {
  for (const Target* t : {&kAvx2, &kAvx512}) {
    INFO(t->summary());
    const int64_t lanes = t->lanes(32);
    // squeezenet's stem, 3x3 s2 3->64 to 111 columns: 27 products per output, so the transposed
    // scalar write-out would cost more than computing one column in vain.
    std::string stem = default_config(*t, {1, 3, 224, 224}, {64, 3, 3, 3}, 2, 0);
    INFO(stem);
    const int64_t owr = knob(stem, "tile_ow", 1);
    CHECK(111 % owr != 0);
    CHECK(knob(stem, "tile_ow", 0) == (111 + owr - 1) / owr);
    CHECK(schedule::vectorized_write_out(owr, lanes));
    CHECK(knob(stem, "vec_out") == 1);
    // squeezenet's classifier, 1x1 512->1000 at 13x13: a long reduction; 16 columns for 13
    // would waste 23% of its FMAs, so it keeps a divisor of 13.
    std::string head = default_config(*t, {1, 512, 13, 13}, {1000, 512, 1, 1}, 1, 0);
    INFO(head);
    CHECK(13 % knob(head, "tile_ow", 1) == 0);
  }
}

TEST_CASE("int8 dense defaults: AVX2's two-instruction dot ranks tiles by issue, VNNI's by the FMA model",
          "[target][spaces][int8]") {
  // bert_mini_int8's feed-forward layer: 128 rows x 256 channels -> 1024 outputs.
  auto dense_config = [](const Target& t) {
    te::Tensor x = te::placeholder({128, 256}, ir::DataType::u8(), "x");
    te::Tensor w = te::placeholder({1024, 256}, ir::DataType::i8(), "w");
    te::Tensor d = te::ops::dense_int8(x, w, ir::make_const(ir::DataType::u8(), 3), schedule::int8_layout(t), "dense");
    schedule::Config cfg;
    schedule::Schedule s = schedule::create({d});
    schedule::schedule_dense_int8_cpu(s, d, d, t, cfg);
    return cfg.str();
  };
  // AVX2: 8 rows x 1 block (one weight load, eight broadcasts) issues 25 instructions for 8
  // accumulators; 4 rows x 2 blocks 22 for 8, and it leaves a 16th register for vpmaddwd's
  // product beside 8 accumulators, 2 weights and the broadcast.
  std::string avx2 = dense_config(kAvx2);
  INFO(avx2);
  CHECK(knob(avx2, "oc_blocks") == 2);
  CHECK(knob(avx2, "tile_m", 1) == 4);
  // AVX-512 VNNI (one vpdpbusd a product): the register model's tile, within 32 registers.
  const Target vnni = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=cascadelake");
  std::string wide = dense_config(vnni);
  INFO(wide);
  const RegisterTile tile{knob(wide, "oc_blocks"), knob(wide, "tile_m", 1)};
  CHECK(schedule::tile_efficiency(vnni, tile) == 1.0);
  CHECK(tile.accumulators() >= vnni.facts.fma_in_flight());
}

TEST_CASE("blocked conv defaults keep the window rolled where its unrolled broadcasts would spill", "[target][spaces]") {
  // resnet18's 3 x 3 512 -> 512 conv at 7 x 7 in NCHW[x]c. AVX2: 7 columns x 1 block, and
  // with kx unrolled LLVM shares 9 broadcasts among the taps: 7 + 1 + 9 = 17 of 16 registers, so
  // ky and kx stay loops (pragma unroll 1). AVX-512's 32 registers hold the tile unrolled.
  auto lowered = [](const Target& t) {
    const int64_t x = t.lanes(32);
    te::Tensor in = te::placeholder({1, 512 / x, 7, 7, x}, ir::DataType::f32(), "x");
    te::Tensor w = te::placeholder({512 / x, 512 / x, 3, 3, x, x}, ir::DataType::f32(), "w");
    te::ops::ConvNdAttrs a{{1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {}};
    te::Tensor y = te::ops::conv2d_nchwc(in, w, a);
    schedule::Config cfg;
    schedule::Schedule s = schedule::schedule_anchor_cpu({y}, y, schedule::schedule_conv_nchwc_cpu, t, cfg);
    return ir::to_string(kiln::loop_ir(s, {in, w, y}, "conv")) + "\n" + cfg.str();
  };
  const std::string avx2 = lowered(kAvx2), avx512 = lowered(kAvx512);
  {
    INFO(avx2);
    CHECK(knob(avx2, "tile_ow", 1) == 7);
    CHECK(knob(avx2, "oc_blocks") == 1);
    CHECK(test::occurrences(avx2, "pragma_unroll") == 2);
  }
  INFO(avx512);
  CHECK(test::occurrences(avx512, "pragma_unroll") == 0);
}
