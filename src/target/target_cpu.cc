// Target facts of CPUs: the instruction set's (from the features LLVM enables for a CPU name and
// feature list) and the machine's (caches, FMA timing: a table of known CPUs, with stated
// defaults for the others).
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Triple.h>

#include <memory>
#include <mutex>
#include <new>

#include "kiln/support/error.h"
#include "target_internal.h"

namespace kiln::target_detail {

namespace {

const llvm::Target* llvm_target(const std::string& triple, std::string* err) {
  initialize_llvm_targets();
  return llvm::TargetRegistry::lookupTarget(triple, *err);
}

struct KnownCpu {
  const char* name;
  int64_t l1d, l2, l3;  // bytes: per core, per core, shared
  int fma_latency, fma_per_cycle;  // at the CPU's widest vectors
  int loads_per_cycle = 2;
};

constexpr int64_t K = 1024, M = 1024 * 1024;

// Vendor figures (optimization manuals, Agner Fog's tables). fma_per_cycle counts instructions
// of the widest vectors: Zen 4 runs a 512-bit FMA on its two 256-bit pipes, so one per cycle;
// Skylake-SP server parts have two 512-bit FMA units. loads_per_cycle: vector loads of that
// width (2 unless listed). L3 is a typical part's whole cache.
const KnownCpu kKnownCpus[] = {
    {"haswell", 32 * K, 256 * K, 8 * M, 5, 2},           {"broadwell", 32 * K, 256 * K, 8 * M, 4, 2},
    {"skylake", 32 * K, 256 * K, 8 * M, 4, 2},           {"alderlake", 48 * K, 1280 * K, 24 * M, 4, 2, 3},
    {"skylake-avx512", 32 * K, 1 * M, 32 * M, 4, 2},     {"cascadelake", 32 * K, 1 * M, 32 * M, 4, 2},
    {"cooperlake", 32 * K, 1 * M, 32 * M, 4, 2},         {"icelake-server", 48 * K, 1280 * K, 48 * M, 4, 2},
    {"sapphirerapids", 48 * K, 2 * M, 96 * M, 4, 2, 3},  {"emeraldrapids", 48 * K, 2 * M, 160 * M, 4, 2, 3},
    {"znver1", 32 * K, 512 * K, 8 * M, 5, 1},            {"znver2", 32 * K, 512 * K, 16 * M, 5, 2},
    {"znver3", 32 * K, 512 * K, 32 * M, 4, 2, 3},        {"znver4", 32 * K, 1 * M, 32 * M, 4, 1, 3},
    {"neoverse-n1", 64 * K, 1 * M, 32 * M, 4, 2},        {"neoverse-n2", 64 * K, 1 * M, 32 * M, 4, 2},
    {"neoverse-v1", 64 * K, 1 * M, 32 * M, 4, 4, 3},     {"neoverse-v2", 64 * K, 2 * M, 64 * M, 4, 4, 3},
    {"cortex-a72", 32 * K, 1 * M, 1 * M, 7, 2},          {"cortex-a76", 64 * K, 512 * K, 4 * M, 4, 2},
    {"apple-m1", 128 * K, 4 * M, 8 * M, 4, 4, 3},
};

const KnownCpu* known_cpu(const std::string& name) {
  for (const KnownCpu& c : kKnownCpus)
    if (name == c.name) return &c;
  return nullptr;
}

}  // namespace

}  // namespace kiln::target_detail

namespace kiln {

void initialize_llvm_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    // All of them: a module can be cross-compiled for another triple (objects only).
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    llvm::InitializeAllAsmParsers();
    // LLVM's own failed allocations (safe_malloc, a SmallVector's growth) end in abort() by
    // default, which an autotuning candidate out of memory could only report as "crashed:
    // signal 6". A std::bad_alloc instead, as LLVM's documentation suggests: it unwinds through
    // LLVM's frames (built without exceptions, but with unwind tables) to whoever handles
    // running out of memory, or at worst still ends the process in std::terminate.
    llvm::install_bad_alloc_error_handler([](void*, const char*, bool) { throw std::bad_alloc(); });
  });
}

}  // namespace kiln

namespace kiln::target_detail {

std::string normalize_triple(const std::string& spec, const std::string& triple) {
  std::string t = llvm::Triple::normalize(triple), err;
  KILN_USER_CHECK(llvm_target(t, &err) != nullptr) << "target '" << spec << "': unknown triple '" << triple << "' (" << err
                                                    << ")";
  return t;
}

void check_cpu(const std::string& spec, const Target& t) {
  if (t.cpu.empty()) return;
  std::string err;
  const llvm::Target* lt = llvm_target(t.triple, &err);
  KILN_USER_CHECK(lt != nullptr) << "target '" << spec << "': " << err;
  // Checked on a generic subtarget: creating one for an unknown CPU prints a warning.
  std::unique_ptr<llvm::MCSubtargetInfo> sti(lt->createMCSubtargetInfo(t.triple, "", ""));
  KILN_USER_CHECK(sti && sti->isCPUStringValid(t.cpu))
      << "target '" << spec << "': unknown CPU '" << t.cpu << "' for " << t.triple;
}

bool is_isa_level(const std::string& cpu) {
  return cpu == "generic" || cpu == "x86-64" || cpu == "x86-64-v2" || cpu == "x86-64-v3" || cpu == "x86-64-v4";
}

CpuFacts isa_facts(const Target& t) {
  CpuFacts f;
  std::string err;
  const llvm::Target* lt = llvm_target(t.triple, &err);
  KILN_CHECK(lt != nullptr) << err;
  // Ask the subtarget, not the feature string: a CPU name implies features it does not list.
  std::unique_ptr<llvm::MCSubtargetInfo> sti(lt->createMCSubtargetInfo(t.triple, t.cpu, t.features));
  KILN_CHECK(sti != nullptr) << "no subtarget for " << t.isa();
  auto has = [&](const char* feature) { return sti->checkFeatures(std::string("+") + feature); };
  llvm::Triple triple(t.triple);
  if (triple.isX86()) {
    // kiln asks LLVM for 512-bit vectors wherever AVX-512 is present (codegen prefer-vector-width).
    f.vector_bits = has("avx512f") ? 512 : has("avx") ? 256 : 128;
    f.vector_registers = has("avx512f") ? 32 : 16;
    f.mask_registers = has("avx512f");
    f.fma = has("fma");
  } else if (triple.isAArch64()) {
    f.vector_bits = 128;  // NEON (SVE's lengths vary by part; kiln generates fixed-width NEON code)
    f.vector_registers = 32;
    f.fma = true;
  } else {
    f.vector_bits = 128;
    f.vector_registers = 16;
  }
  f.int8_dot = pick_int8_dot(triple.isX86(), triple.isAArch64(), f.vector_bits, has);
  return f;
}

void set_machine_facts(Target* t, const std::string& cpu, const CpuFacts* machine) {
  CpuFacts& f = t->facts;
  const bool arm = t->is_aarch64();
  // Defaults for a CPU the table does not know: typical of current server cores.
  f.l1d_bytes = arm ? 64 * K : 32 * K;
  f.l2_bytes = 1 * M;
  f.l3_bytes = arm ? 8 * M : 16 * M;
  f.fma_latency = 4;
  f.fma_per_cycle = 2;
  f.loads_per_cycle = 2;
  f.cores = 4;
  if (const KnownCpu* c = known_cpu(cpu)) {
    f.l1d_bytes = c->l1d, f.l2_bytes = c->l2, f.l3_bytes = c->l3;
    f.fma_latency = c->fma_latency, f.fma_per_cycle = c->fma_per_cycle, f.loads_per_cycle = c->loads_per_cycle;
    // A table entry's rate is for its widest vectors; code restricted to narrower ones (AVX2
    // on an AVX-512 part that splits 512-bit FMAs) issues two per cycle.
    if (c->fma_per_cycle == 1 && f.vector_bits < 512 && t->is_x86()) f.fma_per_cycle = 2;
  }
  if (machine) {
    f.l1d_bytes = machine->l1d_bytes, f.l2_bytes = machine->l2_bytes, f.l3_bytes = machine->l3_bytes;
    f.cores = machine->cores;
  }
}

}  // namespace kiln::target_detail
