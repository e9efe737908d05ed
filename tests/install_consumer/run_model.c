/* run_model.c: runs a compiled kiln model through the runtime's C API on an ONNX test input and
 * compares its output with the reference, as `kiln check` does (|got - want| <= atol + rtol *
 * |want| per element, rtol 1e-3, atol 1e-4).
 *
 *   kiln_run_model MODEL.so INPUT.pb EXPECTED.pb
 *
 * INPUT.pb and EXPECTED.pb are float32 ONNX TensorProtos (an ONNX test_data_set's input_0.pb and
 * output_0.pb) for the model's first input and output. Exit status 0 when every element is
 * within tolerance, 1 otherwise or on any error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/runtime/kiln_runtime.h"

#define RTOL 1e-3
#define ATOL 1e-4
#define MAX_DIMS 8

typedef struct {
  int32_t ndim;
  int64_t shape[MAX_DIMS];
  float* data;
  int64_t count;
} tensor;

static int fail(const char* what, const char* detail) {
  fprintf(stderr, "kiln_run_model: %s: %s\n", what, detail);
  return 1;
}

static double absd(double x) { return x < 0 ? -x : x; } /* no libm to link */

static int read_varint(const unsigned char** p, const unsigned char* end, uint64_t* v) {
  int shift;
  *v = 0;
  for (shift = 0; *p < end && shift < 64; shift += 7) {
    unsigned char b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return 0;
  }
  return 1;
}

/* The fields of a TensorProto this program needs: dims (1), data_type (2), raw_data (9). Float
 * data in raw_data is little-endian, as on the x86-64 and aarch64 machines kiln runs on. */
static int parse_tensor(const unsigned char* p, const unsigned char* end, tensor* t) {
  uint64_t key, v, type = 0;
  const unsigned char* raw = NULL;
  uint64_t raw_size = 0;
  memset(t, 0, sizeof(*t));
  while (p < end) {
    if (read_varint(&p, end, &key)) return 1;
    switch (key & 7) {
      case 0:
        if (read_varint(&p, end, &v)) return 1;
        if (key >> 3 == 1) {
          if (t->ndim == MAX_DIMS) return 1;
          t->shape[t->ndim++] = (int64_t)v;
        } else if (key >> 3 == 2) {
          type = v;
        }
        break;
      case 1: p += 8; break;
      case 5: p += 4; break;
      case 2:
        if (read_varint(&p, end, &v) || v > (uint64_t)(end - p)) return 1;
        if (key >> 3 == 9) {
          raw = p;
          raw_size = v;
        }
        p += v;
        break;
      default: return 1;
    }
  }
  if (p != end || type != 1 || raw == NULL) return 1; /* 1: FLOAT, its values in raw_data */
  t->count = 1;
  for (int32_t d = 0; d < t->ndim; ++d) t->count *= t->shape[d];
  if (raw_size != (uint64_t)t->count * sizeof(float)) return 1;
  t->data = malloc(raw_size ? raw_size : 1);
  if (t->data == NULL) return 1;
  memcpy(t->data, raw, raw_size);
  return 0;
}

static int load_tensor(const char* path, tensor* t) {
  FILE* f = fopen(path, "rb");
  unsigned char* bytes;
  long size;
  int bad;
  if (f == NULL) return fail(path, "cannot open");
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  fseek(f, 0, SEEK_SET);
  bytes = malloc(size > 0 ? (size_t)size : 1);
  bad = bytes == NULL || size < 0 || fread(bytes, 1, (size_t)size, f) != (size_t)size;
  fclose(f);
  if (!bad) bad = parse_tensor(bytes, bytes + size, t);
  free(bytes);
  return bad ? fail(path, "not a float32 TensorProto with raw_data") : 0;
}

static int same_shape(const tensor* t, const kiln_tensor_info* info) {
  if (t->ndim != info->ndim) return 0;
  for (int32_t d = 0; d < t->ndim; ++d)
    if (t->shape[d] != info->shape[d]) return 0;
  return info->dtype.code == kDLFloat && info->dtype.bits == 32 && info->dtype.lanes == 1;
}

static DLTensor dl_view(tensor* t) {
  DLTensor d;
  memset(&d, 0, sizeof(d));
  d.data = t->data;
  d.device.device_type = kDLCPU;
  d.ndim = t->ndim;
  d.dtype.code = kDLFloat;
  d.dtype.bits = 32;
  d.dtype.lanes = 1;
  d.shape = t->shape;
  return d;
}

int main(int argc, char** argv) {
  kiln_module* mod = NULL;
  kiln_tensor_info in_info, out_info;
  tensor input, want, got;
  DLTensor in_dl, got_dl;
  double worst = 0;
  if (argc != 4) return fail("usage", "kiln_run_model MODEL.so INPUT.pb EXPECTED.pb");
  if (load_tensor(argv[2], &input) || load_tensor(argv[3], &want)) return 1;
  if (kiln_module_load(argv[1], &mod) != KILN_OK) return fail("load", kiln_last_error());
  if (kiln_module_input_info(mod, 0, &in_info) != KILN_OK || kiln_module_output_info(mod, 0, &out_info) != KILN_OK)
    return fail("info", kiln_last_error());
  if (!same_shape(&input, &in_info)) return fail(argv[2], "does not match the model's first input (float32, its shape)");
  if (!same_shape(&want, &out_info)) return fail(argv[3], "does not match the model's first output (float32, its shape)");

  in_dl = dl_view(&input);
  got = want;
  got.data = calloc((size_t)got.count, sizeof(float));
  if (got.data == NULL) return fail("output", "out of memory");
  got_dl = dl_view(&got);
  if (kiln_module_set_input_index(mod, 0, &in_dl) != KILN_OK || kiln_module_run(mod) != KILN_OK ||
      kiln_module_get_output(mod, 0, &got_dl) != KILN_OK)
    return fail("run", kiln_last_error());
  for (int64_t i = 0; i < want.count; ++i) {
    double r = absd((double)got.data[i] - want.data[i]) / (ATOL + RTOL * absd((double)want.data[i]));
    if (!(r <= worst)) worst = r; /* a NaN makes worst NaN, which fails below */
  }
  printf("kiln %s: output '%s' (%lld values): worst |got - want| / (%g + %g |want|) = %.3g\n", kiln_version(),
         out_info.name, (long long)want.count, ATOL, RTOL, worst);
  kiln_module_free(mod);
  free(input.data);
  free(want.data);
  free(got.data);
  if (!(worst <= 1)) return fail(argv[1], "output outside the tolerance");
  printf("PASS\n");
  return 0;
}
