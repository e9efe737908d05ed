// Helpers of the target library shared by its files (not part of the API).
#pragma once

#include <cstdint>
#include <istream>
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

// "32768", "48K", "1M" -> bytes; kiln::Error naming `spec` and `option` otherwise.
int64_t parse_size(const std::string& spec, const std::string& option, const std::string& text);
// Bytes as an option value ("48K") and for people ("48 KiB").
std::string size_str(int64_t bytes);
std::string human_size(int64_t bytes);

// GPU targets (target_gpu.cc): `kind` is "cuda" or "opencl", `options` the rest of the spec.
Target parse_gpu(const std::string& spec, const std::string& kind, std::istream& options);
std::string gpu_isa(const Target& t);
std::string gpu_str(const Target& t);
std::string gpu_summary(const Target& t);

}  // namespace kiln::target_detail
