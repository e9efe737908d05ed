// kiln::export_library end to end: a hand-built CompiledModel (test_export_util.h) exported to
// a .so, loaded by the runtime, run, and compared with a plain C++ reference. Tolerance: float32
// dot products of 16 terms (FMA allowed) against double: |err| <= 1e-5 + 1e-5 |ref|.
// Also: what the .so exports and imports, and every export-time user error.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdlib>

#include "kiln/runtime/graph_executor.h"
#include "kiln/runtime/kernel.h"
#include "runtime/module_format.h"
#include "kiln/runtime/version.h"
#include "test_export_util.h"

using namespace kiln;
using namespace kiln::test_export;
using runtime::GraphExecutor;
using runtime::NDArray;

namespace {

bool close(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-5 + 1e-5 * std::fabs(want[i]))) {
      UNSCOPED_INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
      return false;
    }
  return true;
}

// Runs the loaded dense model on a fresh input and checks both outputs.
void check_dense(GraphExecutor& exec, const DenseModel& dm, uint32_t seed) {
  std::vector<float> x = pattern(kB * kI, seed), y, s;
  dm.reference(x, &y, &s);
  NDArray in = NDArray::from_vector({kB, kI}, runtime::dtype_f32(), x);
  exec.set_input("x", *in.dltensor());
  exec.run();
  CHECK(close(exec.get_output(0).to_vector<float>(), y));
  CHECK(close(exec.get_output(1).to_vector<float>(), s));
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  bool had;
  std::string old;
  ScopedEnv(const char* n, const char* value) : name(n) {
    const char* o = std::getenv(n);
    had = o != nullptr;
    if (had) old = o;
    if (value) setenv(n, value, 1);
    else unsetenv(n);
  }
  ~ScopedEnv() {
    if (had) setenv(name.c_str(), old.c_str(), 1);
    else unsetenv(name.c_str());
  }
};

std::string export_error(const CompiledModel& m, const std::string& path) {
  try {
    export_library(m, path);
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("an exported model loads and computes what the reference computes", "[export][runtime]") {
  ScratchDir dir;
  DenseModel dm;
  export_library(dm.model, dir / "dense.so");
  GraphExecutor exec = GraphExecutor::load(dir / "dense.so");

  SECTION("metadata: inputs, outputs, version, resolved host target") {
    REQUIRE(exec.num_inputs() == 1);
    REQUIRE(exec.num_outputs() == 2);
    CHECK(exec.input_info(0).name == "x");
    CHECK(exec.input_info(0).shape == std::vector<int64_t>{kB, kI});
    CHECK(runtime::dtype_str(exec.input_info(0).dtype) == "float32");
    CHECK(exec.output_info(0).name == "y");
    CHECK(exec.output_info(1).name == "s");
    CHECK(exec.output_info(1).shape == std::vector<int64_t>{kB});
    CHECK(exec.module().kiln_version() == KILN_VERSION_STRING);
    CHECK(exec.module().target() == Target::host().str());
    CHECK(exec.module().plan().weights_checksum == runtime::fnv1a64(dm.model.weights.data(), dm.model.weights.size()));
    CHECK(exec.module().plan().nodes.size() == 3);
  }
  SECTION("numerics on 1, 2 and 3 threads, repeated runs with new inputs") {
    int32_t saved = kiln_get_num_threads();
    for (int threads : {1, 2, 3}) {
      kiln_set_num_threads(threads);
      check_dense(exec, dm, 10 + threads);
      check_dense(exec, dm, 20 + threads);
    }
    kiln_set_num_threads(saved);
  }
  SECTION("an output view reads the same values as a copy, without copying") {
    check_dense(exec, dm, 5);
    DLTensor v = exec.output_view(0);
    NDArray copy = exec.get_output(0);
    REQUIRE(v.ndim == 2);
    CHECK(v.shape[0] == kB);
    CHECK(reinterpret_cast<uintptr_t>(v.data) % 64 == 0);
    CHECK(std::equal(copy.data<float>(), copy.data<float>() + copy.numel(), static_cast<float*>(v.data)));
  }
  SECTION("two executors of one loaded module keep separate memory") {
    GraphExecutor other(runtime::LoadedModule::load(dir / "dense.so"));
    check_dense(exec, dm, 1);
    std::vector<float> y1 = exec.get_output(0).to_vector<float>();
    check_dense(other, dm, 2);
    CHECK(exec.get_output(0).to_vector<float>() == y1);
  }
}

TEST_CASE("the per-node profile lists every kernel, only while profiling is on", "[export][runtime][profile]") {
  ScratchDir dir;
  DenseModel dm;
  export_library(dm.model, dir / "dense.so");
  GraphExecutor exec = GraphExecutor::load(dir / "dense.so");
  check_dense(exec, dm, 3);
  CHECK(exec.profile().empty());
  CHECK(exec.profile_table().empty());

  exec.set_profiling(true);
  for (int i = 0; i < 5; ++i) check_dense(exec, dm, 30 + i);  // profiling changes no numbers
  exec.set_profiling(false);
  exec.run();  // not recorded
  const auto& prof = exec.profile();
  const auto& nodes = exec.module().plan().nodes;
  REQUIRE(prof.size() == nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    CHECK(prof[n].kernel == nodes[n].kernel);
    CHECK(prof[n].label == nodes[n].label);
    CHECK(prof[n].seconds.size() == 5);
    for (double t : prof[n].seconds) CHECK(t >= 0);
  }
  std::string table = exec.profile_table();
  for (const char* k : {"k_dense", "k_half", "k_rowsum"}) CHECK(table.find(k) != std::string::npos);
  CHECK(table.find("dense+add+relu") != std::string::npos);
  CHECK(std::count(table.begin(), table.end(), '\n') == static_cast<long>(nodes.size()) + 2);  // header + total

  exec.set_profiling(true);  // a new profile starts empty
  CHECK(exec.profile()[0].seconds.empty());
}

TEST_CASE("an input whose memory is planned to be reused is kept for repeated runs", "[export][runtime]") {
  ScratchDir dir;
  DenseModel dm(/*alias_input=*/true);
  export_library(dm.model, dir / "alias.so");
  GraphExecutor exec = GraphExecutor::load(dir / "alias.so");
  std::vector<float> x = pattern(kB * kI, 7), y, s;
  dm.reference(x, &y, &s);
  NDArray in = NDArray::from_vector({kB, kI}, runtime::dtype_f32(), x);
  exec.set_input(0, *in.dltensor());
  for (int run = 0; run < 3; ++run) {
    INFO("run " << run);
    exec.run();  // y overwrites x's bytes: without the staged copy, run 1 would read y as x
    CHECK(close(exec.get_output(0).to_vector<float>(), y));
    CHECK(close(exec.get_output(1).to_vector<float>(), s));
  }
}

TEST_CASE("a constant far into a big weights blob is read in place", "[export][runtime]") {
  // About the size of resnet18's weights: the blob goes through LLVM as one constant array.
  const int64_t offset = int64_t(48) << 20;
  ScratchDir dir;
  DenseModel dm(false, "", offset);
  auto t0 = std::chrono::steady_clock::now();
  export_library(dm.model, dir / "big.so");
  auto t1 = std::chrono::steady_clock::now();
  GraphExecutor exec = GraphExecutor::load(dir / "big.so");
  auto t2 = std::chrono::steady_clock::now();
  using ms = std::chrono::duration<double, std::milli>;
  WARN("48 MiB of weights: export " << ms(t1 - t0).count() << " ms, load (with checksum) " << ms(t2 - t1).count() << " ms");
  CHECK(exec.module().plan().weights_bytes == offset + kH * 4);
  check_dense(exec, dm, 9);
}

TEST_CASE("kernels reach the thread pool only through the slot the loader fills", "[export][runtime]") {
  ScratchDir dir;
  DenseModel dm;
  export_library(dm.model, dir / "raw.so");
  // Opened behind the runtime's back: the slot stays empty, and the parallel kernel says so
  // instead of crashing.
  void* h = dlopen((dir / "raw.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(h != nullptr);
  auto k_dense = reinterpret_cast<kiln_kernel_fn>(dlsym(h, "k_dense"));
  auto slot = static_cast<void**>(dlsym(h, KILN_SYM_PARALLEL_FOR_SLOT));
  REQUIRE((k_dense != nullptr && slot != nullptr));
  CHECK(*slot == nullptr);
  std::vector<float> x = pattern(kB * kI, 4), y, s;
  dm.reference(x, &y, &s);
  NDArray xa = NDArray::from_vector({kB, kI}, runtime::dtype_f32(), x);
  NDArray wa = NDArray::from_vector({kI, kH}, runtime::dtype_f32(), dm.W);
  NDArray ba = NDArray::from_vector({kH}, runtime::dtype_f32(), dm.bias);
  NDArray ha = NDArray::zeros({kB, kH}, runtime::dtype_f32());
  void* args[] = {xa.raw_data(), wa.raw_data(), ba.raw_data(), ha.raw_data()};
  CHECK(k_dense(args, 4) == KILN_MODULE_NO_RUNTIME);
  // What the loader does; then the kernel computes h (y = 0.5 h + 1, so h = 2 (y - 1)).
  GraphExecutor exec = GraphExecutor::load(dir / "raw.so");
  CHECK(*slot == reinterpret_cast<void*>(&kiln_parallel_for));
  REQUIRE(k_dense(args, 4) == 0);
  for (int64_t i = 0; i < kB * kH; ++i) CHECK(std::fabs(ha.data<float>()[i] - 2 * (y[i] - 1)) <= 1e-5 + 1e-5 * std::fabs(y[i]));
  dlclose(h);
}

TEST_CASE("the library exports metadata and kernels, and imports nothing from kiln", "[export]") {
  ScratchDir dir;
  DenseModel dm;
  export_library(dm.model, dir / "dense.so");
  std::string defined = shell("nm -D --defined-only '" + (dir / "dense.so") + "'");
  for (const char* sym : {KILN_SYM_MAGIC, KILN_SYM_VERSION, KILN_SYM_TARGET, KILN_SYM_PLAN, KILN_SYM_PLAN_SIZE,
                          KILN_SYM_WEIGHTS, KILN_SYM_WEIGHTS_SIZE, KILN_SYM_WEIGHTS_CHECKSUM,
                          KILN_SYM_PARALLEL_FOR_SLOT, "k_dense", "k_half", "k_rowsum"}) {
    INFO(sym);
    CHECK(defined.find(std::string(" ") + sym + "\n") != std::string::npos);
  }
  // The trampoline is hidden: kernels bind to it inside the library, nothing outside sees it.
  CHECK(defined.find("kiln_parallel_for") == std::string::npos);
  std::string undefined = shell("nm -D --undefined-only '" + (dir / "dense.so") + "'");
  INFO(undefined);
  CHECK(undefined.find("kiln") == std::string::npos);
  CHECK(shell("ldd '" + (dir / "dense.so") + "'").find("kiln") == std::string::npos);
}

TEST_CASE("export_library refuses bad models and bad environments with clear errors", "[export][errors]") {
  ScratchDir dir;
  DenseModel dm;
  SECTION("a directory that does not exist") {
    CHECK_THAT(export_error(dm.model, "/nonexistent_kiln_dir/m.so"),
               Catch::Contains("cannot write '/nonexistent_kiln_dir/m.so'") && Catch::Contains("does not exist"));
  }
  SECTION("a path that is a directory") {
    CHECK_THAT(export_error(dm.model, dir.path), Catch::Contains("exists and is not a regular file"));
  }
  SECTION("no linker: KILN_CC names nothing") {
    ScopedEnv cc("KILN_CC", "/nonexistent/cc");
    CHECK_THAT(export_error(dm.model, dir / "m.so"),
               Catch::Contains("'/nonexistent/cc' named by KILN_CC was not found"));
  }
  SECTION("no linker: none in PATH") {
    ScopedEnv cc("KILN_CC", nullptr);
    ScopedEnv path("PATH", "/nonexistent_bin");
    CHECK_THAT(export_error(dm.model, dir / "m.so"), Catch::Contains("no C compiler to link the library with"));
  }
  SECTION("the linker fails") {
    ScopedEnv cc("KILN_CC", "/bin/false");
    CHECK_THAT(export_error(dm.model, dir / "m.so"), Catch::Contains("linking") && Catch::Contains("exit status 1"));
    CHECK(access((dir / "m.so").c_str(), F_OK) != 0);  // nothing half-written is left
  }
  SECTION("a node calls a kernel the model does not have") {
    dm.model.plan.nodes[1].kernel = "k_missing";
    CHECK_THAT(export_error(dm.model, dir / "m.so"),
               Catch::Contains("node 1 'multiply+add' calls kernel 'k_missing'"));
  }
  SECTION("weights that do not match the plan") {
    dm.model.plan.weights_bytes = 4;
    CHECK_THAT(export_error(dm.model, dir / "m.so"), Catch::Contains("expects 4 bytes of weights"));
    dm.model.plan.weights_bytes = 0;
    dm.model.plan.weights_checksum = 42;
    CHECK_THAT(export_error(dm.model, dir / "m.so"), Catch::Contains("do not match the checksum"));
  }
  SECTION("a malformed plan") {
    dm.model.plan.entries[3].offset = 64;  // h no longer fits its storage
    CHECK_THAT(export_error(dm.model, dir / "m.so"),
               Catch::Contains("malformed plan: entry 3 (in storage 1): bytes [64, 192) lie outside the 128 bytes"));
  }
  SECTION("a kernel name reserved for the runtime") {
    dm.model.kernels[2].name = "kiln_parallel_for";
    dm.model.plan.nodes[2].kernel = "kiln_parallel_for";
    // LLVM code generation refuses it, before export: the runtime's trampoline has that name.
    CHECK_THROWS_WITH(dm.compile_kernels(), Catch::Contains("kernel name 'kiln_parallel_for' is reserved"));
  }
  SECTION("a plan made for another target than the kernels'") {
    dm.model.plan.target = "rocm";
    CHECK_THAT(export_error(dm.model, dir / "m.so"),
               Catch::Contains("the plan was made for target 'rocm', its kernels were built for 'llvm"));
  }
}
