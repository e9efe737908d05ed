// Helpers of the target library shared by its files (not part of the API).
#pragma once

#include <string>

#include "kiln/target/target.h"

namespace kiln::target_detail {

// LLVM's normalized form of a triple; kiln::Error naming `spec` for one LLVM has no backend for.
std::string normalize_triple(const std::string& spec, const std::string& triple);
// kiln::Error naming `spec` when LLVM does not know t.cpu for t.triple.
void check_cpu(const std::string& spec, const Target& t);
// True for CPU names that name an instruction set, not a machine: x86-64, x86-64-v2..v4, generic.
bool is_isa_level(const std::string& cpu);
// The instruction-set facts of t (vector bits and registers, FMA, its latency and issue rate),
// from the features LLVM enables for t.cpu and t.features; cache and core fields default.
CpuFacts isa_facts(const Target& t);
// The machine facts of `cpu` (FMA timing, loads, caches) from the table of known CPUs, or
// stated defaults, adjusted to t's vector width; then caches and cores from `machine` (the
// host's, measured) when given.
void set_machine_facts(Target* t, const std::string& cpu, const CpuFacts* machine);

}  // namespace kiln::target_detail
