// One C-source printer for GPU kernels with two dialects, CUDA C and OpenCL C (docs/gpu.md,
// "Pipeline"). Everything that differs between the two is a hook of Dialect, kept small: CI runs
// only the OpenCL text (on PoCL), so it vouches for the indexing of the CUDA text, which is
// printed by the same code.
//
// Input: DevicePrograms from ir::split_host_device over flattened, simplified IR (one index
// per access). The printer declares shared buffers at the top of the kernel (OpenCL requires
// __local declarations at the kernel's outermost scope), guards a thread-bound loop whose extent
// is below the launch's, and gives read-only parameters `const` (CUDA loads them through the
// read-only data path).
//
// Vector IR (a vectorized loop, ir::vectorize_loops) prints lane by lane, except that a
// contiguous load or store of a kernel parameter whose first element the analyzer proves a
// multiple of the vector's lanes is one vector access (float4, vload4). GPU threads compute
// in scalars (CUDA has no float4 arithmetic; a GPU's float4 add is four adds either way), so
// the wide memory access is all a vector buys and all the dialects need to print. Parameters
// are 64-byte aligned (the runtime's plan; runtime/ndarray.h), so the element's alignment is
// the pointer's.
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/device_program.h"

namespace kiln::codegen::source {

enum class Language { kCUDA, kOpenCL };

class Dialect {
 public:
  virtual ~Dialect() = default;
  virtual Language language() const = 0;
  // Text before the kernels: helper functions, type definitions.
  virtual std::string preamble() const = 0;
  // "extern \"C\" __global__ void __launch_bounds__(256)" / "__kernel ... void".
  virtual std::string kernel_prefix(const ir::KernelLaunch& launch) const = 0;
  // The declaration of a kernel parameter pointing at global memory.
  virtual std::string global_param(const std::string& elem_type, const std::string& name, bool read_only) const = 0;
  // The qualifier of a shared buffer's declaration: "__shared__" / "__local".
  virtual std::string shared_qualifier() const = 0;
  // The declaration of a byte array `name` of shared memory, `alignment`-byte aligned, that
  // buffers are carved from (shared_view): `bytes` long, or with `bytes` 0 the dynamic shared
  // memory (launch.dynamic_shared_bytes; CUDA only: build_gpu sets it for CUDA kernels alone).
  virtual std::string shared_pool(const std::string& name, int64_t bytes, int64_t alignment) const = 0;
  // The declaration of `name`, a constant pointer to `type` at byte `offset` of pool `pool`.
  virtual std::string shared_view(const std::string& type, const std::string& name, const std::string& pool,
                                  int64_t offset) const = 0;
  // "threadIdx.x" / "(int)get_local_id(0)" (an int either way).
  virtual std::string thread_index(const std::string& tag) const = 0;
  // A block-wide barrier that also orders shared memory.
  virtual std::string barrier() const = 0;
  // A warp shuffle (intrinsic kiln_shuffle_down, ir::lower_cross_thread_reduction): `value` as
  // the lane `delta` above holds it (its own where none is), every lane of a 32-lane warp taking
  // part; a 32- or 64-bit int or float. A dialect without warps (OpenCL, warp size 1) never
  // meets one.
  virtual std::string warp_shuffle_down(const std::string& value, const std::string& delta) const = 0;
  // Asynchronous global -> shared copies (ir::kAsyncCopy): whether the dialect has them; a
  // statement copying `bytes` (4, 8 or 16) from global `src` to shared `dst` (addresses aligned
  // to `bytes`) that reads only `src_bytes` of them (an int: `bytes` or 0) and zero-fills the
  // rest, all of them where `src_bytes` is empty; a statement committing this thread's copies
  // issued so far as a group; one waiting until at most `groups` of its groups are pending. A
  // dialect without them prints ir::kAsyncCopy as the plain store, and no commit or wait.
  virtual bool async_copies() const = 0;
  virtual std::string async_copy(int bytes, const std::string& dst, const std::string& src,
                                 const std::string& src_bytes) const = 0;
  virtual std::string async_copy_commit() const = 0;
  virtual std::string async_copy_wait(int64_t groups) const = 0;
  // A warp's mma.m16n8k16 (ir::kMmaSync): whether the dialect has it; the statement for inputs
  // of PTX type `in` ("f16" or "bf16") accumulating in float, from the lane's 4 accumulators
  // (lvalues, read and written), its 4 32-bit registers of A and 2 of B (unsigned values). A
  // dialect without it prints the intrinsic's reference loops.
  virtual bool warp_mma() const = 0;
  // ldmatrix (ldmatrix.h), which a dialect with warp_mma has: the statement loading
  // `tiles` 8 x 8 tiles (.trans: transposed) into registers `regs` (unsigned), this lane's row at
  // `row` (a shared-memory pointer to 16-bit elements).
  virtual std::string ldmatrix(int tiles, bool trans, const std::vector<std::string>& regs,
                               const std::string& row) const = 0;
  virtual std::string warp_mma(const std::string& in, const std::vector<std::string>& acc,
                               const std::vector<std::string>& a, const std::vector<std::string>& b) const = 0;
  // A warpgroup's wgmma.mma_async (ir::kWgmma): whether the dialect has it; the statements of a
  // run of them: before (ordering the accumulators' registers), each one (m64n`n`k16, inputs of
  // PTX type `in`, the lane's n / 2 accumulators as lvalues, its A and B operands as the
  // descriptor expressions `a` and `b`, B N-major with `b_mn_major`), and after (committing
  // the run and waiting until `pending` groups are left in flight: 0, the run's own, or 1, the
  // one before it; `acc` the run's accumulators, held in place), and the drain after a loop of
  // runs left in flight (waiting for all; `acc` every such run's). Shared memory that
  // ordinary stores fill and wgmma reads needs the proxy fence before each barrier
  // (async_proxy_fence). A dialect without it prints the intrinsic's reference loops.
  virtual bool warpgroup_mma() const { return false; }
  virtual std::string wgmma_begin() const { return ""; }
  virtual std::string wgmma(const std::string&, int64_t, const std::vector<std::string>&, const std::string&,
                            const std::string&, bool) const {
    return "";
  }
  virtual std::vector<std::string> wgmma_end(const std::vector<std::string>&, int) const { return {}; }
  virtual std::vector<std::string> wgmma_drain(const std::vector<std::string>&) const { return {}; }
  virtual std::string async_proxy_fence() const { return ""; }
  // The C type of a scalar element type: "long long" / "long", ...; bool storage is one byte.
  virtual std::string type_name(ir::DataType t) const = 0;
  // A math function of float type t: "expf" / "exp".
  virtual std::string math_function(const std::string& name, ir::DataType t) const = 0;
  // A 64-bit integer literal's suffix: "LL" / "L".
  virtual std::string int64_suffix() const = 0;
  // The constants +inf and NaN of float type t.
  virtual std::string infinity(ir::DataType t) const = 0;
  virtual std::string nan(ir::DataType t) const = 0;
  // Vectors of 2 or 4 elements of storage type t (at most 16 bytes; lanes read as .x .y .z .w
  // in both dialects): the type ("float4"), a load from and a store to `address` (global
  // memory aligned to the vector), and a vector from its lanes' values.
  virtual std::string vector_type(ir::DataType t, int lanes) const = 0;
  virtual std::string vector_load(ir::DataType t, int lanes, const std::string& address) const = 0;
  virtual std::string vector_store(ir::DataType t, int lanes, const std::string& address,
                                   const std::string& value) const = 0;
  virtual std::string vector_value(ir::DataType t, const std::vector<std::string>& lanes) const = 0;
};

const Dialect& cuda_dialect();
const Dialect& opencl_dialect();
const Dialect& dialect(Language lang);

// The source of one module: the dialect's preamble and every kernel of every program.
// kiln::Error for IR the printer cannot express (extern calls, an element type the dialect
// lacks), naming the kernel.
// race_check: the race-checking build (codegen::GpuBuildOptions::race_check documents the
// instrumentation and the extra argument); `checked_buffers`, when given, receives the
// instrumented shared buffers as "kernel.buffer", the buffer with id i at i - 1. The
// instrumentation is printer logic, not a dialect hook: it uses only the dialect's barrier,
// thread indices and qualifiers.
std::string print_module(const std::vector<ir::DeviceProgram>& programs, const Dialect& d, bool race_check = false,
                         std::vector<std::string>* checked_buffers = nullptr);

}  // namespace kiln::codegen::source
