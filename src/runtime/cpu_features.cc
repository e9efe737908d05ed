// CPU feature detection for the loader's target check (runtime/cpu_features.h).
//
// The x86 table mirrors what LLVM's host detection (llvm::sys::getHostCPUFeatures) reports, bit
// for bit, including its rule that vector extensions only count when the OS saves their
// register state (XCR0): a test compares this table with Target::host() on the build machine.
// AArch64 reads the Linux auxiliary vector (AT_HWCAP, AT_HWCAP2), the kernel's account of what
// user space may execute.
#include "runtime/cpu_features.h"

#include <cstdint>


#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace kiln::runtime {
namespace {

// The non-empty pieces of `s` between `sep`s (no <sstream>: the runtime's size budget).
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

#if defined(__x86_64__) || defined(__i386__)
enum Reg { EAX, EBX, ECX, EDX };
// Register state the OS must save for a feature to count, as LLVM decides it: kAvxState needs
// OSXSAVE, the AVX bit and XCR0 SSE+AVX (0x6); kAvx512State adds opmask/ZMM (0xE0); kAmxState
// needs OSXSAVE and the XCR0 tile bits 17-18.
enum State { kNoState, kAvxState, kAvx512State, kAmxState };

// The name is stored inline and the numbers in bytes: a table of pointers would cost a
// relocation (24 bytes) per entry in the runtime's size budget.
struct FeatureBit {
  char name[20];
  unsigned leaf;
  uint8_t subleaf;
  Reg reg : 8;
  uint8_t bit;
  State state : 8;
};

const FeatureBit kFeatures[] = {
    {"cx8", 1, 0, EDX, 8, kNoState},          {"cmov", 1, 0, EDX, 15, kNoState},        {"mmx", 1, 0, EDX, 23, kNoState},
    {"fxsr", 1, 0, EDX, 24, kNoState},        {"sse", 1, 0, EDX, 25, kNoState},         {"sse2", 1, 0, EDX, 26, kNoState},
    {"sse3", 1, 0, ECX, 0, kNoState},         {"pclmul", 1, 0, ECX, 1, kNoState},       {"ssse3", 1, 0, ECX, 9, kNoState},
    {"fma", 1, 0, ECX, 12, kAvxState}, {"cx16", 1, 0, ECX, 13, kNoState},        {"sse4.1", 1, 0, ECX, 19, kNoState},
    {"sse4.2", 1, 0, ECX, 20, kNoState},      {"crc32", 1, 0, ECX, 20, kNoState},       {"movbe", 1, 0, ECX, 22, kNoState},
    {"popcnt", 1, 0, ECX, 23, kNoState},      {"aes", 1, 0, ECX, 25, kNoState},         {"xsave", 1, 0, ECX, 26, kAvxState},
    {"avx", 1, 0, ECX, 28, kAvxState}, {"f16c", 1, 0, ECX, 29, kAvxState}, {"rdrnd", 1, 0, ECX, 30, kNoState},
    {"fsgsbase", 7, 0, EBX, 0, kNoState},     {"bmi", 7, 0, EBX, 3, kNoState},          {"avx2", 7, 0, EBX, 5, kAvxState},
    {"bmi2", 7, 0, EBX, 8, kNoState},         {"invpcid", 7, 0, EBX, 10, kNoState},     {"rtm", 7, 0, EBX, 11, kNoState},
    {"avx512f", 7, 0, EBX, 16, kAvx512State},
    {"avx512dq", 7, 0, EBX, 17, kAvx512State},
    {"rdseed", 7, 0, EBX, 18, kNoState},      {"adx", 7, 0, EBX, 19, kNoState},
    {"avx512ifma", 7, 0, EBX, 21, kAvx512State},
    {"clflushopt", 7, 0, EBX, 23, kNoState},  {"clwb", 7, 0, EBX, 24, kNoState},
    {"avx512cd", 7, 0, EBX, 28, kAvx512State},
    {"sha", 7, 0, EBX, 29, kNoState},
    {"avx512bw", 7, 0, EBX, 30, kAvx512State},
    {"avx512vl", 7, 0, EBX, 31, kAvx512State},
    {"avx512vbmi", 7, 0, ECX, 1, kAvx512State},
    {"pku", 7, 0, ECX, 4, kNoState},  // OSPKE: the OS enabled protection keys
    {"waitpkg", 7, 0, ECX, 5, kNoState},
    {"avx512vbmi2", 7, 0, ECX, 6, kAvx512State},
    {"shstk", 7, 0, ECX, 7, kNoState},        {"gfni", 7, 0, ECX, 8, kNoState},
    {"vaes", 7, 0, ECX, 9, kAvxState}, {"vpclmulqdq", 7, 0, ECX, 10, kAvxState},
    {"avx512vnni", 7, 0, ECX, 11, kAvx512State},
    {"avx512bitalg", 7, 0, ECX, 12, kAvx512State},
    {"avx512vpopcntdq", 7, 0, ECX, 14, kAvx512State},
    {"rdpid", 7, 0, ECX, 22, kNoState},       {"cldemote", 7, 0, ECX, 25, kNoState},    {"movdiri", 7, 0, ECX, 27, kNoState},
    {"movdir64b", 7, 0, ECX, 28, kNoState},   {"enqcmd", 7, 0, ECX, 29, kNoState},
    {"uintr", 7, 0, EDX, 5, kNoState},
    {"avx512vp2intersect", 7, 0, EDX, 8, kAvx512State},
    {"serialize", 7, 0, EDX, 14, kNoState},   {"tsxldtrk", 7, 0, EDX, 16, kNoState},    {"pconfig", 7, 0, EDX, 18, kNoState},
    {"amx-bf16", 7, 0, EDX, 22, kAmxState},
    {"avx512fp16", 7, 0, EDX, 23, kAvx512State},
    {"amx-tile", 7, 0, EDX, 24, kAmxState},
    {"amx-int8", 7, 0, EDX, 25, kAmxState},
    {"raoint", 7, 1, EAX, 3, kNoState},       {"avxvnni", 7, 1, EAX, 4, kAvxState},
    {"avx512bf16", 7, 1, EAX, 5, kAvx512State},
    {"cmpccxadd", 7, 1, EAX, 7, kNoState},    {"amx-fp16", 7, 1, EAX, 21, kAmxState},
    {"hreset", 7, 1, EAX, 22, kNoState},      {"avxifma", 7, 1, EAX, 23, kAvxState},
    {"avxvnniint8", 7, 1, EDX, 4, kAvxState},
    {"avxneconvert", 7, 1, EDX, 5, kAvxState},
    {"prefetchi", 7, 1, EDX, 14, kNoState},
    {"xsaveopt", 0xD, 1, EAX, 0, kAvxState},
    {"xsavec", 0xD, 1, EAX, 1, kAvxState},
    {"xsaves", 0xD, 1, EAX, 3, kAvxState},
    {"sahf", 0x80000001, 0, ECX, 0, kNoState},
    {"lzcnt", 0x80000001, 0, ECX, 5, kNoState},
    {"sse4a", 0x80000001, 0, ECX, 6, kNoState},
    {"prfchw", 0x80000001, 0, ECX, 8, kNoState},
    {"xop", 0x80000001, 0, ECX, 11, kAvxState},
    {"fma4", 0x80000001, 0, ECX, 16, kAvxState},
    {"tbm", 0x80000001, 0, ECX, 21, kNoState},
    {"64bit", 0x80000001, 0, EDX, 29, kNoState},
};

bool cpuid(unsigned leaf, unsigned subleaf, unsigned r[4]) {
  unsigned max = __get_cpuid_max(leaf & 0x80000000u, nullptr);
  if (max < leaf) return false;
  if (leaf == 7 && subleaf > 0) {
    unsigned a, b, c, d;
    __cpuid_count(7, 0, a, b, c, d);
    if (a < subleaf) return false;  // EAX of leaf 7.0: the highest subleaf
  }
  __cpuid_count(leaf, subleaf, r[0], r[1], r[2], r[3]);
  return true;
}

unsigned long long read_xcr0() {
  unsigned r[4];
  if (!cpuid(1, 0, r) || !((r[ECX] >> 27) & 1)) return 0;  // no OSXSAVE: xgetbv would fault
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}
#endif

// AArch64 features by their Linux hwcap bits (asm/hwcap.h), under LLVM's names. Compiled on every
// architecture: which features of an aarch64 target are checkable does not depend on where the
// check is compiled (the unit tests check aarch64 targets on x86-64). A feature counts when every
// bit of its mask is set (LLVM's "aes" is AES and PMULL, "sha2" SHA1 and SHA2, ...).
struct HwcapFeature {
  char name[12];  // inline, as FeatureBit's
  int word;       // 1: AT_HWCAP, 2: AT_HWCAP2
  unsigned long mask;
};
const HwcapFeature kAarch64Features[] = {
    {"fp-armv8", 1, 1ul << 0},                      // FP
    {"neon", 1, 1ul << 1},                          // ASIMD
    {"aes", 1, (1ul << 3) | (1ul << 4)},            // AES, PMULL
    {"sha2", 1, (1ul << 5) | (1ul << 6)},           // SHA1, SHA2
    {"crc", 1, 1ul << 7},                           // CRC32
    {"lse", 1, 1ul << 8},                           // ATOMICS
    {"fullfp16", 1, (1ul << 9) | (1ul << 10)},      // FPHP, ASIMDHP
    {"rdm", 1, 1ul << 12},                          // ASIMDRDM
    {"jsconv", 1, 1ul << 13},                       // JSCVT
    {"complxnum", 1, 1ul << 14},                    // FCMA
    {"rcpc", 1, 1ul << 15},                         // LRCPC
    {"sha3", 1, (1ul << 17) | (1ul << 21)},         // SHA3, SHA512
    {"sm4", 1, (1ul << 18) | (1ul << 19)},          // SM3, SM4
    {"dotprod", 1, 1ul << 20},                      // ASIMDDP
    {"sve", 1, 1ul << 22},                          // SVE
    {"fp16fml", 1, 1ul << 23},                      // ASIMDFHM
    {"flagm", 1, 1ul << 27},                        // FLAGM
    {"ssbs", 1, 1ul << 28},                         // SSBS
    {"sb", 1, 1ul << 29},                           // SB
    {"sve2", 2, 1ul << 1},                          // SVE2
    {"fptoint", 2, 1ul << 8},                       // FRINT
    {"i8mm", 2, 1ul << 13},                         // I8MM
    {"bf16", 2, 1ul << 14},                         // BF16
    {"rand", 2, 1ul << 16},                         // RNG
};
#if defined(__aarch64__) && defined(__linux__) && defined(HWCAP_ASIMDDP) && defined(HWCAP2_BF16)
static_assert(HWCAP_ASIMDDP == (1ul << 20) && HWCAP_SVE == (1ul << 22) && HWCAP2_SVE2 == (1ul << 1) &&
                  HWCAP2_BF16 == (1ul << 14),
              "kAarch64Features disagrees with asm/hwcap.h");
#endif

// Key features a -mcpu name implies (enough to refuse the common mismatches: AVX, AVX2/FMA, the
// AVX-512 generations). A CPU takes the features of every line that names it; names LLVM knows
// but this table does not imply nothing.
struct CpuImplies {
  const char* cpus;
  const char* features;
};
const CpuImplies kCpuImplies[] = {
    {" x86-64-v2 nehalem westmere silvermont goldmont ", "sse4.2 popcnt"},
    {" sandybridge ivybridge btver2 ", "avx"},
    {" x86-64-v3 haswell broadwell skylake alderlake raptorlake meteorlake gracemont znver1 znver2 znver3 ",
     "avx avx2 fma"},
    {" x86-64-v4 knl knm skylake-avx512 cascadelake cooperlake cannonlake icelake-client icelake-server tigerlake "
     "rocketlake sapphirerapids emeraldrapids graniterapids znver4 ",
     "avx avx2 fma avx512f avx512cd"},
    // What later AVX-512 parts add, and LLVM uses for them unasked: code for znver4 may hold
    // VNNI's vpdpbusd (int8 kernels) and byte/word ops, which a Skylake-SP does not have.
    {" x86-64-v4 skylake-avx512 cascadelake cooperlake cannonlake icelake-client icelake-server tigerlake rocketlake "
     "sapphirerapids emeraldrapids graniterapids znver4 ",
     "avx512bw avx512dq avx512vl"},
    {" cascadelake cooperlake icelake-client icelake-server tigerlake rocketlake sapphirerapids emeraldrapids "
     "graniterapids znver4 ",
     "avx512vnni"},
    {" cannonlake icelake-client icelake-server tigerlake rocketlake sapphirerapids emeraldrapids graniterapids znver4 ",
     "avx512vbmi avx512ifma"},
    {" icelake-client icelake-server tigerlake rocketlake sapphirerapids emeraldrapids graniterapids znver4 ",
     "avx512vbmi2 avx512bitalg avx512vpopcntdq gfni vaes vpclmulqdq"},
    {" cooperlake sapphirerapids emeraldrapids graniterapids znver4 ", "avx512bf16"},
    // AArch64: of kAarch64Features, what LLVM 16's subtarget for each CPU reports
    // (MCSubtargetInfo::checkFeatures), leaving out ssbs, sb, flagm, fptoint and rand, which the
    // kernels never need.
    {" cortex-a35 cortex-a53 cortex-a57 cortex-a72 cortex-a73 ", "fp-armv8 neon crc aes sha2"},
    {" cortex-a55 cortex-a65 cortex-a75 cortex-a76 cortex-a77 cortex-a78 cortex-x1 neoverse-n1 neoverse-e1 ",
     "fp-armv8 neon crc aes sha2 lse rdm fullfp16 rcpc dotprod"},
    {" neoverse-v1 ", "fp-armv8 neon crc aes sha2 lse rdm fullfp16 rcpc dotprod jsconv complxnum fp16fml sve i8mm bf16"},
    {" neoverse-n2 ", "fp-armv8 neon crc aes sha2 lse rdm fullfp16 rcpc dotprod jsconv complxnum sve sve2 i8mm bf16"},
    {" cortex-a510 cortex-a710 cortex-x2 neoverse-v2 ",
     "fp-armv8 neon crc lse rdm fullfp16 rcpc dotprod jsconv complxnum fp16fml sve sve2 i8mm bf16"},
    {" a64fx ", "fp-armv8 neon crc sha2 lse rdm fullfp16 complxnum sve"},
};

#if defined(__x86_64__)
constexpr const char* kHostArch = "x86_64";
#elif defined(__i386__)
constexpr const char* kHostArch = "i386";
#elif defined(__aarch64__)
constexpr const char* kHostArch = "aarch64";
#else
constexpr const char* kHostArch = "unknown";
#endif

// The architecture a triple's first component names, as host_cpu_features() spells it.
std::string arch_of_triple(const std::string& triple) {
  std::string arch = triple.substr(0, triple.find('-'));
  if (arch == "arm64") return "aarch64";  // Apple's spelling of the same architecture
  if (arch == "amd64") return "x86_64";
  return arch;
}

}  // namespace

const std::vector<std::string>& checkable_cpu_features() { return checkable_cpu_features(kHostArch); }

const std::vector<std::string>& checkable_cpu_features(const std::string& arch) {
  static const std::vector<std::string> none;
  static const std::vector<std::string> aarch64 = [] {
    std::vector<std::string> v;
    for (const HwcapFeature& f : kAarch64Features) v.push_back(f.name);
    v.push_back("crypto");  // host_cpu_features derives it from aes and sha2
    return v;
  }();
#if defined(__x86_64__) || defined(__i386__)
  static const std::vector<std::string> x86 = [] {
    std::vector<std::string> v;
    for (const FeatureBit& f : kFeatures) v.push_back(f.name);
    return v;
  }();
  if (arch == "x86_64" || arch == "i386") return x86;
#endif
  if (arch == "aarch64") return aarch64;
  return none;
}

CpuFeatures host_cpu_features() {
  CpuFeatures c;
  c.arch = kHostArch;
#if defined(__x86_64__) || defined(__i386__)
  unsigned long long xcr0 = read_xcr0();  // 0 without OSXSAVE
  unsigned r1[4] = {0, 0, 0, 0};
  cpuid(1, 0, r1);
  bool avx_save = xcr0 != 0 && ((r1[ECX] >> 28) & 1) && (xcr0 & 0x6) == 0x6;
  bool saved[] = {true, avx_save, avx_save && (xcr0 & 0xE0) == 0xE0, (xcr0 & 0x60000) == 0x60000};
  for (const FeatureBit& f : kFeatures) {
    unsigned r[4];
    if (!cpuid(f.leaf, f.subleaf, r) || !((r[f.reg] >> f.bit) & 1) || !saved[f.state]) continue;
    c.features.insert(f.name);
  }
#elif defined(__aarch64__) && defined(__linux__)
  const unsigned long hwcap[] = {0, getauxval(AT_HWCAP), getauxval(AT_HWCAP2)};
  for (const HwcapFeature& f : kAarch64Features)
    if ((hwcap[f.word] & f.mask) == f.mask) c.features.insert(f.name);
  // LLVM's "crypto" (v8 crypto) is AES and SHA2 together.
  if (c.has("aes") && c.has("sha2")) c.features.insert("crypto");
#endif
  return c;
}

std::string target_incompatibility(const std::string& target, const CpuFeatures& cpu) {
  std::vector<std::string> words = split(target, ' ');
  std::string kind = words.empty() ? "" : words[0], triple, mcpu, mattr;
  if (kind != "llvm") return "target '" + target + "' is not a CPU target (kind '" + kind + "')";
  for (const std::string& tok : words) {
    if (tok.rfind("-mtriple=", 0) == 0) triple = tok.substr(9);
    else if (tok.rfind("-mcpu=", 0) == 0) mcpu = tok.substr(6);
    else if (tok.rfind("-mattr=", 0) == 0) mattr = tok.substr(7);
  }
  std::string arch = arch_of_triple(triple);
  if (!arch.empty() && arch != cpu.arch)
    return "the module was built for " + arch + " (triple " + triple + ") and this machine is " + cpu.arch;

  std::set<std::string> enabled, disabled;
  for (const std::string& tok : split(mattr, ',')) {
    if (tok.size() < 2) continue;
    // LLVM applies the list in order: a later +f/-f overrides an earlier one.
    std::string name = tok.substr(1);
    (tok[0] == '-' ? disabled : enabled).insert(name);
    (tok[0] == '-' ? enabled : disabled).erase(name);
  }
  for (const CpuImplies& ci : kCpuImplies) {
    if (mcpu.empty() || std::string(ci.cpus).find(" " + mcpu + " ") == std::string::npos) continue;
    // As in LLVM, -avx512f turns off every AVX-512 extension with it.
    for (const std::string& f : split(ci.features, ' '))
      if (!disabled.count(f) && !(f.rfind("avx512", 0) == 0 && disabled.count("avx512f"))) enabled.insert(f);
  }
  const std::vector<std::string>& known = checkable_cpu_features(cpu.arch);
  std::string missing;
  for (const std::string& f : enabled) {
    bool checkable = false;
    for (const std::string& k : known) checkable = checkable || k == f;
    if (checkable && !cpu.has(f)) missing += (missing.empty() ? "" : ", ") + f;
  }
  if (missing.empty()) return "";
  return "the module was built for CPU '" + (mcpu.empty() ? std::string("generic") : mcpu) +
         "' with features this machine lacks: " + missing +
         " (compile it for this machine, e.g. with a target naming its CPU or leaving these features out)";
}

}  // namespace kiln::runtime
