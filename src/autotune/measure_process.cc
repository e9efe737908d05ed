// The timer and the cache helpers (see measure_process.h); the isolated runs are in run_isolated.cc.
#include "kiln/autotune/measure_process.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "kiln/support/error.h"

namespace kiln::autotune {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

size_t last_level_cache_bytes() {
  for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    long v = ::sysconf(name);
    if (v > 0) return static_cast<size_t>(v);
  }
  for (const char* index : {"index3", "index2"}) {
    std::ifstream f(std::string("/sys/devices/system/cpu/cpu0/cache/") + index + "/size");
    size_t kib = 0;
    char unit = 0;
    if (f >> kib >> unit && kib > 0) return unit == 'M' ? kib << 20 : kib << 10;
  }
  return size_t{32} << 20;
}

size_t usable_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  size_t usable = pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
  // In a container the cgroup's limit, not the machine's memory, is where the OOM killer steps
  // in: cgroup v2 ("max" when unlimited), then v1 (a huge number when unlimited).
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream f(path);
    unsigned long long limit = 0;
    if (f >> limit && limit > 0 && (usable == 0 || limit < usable)) usable = static_cast<size_t>(limit);
  }
  return usable;
}

size_t data_segment_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmData:", 0) != 0) continue;
    std::istringstream fields(line.substr(7));
    size_t kib = 0;
    return fields >> kib ? kib << 10 : 0;
  }
  return 0;
}

void flush_cpu_cache(size_t bytes) {
  static std::vector<char> buffer;
  if (buffer.size() < bytes) buffer.resize(bytes);
  // Writing every line evicts what was cached; reading back through a volatile sink keeps the
  // compiler from dropping the writes.
  static char round = 0;
  ++round;
  for (size_t i = 0; i < bytes; i += 64) buffer[i] = static_cast<char>(round + i);
  volatile char sink = 0;
  for (size_t i = 0; i < bytes; i += 4096) sink = sink + buffer[i];
}

void demote_to_llc(const void* data, size_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
  // cldemote is in the hint-NOP space: a no-op where the CPU lacks it.
  const char* p = static_cast<const char*>(data);
  for (size_t i = 0; i < bytes; i += 64) asm volatile(".byte 0x0f, 0x1c, 0x00" ::"a"(p + i) : "memory");
  __builtin_ia32_mfence();
#else
  (void)data;
  (void)bytes;
#endif
}

TimingResult time_function(const std::function<void()>& fn, const TimerOptions& o) {
  KILN_USER_CHECK(o.repeat >= 1) << "timer repeat must be at least 1, got " << o.repeat;
  KILN_USER_CHECK(o.min_duration_s >= 0) << "timer min_duration must not be negative";
  KILN_USER_CHECK(o.max_total_s >= 0) << "timer max_total must not be negative";
  const size_t flush_bytes = o.flush_bytes ? o.flush_bytes : 2 * last_level_cache_bytes();
  const auto start = Clock::now();
  for (int i = 0; i < o.warmup; ++i) fn();
  // Seconds a call takes: first from the warmup, then from the latest sample (warm caches).
  double per_call = o.warmup > 0 ? seconds_since(start) / o.warmup : 0;
  auto past_cap = [&](double more_s) { return o.max_total_s > 0 && seconds_since(start) + more_s > o.max_total_s; };
  TimingResult r;
  for (int s = 0; s < o.repeat; ++s) {
    if (s > 0 && past_cap(std::max(per_call, o.min_duration_s))) break;
    if (o.flush_cache) flush_cpu_cache(flush_bytes);
    if (o.before_sample) o.before_sample();
    const auto t0 = Clock::now();
    int calls = 0;
    double elapsed = 0;
    do {
      fn();
      ++calls;
      elapsed = seconds_since(t0);
    } while (elapsed < o.min_duration_s && !past_cap(elapsed / calls));
    per_call = elapsed / calls;
    r.samples.push_back(per_call);
    r.calls.push_back(calls);
  }
  std::vector<double> sorted = r.samples;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  r.median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  return r;
}

}  // namespace kiln::autotune
