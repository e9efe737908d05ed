/* serve.c: one compiled model served from many threads, the way an inference server calls
 * ONNX Runtime's Run concurrently. The model is loaded once (code and weights); each serving
 * thread has its own kiln_context (activations, inputs, outputs). Prints inferences per second.
 *
 *   serve MODEL.so [--threads N] [--pool P] [--seconds S]
 *
 * --threads: serving threads (default 1). --pool: threads of kiln's shared pool, which every
 * context's parallel loops use (default: KILN_NUM_THREADS, else all cores). See README.md. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/runtime/kiln_runtime.h"

typedef struct {
  const kiln_module* module;
  double seconds;
  long done;   /* inferences this thread finished */
  int failed;  /* a kiln call failed: its message was printed */
} Server;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A context of its own, inputs set once (a real server sets each request's), then runs until
 * the time is up. */
static void* serve(void* arg) {
  Server* s = (Server*)arg;
  kiln_context* ctx = NULL;
  void* buffers[16] = {0};
  int32_t n = 0;
  if (kiln_context_create(s->module, &ctx) != KILN_OK || kiln_module_num_inputs(s->module, &n) != KILN_OK) goto fail;
  for (int32_t i = 0; i < n && i < 16; ++i) {
    kiln_tensor_info info;
    if (kiln_module_input_info(s->module, i, &info) != KILN_OK) goto fail;
    size_t bytes = (info.dtype.bits + 7) / 8;
    for (int32_t d = 0; d < info.ndim; ++d) bytes *= (size_t)info.shape[d];
    buffers[i] = calloc(bytes ? bytes : 1, 1);  /* zeros: valid for every dtype */
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = buffers[i];
    t.device.device_type = kDLCPU;
    t.ndim = info.ndim;
    t.dtype = info.dtype;
    t.shape = (int64_t*)info.shape;
    if (kiln_context_set_input_index(ctx, i, &t) != KILN_OK) goto fail;
  }
  double end = now() + s->seconds;
  while (now() < end) {
    if (kiln_context_run(ctx) != KILN_OK) goto fail;
    ++s->done;
  }
  goto done;
fail:
  fprintf(stderr, "serve: %s\n", kiln_last_error());
  s->failed = 1;
done:
  kiln_context_free(ctx);
  for (int i = 0; i < 16; ++i) free(buffers[i]);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: serve MODEL.so [--threads N] [--pool P] [--seconds S]\n");
    return 2;
  }
  int threads = 1, pool = 0;
  double seconds = 3;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--pool") == 0) pool = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--seconds") == 0) seconds = atof(argv[i + 1]);
    else {
      fprintf(stderr, "serve: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (threads < 1 || threads > 64 || seconds <= 0) {
    fprintf(stderr, "serve: --threads must be 1..64 and --seconds positive\n");
    return 2;
  }
  if (pool > 0) kiln_set_num_threads(pool);

  kiln_module* module;
  if (kiln_module_load(argv[1], &module) != KILN_OK) {
    fprintf(stderr, "serve: %s\n", kiln_last_error());
    return 1;
  }
  /* A short warm-up on the module's own context pages in the code and weights. */
  Server warm = {module, 0.2, 0, 0};
  serve(&warm);
  if (warm.failed) return 1;

  Server servers[64];
  pthread_t tid[64];
  double t0 = now();
  for (int t = 0; t < threads; ++t) {
    servers[t] = (Server){module, seconds, 0, 0};
    pthread_create(&tid[t], NULL, serve, &servers[t]);
  }
  long total = 0;
  int failed = 0;
  for (int t = 0; t < threads; ++t) {
    pthread_join(tid[t], NULL);
    total += servers[t].done;
    failed |= servers[t].failed;
  }
  double wall = now() - t0;
  kiln_module_free(module);
  if (failed) return 1;
  printf("%d serving threads, pool of %d: %ld inferences in %.2f s = %.1f inferences/s\n", threads,
         kiln_get_num_threads(), total, wall, (double)total / wall);
  return 0;
}
