// Fuzzes what the module loader reads from a compiled model's data (runtime/module_loader.h,
// validate_module_data): kiln version and target strings, the binary graph plan, the weights and
// their checksum, and every check between them (the kernels are code, not data: not fuzzed).
// A plan that passes must also be one the encoder writes back byte for byte: the decoder
// accepting what the encoder cannot have written would be a format bug.
//
// Input: version NUL target NUL, one flag byte (bit 0: give a wrong weights checksum), a u32
// plan length, the plan, then the weights. fuzz/make_module_seed.py writes a compiled module's
// data in this form (fuzz/seeds/module_data/).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fuzz_guard.h"
#include "kiln/runtime/graph_plan.h"
#include "kiln/runtime/module_loader.h"

namespace {

// The next NUL-ended string, or false when there is none.
bool take_string(const uint8_t*& p, const uint8_t* end, std::string* out) {
  const void* nul = std::memchr(p, 0, static_cast<size_t>(end - p));
  if (nul == nullptr) return false;
  out->assign(reinterpret_cast<const char*>(p), static_cast<const uint8_t*>(nul) - p);
  p = static_cast<const uint8_t*>(nul) + 1;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::runtime;
  const uint8_t* p = data;
  const uint8_t* end = data + size;
  ModuleData d;
  if (!take_string(p, end, &d.version) || !take_string(p, end, &d.target) || end - p < 5) return 0;
  const uint8_t flags = *p++;
  uint32_t plan_size;
  std::memcpy(&plan_size, p, 4);
  p += 4;
  if (plan_size > static_cast<size_t>(end - p)) return 0;
  d.plan = p;
  d.plan_size = plan_size;
  p += plan_size;
  // The weights, where a module has them: 64-byte aligned (a module's always are).
  d.weights_size = static_cast<uint64_t>(end - p);
  void* weights = std::aligned_alloc(64, (d.weights_size / 64 + 1) * 64);
  if (d.weights_size > 0) std::memcpy(weights, p, d.weights_size);
  d.weights = static_cast<const uint8_t*>(weights);
  d.weights_checksum = fnv1a64(weights, d.weights_size) ^ (flags & 1);
  kiln::fuzz::guarded([&] {
    try {
      GraphPlan plan = validate_module_data(d, "fuzz.so");
      if (encode_plan(plan) != std::string(static_cast<const char*>(d.plan), d.plan_size)) {
        std::fprintf(stderr, "fuzz: a plan that validates does not re-encode to the same bytes\n");
        std::abort();
      }
    } catch (const RuntimeError&) {
      // Refused with a message (a RuntimeError is a kiln::Error; caught here to say so).
    }
  });
  std::free(weights);
  return 0;
}
