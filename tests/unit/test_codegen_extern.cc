// LLVM backend: extern calls and address_of, object files (and linking one into a shared
// library), assembly, guarded loads, targets, and the errors users can hit.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "test_codegen_util.h"

using namespace kiln;
using namespace kiln::ir;
using kiln::runtime::NDArray;
using kiln::test::array_for;
using kiln::test::flat_buffer;
using kiln::test::prim_func;

// Extern functions the JIT-compiled kernels call by name (exported with -rdynamic).
static std::atomic<int> g_axpy_calls{0};
extern "C" __attribute__((visibility("default"))) int32_t kiln_test_axpy(float* y, const float* x, float a, int32_t n) {
  g_axpy_calls++;
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
  return 0;
}
extern "C" __attribute__((visibility("default"))) int64_t kiln_test_mix(int8_t a, uint16_t b, int64_t c, double d,
                                                                      bool e, const char* s) {
  return a * 1000000 + b * 10 + c + static_cast<int64_t>(d * 100) + (e ? 7 : 0) + static_cast<int64_t>(std::strlen(s));
}

TEST_CASE("extern call with address_of passes element pointers", "[codegen]") {
  const int n = 64, tile = 16;
  Buffer x = flat_buffer("X", DataType::f32(), n), y = flat_buffer("Y", DataType::f32(), n);
  Var t("t");
  Stmt body = for_loop(t, 0, n / tile, ForKind::Serial,
                       evaluate(call_extern(DataType::i32(), "kiln_test_axpy",
                                            {make_intrinsic("address_of", {buffer_load(y, {t * tile})}),
                                             make_intrinsic("address_of", {buffer_load(x, {t * tile})}), Expr(2.5f),
                                             Expr(tile)})));
  auto m = test::build({prim_func("tensorized", {x, y}, body)});
  std::vector<float> xv(n), yv(n);
  for (int i = 0; i < n; ++i) xv[i] = float(i), yv[i] = 1.f - float(i);
  NDArray Y = array_for(y, yv);
  g_axpy_calls = 0;
  test::run(m, "tensorized", {array_for(x, xv), Y});
  REQUIRE(g_axpy_calls.load() == n / tile);
  for (int i = 0; i < n; ++i) REQUIRE(Y.data<float>()[i] == yv[i] + 2.5f * xv[i]);
}

TEST_CASE("extern call scalar arguments follow the C ABI, results are usable", "[codegen]") {
  Buffer out = flat_buffer("OUT", DataType::i64(), 1);
  Expr call = call_extern(DataType::i64(), "kiln_test_mix",
                          {make_int(DataType::i8(), -5), make_int(DataType::u16(), 65535), Expr(int64_t{123456789012}),
                           Expr(0.5), make_const(DataType::boolean(), 1), make_string("four")});
  auto m = test::build({prim_func("mix", {out}, buffer_store(out, call, {0}))});
  NDArray O = NDArray::zeros({1}, runtime::dtype_i64());
  test::run(m, "mix", {O});
  REQUIRE(O.data<int64_t>()[0] == kiln_test_mix(-5, 65535, 123456789012, 0.5, true, "four"));
}

TEST_CASE("an unresolvable extern function is reported when the kernel is linked", "[codegen]") {
  Buffer out = flat_buffer("OUT", DataType::i32(), 1);
  auto m = test::build({prim_func(
      "missing", {out}, buffer_store(out, call_extern(DataType::i32(), "kiln_no_such_function_xyz", {}), {0}))});
  REQUIRE_THROWS_WITH(m.get_function("missing"), Catch::Contains("kiln_no_such_function_xyz"));
}

TEST_CASE("select does not load what it does not choose", "[codegen]") {
  // A ends exactly at a PROT_NONE page: reading A[n] faults. B[i] = i < n ? A[i] : -1 over
  // n + 16 elements, in scalar form and in 16-lane vector form (masked loads).
  const int n = 64, lanes = 16;
  long page = sysconf(_SC_PAGESIZE);
  char* mem = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(mem != MAP_FAILED);
  REQUIRE(mprotect(mem + page, page, PROT_NONE) == 0);
  float* a_data = reinterpret_cast<float*>(mem + page) - n;
  for (int i = 0; i < n; ++i) a_data[i] = float(i) * 0.5f;

  Buffer a = flat_buffer("A", DataType::f32(), n), b = flat_buffer("B", DataType::f32(), 2 * (n + lanes));
  Var i("i"), v("v");
  Expr r = ramp(v * lanes, 1, lanes);
  Stmt scalar = for_loop(i, 0, n + lanes, ForKind::Serial,
                         buffer_store(b, select(i < n, buffer_load(a, {i}), Expr(-1.f)), {i}));
  Stmt vector = for_loop(v, 0, (n + lanes) / lanes, ForKind::Serial,
                         buffer_store(b, select(r < broadcast(Expr(n), lanes), buffer_load(a, {r}), broadcast(Expr(-1.f), lanes)),
                                      {r + (n + lanes)}));
  for (const Target& target : test::inspected_targets()) {
    codegen::BuildOptions o;
    o.opt_level = 0;
    INFO(target.cpu);
    CHECK(test::contains(test::build({prim_func("guarded", {a, b}, seq({scalar, vector}))}, target, o).llvm_ir(),
                         "llvm.masked.load"));
  }
  for (int opt : {0, 3}) {
    codegen::BuildOptions o;
    o.opt_level = opt;
    // At O3 LLVM unrolls the loop and drops the masks of all-true/all-false iterations.
    auto m = test::build({prim_func("guarded", {a, b}, seq({scalar, vector}))}, Target::host(), o);
    NDArray B = NDArray::zeros({2 * (n + lanes)}, runtime::dtype_f32());
    void* args[] = {a_data, B.raw_data()};
    REQUIRE(m.get_function("guarded")(args, 2) == 0);
    for (int k = 0; k < n + lanes; ++k) {
      float want = k < n ? float(k) * 0.5f : -1.f;
      REQUIRE(B.data<float>()[k] == want);
      REQUIRE(B.data<float>()[k + n + lanes] == want);
    }
  }
  munmap(mem, 2 * page);
}

TEST_CASE("select of loads provably in bounds stays a branch-free select", "[codegen]") {
  const int n = 64, lanes = 16;
  Buffer a = flat_buffer("A", DataType::f32(), n), b = flat_buffer("B", DataType::f32(), 2 * n);
  Var i("i"), v("v");
  Expr r = ramp(v * lanes, 1, lanes);
  // The loop ranges prove every index inside A, so both sides may be evaluated eagerly.
  Stmt scalar = for_loop(i, 0, n, ForKind::Serial,
                         buffer_store(b, select(eq(truncmod(i, 3), 0), buffer_load(a, {i}), Expr(-1.f)), {i}));
  Stmt vector = for_loop(v, 0, n / lanes, ForKind::Serial,
                         buffer_store(b, select(buffer_load(a, {r}) > broadcast(Expr(0.f), lanes), buffer_load(a, {r}),
                                                broadcast(Expr(0.f), lanes)),
                                      {r + n}));
  codegen::BuildOptions o;
  o.opt_level = 0;
  for (const Target& target : test::inspected_targets()) {
    INFO(target.cpu);
    auto built = test::build({prim_func("safe_select", {a, b}, seq({scalar, vector}))}, target, o);
    CHECK_FALSE(test::contains(built.llvm_ir(), "sel.true"));
    CHECK_FALSE(test::contains(built.llvm_ir(), "masked.load"));
  }
  auto m = test::build({prim_func("safe_select", {a, b}, seq({scalar, vector}))}, Target::host(), o);
  std::vector<float> av(n);
  for (int k = 0; k < n; ++k) av[k] = float(k % 5) - 2.f;
  NDArray B = NDArray::zeros({2 * n}, runtime::dtype_f32());
  test::run(m, "safe_select", {array_for(a, av), B});
  for (int k = 0; k < n; ++k) {
    REQUIRE(B.data<float>()[k] == (k % 3 == 0 ? av[k] : -1.f));
    REQUIRE(B.data<float>()[n + k] == std::max(av[k], 0.f));
  }
}

TEST_CASE("save_object writes a relocatable ELF that links into a shared library", "[codegen]") {
  const int n = 32;
  Buffer a = flat_buffer("A", DataType::f32(), n), c = flat_buffer("C", DataType::f32(), n);
  Var i("i");
  auto m = test::build({prim_func("aot_scale", {a, c},
                                     for_loop(i, 0, n, ForKind::Serial, buffer_store(c, buffer_load(a, {i}) * 3.f, {i})))});
  std::string dir = "/tmp/kiln_test_codegen_" + std::to_string(getpid());
  std::system(("mkdir -p " + dir).c_str());
  std::string obj = dir + "/k.o", so = dir + "/k.so";
  m.save_object(obj);
  std::ifstream in(obj, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes == m.object_code());
  REQUIRE(bytes.size() > 64);
  REQUIRE(bytes.compare(0, 4, "\x7f" "ELF") == 0);
  REQUIRE(bytes[16] == 1);  // e_type ET_REL: relocatable
  REQUIRE(test::contains(bytes, "aot_scale"));
  REQUIRE_THROWS_AS(m.save_object("/nonexistent_dir/k.o"), kiln::Error);

  // The object is position independent: it links into a .so that dlopen loads and runs.
  if (std::system(("cc -shared -o " + so + " " + obj + " 2>/dev/null").c_str()) != 0) {
    WARN("no C compiler to link the object; skipping the dlopen check");
  } else {
    void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(h != nullptr);
    auto fn = reinterpret_cast<kiln_kernel_fn>(dlsym(h, "aot_scale"));
    REQUIRE(fn != nullptr);
    NDArray A = NDArray::from_vector<float>({n}, runtime::dtype_f32(), std::vector<float>(n, 1.5f));
    NDArray C = NDArray::zeros({n}, runtime::dtype_f32());
    void* args[] = {A.raw_data(), C.raw_data()};
    REQUIRE(fn(args, 2) == 0);
    REQUIRE(fn(args, 1) == -2);  // wrong argument count is refused by the kernel itself
    for (int k = 0; k < n; ++k) REQUIRE(C.data<float>()[k] == 4.5f);
    dlclose(h);
  }
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("a vector multiply-add kernel uses each target's FMAs at its vector width", "[codegen]") {
  const int n = 256, lanes = 16;
  Buffer a = flat_buffer("A", DataType::f32(), n), b = flat_buffer("B", DataType::f32(), n),
         c = flat_buffer("C", DataType::f32(), n);
  Var v("v");
  Expr r = ramp(v * lanes, 1, lanes);
  // Written as a separate multiply and add: the `contract` flag must let LLVM fuse them.
  Stmt body = for_loop(v, 0, n / lanes, ForKind::Serial,
                       buffer_store(c, buffer_load(a, {r}) * buffer_load(b, {r}) + buffer_load(c, {r}), {r}));
  // Each named target's FMA and registers: AVX2's ymm, AVX-512's zmm, NEON's fmla on v
  // registers; x86-64-v2 (SSE4.2) has no FMA, so its multiply and add stay apart.
  const std::map<std::string, std::vector<std::string>> want = {{"x86-64-v2", {"mulps", "addps"}},
                                                                {"x86-64-v3", {"ymm", "vfmadd"}},
                                                                {"znver4", {"zmm", "vfmadd"}},
                                                                {"neoverse-n1", {"fmla", ".4s"}}};
  std::vector<float> av(n), bv(n), cv(n);
  for (int i = 0; i < n; ++i) av[i] = 0.1f * i, bv[i] = 3.f - 0.01f * i, cv[i] = float(i % 7);
  for (const Target& target : test::inspected_targets()) {
    INFO(target.cpu);
    auto m = test::build({prim_func("vfma", {a, b, c}, body)}, target);
    const std::string s = m.assembly();
    for (const std::string& w : want.at(target.cpu)) CHECK(test::contains(s, w));
    CHECK(test::contains(s, "zmm") == (target.cpu == "znver4"));
    if (!test::runs_here(target)) continue;
    NDArray C = array_for(c, cv);
    test::run(m, "vfma", {array_for(a, av), array_for(b, bv), C});
    for (int i = 0; i < n; ++i) {
      volatile float product = av[i] * bv[i];  // rounded apart, whatever this file's compiler contracts
      const float fused = std::fma(av[i], bv[i], cv[i]), apart = product + cv[i];
      REQUIRE(C.data<float>()[i] == (target.facts.fma ? fused : apart));
    }
  }
}

TEST_CASE("argument mismatches name the parameter", "[codegen]") {
  const int n = 16;
  Buffer a = flat_buffer("A", DataType::f32(), n), b = flat_buffer("B", DataType::i32(), n),
         c = ir::Buffer::make("C", DataType::f32(), {Expr(4), Expr(4)});
  Var i("i");
  auto m = test::build({prim_func("three", {a, b, c}, for_loop(i, 0, n, ForKind::Serial,
                                                                  buffer_store(c, buffer_load(a, {i}), {i})))});
  NDArray A = NDArray::zeros({n}, runtime::dtype_f32()), B = NDArray::zeros({n}, runtime::dtype_i32()),
          C = NDArray::zeros({4, 4}, runtime::dtype_f32());
  REQUIRE_NOTHROW(test::run(m, "three", {A, B, C}));
  REQUIRE_THROWS_WITH(test::run(m, "three", {A, B}), Catch::Contains("takes 3 arguments, got 2"));
  REQUIRE_THROWS_WITH(test::run(m, "three", {A, A, C}),
                      Catch::Contains("'B'") && Catch::Contains("expected dtype int32, got float32"));
  REQUIRE_THROWS_WITH(test::run(m, "three", {A, B, NDArray::zeros({16}, runtime::dtype_f32())}),
                      Catch::Contains("'C'") && Catch::Contains("expected shape [4, 4], got [16]"));
  DLTensor shifted = *A.dltensor();
  shifted.byte_offset = 4;
  REQUIRE_THROWS_WITH(m.run("three", {&shifted, B.dltensor(), C.dltensor()}),
                      Catch::Contains("'A'") && Catch::Contains("aligned"));
  int64_t strides[] = {1, 4};  // column-major
  DLTensor transposed = *C.dltensor();
  transposed.strides = strides;
  REQUIRE_THROWS_WITH(m.run("three", {A.dltensor(), B.dltensor(), &transposed}),
                      Catch::Contains("'C'") && Catch::Contains("compact"));
  REQUIRE_THROWS_WITH(m.run("three", {A.dltensor(), nullptr, C.dltensor()}), Catch::Contains("'B'"));
  REQUIRE_THROWS_WITH(test::run(m, "nope", {}), Catch::Contains("'nope'"));
  REQUIRE_THROWS_AS(codegen::Module().run("three", {}), kiln::Error);
}

TEST_CASE("IR the CPU backend cannot compile is rejected with a named culprit", "[codegen]") {
  Buffer a = flat_buffer("A", DataType::f32(), 16);
  Var tx("tx");
  Stmt bound = for_loop(tx, 0, 16, ForKind::ThreadBinding, buffer_store(a, Expr(1.f), {tx}), "threadIdx.x");
  REQUIRE_THROWS_WITH(test::build({prim_func("gpu", {a}, bound)}),
                      Catch::Contains("'tx'") && Catch::Contains("threadIdx.x") && Catch::Contains("CUDA"));

  Buffer a2 = ir::Buffer::make("A2", DataType::f32(), {Expr(4), Expr(4)});
  Stmt multi = buffer_store(a2, Expr(1.f), {Expr(1), Expr(2)});
  REQUIRE_THROWS_WITH(test::build({prim_func("unflat", {a2}, multi)}),
                      Catch::Contains("'A2'") && Catch::Contains("flatten_storage"));

  Stmt unknown = buffer_store(a, make_intrinsic("frobnicate", {Expr(1.f)}), {Expr(0)});
  REQUIRE_THROWS_WITH(test::build({prim_func("unk", {a}, unknown)}), Catch::Contains("'frobnicate'"));

  Stmt ok = buffer_store(a, Expr(1.f), {Expr(0)});
  REQUIRE_THROWS_WITH(test::build({prim_func("twice", {a}, ok), prim_func("twice", {a}, ok)}),
                      Catch::Contains("'twice'"));

  // A Reduce left in the IR is a compiler bug (lowering removes it): an internal error.
  Var k("k");
  Expr reduce = make_reduce(sum_reducer(DataType::f32()), {buffer_load(a, {k})},
                            {IterVar::make(k, Range(0, 16), IterKind::Reduce)}, make_const(DataType::boolean(), 1), 0);
  REQUIRE_THROWS_AS(test::build({prim_func("red", {a}, buffer_store(a, reduce, {Expr(0)}))}), kiln::InternalError);
}

TEST_CASE("cross-compiling for another triple gives objects but no JIT", "[codegen]") {
  Buffer a = flat_buffer("A", DataType::f32(), 64);
  Var i("i");
  auto m = test::build({prim_func("k", {a}, for_loop(i, 0, 64, ForKind::Serial, buffer_store(a, Expr(2.f), {i})))},
                          Target::parse("llvm -mtriple=aarch64-linux-gnu"));
  const std::string& obj = m.object_code();
  REQUIRE(obj.compare(0, 4, "\x7f" "ELF") == 0);
  REQUIRE(static_cast<unsigned char>(obj[18]) == 183);  // e_machine EM_AARCH64
  REQUIRE(test::contains(m.assembly(), "wzr"));         // an AArch64 register
  REQUIRE_THROWS_WITH(m.get_function("k"), Catch::Contains("aarch64"));
}

TEST_CASE("dump options print the LLVM IR and assembly", "[codegen]") {
  Buffer a = flat_buffer("A", DataType::f32(), 4);
  codegen::BuildOptions o;
  o.dump_llvm_ir = true;
  o.dump_asm = true;
  for (const Target& target : test::inspected_targets()) {
    INFO(target.cpu);
    std::ostringstream captured;
    std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
    auto m = test::build({prim_func("dumped", {a}, buffer_store(a, Expr(1.f), {Expr(0)}))}, target, o);
    std::cerr.rdbuf(old);
    CHECK(test::contains(captured.str(), "define i32 @dumped(ptr"));
    CHECK(test::contains(captured.str(), "dumped:"));  // the assembly label
  }
}

TEST_CASE("fast_math builds and computes the same simple results", "[codegen]") {
  const int n = 64;
  Buffer a = flat_buffer("A", DataType::f32(), n), c = flat_buffer("C", DataType::f32(), 1);
  Var i("i");
  codegen::BuildOptions o;
  o.fast_math = true;
  const Stmt body = seq({buffer_store(c, Expr(0.f), {Expr(0)}),
                         for_loop(i, 0, n, ForKind::Serial,
                                  buffer_store(c, buffer_load(c, {Expr(0)}) + buffer_load(a, {i}), {Expr(0)}))});
  for (const Target& target : test::inspected_targets()) {
    INFO(target.cpu);
    CHECK(test::contains(test::build({prim_func("sum", {a, c}, body)}, target, o).llvm_ir(), "reassoc"));
  }
  auto m = test::build({prim_func("sum", {a, c}, body)}, Target::host(), o);
  std::vector<float> av(n);
  for (int k = 0; k < n; ++k) av[k] = float(k);  // exact in any order
  NDArray C = NDArray::zeros({1}, runtime::dtype_f32());
  test::run(m, "sum", {array_for(a, av), C});
  REQUIRE(C.data<float>()[0] == float(n * (n - 1) / 2));
}
