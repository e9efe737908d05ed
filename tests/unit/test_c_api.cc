// The C API (kiln_runtime.h) on an exported model: the happy path, and every user error with
// its status and a message naming the culprit. Load refusals use damaged copies of one good
// module (weights flipped, plan or metadata bytes patched), so each test changes one thing.
// Tolerance as in test_export.cc: |err| <= 1e-5 + 1e-5 |ref|.
#include <catch2/catch.hpp>

#include <cmath>
#include <thread>

#include "runtime/cpu_features.h"
#include "kiln/runtime/kiln_runtime.h"
#include "runtime/module_format.h"
#include "kiln/runtime/version.h"
#include "test_export_util.h"

using namespace kiln;
using namespace kiln::test_export;

namespace {

// One exported module shared by the tests of this file (exporting costs a build and a link).
struct Fixture {
  ScratchDir dir;
  DenseModel dm;
  std::string good;
  Fixture() : good(dir / "good.so") { export_library(dm.model, good); }
};
Fixture& fixture() {
  static Fixture f;
  return f;
}

DLTensor tensor(void* data, int ndim, int64_t* shape, DLDataType dtype = {kDLFloat, 32, 1}) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCPU, 0};
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

// Loads `path`, expecting failure with `status`; returns the message.
std::string load_error(const std::string& path, kiln_status status) {
  kiln_module* m = reinterpret_cast<kiln_module*>(0x1);
  kiln_status got = kiln_module_load(path.c_str(), &m);
  CHECK(got == status);
  CHECK(m == nullptr);
  if (got == KILN_OK) kiln_module_free(m);
  return kiln_last_error();
}

// A copy of the good module with the first occurrence of `from` replaced by `to` (same size).
std::string patched(const std::string& name, const std::string& from, const std::string& to) {
  REQUIRE(from.size() == to.size());
  std::string bytes = read_bytes(fixture().good);
  size_t at = bytes.find(from);
  REQUIRE(at != std::string::npos);
  bytes.replace(at, from.size(), to);
  std::string path = fixture().dir / name;
  write_bytes(path, bytes);
  return path;
}

struct Loaded {
  kiln_module* m = nullptr;
  Loaded() { REQUIRE(kiln_module_load(fixture().good.c_str(), &m) == KILN_OK); }
  ~Loaded() { kiln_module_free(m); }
};

}  // namespace

TEST_CASE("C API: load, describe, set inputs, run, read outputs", "[c_api][runtime]") {
  Loaded l;
  int32_t n = -1;
  REQUIRE(kiln_module_num_inputs(l.m, &n) == KILN_OK);
  CHECK(n == 1);
  REQUIRE(kiln_module_num_outputs(l.m, &n) == KILN_OK);
  CHECK(n == 2);
  const char* name = nullptr;
  REQUIRE(kiln_module_input_name(l.m, 0, &name) == KILN_OK);
  CHECK(std::string(name) == "x");
  REQUIRE(kiln_module_output_name(l.m, 1, &name) == KILN_OK);
  CHECK(std::string(name) == "s");
  kiln_tensor_info info;
  REQUIRE(kiln_module_output_info(l.m, 0, &info) == KILN_OK);
  CHECK(std::string(info.name) == "y");
  REQUIRE(info.ndim == 2);
  CHECK((info.shape[0] == kB && info.shape[1] == kH));
  CHECK((info.dtype.code == kDLFloat && info.dtype.bits == 32 && info.dtype.lanes == 1));
  int32_t index = -1;
  REQUIRE(kiln_module_input_index(l.m, "x", &index) == KILN_OK);
  CHECK(index == 0);

  std::vector<float> x = pattern(kB * kI, 3), y_ref, s_ref;
  fixture().dm.reference(x, &y_ref, &s_ref);
  int64_t xs[] = {kB, kI}, ys[] = {kB, kH}, ss[] = {kB};
  DLTensor xt = tensor(x.data(), 2, xs);
  std::vector<float> y(kB * kH, NAN), s(kB, NAN);
  DLTensor yt = tensor(y.data(), 2, ys), st = tensor(s.data(), 1, ss);

  SECTION("by name, copies out") {
    REQUIRE(kiln_module_set_input(l.m, "x", &xt) == KILN_OK);
    REQUIRE(kiln_module_run(l.m) == KILN_OK);
    REQUIRE(kiln_module_get_output(l.m, 0, &yt) == KILN_OK);
    REQUIRE(kiln_module_get_output(l.m, 1, &st) == KILN_OK);
    for (int64_t i = 0; i < kB * kH; ++i) CHECK(std::fabs(y[i] - y_ref[i]) <= 1e-5 + 1e-5 * std::fabs(y_ref[i]));
    for (int64_t i = 0; i < kB; ++i) CHECK(std::fabs(s[i] - s_ref[i]) <= 1e-5 + 1e-5 * std::fabs(s_ref[i]));
  }
  SECTION("by index from a transposed (strided) tensor, output as a view") {
    std::vector<float> xt_data(kB * kI);  // column-major storage of x
    for (int64_t i = 0; i < kB; ++i)
      for (int64_t k = 0; k < kI; ++k) xt_data[k * kB + i] = x[i * kI + k];
    int64_t strides[] = {1, kB};
    DLTensor strided = tensor(xt_data.data(), 2, xs);
    strided.strides = strides;
    REQUIRE(kiln_module_set_input_index(l.m, 0, &strided) == KILN_OK);
    REQUIRE(kiln_module_run(l.m) == KILN_OK);
    DLTensor view;
    REQUIRE(kiln_module_get_output_view(l.m, 1, &view) == KILN_OK);
    REQUIRE((view.ndim == 1 && view.shape[0] == kB));
    const float* v = static_cast<const float*>(view.data);
    for (int64_t i = 0; i < kB; ++i) CHECK(std::fabs(v[i] - s_ref[i]) <= 1e-5 + 1e-5 * std::fabs(s_ref[i]));
  }
}

TEST_CASE("C API: a bare file name loads the file in the current directory", "[c_api]") {
  // dlopen("good.so") would search the library path instead; the loader must not.
  char cwd[4096];
  REQUIRE(getcwd(cwd, sizeof(cwd)) != nullptr);
  REQUIRE(chdir(fixture().dir.path.c_str()) == 0);
  kiln_module* m = nullptr;
  kiln_status s = kiln_module_load("good.so", &m);
  std::string error = kiln_last_error();
  REQUIRE(chdir(cwd) == 0);
  INFO(error);
  CHECK(s == KILN_OK);
  kiln_module_free(m);
}

TEST_CASE("C API: load refusals name what is wrong", "[c_api][errors]") {
  const std::string& dir = fixture().dir.path;
  SECTION("missing file") {
    CHECK_THAT(load_error(dir + "/nope.so", KILN_ERROR_FILE),
               Catch::Contains("cannot load module '" + dir + "/nope.so': No such file or directory"));
  }
  SECTION("a text file") {
    write_bytes(dir + "/notes.txt", "hello, I am not a library\n");
    CHECK_THAT(load_error(dir + "/notes.txt", KILN_ERROR_INVALID_MODULE),
               Catch::Contains("not a kiln module (not a shared library"));
  }
  SECTION("a shared library that is not a kiln module") {
    write_bytes(dir + "/other.c", "int other_function(void) { return 42; }\n");
    REQUIRE(std::system(("cc -shared -fPIC -o '" + dir + "/other.so' '" + dir + "/other.c'").c_str()) == 0);
    CHECK_THAT(load_error(dir + "/other.so", KILN_ERROR_INVALID_MODULE),
               Catch::Contains("not a kiln module (it has no kiln_module_magic symbol)"));
  }
  SECTION("a truncated library (glibc's dlopen would die of SIGBUS on some)") {
    std::string bytes = read_bytes(fixture().good);
    for (size_t keep : {size_t(100), size_t(2000), bytes.size() / 2, bytes.size() - 64}) {
      INFO("kept " << keep << " of " << bytes.size() << " bytes");
      std::string path = dir + "/truncated" + std::to_string(keep) + ".so";
      write_bytes(path, bytes.substr(0, keep));
      CHECK_THAT(load_error(path, KILN_ERROR_INVALID_MODULE),
                 Catch::Contains("not a kiln module for this machine") || Catch::Contains("the file is truncated"));
    }
  }
  SECTION("an ELF file that is not a shared library") {
    write_bytes(dir + "/other.c", "int other_function(void) { return 42; }\n");
    REQUIRE(std::system(("cc -c -o '" + dir + "/other.o' '" + dir + "/other.c'").c_str()) == 0);
    CHECK_THAT(load_error(dir + "/other.o", KILN_ERROR_INVALID_MODULE), Catch::Contains("but not a shared library"));
  }
  SECTION("corrupt weights: checksum mismatch") {
    const std::vector<float>& w = fixture().dm.W;
    std::string first(reinterpret_cast<const char*>(w.data()), 16), flipped = first;
    flipped[5] ^= 0x40;
    CHECK_THAT(load_error(patched("corrupt.so", first, flipped), KILN_ERROR_INVALID_MODULE),
               Catch::Contains("weights checksum mismatch") && Catch::Contains("the weights are corrupt"));
  }
  SECTION("written by another kiln version") {
    std::string v = std::string(KILN_VERSION_STRING) + '\0';
    std::string other = v;
    other[0] = '9';
    CHECK_THAT(load_error(patched("version.so", v, other), KILN_ERROR_INCOMPATIBLE),
               Catch::Contains("written by kiln 9") && Catch::Contains("this runtime is kiln " KILN_VERSION_STRING));
  }
  SECTION("another module format") {
    std::string magic = KILN_MODULE_MAGIC, other = magic;
    other.back() = '7';
    CHECK_THAT(load_error(patched("format.so", magic, other), KILN_ERROR_INCOMPATIBLE),
               Catch::Contains("module format 'kiln-module-format-7'"));
  }
  SECTION("a kernel the plan calls is missing") {
    // In the binary plan a kernel name follows its u32 length (the symbol table has the name too).
    const std::string in_plan("\x06\0\0\0k_half", 10), renamed("\x06\0\0\0k_hxlf", 10);
    CHECK_THAT(load_error(patched("nokernel.so", in_plan, renamed), KILN_ERROR_INVALID_MODULE),
               Catch::Contains("kernel 'k_hxlf' of node 1 'multiply+add' is missing"));
  }
  SECTION("a malformed plan") {
    CHECK_THAT(load_error(patched("badplan.so", "KPLN", "KPLX"), KILN_ERROR_INVALID_MODULE),
               Catch::Contains("corrupt kiln module: graph plan: not a kiln graph plan"));
  }
  SECTION("null arguments") {
    kiln_module* m = nullptr;
    CHECK(kiln_module_load(nullptr, &m) == KILN_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(kiln_last_error()), Catch::Contains("path is NULL"));
    CHECK(kiln_module_load(fixture().good.c_str(), nullptr) == KILN_ERROR_INVALID_ARGUMENT);
  }
}

TEST_CASE("C API: a module built for CPU features this machine lacks is refused", "[c_api][errors]") {
  // A feature the runtime can check and this CPU does not have; LLVM compiles for it anyway.
  runtime::CpuFeatures host = runtime::host_cpu_features();
  std::string absent;
  for (const char* f : {"avx512vp2intersect", "amx-fp16", "avxvnniint8", "avxifma", "cmpccxadd", "avx512fp16", "avx512f"})
    if (!host.has(f) && absent.empty()) absent = f;
  if (absent.empty()) {
    WARN("this CPU has every candidate feature; the refusal is covered by the cpu_features unit tests only");
    return;
  }
  ScratchDir dir;
  Target t = Target::host();
  t.features += ",+" + absent;
  DenseModel dm(false, t.str());
  export_library(dm.model, dir / "foreign.so");
  std::string message = load_error(dir / "foreign.so", KILN_ERROR_INCOMPATIBLE);
  CHECK_THAT(message, Catch::Contains("with features this machine lacks: " + absent));
}

TEST_CASE("C API: input, output and ordering errors name the culprit", "[c_api][errors]") {
  Loaded l;
  std::vector<float> x(kB * kI, 0.25f);
  int64_t good_shape[] = {kB, kI}, bad_shape[] = {kB, kI - 1};
  DLTensor xt = tensor(x.data(), 2, good_shape);
  auto expect = [&](kiln_status got, kiln_status want, const std::string& text) {
    CHECK(got == want);
    CHECK_THAT(std::string(kiln_last_error()), Catch::Contains(text));
  };
  expect(kiln_module_run(l.m), KILN_ERROR_STATE, "kiln_module_run: run: input 'x' was never set");
  DLTensor out;
  expect(kiln_module_get_output_view(l.m, 0, &out), KILN_ERROR_STATE, "output 'y' has not been computed");

  expect(kiln_module_set_input(l.m, "nope", &xt), KILN_ERROR_INVALID_ARGUMENT,
         "the module has no input named 'nope' (its inputs: 'x')");
  DLTensor wrong_shape = tensor(x.data(), 2, bad_shape);
  expect(kiln_module_set_input(l.m, "x", &wrong_shape), KILN_ERROR_INVALID_ARGUMENT,
         "input 'x': expected shape [4, 16], got [4, 15]");
  DLTensor wrong_rank = tensor(x.data(), 1, good_shape);
  expect(kiln_module_set_input(l.m, "x", &wrong_rank), KILN_ERROR_INVALID_ARGUMENT,
         "input 'x': expected shape [4, 16], got [4]");
  DLTensor wrong_dtype = tensor(x.data(), 2, good_shape, {kDLInt, 32, 1});
  expect(kiln_module_set_input(l.m, "x", &wrong_dtype), KILN_ERROR_INVALID_ARGUMENT,
         "input 'x': expected dtype float32, got int32");
  DLTensor on_gpu = xt;
  on_gpu.device = {kDLCUDA, 0};
  expect(kiln_module_set_input(l.m, "x", &on_gpu), KILN_ERROR_INVALID_ARGUMENT, "input 'x': the tensor is not in CPU memory");
  DLTensor no_data = tensor(nullptr, 2, good_shape);
  expect(kiln_module_set_input(l.m, "x", &no_data), KILN_ERROR_INVALID_ARGUMENT, "input 'x': the tensor's data is null");
  expect(kiln_module_set_input_index(l.m, 3, &xt), KILN_ERROR_INVALID_ARGUMENT,
         "input index 3 is out of range (the module has 1 inputs)");
  expect(kiln_module_set_input(l.m, "x", nullptr), KILN_ERROR_INVALID_ARGUMENT, "value is NULL");

  REQUIRE(kiln_module_set_input(l.m, "x", &xt) == KILN_OK);
  REQUIRE(kiln_module_run(l.m) == KILN_OK);
  expect(kiln_module_get_output_view(l.m, 2, &out), KILN_ERROR_INVALID_ARGUMENT,
         "output index 2 is out of range (the module has 2 outputs)");
  expect(kiln_module_get_output(l.m, -1, &out), KILN_ERROR_INVALID_ARGUMENT, "output index -1 is out of range");
  std::vector<float> y(kB * kI);
  DLTensor wrong_out = tensor(y.data(), 2, good_shape);
  expect(kiln_module_get_output(l.m, 0, &wrong_out), KILN_ERROR_INVALID_ARGUMENT,
         "output 'y': expected shape [4, 8], got [4, 16]");
  const char* name;
  expect(kiln_module_output_name(l.m, 5, &name), KILN_ERROR_INVALID_ARGUMENT, "output index 5 is out of range");
  int32_t count;
  expect(kiln_module_num_inputs(nullptr, &count), KILN_ERROR_INVALID_ARGUMENT, "module is NULL");
  kiln_module_free(nullptr);  // allowed
}

TEST_CASE("C API: the last error is per thread", "[c_api]") {
  int32_t count;
  REQUIRE(kiln_module_num_inputs(nullptr, &count) == KILN_ERROR_INVALID_ARGUMENT);
  std::string mine = kiln_last_error();
  std::string theirs;
  std::thread t([&] {
    theirs = kiln_last_error();  // nothing failed on this thread yet
    kiln_module* m;
    kiln_module_load("/nonexistent/other.so", &m);
  });
  t.join();
  CHECK(theirs.empty());
  CHECK(std::string(kiln_last_error()) == mine);
}
