// SGEMM: the kernel kiln compile builds for C = A x B (nn.matmul of two runtime inputs: the
// target's strategy, the matmul template's default knobs, the loop passes, LLVM) against
// OpenBLAS's cblas_sgemm in the same run, same thread count. Prints one line per size:
//   gemm MxNxK: kiln X GFLOPS, openblas Y GFLOPS, ratio Z
// Each figure is the median of 7 timed samples (each at least 0.2 s of calls), kiln's and
// OpenBLAS's samples taken in turn, kiln's after a 0.3 s pause that lets OpenBLAS's spinning
// workers go to sleep.
//
//   bench_gemm [--target T] [--threads N] [--size N]
// For AVX2 code on an AVX-512 host, compare with OpenBLAS restricted to its AVX2 kernels:
//   OPENBLAS_CORETYPE=Haswell build/bin/bench_gemm --target "llvm -mcpu=x86-64-v3"
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "kiln/autotune/measure_process.h"
#include "kiln/codegen/build.h"
#include "kiln/compiler.h"
#include "kiln/runtime/kernel.h"
#include "kiln/support/error.h"

extern "C" void openblas_set_num_threads(int);

namespace {

// Median seconds per call of each function over 7 samples, each at least 0.2 s of back-to-back
// calls, the two sampled in turn: on a shared machine, load that comes and goes lands on both
// (timed one after the other, ratios at 512 swung from 0.75 to 1.1 between runs minutes apart).
// `g`'s threads may spin after its sample (OpenBLAS's workers: about 0.1 s): `f`'s sample starts
// after `settle_s`, so it is not timed on a core they hold (on 2 cores kiln's AVX2 512^3 measured
// 155-215 GFLOPS right after OpenBLAS's samples, 202-214 with OpenBLAS's workers told not to spin).
std::pair<double, double> median_seconds_per_call(const std::function<void()>& f, const std::function<void()>& g,
                                                  double settle_s) {
  kiln::autotune::TimerOptions opts;
  opts.repeat = 1;
  opts.warmup = 0;
  opts.min_duration_s = 0.2;
  std::vector<double> tf, tg;
  for (int s = 0; s < 7; ++s) {
    std::this_thread::sleep_for(std::chrono::duration<double>(settle_s));
    f();
    tf.push_back(kiln::autotune::time_function(f, opts).median);
    tg.push_back(kiln::autotune::time_function(g, opts).median);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {median(tf), median(tg)};
}

// Each side's operands where it would find them: kiln's page-aligned, as the graph executor
// places every activation (one arena, each storage on its own page); OpenBLAS's from ordinary
// 64-byte aligned allocations, as a BLAS user's. Both libraries' speeds depend on where their
// operands lie relative to each other: with kiln on 64-byte aligned buffers 512^3 ran 158-228
// GFLOPS from one process to the next (page-aligned: 220-225 in four runs of five), and
// OpenBLAS on page-aligned ones 151-200 (64-byte aligned: 198-213).
float* aligned_floats(size_t n, size_t alignment) {
  void* p = nullptr;
  size_t bytes = (n * sizeof(float) + alignment - 1) / alignment * alignment;
  if (posix_memalign(&p, alignment, bytes) != 0) std::abort();
  return static_cast<float*>(p);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  std::vector<int64_t> sizes = {256, 512, 1024};
  kiln::CompileOptions opts;
  try {
    for (int i = 1; i < argc; ++i) {
      if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
      else if (!std::strcmp(argv[i], "--size") && i + 1 < argc) sizes = {std::atoll(argv[++i])};
      else if (!std::strcmp(argv[i], "--target") && i + 1 < argc) opts.target = kiln::Target::parse(argv[++i]);
      else {
        std::fprintf(stderr, "bench_gemm: unknown option '%s' (expected --target T, --threads N, --size N)\n", argv[i]);
        return 2;
      }
    }
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "bench_gemm: %s\n", e.what());
    return 1;
  }
  kiln_set_num_threads(threads);
  openblas_set_num_threads(threads);
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  std::printf("kiln target: %s\nthreads: %d (kiln pool and OpenBLAS%s%s)\n", opts.target.summary().c_str(), threads,
              coretype ? ", OPENBLAS_CORETYPE=" : "", coretype ? coretype : "");
  for (int64_t n : sizes) {
    namespace relay = kiln::relay;
    relay::Type t = relay::tensor_type(relay::DataType::f32(), {n, n});
    relay::Expr av = relay::make_var("a", t), bv = relay::make_var("b", t);
    kiln::CompiledModel compiled =
        kiln::compile(relay::Module::make({av, bv}, {relay::make_call("nn.matmul", {av, bv})}, {"c"}), opts);
    auto mod = kiln::codegen::build(compiled.kernels, opts.target);
    kiln_kernel_fn kernel = mod.get_function(compiled.kernels.at(0).name);
    size_t elems = size_t(n) * n;
    float *a = aligned_floats(elems, 4096), *b = aligned_floats(elems, 4096), *c = aligned_floats(elems, 4096);
    float *ba = aligned_floats(elems, 64), *bb = aligned_floats(elems, 64), *r = aligned_floats(elems, 64);
    for (size_t i = 0; i < elems; ++i) {
      a[i] = ba[i] = float((i * 7) % 13) / 13.f - 0.5f;
      b[i] = bb[i] = float((i * 5) % 11) / 11.f - 0.5f;
    }
    void* args[] = {a, b, c};
    auto run_kiln = [&] { kernel(args, 3); };
    auto run_blas = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.f, ba, int(n), bb, int(n), 0.f, r, int(n));
    };
    run_kiln();
    run_blas();
    double worst = 0;
    for (size_t i = 0; i < elems; ++i) worst = std::max(worst, double(std::abs(c[i] - r[i])));
    double flops = 2.0 * n * n * n;
    auto [tk, tb] = median_seconds_per_call(run_kiln, run_blas, 0.3);
    double gk = flops / tk * 1e-9, gb = flops / tb * 1e-9;
    std::printf("gemm %ldx%ldx%ld: kiln %.1f GFLOPS, openblas %.1f GFLOPS, ratio %.2f  (max |diff| %.2g)\n", long(n),
                long(n), long(n), gk, gb, gk / gb, worst);
    for (float* p : {a, b, c, ba, bb, r}) std::free(p);
  }
  return 0;
}
