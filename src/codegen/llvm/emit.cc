// Machine code emission: object files and assembly text through the legacy code generator
// (TargetMachine::addPassesToEmitFile; LLVM 16 has no new-PM codegen pipeline).
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include "kiln/support/error.h"
#include "llvm_util.h"

namespace kiln::codegen::llvm_backend {

std::string emit_machine_code(const llvm::Module& module, llvm::TargetMachine& tm, bool assembly) {
  std::unique_ptr<llvm::Module> copy = llvm::CloneModule(module);
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  pm.add(new llvm::TargetLibraryInfoWrapperPass(llvm::Triple(copy->getTargetTriple())));
  bool unsupported = tm.addPassesToEmitFile(pm, os, nullptr, assembly ? llvm::CGFT_AssemblyFile : llvm::CGFT_ObjectFile);
  KILN_CHECK(!unsupported) << "target machine cannot emit " << (assembly ? "assembly" : "object files");
  pm.run(*copy);
  return std::string(buffer.begin(), buffer.end());
}

}  // namespace kiln::codegen::llvm_backend
