// compile(): PrimFuncs -> verified, optimized LLVM module -> object code (-> JIT on demand).
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <cstdlib>
#include <iostream>
#include <mutex>
#include <unordered_set>

#include "codegen_llvm.h"
#include "kiln/support/error.h"
#include "llvm_backend.h"
#include "llvm_util.h"

namespace kiln::codegen::llvm_backend {

namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

class LLVMCompiledModule : public CompiledModule {
 public:
  LLVMCompiledModule(const std::vector<ir::PrimFunc>& funcs, const Target& target, const BuildOptions& options)
      : target_(target) {
    tm_ = create_target_machine(target, options.opt_level);
    ctx_ = std::make_unique<llvm::LLVMContext>();
    module_ = std::make_unique<llvm::Module>("kiln", *ctx_);
    module_->setTargetTriple(target.triple);
    module_->setDataLayout(tm_->createDataLayout());

    CodeGenOptions cg;
    cg.cpu = target.cpu;
    cg.features = target.features;
    cg.fast_math = options.fast_math;
    // Ask the subtarget, not the feature string: a CPU name implies features it does not list.
    const llvm::MCSubtargetInfo* sti = tm_->getMCSubtargetInfo();
    const bool x86 = tm_->getTargetTriple().isX86();
    cg.prefer_512 = x86 && sti->checkFeatures("+avx512f");
    cg.native_vector_bits = cg.prefer_512 ? 512 : x86 && sti->checkFeatures("+avx") ? 256 : 128;
    cg.mask_registers = cg.prefer_512;
    cg.int8_dot = pick_int8_dot(x86, tm_->getTargetTriple().isAArch64(), cg.native_vector_bits,
                                [&](const char* f) { return sti->checkFeatures(std::string("+") + f); });
    CodeGenLLVM codegen(module_.get(), cg);
    std::unordered_set<std::string> names;
    for (const ir::PrimFunc& f : funcs) {
      KILN_USER_CHECK(names.insert(f.name).second) << "build: two PrimFuncs are named '" << f.name << "'";
      KILN_USER_CHECK(f.name.rfind("kiln_", 0) != 0)
          << "build: kernel name '" << f.name << "' is reserved (kiln_* names belong to the runtime)";
      codegen.add_function(f);
    }
    std::string err;
    llvm::raw_string_ostream es(err);
    KILN_CHECK(!llvm::verifyModule(*module_, &es)) << "invalid LLVM module: " << es.str();

    optimize(*module_, *tm_, options.opt_level);
    llvm::raw_string_ostream os(ir_text_);
    module_->print(os, nullptr);
    os.flush();
    object_ = emit_machine_code(*module_, *tm_, /*assembly=*/false);

    if (options.dump_llvm_ir || env_flag("KILN_DUMP_LLVM_IR")) std::cerr << ir_text_;
    if (options.dump_asm || env_flag("KILN_DUMP_ASM")) std::cerr << assembly();
  }

  void* lookup(const std::string& name) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!jit_) {
      llvm::Triple mine(target_.triple), host(llvm::sys::getProcessTriple());
      KILN_USER_CHECK(mine.getArch() == host.getArch() && mine.getOS() == host.getOS())
          << "module built for target '" << target_.triple << "' cannot run on this " << host.str() << " host";
      jit_ = std::make_unique<JIT>(object_);
    }
    return jit_->lookup(name);
  }

  const std::string& llvm_ir() const override { return ir_text_; }

  std::string assembly() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (asm_.empty()) asm_ = emit_machine_code(*module_, *tm_, /*assembly=*/true);
    return asm_;
  }

  const std::string& object_code() const override { return object_; }

 private:
  Target target_;
  std::unique_ptr<llvm::TargetMachine> tm_;
  std::unique_ptr<llvm::LLVMContext> ctx_;
  std::unique_ptr<llvm::Module> module_;  // optimized; kept for assembly()
  std::string ir_text_;
  std::string object_;
  std::string asm_;
  std::mutex mutex_;  // guards jit_ and asm_ (a TargetMachine is not safe for concurrent use)
  std::unique_ptr<JIT> jit_;
};

}  // namespace

std::unique_ptr<CompiledModule> compile(const std::vector<ir::PrimFunc>& funcs, const Target& target,
                                        const BuildOptions& options) {
  return std::make_unique<LLVMCompiledModule>(funcs, target, options);
}

}  // namespace kiln::codegen::llvm_backend
