// GPU targets: `cuda -arch=sm_XX` and `opencl`, their facts (GpuFacts) and spec strings.
//
// Facts per compute capability come from NVIDIA's CUDA C Programming Guide, "Technical
// Specifications per Compute Capability": 1024 threads and 64K 32-bit registers per block, at
// most 255 registers per thread, 48 KiB of static shared memory per block, and with the opt-in
// attribute up to 64 KiB (sm_75), 163 KiB (sm_80, sm_87), 99 KiB (sm_86, sm_89, sm_12x), 227 KiB
// (sm_90, sm_100). Multiprocessor counts are those of the parts kiln is measured on or most
// likely to meet (T4 40, A100 108, A10 72, L4 58, H100 SXM 132, B200 148); -multiprocessors=N
// states another. CUDA 13's NVRTC compiles for sm_75 and newer only.
//
// OpenCL: the same block limits as CUDA, so one schedule serves both targets (the OpenCL text
// run on PoCL checks the indexing of the CUDA text), and a warp size of 1 (OpenCL C has no warp
// shuffles without extensions PoCL lacks). Options override for a device with other limits.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <sstream>

#include "kiln/support/error.h"
#include "target_internal.h"

namespace kiln {

bool GpuFacts::operator==(const GpuFacts& o) const {
  return sm == o.sm && max_threads_per_block == o.max_threads_per_block && max_shared_bytes == o.max_shared_bytes &&
         max_dynamic_shared_bytes == o.max_dynamic_shared_bytes && registers_per_block == o.registers_per_block &&
         max_registers_per_thread == o.max_registers_per_thread && warp_size == o.warp_size &&
         multiprocessors == o.multiprocessors && arch_specific == o.arch_specific;
}

namespace target_detail {
namespace {

struct SmFacts {
  int sm;
  int64_t dynamic_shared_kib;
  int multiprocessors;
};
constexpr SmFacts kSms[] = {{75, 64, 40},  {80, 163, 108}, {86, 99, 72},   {87, 163, 16}, {89, 99, 58},
                            {90, 227, 132}, {100, 227, 148}, {103, 227, 148}, {120, 99, 84}};

int parse_count(const std::string& spec, const std::string& key, const std::string& value) {
  int n = 0;
  try {
    size_t used = 0;
    n = std::stoi(value, &used);
    if (used != value.size()) n = 0;
  } catch (const std::exception&) {
  }
  KILN_USER_CHECK(n >= 1) << "target '" << spec << "': " << key << " expects a positive count, got '" << value << "'";
  return n;
}

std::string known_sms() {
  std::string s;
  for (const SmFacts& f : kSms) s += (s.empty() ? "sm_" : ", sm_") + std::to_string(f.sm);
  return s;
}

}  // namespace

Target parse_gpu(const std::string& spec, const std::string& kind, std::istream& options) {
  Target t;
  t.kind = kind == "cuda" ? TargetKind::kCUDA : TargetKind::kOpenCL;
  if (t.kind == TargetKind::kOpenCL) t.gpu.warp_size = 1;
  int sm = t.kind == TargetKind::kCUDA ? 80 : 0;
  int threads = 0, sms = 0;
  int64_t shared = 0;
  std::string tok;
  while (options >> tok) {
    size_t eq = tok.find('=');
    std::string key = tok.substr(0, eq), value = eq == std::string::npos ? "" : tok.substr(eq + 1);
    const bool cuda = t.kind == TargetKind::kCUDA;
    static const char* const kKnown[] = {"-arch", "-max-threads-per-block", "-max-shared", "-multiprocessors"};
    bool known = std::find(std::begin(kKnown), std::end(kKnown), key) != std::end(kKnown) && (cuda || key != "-arch");
    KILN_USER_CHECK(known) << "target '" << spec << "': unknown option '" << key << "' (expected "
                           << (cuda ? "-arch=sm_XX, " : "") << "-max-threads-per-block=, -max-shared=, -multiprocessors=)";
    KILN_USER_CHECK(eq != std::string::npos && !value.empty())
        << "target '" << spec << "': option '" << tok << "' needs a value (" << key << "=...)";
    if (key == "-arch") {
      bool ok = value.rfind("sm_", 0) == 0 && value.size() > 3;
      // sm_90a: Hopper's arch-specific features (GpuFacts::arch_specific); no other "a" yet.
      t.gpu.arch_specific = value == "sm_90a";
      sm = !ok || (value.back() == 'a' && !t.gpu.arch_specific) ? 0
           : t.gpu.arch_specific                                 ? 90
                                                                 : parse_count(spec, key, value.substr(3));
      auto it = std::find_if(std::begin(kSms), std::end(kSms), [&](const SmFacts& f) { return f.sm == sm; });
      KILN_USER_CHECK(ok && it != std::end(kSms)) << "target '" << spec << "': unknown -arch '" << value
                                                 << "' (CUDA 13 compiles for: " << known_sms() << ", and sm_90a)";
    } else if (key == "-max-threads-per-block") {
      threads = parse_count(spec, key, value);
    } else if (key == "-max-shared") {
      shared = parse_size(spec, key, value);
    } else {
      sms = parse_count(spec, key, value);
    }
  }
  if (t.kind == TargetKind::kCUDA) {
    const SmFacts& f = *std::find_if(std::begin(kSms), std::end(kSms), [&](const SmFacts& x) { return x.sm == sm; });
    t.gpu.sm = sm;
    t.gpu.max_dynamic_shared_bytes = f.dynamic_shared_kib << 10;
    t.gpu.multiprocessors = f.multiprocessors;
  }
  if (threads) t.gpu.max_threads_per_block = threads;
  if (shared) {
    t.gpu.max_shared_bytes = shared;
    t.gpu.max_dynamic_shared_bytes = std::max(t.gpu.max_dynamic_shared_bytes, shared);
  }
  if (sms) t.gpu.multiprocessors = sms;
  return t;
}

std::string sm_name(const GpuFacts& g) { return "sm_" + std::to_string(g.sm) + (g.arch_specific ? "a" : ""); }

std::string gpu_isa(const Target& t) {
  return t.kind == TargetKind::kCUDA ? "cuda -arch=" + sm_name(t.gpu) : "opencl";
}

std::string gpu_str(const Target& t) {
  // Only the facts options can state; the rest follow from -arch.
  return gpu_isa(t) + fmt::format(" -max-threads-per-block={} -max-shared={} -multiprocessors={}",
                                  t.gpu.max_threads_per_block, size_str(t.gpu.max_shared_bytes), t.gpu.multiprocessors);
}

std::string gpu_summary(const Target& t) {
  const GpuFacts& g = t.gpu;
  std::string head = t.kind == TargetKind::kCUDA ? "cuda " + sm_name(g) : "opencl";
  std::string s = fmt::format("{}: {} threads/block, {} shared/block ({} with opt-in), {}K registers/block, warp {}, {} {}",
                              head, g.max_threads_per_block, human_size(g.max_shared_bytes),
                              human_size(g.max_dynamic_shared_bytes), g.registers_per_block / 1024, g.warp_size,
                              g.multiprocessors, t.kind == TargetKind::kCUDA ? "SMs" : "compute units");
  if (t.kind == TargetKind::kCUDA) {
    std::vector<int> sms = t.cuda_image_sms();
    s += "; images";
    if (g.arch_specific) return s + " " + sm_name(g) + " alone";
    for (int x : sms) s += " sm_" + std::to_string(x);
    s += " + PTX compute_" + std::to_string(sms.back());
  }
  return s;
}

}  // namespace target_detail

std::vector<int> Target::cuda_image_sms() const {
  if (kind != TargetKind::kCUDA) return {};
  if (gpu.arch_specific) return {gpu.sm};
  std::vector<int> sms = {80, 90};
  if (std::find(sms.begin(), sms.end(), gpu.sm) == sms.end()) sms.push_back(gpu.sm);
  std::sort(sms.begin(), sms.end());
  return sms;
}

}  // namespace kiln
