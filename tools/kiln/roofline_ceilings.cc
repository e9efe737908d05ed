// Hand-written kernels rather than kiln-generated ones: the ceilings must not depend on the
// compiler being measured. The FMA kernel uses intrinsics in functions with their own target
// attribute, so the CLI itself still builds for the baseline ISA and picks the width at run time.
#include "roofline_ceilings.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "kiln/support/error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kiln::cli {
namespace {

// Enough independent accumulators to cover FMA latency x issue rate on current x86 cores
// (4 cycles x 2 pipes), few enough to stay in the 16 registers of AVX2.
constexpr int kChains = 12;
// Many short tries, the best kept: on a shared machine a try of a few milliseconds often runs
// undisturbed, as a kernel's call does, while a long one always shares its cores.
constexpr long kFmaIterations = 1'000'000;
constexpr int kFmaTries = 60;

#if defined(__x86_64__)
__attribute__((target("avx512f"))) float fma_chains_512(long iterations) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(1.0f + 0.01f * i);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < iterations; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  float v[16];
  _mm512_storeu_ps(v, s);
  return v[0] + v[15];  // the result is used, so no chain is dead code
}

__attribute__((target("avx2,fma"))) float fma_chains_256(long iterations) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(1.0f + 0.01f * i);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < iterations; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_ps(s, acc[i]);
  float v[8];
  _mm256_storeu_ps(v, s);
  return v[0] + v[7];
}
#endif

// Runs body(thread) on `threads` threads at once; the wall time of the slowest.
template <class F>
double timed_on_threads(int threads, F body) {
  std::vector<std::thread> pool;
  auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
  for (std::thread& t : pool) t.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double fma_peak(int threads, int bits) {
  const long iterations = kFmaIterations;
  std::vector<float> sink(threads);
  double best = 1e30;
  for (int rep = 0; rep < kFmaTries; ++rep)
    best = std::min(best, timed_on_threads(threads, [&](int t) {
#if defined(__x86_64__)
      sink[t] = bits == 512 ? fma_chains_512(iterations) : fma_chains_256(iterations);
#endif
    }));
  const double flops = 2.0 * (bits / 32) * kChains * double(iterations) * threads;
  return flops / best * 1e-9;
}

// One triad pass, auto-vectorized once per ISA and picked at load time: the baseline SSE2 loop
// would understate the L2 bandwidth that kiln's AVX-512 kernels get. Not under TSan: the clones'
// resolver runs while the dynamic loader relocates `kiln`, before TSan's runtime is set up, and
// GCC instruments it, so the program died before main (ceilings measured under a sanitizer mean
// nothing anyway).
#if defined(KILN_SANITIZE_THREAD)
#define KILN_TRIAD_CLONES
#else
#define KILN_TRIAD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
KILN_TRIAD_CLONES void triad_pass(float* __restrict a, const float* __restrict b, const float* __restrict c, long n) {
  for (long i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
}

// STREAM's triad, `passes` per try, the best of `tries` (kFmaTries says why), counted as STREAM counts it: 12 bytes per element (two reads, one write; the
// write-allocate read of a is not counted). Each thread owns a slice it first touched itself.
double triad(int threads, long elements_per_thread, int passes, int tries) {
  const long n = elements_per_thread * threads;
  std::unique_ptr<float[]> a(new float[n]), b(new float[n]), c(new float[n]);
  timed_on_threads(threads, [&](int t) {
    for (long i = t * elements_per_thread; i < (t + 1) * elements_per_thread; ++i) a[i] = 0, b[i] = 1, c[i] = 2;
  });
  double best = 1e30;
  for (int rep = 0; rep < tries; ++rep)
    best = std::min(best, timed_on_threads(threads, [&](int t) {
      float* pa = a.get() + t * elements_per_thread;
      const float* pb = b.get() + t * elements_per_thread;
      const float* pc = c.get() + t * elements_per_thread;
      for (int p = 0; p < passes; ++p) triad_pass(pa, pb, pc, elements_per_thread);
    }));
  volatile float keep = a[n - 1];  // the stores are observable
  (void)keep;
  return 12.0 * double(n) * passes / best * 1e-9;
}

}  // namespace

const MemoryCeiling& Ceilings::level_for(double bytes) const {
  for (const MemoryCeiling& m : memory)
    if (bytes <= m.bytes) return m;
  return memory.back();
}

Ceilings measure_ceilings(int threads, const CpuFacts& facts) {
#if !defined(__x86_64__)
  throw Error("--roofline measures x86-64 ceilings only");
#else
  Ceilings c;
  c.threads = std::max(1, threads);
  const bool has512 = __builtin_cpu_supports("avx512f");
  const bool has256 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (!has256) throw Error("--roofline needs a CPU with AVX2 and FMA");
  c.vector_bits = facts.vector_bits >= 512 && has512 ? 512 : 256;
  c.peak_gflops = fma_peak(c.threads, c.vector_bits);
  // Each cache level: three arrays filling half of the threads' share, passes enough for about
  // 24 MiB of traffic per try. The L3 is shared: the threads split it.
  const double per_thread[3] = {double(facts.l1d_bytes), double(facts.l2_bytes),
                                double(facts.l3_bytes) / c.threads};
  const char* names[3] = {"L1", "L2", "L3"};
  for (int l = 0; l < 3; ++l) {
    const long elements = static_cast<long>(per_thread[l] / 2 / 3 / sizeof(float));
    const int passes = static_cast<int>(std::max(1L, (24L << 20) / (12 * elements)));
    c.memory.push_back({names[l], per_thread[l] * c.threads, triad(c.threads, elements, passes, 40)});
  }
  c.memory.push_back({"DRAM", std::numeric_limits<double>::infinity(), triad(c.threads, 8L << 20, 1, 10)});
  return c;
#endif
}

}  // namespace kiln::cli
