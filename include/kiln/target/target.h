// Target: the machine the kernel path generates code for, and the facts every decision on that
// path reads from it (docs/architecture.md, "Layers": "The Target ... is one value that every decision of the kernel
// path receives. No lane or register count is a literal in a template.").
//
// Written like TVM's target strings:
//   llvm                                          this CPU (host triple, CPU, features, caches, cores)
//   llvm -mcpu=x86-64-v3                          AVX2 + FMA code; caches and cores of this machine
//   llvm -mcpu=znver3                             a named CPU: its features and its cache sizes
//   llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1   cross-compiled (objects, linked by a cross linker)
//   cuda -arch=sm_90                              NVIDIA GPUs: CUDA C through NVRTC (target_gpu.cc)
//   opencl                                        OpenCL C for any OpenCL device (PoCL checks it on CPUs)
// Options after the kind: -mtriple=T -mcpu=C -mattr=+f,-g (LLVM's), and the machine facts
// -num-cores=N -l1d=SIZE -l2=SIZE -l3=SIZE (bytes, or with a K/M suffix) to override what is
// detected or known. Target::str() writes every field, so parse(str()) reproduces the target
// and a module's metadata says exactly what its kernels were built for.
//
// The facts (CpuFacts) come from the instruction set (vector width, vector registers, FMA), from
// the OS for the host (caches, cores: sysfs and the affinity mask), and from a small table of
// known CPUs otherwise (target_cpu_table.cc); defaults are stated there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

enum class TargetKind { kLLVM, kCUDA, kOpenCL };

// The instruction an int8 dot product per int32 lane (the intrinsic int8_dot, codegen_dot.cc)
// becomes: VNNI's vpdpbusd (four u8 x s8) on 512- or 256-bit vectors, AVX2's vpmaddwd (two
// int16 x int16 of 8-bit values: exact, where vpmaddubsw would saturate its 16-bit pair sums),
// NEON's sdot (four s8 x s8), or plain widening arithmetic.
enum class Int8Dot { kNone, kAvx2, kAvxVnni, kAvx512Vnni, kNeonDot };
// Picks it from what the ISA has (`has("avx512vnni")`), for `vector_bits`-wide code.
template <typename Has>
Int8Dot pick_int8_dot(bool x86, bool aarch64, int vector_bits, Has has) {
  if (x86 && vector_bits >= 512 && has("avx512vnni")) return Int8Dot::kAvx512Vnni;
  if (x86 && (has("avxvnni") || (has("avx512vnni") && has("avx512vl")))) return Int8Dot::kAvxVnni;
  if (x86 && has("avx2")) return Int8Dot::kAvx2;
  if (aarch64 && has("dotprod")) return Int8Dot::kNeonDot;
  return Int8Dot::kNone;
}

// What CPU schedules derive their register blocks, cache blocks and parallel splits from.
struct CpuFacts {
  int vector_bits = 128;      // the SIMD register float ops use: 128 SSE/NEON, 256 AVX/AVX2, 512 AVX-512
  int vector_registers = 16;  // architectural SIMD registers: 16 (SSE, AVX, AVX2), 32 (AVX-512, NEON)
  bool fma = false;           // fused multiply-add instructions
  bool mask_registers = false;  // vector loads/stores under a lane mask cost about a plain one (AVX-512)
  Int8Dot int8_dot = Int8Dot::kNone;  // what int8 kernels' dot products become
  int fma_latency = 4;        // cycles from an FMA to a dependent one
  int fma_per_cycle = 2;      // vector FMAs a core issues per cycle at vector_bits
  int loads_per_cycle = 2;    // vector loads a core issues per cycle
  int64_t l1d_bytes = 32 << 10;  // per core
  int64_t l2_bytes = 1 << 20;    // per core
  int64_t l3_bytes = 16 << 20;   // shared, the whole cache
  int cores = 1;

  // Independent accumulators that keep the FMA units busy: latency x issue rate.
  int fma_in_flight() const { return fma_latency * fma_per_cycle; }
  bool operator==(const CpuFacts& o) const;
};

// What GPU schedules and the GPU verifier read (target_gpu.cc states where each default comes
// from). The OpenCL target keeps CUDA's block limits so the same schedules run on both (the
// OpenCL text checks the CUDA text's indexing), with warp_size 1: no warp-level code.
struct GpuFacts {
  int sm = 0;                               // compute capability major*10 + minor (80, 90); 0 for OpenCL
  int max_threads_per_block = 1024;
  int64_t max_shared_bytes = 48 << 10;      // static shared memory per block
  // Per block with the opt-in attribute (sm_90: 227 KiB), which CUDA kernels past the static
  // limit take (codegen::build_gpu); OpenCL: the static limit, or -max-shared.
  int64_t max_dynamic_shared_bytes = 48 << 10;
  int registers_per_block = 65536;
  int max_registers_per_thread = 255;
  int warp_size = 32;
  int multiprocessors = 108;                // SMs (compute units): grids of fewer blocks leave some idle
  // Ampere's additions, sm_80 and newer: cp.async (global -> shared copies issued without a
  // register round trip, ir::inject_double_buffer) and mma.sync.m16n8k16 on fp16 / bf16.
  bool async_copy() const { return sm >= 80; }
  bool mma_m16n8k16() const { return sm >= 80; }
  // -arch=sm_90a: code for that chip alone (cubins only, no PTX for newer GPUs), which may use
  // its own instructions: Hopper's warpgroup mma (wgmma.mma_async, operands in shared memory).
  bool arch_specific = false;
  bool wgmma() const { return sm == 90 && arch_specific; }
  bool operator==(const GpuFacts& o) const;
};

struct Target {
  TargetKind kind = TargetKind::kLLVM;
  std::string triple;    // "x86_64-pc-linux-gnu"
  std::string cpu;       // LLVM CPU name: "znver4", "x86-64-v3", "neoverse-n1", "generic"
  std::string features;  // LLVM feature list, comma separated ("+avx2,+fma,-avx512f")
  CpuFacts facts;
  GpuFacts gpu;  // cuda and opencl targets only

  // This machine: host triple, CPU name, every feature LLVM detects (+ or -), caches, cores.
  static Target host();
  // Parses a target string (above). Fields not given come from the host when the triple is the
  // host's, else from the named CPU. Throws kiln::Error naming the culprit for an unknown kind,
  // option, triple or CPU.
  static Target parse(const std::string& spec);

  // The full spec: parse(str()) == *this.
  std::string str() const;
  // What code is generated for: kind, triple, CPU and features, not the cache sizes or cores.
  // Two targets with the same isa() run the same machine code; a tuning record applies to a
  // target of the same isa() (a schedule tuned for one CPU is correct on any, but only
  // measured fast on its own).
  std::string isa() const;
  // isa() of a target string without parsing it (a string from a tuning log may name a CPU this
  // LLVM does not know): the spec without its machine-fact options.
  static std::string isa_of(const std::string& spec);
  // One line for compile notes: "x86_64 znver4: 512-bit vectors (16 x f32), 32 vector registers,
  // FMA (4 cycles, 2/cycle), L1d 32 KiB, L2 1 MiB, L3 32 MiB, 2 cores".
  std::string summary() const;
  // A few words for a note that names a target among others: "znver4, AVX-512, 2 cores",
  // "cuda sm_90". str() is the whole spec, with every -mattr feature (about 1,500 characters).
  std::string brief() const;
  // brief() of a target string (a tuning record's); one this LLVM cannot parse (a CPU it does
  // not know) is named by its -mcpu, else given whole.
  static std::string brief_of(const std::string& spec);

  // Vector lanes of an element of `bits` bits (float32: 8 on AVX2, 16 on AVX-512, 4 on NEON).
  int lanes(int bits = 32) const { return facts.vector_bits / bits > 0 ? facts.vector_bits / bits : 1; }
  bool is_gpu() const { return kind == TargetKind::kCUDA || kind == TargetKind::kOpenCL; }
  // The cubins a cuda module carries (sm_80 and sm_90, and the target's own sm), and the
  // highest of them also as PTX, which the driver compiles for newer GPUs.
  std::vector<int> cuda_image_sms() const;
  bool is_x86() const;
  bool is_aarch64() const;
  // True if `features` enables `name` ("avx512f" matches "+avx512f"); facts are what schedules
  // should read, this is for code generation choices that name an instruction set extension.
  bool has_feature(const std::string& name) const;

  bool operator==(const Target& o) const;
  bool operator!=(const Target& o) const { return !(*this == o); }
};

// Registers LLVM's targets (once, thread-safe): host detection, CPU names and the code
// generator all need them. For the LLVM backend; nothing else calls LLVM.
void initialize_llvm_targets();

}  // namespace kiln
