// The loader's target check for aarch64 modules, on any build machine: which features an aarch64
// target needs (from -mattr and from well-known -mcpu names) against a CpuFeatures as the runtime
// detects it from the hwcap words on an aarch64 Linux machine. (The detection itself runs under
// qemu-aarch64 in the aarch64.* CTest tests, with CPUs that have and lack neoverse-n1's features.)
#include <catch2/catch.hpp>

#include "runtime/cpu_features.h"

using namespace kiln;
using runtime::CpuFeatures;
using runtime::target_incompatibility;

namespace {
// What host_cpu_features() finds under qemu-aarch64 7.2 -cpu cortex-a53 and -cpu neoverse-n1.
const CpuFeatures kA53{"aarch64", {"fp-armv8", "neon", "aes", "sha2", "crc", "crypto"}};
const CpuFeatures kN1{"aarch64",
                      {"fp-armv8", "neon", "aes", "sha2", "crc", "crypto", "lse", "rdm", "fullfp16", "rcpc", "dotprod"}};
}  // namespace

TEST_CASE("aarch64 targets: the architecture matches, whatever the triple's spelling", "[runtime][cpu][aarch64]") {
  CHECK(target_incompatibility("llvm -mtriple=aarch64-unknown-linux-gnu -mcpu=generic", kA53) == "");
  CHECK(target_incompatibility("llvm -mtriple=aarch64-unknown-linux-gnu", kA53) == "");
  CHECK(target_incompatibility("llvm -mtriple=arm64-unknown-linux-gnu", kA53) == "");
  CpuFeatures x86{"x86_64", {"avx2"}};
  CHECK_THAT(target_incompatibility("llvm -mtriple=aarch64-unknown-linux-gnu -mcpu=neoverse-n1", x86),
             Catch::Contains("built for aarch64 (triple aarch64-unknown-linux-gnu) and this machine is x86_64"));
  CHECK_THAT(target_incompatibility("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell", kN1),
             Catch::Contains("built for x86_64 (triple x86_64-pc-linux-gnu) and this machine is aarch64"));
}

TEST_CASE("aarch64 targets: CPU names imply their features", "[runtime][cpu][aarch64]") {
  const std::string n1 = "llvm -mtriple=aarch64-unknown-linux-gnu -mcpu=neoverse-n1";
  CHECK(target_incompatibility(n1, kN1) == "");
  CHECK_THAT(target_incompatibility(n1, kA53),
             Catch::Contains("built for CPU 'neoverse-n1' with features this machine lacks: dotprod, fullfp16, lse, "
                             "rcpc, rdm"));
  CHECK(target_incompatibility("llvm -mtriple=aarch64-unknown-linux-gnu -mcpu=cortex-a72", kA53) == "");
  CHECK_THAT(target_incompatibility("llvm -mtriple=aarch64-unknown-linux-gnu -mcpu=neoverse-v1", kN1),
             Catch::Contains("lacks: bf16, complxnum, fp16fml, i8mm, jsconv, sve"));
  SECTION("-mattr turns an implied feature off, or asks for more") {
    CHECK(target_incompatibility(n1 + " -mattr=-dotprod,-fullfp16,-lse,-rcpc,-rdm", kA53) == "");
    CHECK_THAT(target_incompatibility("llvm -mtriple=aarch64-unknown-linux-gnu -mattr=+sve", kN1),
               Catch::Contains("CPU 'generic' with features this machine lacks: sve"));
    CHECK_THAT(target_incompatibility("llvm -mtriple=aarch64-unknown-linux-gnu -mattr=+crypto", CpuFeatures{"aarch64", {"neon"}}),
               Catch::Contains("lacks: crypto"));
  }
  SECTION("features the runtime cannot detect are not held against the machine") {
    CHECK(target_incompatibility("llvm -mtriple=aarch64-unknown-linux-gnu -mattr=+v8.2a,+fuse-aes", kA53) == "");
  }
  SECTION("x86 feature names mean nothing to an aarch64 machine's check") {
    CHECK(runtime::checkable_cpu_features("aarch64").size() >= 20);
    CHECK(target_incompatibility("llvm -mtriple=aarch64-unknown-linux-gnu -mattr=+avx512f", kA53) == "");
  }
}
