/* One process serving two models from many threads (kiln_runtime.h, "Threads"): each thread
 * has its own kiln_context of each model, the models' code and weights are loaded once, and
 * every output of every inference must equal, bit for bit, the output the same input gives run
 * alone on one thread before the threads start. Afterwards the process must hold no thread
 * beyond the runtime's one shared pool: contexts start none of their own.
 *
 *   concurrent_inference A.so B.so [threads] [inferences_per_thread]     (default 8 x 200)
 *
 * Each inference picks its model and one of kVariants inputs from its thread and iteration, so
 * different threads run different models and inputs at the same moment. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/runtime/kiln_runtime.h"

enum { kModels = 2, kVariants = 3, kMaxTensors = 8 };

typedef struct {
  int32_t num_inputs, num_outputs;
  kiln_tensor_info in[kMaxTensors], out[kMaxTensors];
  size_t in_bytes[kMaxTensors], out_bytes[kMaxTensors];
  void* inputs[kVariants][kMaxTensors];   /* the variants' input data */
  void* expected[kVariants][kMaxTensors]; /* their outputs, run alone */
} Model;

static kiln_module* g_modules[kModels];
static Model g_models[kModels];
static int g_inferences = 200;

static void die(const char* what) {
  fprintf(stderr, "concurrent_inference: %s: %s\n", what, kiln_last_error());
  exit(1);
}

static size_t tensor_bytes(const kiln_tensor_info* t) {
  size_t n = (t->dtype.bits + 7) / 8;
  for (int32_t d = 0; d < t->ndim; ++d) n *= (size_t)t->shape[d];
  return n;
}

/* Seeded values: floats in [-1, 1], integers in [0, 8) (valid token ids, masks read as
 * nonzero), one byte per bool. */
static void fill(const kiln_tensor_info* t, void* data, uint32_t seed) {
  size_t elem = (t->dtype.bits + 7) / 8, n = tensor_bytes(t) / elem;
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    double u = (double)(seed >> 8) / (double)(1u << 24);
    if (t->dtype.code == kDLFloat && t->dtype.bits == 32) ((float*)data)[i] = (float)(2 * u - 1);
    else if (t->dtype.code == kDLInt && t->dtype.bits == 64) ((int64_t*)data)[i] = (int64_t)(u * 8);
    else if (t->dtype.code == kDLInt && t->dtype.bits == 32) ((int32_t*)data)[i] = (int32_t)(u * 8);
    else memset((char*)data + i * elem, u < 0.5 ? 0 : 1, elem);
  }
}

static DLTensor tensor_of(const kiln_tensor_info* t, void* data) {
  DLTensor d;
  memset(&d, 0, sizeof d);
  d.data = data;
  d.device.device_type = kDLCPU;
  d.ndim = t->ndim;
  d.dtype = t->dtype;
  d.shape = (int64_t*)t->shape;
  return d;
}

/* Runs variant v of model m on ctx; with `out` NULL the outputs go to the model's expected
 * buffers, else they are compared with them. Returns the number of outputs that differ. */
static int infer(kiln_context* ctx, int m, int v, void* scratch[kMaxTensors]) {
  Model* md = &g_models[m];
  for (int32_t i = 0; i < md->num_inputs; ++i) {
    DLTensor t = tensor_of(&md->in[i], md->inputs[v][i]);
    if (kiln_context_set_input_index(ctx, i, &t) != KILN_OK) die("set_input");
  }
  if (kiln_context_run(ctx) != KILN_OK) die("run");
  int wrong = 0;
  for (int32_t o = 0; o < md->num_outputs; ++o) {
    void* dst = scratch ? scratch[o] : md->expected[v][o];
    DLTensor t = tensor_of(&md->out[o], dst);
    if (kiln_context_get_output(ctx, o, &t) != KILN_OK) die("get_output");
    if (scratch && memcmp(scratch[o], md->expected[v][o], md->out_bytes[o]) != 0) ++wrong;
  }
  return wrong;
}

static void* serve(void* arg) {
  long id = (long)arg;
  kiln_context* ctx[kModels];
  void* scratch[kModels][kMaxTensors];
  for (int m = 0; m < kModels; ++m) {
    if (kiln_context_create(g_modules[m], &ctx[m]) != KILN_OK) die("context_create");
    for (int32_t o = 0; o < g_models[m].num_outputs; ++o) scratch[m][o] = malloc(g_models[m].out_bytes[o]);
  }
  long wrong = 0;
  for (int i = 0; i < g_inferences; ++i) {
    int m = (int)((id + i) % kModels), v = (int)((id * 7 + i) % kVariants);
    int bad = infer(ctx[m], m, v, scratch[m]);
    if (bad && wrong == 0) fprintf(stderr, "thread %ld inference %d (model %d, input %d): %d outputs differ\n", id, i, m, v, bad);
    wrong += bad;
  }
  for (int m = 0; m < kModels; ++m) {
    kiln_context_free(ctx[m]);
    for (int32_t o = 0; o < g_models[m].num_outputs; ++o) free(scratch[m][o]);
  }
  return (void*)wrong;
}

static int process_threads(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  int n = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "Threads: %d", &n) == 1) break;
  if (f) fclose(f);
  return n;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: concurrent_inference A.so B.so [threads] [inferences_per_thread]\n");
    return 2;
  }
  int threads = argc > 3 ? atoi(argv[3]) : 8;
  if (argc > 4) g_inferences = atoi(argv[4]);
  if (threads < 1 || threads > 256 || g_inferences < 1) {
    fprintf(stderr, "concurrent_inference: bad thread or inference count\n");
    return 2;
  }
  for (int m = 0; m < kModels; ++m) {
    Model* md = &g_models[m];
    if (kiln_module_load(argv[1 + m], &g_modules[m]) != KILN_OK) die("load");
    kiln_module_num_inputs(g_modules[m], &md->num_inputs);
    kiln_module_num_outputs(g_modules[m], &md->num_outputs);
    if (md->num_inputs > kMaxTensors || md->num_outputs > kMaxTensors) {
      fprintf(stderr, "concurrent_inference: %s has too many inputs or outputs\n", argv[1 + m]);
      return 1;
    }
    for (int32_t i = 0; i < md->num_inputs; ++i) {
      kiln_module_input_info(g_modules[m], i, &md->in[i]);
      md->in_bytes[i] = tensor_bytes(&md->in[i]);
    }
    for (int32_t o = 0; o < md->num_outputs; ++o) {
      kiln_module_output_info(g_modules[m], o, &md->out[o]);
      md->out_bytes[o] = tensor_bytes(&md->out[o]);
    }
    /* The references: each variant run alone, on a context of its own. */
    kiln_context* ctx;
    if (kiln_context_create(g_modules[m], &ctx) != KILN_OK) die("context_create");
    for (int v = 0; v < kVariants; ++v) {
      for (int32_t i = 0; i < md->num_inputs; ++i) {
        md->inputs[v][i] = malloc(md->in_bytes[i] ? md->in_bytes[i] : 1);
        fill(&md->in[i], md->inputs[v][i], 1000u * (uint32_t)m + 17u * (uint32_t)v + (uint32_t)i);
      }
      for (int32_t o = 0; o < md->num_outputs; ++o) md->expected[v][o] = malloc(md->out_bytes[o] ? md->out_bytes[o] : 1);
      infer(ctx, m, v, NULL);
    }
    kiln_context_free(ctx);
  }
  /* Variants must differ in their outputs, or a context answering with another's result would
   * go unnoticed. */
  for (int m = 0; m < kModels; ++m)
    if (memcmp(g_models[m].expected[0][0], g_models[m].expected[1][0], g_models[m].out_bytes[0]) == 0) {
      fprintf(stderr, "concurrent_inference: model %d gives the same output for two inputs\n", m);
      return 1;
    }

  pthread_t tid[256];
  for (long t = 0; t < threads; ++t)
    if (pthread_create(&tid[t], NULL, serve, (void*)t) != 0) {
      fprintf(stderr, "concurrent_inference: cannot start thread %ld\n", t);
      return 1;
    }
  long wrong = 0;
  for (int t = 0; t < threads; ++t) {
    void* r;
    pthread_join(tid[t], &r);
    wrong += (long)r;
  }
  int pool = kiln_get_num_threads(), live = process_threads();
  printf("%d threads x %d inferences over 2 models (pool of %d threads): %ld wrong outputs; %d threads alive after\n",
         threads, g_inferences, pool, wrong, live);
  if (wrong != 0) return 1;
  /* main + the pool's workers (the caller of a parallel loop is its first thread), and under
   * ThreadSanitizer its background thread. */
  int expected = pool;
#if defined(KILN_SANITIZE_THREAD)
  expected += 1;
#endif
  if (live != -1 && live != expected) {
    fprintf(stderr, "concurrent_inference: %d threads alive, expected %d (main + the shared pool's %d workers)\n", live,
            expected, pool - 1);
    return 1;
  }
  for (int m = 0; m < kModels; ++m) {
    for (int v = 0; v < kVariants; ++v) {
      for (int32_t i = 0; i < g_models[m].num_inputs; ++i) free(g_models[m].inputs[v][i]);
      for (int32_t o = 0; o < g_models[m].num_outputs; ++o) free(g_models[m].expected[v][o]);
    }
    kiln_module_free(g_modules[m]);
  }
  return 0;
}
