// Runtime pieces that need no exported module: CPU feature detection (checked against LLVM's
// own host detection), target compatibility, plan validation, version rule, and the promise
// that the runtime library links no LLVM, protobuf or XGBoost and stays small.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <map>
#include <sstream>

#include "kiln/target/target.h"
#include "runtime/cpu_features.h"
#include "kiln/runtime/module_loader.h"
#include "kiln/runtime/version.h"
#include "test_export_util.h"

using namespace kiln;
using runtime::CpuFeatures;
using runtime::target_incompatibility;

TEST_CASE("the runtime's CPU features agree with LLVM's host detection", "[runtime][cpu]") {
  Target host = Target::host();
  CpuFeatures mine = runtime::host_cpu_features();
#if defined(__x86_64__)
  CHECK(mine.arch == "x86_64");
  CHECK(host.triple.rfind("x86_64", 0) == 0);
#endif
  std::map<std::string, bool> llvm;  // LLVM's +f / -f list
  std::istringstream list(host.features);
  for (std::string tok; std::getline(list, tok, ',');)
    if (tok.size() > 1) llvm[tok.substr(1)] = tok[0] == '+';
  int compared = 0;
  for (const std::string& f : runtime::checkable_cpu_features()) {
    auto it = llvm.find(f);
    if (it == llvm.end()) continue;  // LLVM 16 does not report it on this machine
    INFO("feature " << f);
    CHECK(mine.has(f) == it->second);
    ++compared;
  }
  CHECK(compared >= 40);
  // Host-built modules must load here.
  CHECK(target_incompatibility(host.str(), mine) == "");
}

TEST_CASE("target compatibility: features, implied CPU features, architecture", "[runtime][cpu]") {
  CpuFeatures avx2_only{"x86_64", {"sse", "sse2", "avx", "avx2", "fma"}};
  CpuFeatures avx512 = avx2_only;
  avx512.features.insert({"avx512f", "avx512bw"});
  const std::string t512 = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=x86-64 -mattr=+avx2,+avx512f,+avx512bw,-amx-tile";
  CHECK(target_incompatibility(t512, avx512) == "");
  CHECK_THAT(target_incompatibility(t512, avx2_only),
             Catch::Contains("with features this machine lacks: avx512bw, avx512f"));
  SECTION("a CPU name implies its features unless -mattr turns them off") {
    CHECK_THAT(target_incompatibility("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512", avx2_only),
               Catch::Contains("CPU 'skylake-avx512' with features this machine lacks: avx512bw, avx512cd, avx512dq, "
                               "avx512f, avx512vl"));
    CHECK(target_incompatibility("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512 -mattr=-avx512f", avx2_only) ==
          "");
    CHECK(target_incompatibility("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell", avx2_only) == "");
  }
  SECTION("later AVX-512 parts imply what LLVM uses on them: znver4 code is refused on a Skylake-SP") {
    CpuFeatures skylake_sp = avx2_only;
    skylake_sp.features.insert({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"});
    CHECK(target_incompatibility("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512", skylake_sp) == "");
    CHECK_THAT(target_incompatibility("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver4", skylake_sp),
               Catch::Contains("CPU 'znver4' with features this machine lacks: avx512bf16, avx512bitalg, avx512ifma, "
                               "avx512vbmi, avx512vbmi2, avx512vnni, avx512vpopcntdq, gfni, vaes, vpclmulqdq"));
  }
  SECTION("the last mention of a feature wins, as in LLVM") {
    CHECK(target_incompatibility("llvm -mattr=+avx512f,-avx512f", avx2_only) == "");
    CHECK_THAT(target_incompatibility("llvm -mattr=-avx512f,+avx512f", avx2_only), Catch::Contains("avx512f"));
  }
  SECTION("features the runtime cannot detect are not held against the machine") {
    CHECK(target_incompatibility("llvm -mattr=+some-future-extension", avx2_only) == "");
  }
  SECTION("another architecture, another kind") {
    CHECK_THAT(target_incompatibility("llvm -mtriple=aarch64-unknown-linux-gnu -mcpu=generic", avx512),
               Catch::Contains("built for aarch64 (triple aarch64-unknown-linux-gnu) and this machine is x86_64"));
    CHECK_THAT(target_incompatibility("cuda -arch=sm_80", avx512), Catch::Contains("not a CPU target"));
  }
}

TEST_CASE("plan validation names the malformed part", "[runtime][plan]") {
  test_export::DenseModel dm;
  runtime::GraphPlan p = dm.model.plan;
  int64_t wbytes = static_cast<int64_t>(dm.model.weights.size());
  CHECK(runtime::plan_problem(p, wbytes) == "");
  auto problem = [&](auto mutate) {
    runtime::GraphPlan q = p;
    mutate(q);
    return runtime::plan_problem(q, wbytes);
  };
  using runtime::GraphPlan;
  CHECK_THAT(problem([](GraphPlan& q) { q.entries[3].storage = 9; }),
             Catch::Contains("entry 3 lives in storage 9, which does not exist"));
  CHECK_THAT(problem([](GraphPlan& q) { q.entries[3].offset = 32; }), Catch::Contains("offset 32, not a multiple of 64"));
  CHECK_THAT(problem([](GraphPlan& q) { q.entries[2].offset = 1024; }),
             Catch::Contains("entry 2 (a constant): bytes [1024, 1056) lie outside the 544 bytes of the weights"));
  CHECK_THAT(problem([](GraphPlan& q) { q.entries[0].shape = {-1, 16}; }), Catch::Contains("invalid dtype or shape [-1, 16]"));
  CHECK_THAT(problem([](GraphPlan& q) { q.entries[0].shape = {INT64_MAX / 2, 16}; }), Catch::Contains("invalid dtype or shape"));
  CHECK_THAT(problem([](GraphPlan& q) { q.nodes[2].args[1] = 6; }),
             Catch::Contains("node 2 'sum' passes entry 6, which does not exist"));
  CHECK_THAT(problem([](GraphPlan& q) { q.nodes[0].kernel = ""; }), Catch::Contains("node 0 'dense+add+relu' names no kernel"));
  CHECK_THAT(problem([](GraphPlan& q) { q.outputs[1].name = "y"; }), Catch::Contains("output 1 'y': the name is used twice"));
  CHECK_THAT(problem([](GraphPlan& q) { q.inputs[0].entry = -1; }), Catch::Contains("input 0 'x' names entry -1"));
  CHECK_THAT(problem([](GraphPlan& q) { q.inputs[0].entry = 1; }), Catch::Contains("input 'x' is a constant entry"));
  CHECK_THAT(problem([](GraphPlan& q) { q.outputs.clear(); }), Catch::Contains("the plan has no outputs"));
}

TEST_CASE("modules of the same major.minor kiln version are compatible", "[runtime]") {
  CHECK(runtime::version_compatible(KILN_VERSION_STRING));
  std::string v = KILN_VERSION_STRING;
  CHECK(runtime::version_compatible(v.substr(0, v.rfind('.')) + ".99"));
  CHECK_FALSE(runtime::version_compatible("9.9.0"));
  CHECK_FALSE(runtime::version_compatible(""));
}

TEST_CASE("the runtime library links no LLVM, protobuf, XGBoost or JSON library and stays small", "[runtime][deps]") {
  // The test binary lives in build/bin, the libraries in build/lib.
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  REQUIRE(n > 0);
  exe[n] = '\0';
  std::string bin(exe);
  std::string lib = bin.substr(0, bin.rfind("/bin/")) + "/lib";
  std::string so = lib + "/libkiln_runtime.so", a = lib + "/libkiln_runtime.a";
  struct stat st_so, st_a;
  REQUIRE(stat(so.c_str(), &st_so) == 0);
  REQUIRE(stat(a.c_str(), &st_a) == 0);
  std::string ldd = test_export::shell("ldd '" + so + "'");
  INFO(ldd);
  REQUIRE(ldd.find("libc.so") != std::string::npos);  // ldd ran
  for (const char* bad : {"LLVM", "llvm", "protobuf", "onnx", "xgboost", "libkiln.so"}) CHECK(ldd.find(bad) == std::string::npos);
  for (const std::string& cmd : {"nm -D --undefined-only '" + so + "'", "nm --undefined-only '" + a + "' 2>/dev/null"}) {
    std::string undefined = test_export::shell(cmd);
    INFO(cmd);
    REQUIRE(undefined.find("dlopen") != std::string::npos);  // nm ran
    for (const char* bad : {"llvm", "google", "protobuf", "XGB", "onnx"}) CHECK(undefined.find(bad) == std::string::npos);
  }
  // No JSON library either (the plan is binary): not even an inlined template of one.
  std::string defined = test_export::shell("nm -C --defined-only '" + so + "'");
  REQUIRE(defined.find("kiln_module_load") != std::string::npos);  // nm ran
  CHECK(defined.find("nlohmann") == std::string::npos);
  WARN("libkiln_runtime.so: " << st_so.st_size / 1024 << " KiB, libkiln_runtime.a: " << st_a.st_size / 1024 << " KiB");
#if !defined(KILN_SANITIZED)  // an instrumented library is several times larger
  CHECK(st_so.st_size < 2 * 1024 * 1024);
#endif
}
