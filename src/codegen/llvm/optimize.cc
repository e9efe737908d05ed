// TargetMachine creation and the optimization pipeline of the LLVM backend.
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Triple.h>

#include <mutex>

#include "kiln/support/error.h"
#include "llvm_util.h"

namespace kiln::codegen::llvm_backend {

std::unique_ptr<llvm::TargetMachine> create_target_machine(const Target& target, int opt_level) {
  initialize_llvm_targets();
  KILN_USER_CHECK(target.kind == TargetKind::kLLVM) << "target '" << target.str() << "': the CPU backend needs kind 'llvm'";
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(target.triple, err);
  KILN_USER_CHECK(t != nullptr) << "target '" << target.str() << "': " << err;
  if (!target.cpu.empty()) {
    // Checked on a generic subtarget first: creating one for an unknown CPU prints a warning.
    std::unique_ptr<llvm::MCSubtargetInfo> sti(t->createMCSubtargetInfo(target.triple, "", ""));
    KILN_USER_CHECK(sti && sti->isCPUStringValid(target.cpu))
        << "target '" << target.str() << "': unknown CPU '" << target.cpu << "'";
  }
  llvm::TargetOptions opts;
  // Fuse a*b+c into an FMA only where the IR's `contract` flag allows it.
  opts.AllowFPOpFusion = llvm::FPOpFusion::Standard;
  auto level = opt_level >= 3   ? llvm::CodeGenOpt::Aggressive
               : opt_level == 2 ? llvm::CodeGenOpt::Default
               : opt_level == 1 ? llvm::CodeGenOpt::Less
                                : llvm::CodeGenOpt::None;
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(target.triple, target.cpu, target.features, opts,
                                                                 llvm::Reloc::PIC_, llvm::CodeModel::Small, level));
  KILN_USER_CHECK(tm != nullptr) << "target '" << target.str() << "': LLVM cannot create a target machine";
  return tm;
}

void optimize(llvm::Module& module, llvm::TargetMachine& tm, int opt_level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = opt_level >= 2;
  pto.SLPVectorization = opt_level >= 2;
  pto.LoopUnrolling = opt_level >= 1;
  llvm::PassBuilder pb(&tm, pto);
  // Registered before the defaults so it wins: library info for this triple (which libm
  // calls exist and what they do).
  llvm::TargetLibraryInfoImpl tlii(llvm::Triple(module.getTargetTriple()));
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = opt_level >= 3   ? llvm::OptimizationLevel::O3
                                  : opt_level == 2 ? llvm::OptimizationLevel::O2
                                  : opt_level == 1 ? llvm::OptimizationLevel::O1
                                                   : llvm::OptimizationLevel::O0;
  llvm::ModulePassManager mpm = level == llvm::OptimizationLevel::O0 ? pb.buildO0DefaultPipeline(level)
                                                                     : pb.buildPerModuleDefaultPipeline(level);
  mpm.run(module, mam);
}

}  // namespace kiln::codegen::llvm_backend
