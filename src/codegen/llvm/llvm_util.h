// Helpers of the LLVM backend around llvm::TargetMachine: creation, the optimization
// pipeline, machine code emission, and the in-process JIT.
#pragma once

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>

#include "kiln/target/target.h"

namespace kiln::codegen::llvm_backend {


// A TargetMachine for `target`: position-independent code (objects go into shared
// libraries), small code model, CodeGenOpt::Aggressive at opt_level 3. Throws kiln::Error on
// an unknown triple or CPU.
std::unique_ptr<llvm::TargetMachine> create_target_machine(const Target& target, int opt_level);

// The new pass manager's default per-module pipeline at opt_level (O0..O3), with the target's
// cost model and library info, in place.
void optimize(llvm::Module& module, llvm::TargetMachine& tm, int opt_level);

// Object file (or assembly text) for a copy of `module`: code generation rewrites IR in
// place, so the module itself stays as it was and can be emitted again.
std::string emit_machine_code(const llvm::Module& module, llvm::TargetMachine& tm, bool assembly);

// An ORC LLJIT holding one object file. Runtime symbols (runtime/kernel.h) are defined
// explicitly; everything else resolves against the symbols of the current process.
class JIT {
 public:
  explicit JIT(const std::string& object_code);
  ~JIT();
  // Address of `name`; throws kiln::Error if it or a symbol it needs cannot be resolved.
  void* lookup(const std::string& name);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::codegen::llvm_backend
