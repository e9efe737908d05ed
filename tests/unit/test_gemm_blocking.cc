// The matrix-product defaults follow the target (schedule/templates/gemm_blocking.h): the
// register block fits the register file and hides the FMA latency on every instruction set,
// differs between AVX2 and AVX-512, and is what the dense and matmul templates default to.
#include <catch2/catch.hpp>

#include "schedule/templates/gemm_blocking.h"
#include "test_ops_b_util.h"

using namespace kiln;
using schedule::RegisterBlock;

namespace {
const auto f32 = relay::DataType::f32();

// The knob's default answer for the template of `op` on `target`.
std::vector<int64_t> default_of(const opsb_test::Lowered& l, const std::string& knob) {
  schedule::Config cfg;
  l.template_schedule(cfg);
  return cfg.answers().at(knob);
}
}  // namespace

TEST_CASE("register block: fits the register file and hides the FMA latency on each target", "[gemm_blocking]") {
  for (const char* spec : {"llvm -mcpu=x86-64-v2", "llvm -mcpu=x86-64-v3", "llvm -mcpu=x86-64-v4",
                           "llvm -mcpu=skylake-avx512", "llvm -mcpu=znver3", "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1"}) {
    Target t = Target::parse(spec);
    for (int64_t m : {1, 7, 128, 1024}) {
      for (int64_t n : {1, 40, 64, 1000, 50257}) {
        RegisterBlock b = schedule::register_block(t, m, n);
        INFO(spec << " m " << m << " n " << n << ": " << b.mr << " x " << b.nv << " vectors");
        CHECK(b.mr * b.nv + b.nv + 1 <= t.facts.vector_registers);
        CHECK(b.mr <= m);
        CHECK((b.nv & (b.nv - 1)) == 0);
        if (m >= 128 && n >= 1000) CHECK(b.mr * b.nv >= t.facts.fma_in_flight());
      }
    }
  }
  // BLIS's analytical blocks: 6x16 for AVX2 (16 registers of 8 floats), 6x64 for AVX-512, whose
  // 4x64 keeps enough accumulators in flight where 4 divides M (no padded rows). Named CPUs: an
  // ISA level on this triple times like the host, which differs between machines.
  Target v3 = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=znver3");
  Target v4 = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512");
  RegisterBlock avx2 = schedule::register_block(v3, 1024, 1024), avx512 = schedule::register_block(v4, 1024, 1024);
  CHECK(avx2.mr == 6);
  CHECK(avx2.nv == 2);
  CHECK(avx512.mr == 4);
  CHECK(avx512.nv == 4);
  CHECK(schedule::register_block(v4, 1023, 1024).mr == 6);
  // Rows are balanced over the tiles: 8 rows as 2 x 4, not 6 + 2 padded to 12.
  CHECK(schedule::register_block(v3, 8, 1024).mr == 4);
  CHECK(schedule::padded_rows(128, 6) == 132);
}

TEST_CASE("dense and matmul templates default to the target's register block", "[gemm_blocking]") {
  Target v3 = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=znver3");
  Target v4 = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512");
  auto mm = [&](const Target& t) {
    return opsb_test::lower_call("nn.matmul", {relay::tensor_type(f32, {128, 256}), relay::tensor_type(f32, {256, 512})},
                                 {}, t);
  };
  auto dense = [&](const Target& t) {
    return opsb_test::lower_call("nn.dense", {relay::tensor_type(f32, {128, 256}), relay::tensor_type(f32, {1000, 256})},
                                 {}, t);
  };
  // AVX2: rows padded to 132 (22 tiles of 6), 2 vectors; AVX-512: 32 tiles of 4, 4 vectors.
  CHECK(default_of(mm(v3), "tile_i") == std::vector<int64_t>{22, 6});
  CHECK(default_of(mm(v3), "tile_j") == std::vector<int64_t>{32, 16});
  CHECK(default_of(mm(v4), "tile_j") == std::vector<int64_t>{8, 64});
  CHECK(default_of(dense(v3), "panels") == std::vector<int64_t>{2});
  CHECK(default_of(dense(v4), "panels") == std::vector<int64_t>{4});
  CHECK(default_of(dense(v4), "tile_i") == std::vector<int64_t>{32, 4});
  // The B panel of 256 x 16 floats (16 KiB) fits half of L1 at most on AVX2; 256 x 64 does not.
  CHECK(default_of(mm(v3), "pack_b") == std::vector<int64_t>{0});
  CHECK(default_of(mm(v4), "pack_b") == std::vector<int64_t>{1});
}
