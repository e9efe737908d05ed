// The multiply rate of AVX2's exact int8 step against float's FMA on this core: 8 independent
// chains of `vpmaddwd` alone, of `vfmadd231ps`, and of `vpmaddwd` + `vpaddd` (the int16-pair dot
// kiln's AVX2 int8 kernels issue: 16 products a pair, where an FMA does 8). The ratio of the
// last to the FMA loop's GMAC/s bounds what exact int8 convs can gain over float ones on a CPU
// without VNNI (docs/performance.md, "Quantized models (int8)"). x86-64 with AVX2 only:
//
//   cc -O2 bench/avx2_int8_step.c -o /tmp/avx2_int8_step && /tmp/avx2_int8_step
#include <stdio.h>
#include <time.h>

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

#define ITERATIONS 200000000L
#define EIGHT(op) op(2) op(3) op(4) op(5) op(6) op(7) op(8) op(9)
#define MADD(r) "vpmaddwd %%ymm0, %%ymm1, %%ymm" #r "\n"
#define FMA(r) "vfmadd231ps %%ymm0, %%ymm1, %%ymm" #r "\n"
// Each product summed into an accumulator (ymm10-15, the first two twice), as a register tile does.
#define MADD_ADD_TO(r, acc) "vpmaddwd %%ymm0, %%ymm1, %%ymm" #r "\n vpaddd %%ymm" #r ", %%ymm" #acc ", %%ymm" #acc "\n"
#define EIGHT_PAIRS                                                                                             \
  MADD_ADD_TO(2, 10) MADD_ADD_TO(3, 11) MADD_ADD_TO(4, 12) MADD_ADD_TO(5, 13) MADD_ADD_TO(6, 14) MADD_ADD_TO(7, 15) \
  MADD_ADD_TO(8, 10) MADD_ADD_TO(9, 11)
#define CLOBBERS "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9"

int main(void) {
  double t0 = seconds();
  for (long i = 0; i < ITERATIONS; ++i) __asm__ volatile(EIGHT(MADD) ::: CLOBBERS);
  double t1 = seconds();
  for (long i = 0; i < ITERATIONS; ++i) __asm__ volatile(EIGHT(FMA) ::: CLOBBERS);
  double t2 = seconds();
  for (long i = 0; i < ITERATIONS; ++i)
    __asm__ volatile(EIGHT_PAIRS ::: CLOBBERS, "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
  double t3 = seconds();
  const double madd = (t1 - t0) / ITERATIONS * 1e9, fma = (t2 - t1) / ITERATIONS * 1e9, pair = (t3 - t2) / ITERATIONS * 1e9;
  printf("ns per 8: vpmaddwd %.3f, vfmadd231ps %.3f, vpmaddwd + vpaddd %.3f\n", madd, fma, pair);
  printf("GMAC/s one core: float FMA %.1f, exact int8 step %.1f (%.2fx)\n", 64 / fma, 128 / pair, (128 / pair) / (64 / fma));
  return 0;
}
