// The LLVM backend's entry points, for the build driver (src/codegen/build.cc). This header
// keeps LLVM types out, so build.cc compiles without LLVM headers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/codegen/build.h"
#include "kiln/target/target.h"
#include "kiln/ir/stmt.h"

namespace kiln::codegen::llvm_backend {

// An optimized LLVM module, its object code and (on first lookup) a JIT that runs it.
class CompiledModule {
 public:
  virtual ~CompiledModule() = default;
  // Address of the kernel `name` in this process. Throws kiln::Error if it cannot be linked
  // (an unresolved extern function) or the module targets another architecture.
  virtual void* lookup(const std::string& name) = 0;
  virtual const std::string& llvm_ir() const = 0;
  virtual std::string assembly() = 0;
  virtual const std::string& object_code() const = 0;
};

// Generates, verifies and optimizes LLVM IR for `funcs`, and emits the object code.
std::unique_ptr<CompiledModule> compile(const std::vector<ir::PrimFunc>& funcs, const Target& target,
                                        const BuildOptions& options);

}  // namespace kiln::codegen::llvm_backend
