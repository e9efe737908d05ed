// GraphPlan: what a compiled model's graph executor runs, shared by the compiler (which builds
// it) and the runtime (which loads it from a .so and executes it). No LLVM, protobuf or XGBoost.
//
// Every tensor value of the graph is an *entry*: a dtype and shape living at a byte offset in
// one of the planned *storages* (memory planning lets entries whose lifetimes do not overlap
// share a storage). Inputs, outputs and constants are entries too: inputs are copied into
// their storage (or bound), constants live in the weights blob. A *node* calls one kernel with
// entry ids as arguments, in the kernel's parameter order (inputs first, then outputs).
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::runtime {

struct GraphEntry {
  DLDataType dtype{kDLFloat, 32, 1};
  std::vector<int64_t> shape;
  int storage = -1;         // index into storage_bytes; -1 for a constant
  int64_t offset = 0;       // byte offset in its storage, or in the weights blob for a constant
  bool is_constant = false;
};

// A GPU kernel's launch shape, as CUDA states it: `grid` blocks of `block` threads (on OpenCL
// the global size is grid * block per dimension, the work-group size block).
struct LaunchDims {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t dynamic_shared_bytes = 0;
};

struct GraphNode {
  std::string kernel;        // symbol of the kernel (runtime/kernel.h calling convention), or a device kernel's name
  std::vector<int> args;     // entry ids, in the kernel's parameter order
  std::string label;         // what the node computes, for profiles and errors ("conv2d+add+relu")
  LaunchDims launch;         // device plans only
  // The node's cost, for kiln bench --roofline (plans with has_costs only): floating-point
  // operations (te::count_flops) and the minimum bytes moved, every argument read or written
  // once (caches and re-reads make the real traffic larger).
  double flops = 0;
  int64_t bytes = 0;
};

struct GraphIO {
  std::string name;
  int entry = -1;
};

struct GraphPlan {
  std::string kiln_version;
  std::string target;        // the codegen target string the kernels were built for
  // Where the kernels run: kDLCPU (kernels are functions of the library), kDLCUDA or kDLOpenCL
  // (kernels are in the module's device images; every node is one launch).
  int32_t device_type = kDLCPU;
  std::vector<int64_t> storage_bytes;
  std::vector<GraphEntry> entries;
  std::vector<GraphNode> nodes;   // in execution order
  std::vector<GraphIO> inputs;
  std::vector<GraphIO> outputs;
  int64_t weights_bytes = 0;
  uint64_t weights_checksum = 0;  // FNV-1a 64 of the weights blob
  bool has_costs = false;         // nodes carry flops and bytes (modules of kiln 0.x with plan format >= 3)
  // Dynamic batch (CPU plans only; 0 = a static module). Everything above is one *sample*: the
  // graph compiled at batch 1. The module runs any batch n in [batch_min, batch_max]: every
  // non-constant entry holds n samples, sample b of an entry at its storage address plus
  // b * batch_stride(storage) (storages are allocated at batch_max samples), and every kernel
  // takes one more argument, an int64_t array {n, stride of argument 0, ..., of argument P-1}
  // (bytes; 0 for constants), and runs its body once per sample (ir::PrimFunc::batch_loop).
  // Inputs and outputs have n * shape[0] rows.
  int64_t batch_min = 0;
  int64_t batch_max = 0;
};

// The byte distance between two samples of a storage of a dynamic-batch plan: its size rounded
// up to the runtime's 64-byte alignment, so that every sample keeps the kernels' alignment.
inline int64_t batch_stride(int64_t storage_bytes) { return (storage_bytes + 63) / 64 * 64; }

// The binary form a module carries (little-endian): "KPLN", u32 format version, then
// kiln_version, target (each a u32 length and its bytes), i64 weights_bytes, u64
// weights_checksum, storages (u32 count, i64 each), entries (u32 count; each u8 dtype code,
// u8 bits, u16 lanes, u8 constant, u8 rank, i32 storage, i64 offset, i64 extents), nodes (u32
// count; each kernel and label strings, u32 count and i32 entry ids), inputs and outputs (u32
// count; each name string and i32 entry). Bump kPlanFormatVersion on any change.
// Version 2, written for device plans only (CPU plans stay version 1 byte for byte): an i32
// device_type after target, and after each node's arguments its launch (u32 grid[3],
// block[3], dynamic_shared_bytes).
// Versions 3 (CPU) and 4 (device) are 1 and 2 with each node's cost last (f64 flops, i64
// bytes): what the compiler writes now; plans without costs keep their old version, and every
// version stays readable.
constexpr uint32_t kPlanFormatVersion = 1;
constexpr uint32_t kDevicePlanFormatVersion = 2;
constexpr uint32_t kCostPlanFormatVersion = 3;
constexpr uint32_t kDeviceCostPlanFormatVersion = 4;
// Version 5 (CPU, dynamic batch only): version 3 followed by i64 batch_min and i64 batch_max.
constexpr uint32_t kDynamicBatchPlanFormatVersion = 5;
std::string encode_plan(const GraphPlan& plan);
// The inverse: throws kiln::Error naming what it could not read (truncation, a bad header or
// version, an impossible count, an unknown dtype, trailing bytes). It checks the encoding only;
// plan_problem (module_loader.h) checks what the numbers mean.
GraphPlan decode_plan(const void* data, size_t size);

// FNV-1a 64-bit hash, the checksum of weights blobs.
uint64_t fnv1a64(const void* data, size_t size);

}  // namespace kiln::runtime
