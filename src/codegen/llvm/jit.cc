// The in-process JIT: ORC LLJIT loading the module's object code.
//
// Loading the very object that save_object() writes (instead of compiling the IR a second
// time) means JIT runs test exactly the code that ships.
#include <llvm/ExecutionEngine/JITSymbol.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/MemoryBuffer.h>

#include "kiln/runtime/kernel.h"
#include "kiln/support/error.h"
#include "llvm_util.h"

namespace kiln::codegen::llvm_backend {

struct JIT::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  // ORC reports the detail of a failed link (which symbols are missing) to the session's
  // error reporter, not in the lookup error; collect it for the exception message.
  std::string reported;
};

namespace {
[[noreturn]] void fail(const std::string& what, llvm::Error err) {
  throw kiln::Error("llvm JIT: " + what + ": " + llvm::toString(std::move(err)));
}
}  // namespace

JIT::JIT(const std::string& object_code) : impl_(std::make_unique<Impl>()) {
  initialize_llvm_targets();
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit) fail("cannot create LLJIT", jit.takeError());
  impl_->jit = std::move(*jit);
  llvm::orc::LLJIT& j = *impl_->jit;
  llvm::orc::JITDylib& main = j.getMainJITDylib();
  Impl* impl = impl_.get();
  j.getExecutionSession().setErrorReporter(
      [impl](llvm::Error err) { impl->reported += (impl->reported.empty() ? "" : "; ") + llvm::toString(std::move(err)); });

  // The runtime services are defined by address: this library links the runtime, so they are
  // always there, whatever the executable exports.
  llvm::orc::MangleAndInterner mangle(j.getExecutionSession(), j.getDataLayout());
  llvm::orc::SymbolMap runtime;
  auto define = [&](const char* name, void* addr) {
    runtime[mangle(name)] =
        llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(addr), llvm::JITSymbolFlags::Exported);
  };
  define("kiln_parallel_for", reinterpret_cast<void*>(&kiln_parallel_for));
  define("kiln_get_num_threads", reinterpret_cast<void*>(&kiln_get_num_threads));
  define("kiln_set_num_threads", reinterpret_cast<void*>(&kiln_set_num_threads));
  if (auto err = main.define(llvm::orc::absoluteSymbols(std::move(runtime)))) fail("runtime symbols", std::move(err));

  // libc, libm and extern functions of the executable (tensorize micro-kernels).
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(j.getDataLayout().getGlobalPrefix());
  if (!gen) fail("process symbols", gen.takeError());
  main.addGenerator(std::move(*gen));

  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(object_code, "kiln_module.o");
  if (auto err = j.addObjectFile(std::move(buffer))) fail("cannot load the object code", std::move(err));
}

JIT::~JIT() = default;

void* JIT::lookup(const std::string& name) {
  // Linking happens on first lookup: an unresolved symbol (a missing extern function) shows
  // up here.
  impl_->reported.clear();
  auto addr = impl_->jit->lookup(name);
  if (!addr) {
    std::string detail = impl_->reported.empty() ? "" : " (" + impl_->reported + ")";
    fail("cannot resolve '" + name + "'" + detail, addr.takeError());
  }
  return addr->toPtr<void*>();
}

}  // namespace kiln::codegen::llvm_backend
