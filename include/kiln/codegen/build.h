// The LLVM CPU backend: compiles loop-level PrimFuncs into native code, runs them in-process
// through a JIT, and writes relocatable objects for ahead-of-time packaging.
//
// Input contract: PrimFuncs as the pipeline's loop stages leave them (kiln::loop_ir): each
// BufferLoad/BufferStore has exactly one index, vector accesses have a Ramp (or other vector)
// index, params keep their logical shapes. Leftover Vectorized/Unrolled loops become serial
// loops with LLVM loop hints; ThreadBinding loops are rejected (they need CUDA). From a te
// schedule, use kiln::build(schedule, args, ...) (pipeline.h), which runs the loop stages first.
//
// Each PrimFunc becomes a kernel following runtime/kernel.h:
//   int32_t NAME(void* const* args, int32_t num_args)
// args[i] is the data pointer of params[i]; pointers must be 64-byte aligned and must not
// overlap (they are marked noalias). Return codes: 0 success, -1 a heap allocation failed,
// -2 wrong num_args, or the first non-zero result of a parallel task.
#pragma once

#include <dlpack/dlpack.h>

#include <memory>
#include <string>
#include <vector>

#include "kiln/target/target.h"
#include "kiln/ir/stmt.h"
#include "kiln/runtime/kernel.h"

namespace kiln::codegen {

struct BuildOptions {
  // Float ops always carry the `contract` flag (a*b+c may fuse into an FMA, which rounds once:
  // results can differ from separate mul/add in the last bit). fast_math adds reassociation,
  // no-signed-zeros, reciprocal and approximate-function flags; it never assumes no NaN/Inf
  // (isnan must keep working).
  bool fast_math = false;
  // LLVM optimization level, 0..3.
  int opt_level = 3;
  // Print the optimized LLVM IR / the assembly of the module to stderr when built. The
  // environment variables KILN_DUMP_LLVM_IR=1 and KILN_DUMP_ASM=1 turn these on as well.
  bool dump_llvm_ir = false;
  bool dump_asm = false;
};

class Module {
 public:
  Module() = default;
  bool defined() const { return impl_ != nullptr; }

  // The kernel named `name`; throws kiln::Error if the module has none. The pointer stays
  // valid while any copy of this Module lives.
  kiln_kernel_fn get_function(const std::string& name) const;
  // Checks every argument against the parameters of the PrimFunc as given to build() (count;
  // dtype, shape, CPU device, compactness and 64-byte alignment of each; shapes are the
  // logical, unflattened ones when build() ran flatten_storage) and throws kiln::Error naming
  // the parameter on a mismatch; then calls the kernel and throws if it returns non-zero.
  void run(const std::string& name, const std::vector<DLTensor*>& args) const;

  std::vector<std::string> function_names() const;
  // The PrimFunc `name` as it went into LLVM code generation.
  const ir::PrimFunc& lowered_function(const std::string& name) const;
  const Target& target() const;
  // Text of the optimized LLVM module.
  std::string llvm_ir() const;
  // Assembly text of the module.
  std::string assembly() const;
  // The relocatable object file (ELF on Linux), as bytes.
  const std::string& object_code() const;
  // Writes object_code() to `path`; throws kiln::Error if the file cannot be written.
  void save_object(const std::string& path) const;

  struct Impl;

 private:
  friend Module build(const std::vector<ir::PrimFunc>&, const Target&, const BuildOptions&);
  std::shared_ptr<Impl> impl_;
};

// Compiles `funcs` (distinct names) for `target`. Throws kiln::Error on IR the backend cannot
// compile for a CPU (a thread-bound loop, an unknown intrinsic, a duplicate name).
Module build(const std::vector<ir::PrimFunc>& funcs, const Target& target = Target::host(),
             const BuildOptions& options = BuildOptions());

}  // namespace kiln::codegen
