// The Target: spec parsing and printing, host detection, and the facts schedules read from it.
#include <catch2/catch.hpp>

#include "kiln/support/error.h"
#include "kiln/target/target.h"

using kiln::Target;
using kiln::TargetKind;

TEST_CASE("Target parses, prints and detects the host", "[target]") {
  Target h = Target::host();
  REQUIRE(h.kind == TargetKind::kLLVM);
  REQUIRE_FALSE(h.cpu.empty());
  REQUIRE_FALSE(h.triple.empty());
  REQUIRE(h.facts.cores >= 1);
  REQUIRE(h.facts.l1d_bytes >= 8 * 1024);
  REQUIRE(h.facts.l2_bytes > h.facts.l1d_bytes);
  REQUIRE(Target::parse("llvm") == h);
  REQUIRE(Target::parse(h.str()) == h);
  Target t = Target::parse("llvm -mtriple=aarch64-linux-gnu -mattr=+neon");
  REQUIRE(t.cpu == "generic");
  REQUIRE(t.features == "+neon");
  REQUIRE(t.has_feature("neon"));
  REQUIRE_FALSE(t.has_feature("ne"));
  REQUIRE(Target::parse(t.str()) == t);
  REQUIRE(Target::parse("llvm -mcpu=skylake-avx512").cpu == "skylake-avx512");
}

TEST_CASE("Target facts follow the instruction set", "[target]") {
  Target v2 = Target::parse("llvm -mcpu=x86-64-v2");
  Target v3 = Target::parse("llvm -mcpu=x86-64-v3");
  Target v4 = Target::parse("llvm -mcpu=x86-64-v4");
  if (!v3.is_x86()) return;  // the host's triple decides; these are x86 ISA levels
  CHECK(v2.facts.vector_bits == 128);
  CHECK(v2.lanes(32) == 4);
  CHECK_FALSE(v2.facts.fma);
  CHECK(v3.facts.vector_bits == 256);
  CHECK(v3.lanes(32) == 8);
  CHECK(v3.facts.vector_registers == 16);
  CHECK(v3.facts.fma);
  CHECK(v4.facts.vector_bits == 512);
  CHECK(v4.lanes(32) == 16);
  CHECK(v4.lanes(16) == 32);
  CHECK(v4.facts.vector_registers == 32);
  // An ISA level names no machine: caches and cores are this one's.
  CHECK(v3.facts.l2_bytes == Target::host().facts.l2_bytes);
  CHECK(v3.facts.cores == Target::host().facts.cores);
  // A named CPU brings its own cache sizes and FMA timing.
  Target zen3 = Target::parse("llvm -mcpu=znver3");
  CHECK(zen3.facts.vector_bits == 256);
  CHECK(zen3.facts.l2_bytes == 512 * 1024);
  CHECK(zen3.facts.fma_in_flight() == 8);
  Target skx = Target::parse("llvm -mcpu=skylake-avx512");
  CHECK(skx.facts.vector_bits == 512);
  CHECK(skx.facts.l2_bytes == 1024 * 1024);
  // Features switched off by -mattr count: AVX-512 off leaves AVX2.
  Target no512 = Target::parse("llvm -mcpu=skylake-avx512 -mattr=-avx512f");
  CHECK(no512.facts.vector_bits == 256);
  CHECK(no512.facts.vector_registers == 16);
}

TEST_CASE("Target facts of aarch64 and overrides", "[target]") {
  Target n1 = Target::parse("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1");
  CHECK(n1.is_aarch64());
  CHECK(n1.facts.vector_bits == 128);
  CHECK(n1.lanes(32) == 4);
  CHECK(n1.facts.vector_registers == 32);
  CHECK(n1.facts.fma);
  CHECK(n1.facts.l1d_bytes == 64 * 1024);
  Target o = Target::parse("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1 -num-cores=8 -l1d=48K -l2=2M -l3=1.5M");
  CHECK(o.facts.cores == 8);
  CHECK(o.facts.l1d_bytes == 48 * 1024);
  CHECK(o.facts.l2_bytes == 2 * 1024 * 1024);
  CHECK(o.facts.l3_bytes == 3 * 512 * 1024);
  CHECK(Target::parse(o.str()) == o);
  // isa() is what the code depends on: machine facts do not change it.
  CHECK(o.isa() == n1.isa());
  CHECK(o.str() != n1.str());
  CHECK_THAT(o.summary(), Catch::Contains("128-bit vectors (4 x f32), 32 vector registers") &&
                              Catch::Contains("8 cores"));
}

TEST_CASE("Target errors name the culprit", "[target]") {
  using Catch::Contains;
  REQUIRE_THROWS_WITH(Target::parse("llvm -O3"), Contains("'-O3'"));
  REQUIRE_THROWS_WITH(Target::parse("rocm"), Contains("unknown kind 'rocm'"));
  REQUIRE_THROWS_WITH(Target::parse("llvm -mcpu=no-such-cpu"), Contains("unknown CPU 'no-such-cpu'"));
  REQUIRE_THROWS_WITH(Target::parse("llvm -mtriple=nonsense-arch-linux"), Contains("unknown triple 'nonsense-arch-linux'"));
  REQUIRE_THROWS_WITH(Target::parse("llvm -num-cores=0"), Contains("-num-cores expects a positive count, got '0'"));
  REQUIRE_THROWS_WITH(Target::parse("llvm -l2=big"), Contains("-l2 expects a size in bytes"));
  REQUIRE_THROWS_WITH(Target::parse("llvm -mcpu"), Contains("option '-mcpu' needs a value"));
  REQUIRE_THROWS_AS(Target::parse("llvm -mcpu=native -mtriple=aarch64-linux-gnu"), kiln::Error);
}

TEST_CASE("notes name targets briefly", "[target]") {
  CHECK(Target::parse("llvm -mcpu=znver4 -num-cores=2").brief() == "znver4, AVX-512, 2 cores");
  CHECK(Target::parse("llvm -mcpu=x86-64-v3 -num-cores=1").brief() == "x86-64-v3, AVX2, 1 core");
  CHECK(Target::parse("llvm -mcpu=x86-64-v2 -num-cores=4").brief() == "x86-64-v2, SSE, 4 cores");
  CHECK(Target::parse("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1 -num-cores=8").brief() ==
        "neoverse-n1, NEON, 8 cores");
  CHECK(Target::parse("cuda -arch=sm_90a").brief() == "cuda sm_90a");
  CHECK(Target::parse("opencl").brief() == "opencl");
  // A tuning record's full spec (every -mattr feature) and one naming a CPU this LLVM lacks.
  const Target host = Target::host();
  CHECK(host.str().size() > 200);
  CHECK(Target::brief_of(host.str()) == host.brief());
  CHECK(host.brief().size() < 60);
  CHECK(Target::brief_of("llvm -mcpu=cpu-of-2031 -num-cores=2") == "cpu-of-2031");
}
