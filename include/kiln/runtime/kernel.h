/* The kernel calling convention and the runtime services generated code calls.
 * C linkage: generated code (JIT or AOT objects) and C programs call these by name.
 *
 * A kernel is `int32_t NAME(void* const* args, int32_t num_args)`: args[i] is the data pointer
 * of the i-th PrimFunc parameter (shapes are static and baked into the code). It returns 0 on
 * success. A dynamic-batch module's kernels (graph_plan.h) take one more argument, last: an
 * int64_t array {n, byte stride of argument 0, ..., of the last}, and run once per sample
 * 0..n-1 with every argument advanced by its stride. Parallel loops are outlined by code
 * generation into a kiln_parallel_body and run through kiln_parallel_for on the runtime's
 * thread pool. */
#ifndef KILN_RUNTIME_KERNEL_H_
#define KILN_RUNTIME_KERNEL_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t (*kiln_kernel_fn)(void* const* args, int32_t num_args);

/* Runs body(task_id, num_tasks, closure) for task_id in [0, num_tasks) on the thread pool,
 * the calling thread taking part; returns when all tasks are done. num_tasks <= 0 means four
 * tasks per pool thread (claimed as threads come free, so one slowed thread does not hold up
 * the loop). Returns 0, or the first non-zero value a task returned. */
typedef int32_t (*kiln_parallel_body)(int32_t task_id, int32_t num_tasks, void* closure);
int32_t kiln_parallel_for(kiln_parallel_body body, void* closure, int32_t num_tasks);

/* Threads the pool uses (the caller included). Default: KILN_NUM_THREADS from the environment,
 * else the number of cores. */
int32_t kiln_get_num_threads(void);
void kiln_set_num_threads(int32_t n);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_KERNEL_H_ */
