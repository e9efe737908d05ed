/* deploy.c: classify an input with a compiled kiln model, from plain C99, linking only the
 * kiln runtime (see README.md in this folder).
 *
 *   deploy MODEL.so [INPUT.raw] [--threads N]
 *
 * INPUT.raw holds the model's first input as raw little-endian float32 values, row-major
 * (e.g. a 1x3x224x224 image, normalized as the model expects: 602112 bytes). Without it, a
 * fixed test pattern is used. Prints the model's inputs and outputs, then the five highest
 * scores of its first output with their class indices. Exit status 0 on success, 1 on any
 * error (with kiln's message). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/runtime/kiln_runtime.h"

#define TOP_K 5

static int failed(const char* what) {
  fprintf(stderr, "deploy: %s failed: %s\n", what, kiln_last_error());
  return 1;
}

static int64_t numel(const kiln_tensor_info* info) {
  int64_t n = 1;
  int32_t d;
  for (d = 0; d < info->ndim; ++d) n *= info->shape[d];
  return n;
}

static void print_info(const char* kind, const kiln_tensor_info* info) {
  int32_t d;
  printf("%s '%s': dtype code %u bits %u, shape [", kind, info->name, (unsigned)info->dtype.code,
         (unsigned)info->dtype.bits);
  for (d = 0; d < info->ndim; ++d) printf("%s%lld", d ? ", " : "", (long long)info->shape[d]);
  printf("]\n");
}

static int is_float32(const kiln_tensor_info* info) {
  return info->dtype.code == kDLFloat && info->dtype.bits == 32 && info->dtype.lanes == 1;
}

/* A DLTensor over caller memory with the shape of `info` (the shape is copied into `shape`). */
static DLTensor make_tensor(float* data, const kiln_tensor_info* info, int64_t* shape) {
  DLTensor t;
  memset(&t, 0, sizeof(t));
  memcpy(shape, info->shape, sizeof(int64_t) * (size_t)info->ndim);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = info->ndim;
  t.dtype = info->dtype;
  t.shape = shape;
  t.strides = NULL; /* compact row-major */
  t.byte_offset = 0;
  return t;
}

static int read_input(const char* path, float* data, int64_t n) {
  FILE* f = fopen(path, "rb");
  size_t got;
  int extra;
  if (f == NULL) {
    fprintf(stderr, "deploy: cannot open input file '%s'\n", path);
    return 1;
  }
  got = fread(data, sizeof(float), (size_t)n, f);
  extra = fgetc(f);
  fclose(f);
  if (got != (size_t)n || extra != EOF) {
    fprintf(stderr, "deploy: input file '%s' must hold exactly %lld float32 values\n", path, (long long)n);
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  const char* model_path = NULL;
  const char* input_path = NULL;
  kiln_module* mod = NULL;
  kiln_tensor_info in_info, out_info;
  int64_t in_shape[16], out_shape[16];
  int32_t num_inputs = 0, num_outputs = 0, i;
  int64_t n_in, n_out, k;
  float *input = NULL, *output = NULL;
  int64_t top[TOP_K];
  int status = 1;
  DLTensor in_tensor, out_tensor;

  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      kiln_set_num_threads(atoi(argv[++i]));
    } else if (model_path == NULL) {
      model_path = argv[i];
    } else if (input_path == NULL) {
      input_path = argv[i];
    } else {
      model_path = NULL;
      break;
    }
  }
  if (model_path == NULL) {
    fprintf(stderr, "usage: %s MODEL.so [INPUT.raw] [--threads N]\n", argv[0]);
    return 2;
  }

  if (kiln_module_load(model_path, &mod) != KILN_OK) return failed("loading the model");
  if (kiln_module_num_inputs(mod, &num_inputs) != KILN_OK || kiln_module_num_outputs(mod, &num_outputs) != KILN_OK) {
    status = failed("reading the model's signature");
    goto done;
  }
  printf("model %s (kiln %s): %d input(s), %d output(s), %d thread(s)\n", model_path, kiln_version(), num_inputs,
         num_outputs, kiln_get_num_threads());
  for (i = 0; i < num_inputs; ++i) {
    if (kiln_module_input_info(mod, i, &in_info) != KILN_OK) goto error;
    print_info("  input", &in_info);
  }
  for (i = 0; i < num_outputs; ++i) {
    if (kiln_module_output_info(mod, i, &out_info) != KILN_OK) goto error;
    print_info("  output", &out_info);
  }

  /* This program feeds the first input and reads the first output, both float32. */
  if (kiln_module_input_info(mod, 0, &in_info) != KILN_OK || kiln_module_output_info(mod, 0, &out_info) != KILN_OK)
    goto error;
  if (!is_float32(&in_info) || !is_float32(&out_info) || in_info.ndim > 16 || out_info.ndim > 16) {
    fprintf(stderr, "deploy: this example handles float32 inputs and outputs only\n");
    goto done;
  }
  n_in = numel(&in_info);
  n_out = numel(&out_info);
  input = (float*)malloc(sizeof(float) * (size_t)(n_in > 0 ? n_in : 1));
  output = (float*)malloc(sizeof(float) * (size_t)(n_out > 0 ? n_out : 1));
  if (input == NULL || output == NULL) {
    fprintf(stderr, "deploy: out of memory\n");
    goto done;
  }
  if (input_path != NULL) {
    if (read_input(input_path, input, n_in) != 0) goto done;
  } else {
    for (k = 0; k < n_in; ++k) input[k] = (float)((k * 37) % 101) / 101.0f - 0.5f; /* test pattern */
  }

  in_tensor = make_tensor(input, &in_info, in_shape);
  out_tensor = make_tensor(output, &out_info, out_shape);
  if (kiln_module_set_input_index(mod, 0, &in_tensor) != KILN_OK) goto error;
  if (kiln_module_run(mod) != KILN_OK) goto error;
  if (kiln_module_get_output(mod, 0, &out_tensor) != KILN_OK) goto error;

  /* Top-K by repeated selection: K is small. */
  for (i = 0; i < TOP_K && i < n_out; ++i) {
    int64_t best = -1, j;
    int32_t r;
    for (k = 0; k < n_out; ++k) {
      int taken = 0;
      for (r = 0; r < i; ++r) taken |= top[r] == k;
      if (!taken && (best < 0 || output[k] > output[best])) best = k;
    }
    top[i] = best;
    j = best;
    if (i == 0) printf("top-%d of output '%s':\n", TOP_K, out_info.name);
    printf("  #%d class %lld score %.6f\n", i + 1, (long long)j, output[j]);
  }
  status = 0;
  goto done;

error:
  status = failed("running the model");
done:
  free(input);
  free(output);
  kiln_module_free(mod);
  return status;
}
