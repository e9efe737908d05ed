/* The layout of a compiled model library (.so), shared by the writer (kiln::export_library,
 * compiler side) and the loader (runtime). C-compatible so that tools in any language can read
 * a module with dlopen/dlsym alone.
 *
 * A kiln module is a shared library that defines, with C linkage and default visibility:
 *
 *   const char     kiln_module_magic[];            KILN_MODULE_MAGIC: "this is a kiln module,
 *                                                  format version N"
 *   const char     kiln_module_version[];          kiln version of the compiler that wrote it
 *   const char     kiln_module_target[];           codegen target spec the kernels were built for
 *                                                  ("llvm -mtriple=... -mcpu=... -mattr=+avx2,...")
 *   const uint8_t  kiln_module_plan[];             the GraphPlan, binary (runtime/graph_plan.h)
 *   const uint64_t kiln_module_plan_size;          its bytes
 *   const uint8_t  kiln_module_weights[];          the weights blob, 64-byte aligned
 *   const uint64_t kiln_module_weights_size;
 *   const uint64_t kiln_module_weights_checksum;   FNV-1a 64 of the weights blob
 *   void*          kiln_module_parallel_for_slot;  written by the runtime after loading (below)
 *   int32_t NAME(void* const* args, int32_t num_args)   one per kernel (runtime/kernel.h)
 *
 * Kernels call kiln_parallel_for. The module does not import it: it carries a hidden
 * trampoline of that name which jumps through kiln_module_parallel_for_slot, and the loader
 * stores its own kiln_parallel_for there before running anything. So a module resolves no
 * runtime symbol at load time: it works the same under the shared runtime (even when that one
 * was itself dlopen'ed RTLD_LOCAL, as by Python's ctypes) and under the static runtime linked
 * into an executable without -rdynamic. An unset slot makes the trampoline return
 * KILN_MODULE_NO_RUNTIME instead of crashing.
 *
 * A device module (cuda or opencl target) has KILN_MODULE_MAGIC_DEVICE, no kernel functions
 * and no slot, and two more symbols: its kernels' device images (runtime/device_graph.h):
 *   const uint8_t  kiln_module_device_images[];
 *   const uint64_t kiln_module_device_images_size;
 * A runtime that reads only format 2 refuses it by its magic. */
#ifndef KILN_RUNTIME_MODULE_FORMAT_H_
#define KILN_RUNTIME_MODULE_FORMAT_H_

/* Bump the trailing number when the layout above changes incompatibly (2: the plan is binary,
 * no longer JSON). */
#define KILN_MODULE_MAGIC "kiln-module-format-2"
#define KILN_MODULE_MAGIC_DEVICE "kiln-module-format-3-device"

#define KILN_SYM_MAGIC "kiln_module_magic"
#define KILN_SYM_VERSION "kiln_module_version"
#define KILN_SYM_TARGET "kiln_module_target"
#define KILN_SYM_PLAN "kiln_module_plan"
#define KILN_SYM_PLAN_SIZE "kiln_module_plan_size"
#define KILN_SYM_WEIGHTS "kiln_module_weights"
#define KILN_SYM_WEIGHTS_SIZE "kiln_module_weights_size"
#define KILN_SYM_WEIGHTS_CHECKSUM "kiln_module_weights_checksum"
#define KILN_SYM_PARALLEL_FOR_SLOT "kiln_module_parallel_for_slot"
#define KILN_SYM_DEVICE_IMAGES "kiln_module_device_images"
#define KILN_SYM_DEVICE_IMAGES_SIZE "kiln_module_device_images_size"

/* What a kernel's kiln_parallel_for returns when the module was loaded without the runtime. */
#define KILN_MODULE_NO_RUNTIME (-3)

/* Alignment of the weights blob and of every constant in it (kernels assume 64). */
#define KILN_MODULE_WEIGHTS_ALIGNMENT 64

#endif /* KILN_RUNTIME_MODULE_FORMAT_H_ */
