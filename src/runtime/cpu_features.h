// What the CPU we run on can execute, for the loader's target check: a module built for
// AVX-512 must be refused on a machine without it, with a message, not die of SIGILL.
//
// The runtime has no LLVM, so it reads the features itself (cpuid and xgetbv on x86-64, which
// also tell whether the OS saves the AVX/AVX-512/AMX register state; the hwcap words of the
// auxiliary vector on AArch64 Linux), under LLVM's feature names so it can compare them with a
// target spec's -mattr list.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace kiln::runtime {

struct CpuFeatures {
  std::string arch;                // "x86_64", "aarch64", ... (a triple's first component)
  std::set<std::string> features;  // LLVM names of the features present ("avx2", "avx512f")
  bool has(const std::string& name) const { return features.count(name) != 0; }
};

// The CPU this process runs on.
CpuFeatures host_cpu_features();

// The LLVM feature names the runtime knows how to detect on this architecture; a target
// feature outside this list cannot be checked and is assumed present.
const std::vector<std::string>& checkable_cpu_features();
// The same for the architecture `arch` ("x86_64", "aarch64"; empty for one it cannot check):
// what target_incompatibility checks against a CpuFeatures of that architecture. x86 names are
// known only where the runtime is built for x86.
const std::vector<std::string>& checkable_cpu_features(const std::string& arch);

// Why kernels built for `target` (a codegen target spec: "llvm -mtriple=T -mcpu=C -mattr=F")
// cannot run on `cpu`: the architecture differs, or features the target enables (in -mattr, or
// implied by a well-known -mcpu name and not disabled in -mattr) are missing. Empty when they
// can run.
std::string target_incompatibility(const std::string& target, const CpuFeatures& cpu);

}  // namespace kiln::runtime
