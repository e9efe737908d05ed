/* kiln_runtime.h: the C API of kiln's runtime. Load a compiled model library (a .so written by
 * kiln::export_library / `kiln compile`), set its inputs, run it, read its outputs.
 *
 *   kiln_module* m;
 *   if (kiln_module_load("model.so", &m) != KILN_OK) { puts(kiln_last_error()); return 1; }
 *   kiln_module_set_input(m, "input", &tensor);    (a DLTensor in CPU memory; copied)
 *   kiln_module_run(m);
 *   kiln_module_get_output(m, 0, &out);             (copied into the caller's tensor)
 *   kiln_module_free(m);
 *
 * Conventions: every function that can fail returns a kiln_status (KILN_OK == 0) and, on
 * failure, records a message naming the culprit, which kiln_last_error() returns (per thread).
 * No C++ exception ever crosses this API. Strings and shapes the API hands out stay valid until
 * the module is freed.
 *
 * Threads: a module's code and weights are loaded once; what one inference writes (activations,
 * inputs, outputs) lives in an execution context. Serve one module from many threads with one
 * context per thread (or per request in flight), as ONNX Runtime's Run is called concurrently:
 *
 *   kiln_context* ctx;                              (in each serving thread)
 *   kiln_context_create(m, &ctx);
 *   kiln_context_set_input(ctx, "input", &tensor);
 *   kiln_context_run(ctx);
 *   kiln_context_get_output(ctx, 0, &out);
 *   kiln_context_free(ctx);
 *
 * The kiln_module_* query functions (names, infos, counts) may be called from any thread at any
 * time. kiln_module_set_input*, kiln_module_run and kiln_module_get_output* use the module's own
 * built-in context: one thread at a time for those. Every module and context in a process shares
 * one thread pool (kiln_set_num_threads); concurrent runs take turns on it for each parallel
 * loop, so N serving threads never put more than the pool's threads to work at once. For the
 * most inferences per second from N serving threads on N cores, set the pool to 1 thread: each
 * inference then runs on its own serving thread.
 *
 * Linking: -lkiln_runtime (shared) or libkiln_runtime.a (static; it is C++ inside: link with a
 * C++ driver or add -lstdc++ -lpthread -ldl). A model library needs no symbol from the
 * executable: -rdynamic is not required (see runtime/module_format.h). */
#ifndef KILN_RUNTIME_KILN_RUNTIME_H_
#define KILN_RUNTIME_KILN_RUNTIME_H_

#include <dlpack/dlpack.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  KILN_OK = 0,
  KILN_ERROR_INVALID_ARGUMENT = 1, /* null pointer, unknown name, index out of range, wrong shape or dtype */
  KILN_ERROR_FILE = 2,             /* the module file is missing or unreadable */
  KILN_ERROR_INVALID_MODULE = 3,   /* not a kiln module, or a corrupt one (checksum, plan, missing kernel) */
  KILN_ERROR_INCOMPATIBLE = 4,     /* another kiln version or module format, or built for another CPU */
  KILN_ERROR_KERNEL = 5,           /* a kernel failed during kiln_module_run */
  KILN_ERROR_STATE = 6,            /* wrong order of calls: run before every input is set, output before run */
  KILN_ERROR_OUT_OF_MEMORY = 7,
  KILN_ERROR_INTERNAL = 8          /* a kiln bug: please report it with the message */
} kiln_status;

typedef struct kiln_module kiln_module; /* opaque */

typedef struct {
  const char* name;
  int32_t ndim;
  const int64_t* shape; /* ndim extents */
  DLDataType dtype;     /* bool is {kDLUInt, 1, 1}, stored one byte per element */
} kiln_tensor_info;

/* The message of this thread's last failed call ("" if none has failed). */
const char* kiln_last_error(void);
/* The runtime's kiln version, e.g. "0.1.0". */
const char* kiln_version(void);

/* Loads and validates the module at `path` (format, kiln version, CPU features, weights
 * checksum, plan, kernels) and allocates its memory; *out is NULL on failure. */
kiln_status kiln_module_load(const char* path, kiln_module** out);
/* Frees the module (NULL is fine). */
void kiln_module_free(kiln_module* mod);

kiln_status kiln_module_num_inputs(const kiln_module* mod, int32_t* count);
kiln_status kiln_module_num_outputs(const kiln_module* mod, int32_t* count);
kiln_status kiln_module_input_name(const kiln_module* mod, int32_t index, const char** name);
kiln_status kiln_module_output_name(const kiln_module* mod, int32_t index, const char** name);
kiln_status kiln_module_input_info(const kiln_module* mod, int32_t index, kiln_tensor_info* info);
kiln_status kiln_module_output_info(const kiln_module* mod, int32_t index, kiln_tensor_info* info);
/* Dynamic batch (a module compiled with --input-shape NAME=MIN..MAX,...): *min and *max are the
 * batches it runs, 0 and 0 for a module of fixed shapes. A dynamic-batch module takes any batch n
 * in the range: each input's leading dim is n times one sample's rows, all inputs with the same n
 * (a set_input outside the range fails naming it), and the outputs have n samples too. The
 * module's input and output infos give the shapes at the batch of the input last set on its
 * built-in context (the smallest batch before any; the shape pointers stay valid); a context's
 * outputs have the batch of its own inputs. */
kiln_status kiln_module_batch_range(const kiln_module* mod, int64_t* min, int64_t* max);
kiln_status kiln_module_input_index(const kiln_module* mod, const char* name, int32_t* index);

/* Copies `value` (CPU memory, the input's dtype and shape; strides may be NULL or any; or a
 * tensor on the module's device, see "Device tensors") into the input. The caller's tensor is
 * not kept. */
kiln_status kiln_module_set_input(kiln_module* mod, const char* name, const DLTensor* value);
kiln_status kiln_module_set_input_index(kiln_module* mod, int32_t index, const DLTensor* value);

/* Runs the model on the inputs set so far (every input must have been set once). */
kiln_status kiln_module_run(kiln_module* mod);

/* Copies output `index` into the caller's tensor `out` (its data allocated by the caller, CPU
 * memory, the output's dtype and shape; strides may be NULL or any; or a tensor on the module's
 * device, see "Device tensors"). */
kiln_status kiln_module_get_output(const kiln_module* mod, int32_t index, DLTensor* out);
/* Fills *view with a tensor pointing into the module's memory (no copy): valid until the next
 * kiln_module_run, kiln_module_set_input* or kiln_module_free; do not write through it. */
kiln_status kiln_module_get_output_view(const kiln_module* mod, int32_t index, DLTensor* view);

typedef struct kiln_context kiln_context; /* opaque: one inference at a time */

/* Creates an execution context of `mod`: its own activation memory, inputs and outputs, the
 * module's code and weights shared. It holds its own reference to them, so it stays usable after
 * kiln_module_free(mod). Safe to call from any thread, concurrently with runs of other contexts. */
kiln_status kiln_context_create(const kiln_module* mod, kiln_context** out);
/* Frees the context (NULL is fine). */
void kiln_context_free(kiln_context* ctx);
/* As kiln_module_set_input*, kiln_module_run and kiln_module_get_output*, on the context. Calls
 * on one context must not overlap; calls on different contexts may, from any threads. */
kiln_status kiln_context_set_input(kiln_context* ctx, const char* name, const DLTensor* value);
kiln_status kiln_context_set_input_index(kiln_context* ctx, int32_t index, const DLTensor* value);
kiln_status kiln_context_run(kiln_context* ctx);
kiln_status kiln_context_get_output(const kiln_context* ctx, int32_t index, DLTensor* out);
kiln_status kiln_context_get_output_view(const kiln_context* ctx, int32_t index, DLTensor* view);

/* Device tensors. A module compiled for cuda or opencl runs on a device: its set_input and
 * get_output functions take host tensors as above (copied to and from the device), and also
 * tensors on the module's device, DLPack's {kDLCUDA, 0} or {kDLOpenCL, 0} (kiln_module_device_info
 * says which), copied device to device with no trip through host memory. Such a tensor's data is
 * a buffer of the device: CUDA, a device pointer (CUdeviceptr) as cudaMalloc or
 * kiln_module_device_alloc return; OpenCL, a cl_mem of the cl_context kiln created for the module
 * (kiln_module_device_alloc, or clCreateBuffer in the context kiln_module_device_info gives).
 * byte_offset counts bytes into the buffer; strides must be NULL or compact. The caller's writes
 * to an input must be finished when it is set; the copies are finished when the call returns.
 * A tensor on another device (a CUDA tensor for an OpenCL module, a device tensor for a CPU
 * module, another device id) is refused with KILN_ERROR_INVALID_ARGUMENT naming the input or
 * output. After a run, only the outputs asked for in host memory are copied to the host. The
 * kiln_module_device_* functions below may be called from any thread at any time.
 *
 *   kiln_device_info dev;
 *   kiln_module_device_info(m, &dev);                   (dev.device: {kDLOpenCL, 0})
 *   void* buf;
 *   kiln_module_device_alloc(m, 1 * 3 * 224 * 224 * 4, &buf);
 *   DLTensor x = {buf, dev.device, 4, {kDLFloat, 32, 1}, shape, NULL, 0};
 *   kiln_module_device_copy(m, &host_x, &x);            (or the caller's own kernels fill buf)
 *   kiln_module_set_input(m, "input", &x);
 *   kiln_module_run(m);
 *   kiln_module_get_output(m, 0, &device_y);            (device_y's data from kiln_module_device_alloc)
 *   kiln_module_device_free(m, buf);                    (before kiln_module_free) */
typedef struct {
  DLDevice device; /* where the module runs: {kDLCPU, 0}, {kDLCUDA, 0} or {kDLOpenCL, 0} */
  void* context;   /* OpenCL: kiln's cl_context; CUDA: the device's primary CUcontext; CPU: NULL */
  void* queue;     /* OpenCL: kiln's in-order cl_command_queue; else NULL (CUDA: the legacy default stream) */
} kiln_device_info;
kiln_status kiln_module_device_info(const kiln_module* mod, kiln_device_info* info);
/* A buffer of `bytes` bytes on the module's device (*data NULL on failure), and its release
 * (NULL is fine). A CPU module has none: KILN_ERROR_INVALID_ARGUMENT. */
kiln_status kiln_module_device_alloc(const kiln_module* mod, uint64_t bytes, void** data);
kiln_status kiln_module_device_free(const kiln_module* mod, void* data);
/* Copies `from` into `to`: the same dtype and shape, each in host memory or on the module's
 * device, not both in host memory; compact. */
kiln_status kiln_module_device_copy(const kiln_module* mod, const DLTensor* from, DLTensor* to);

/* Threads of the runtime's pool (the caller included), shared by every module in the process.
 * Default: KILN_NUM_THREADS from the environment, else the number of cores; n <= 0 restores it. */
int32_t kiln_get_num_threads(void);
void kiln_set_num_threads(int32_t n);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_KILN_RUNTIME_H_ */
