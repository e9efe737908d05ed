// Target::host(): this machine, from LLVM's host detection and the OS (caches, cores).
#include <sched.h>
#include <unistd.h>

#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "target_internal.h"

namespace kiln {

namespace {

// "48K" / "1024K" / "32M" as sysfs writes cache sizes; 0 if unreadable.
int64_t read_cache_size(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  if (!(in >> s) || s.empty()) return 0;
  int64_t scale = s.back() == 'K' ? 1024 : s.back() == 'M' ? 1 << 20 : 1;
  if (scale != 1) s.pop_back();
  try {
    return std::stoll(s) * scale;
  } catch (const std::exception&) {
    return 0;
  }
}

std::string read_word(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  in >> s;
  return s;
}

// Data and unified caches of cpu0 by level (sysfs); levels the OS does not describe stay 0.
void read_caches(int64_t* l1d, int64_t* l2, int64_t* l3) {
  for (int i = 0; i < 8; ++i) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::string level = read_word(dir + "level"), type = read_word(dir + "type");
    if (level.empty()) break;
    if (type == "Instruction") continue;
    int64_t size = read_cache_size(dir + "size");
    if (level == "1") *l1d = size;
    else if (level == "2") *l2 = size;
    else if (level == "3") *l3 = size;
  }
}

// The cores this process may run on (the affinity mask: taskset and cgroup cpusets shrink it).
int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

Target detect_host() {
  Target t;
  t.kind = TargetKind::kLLVM;
  initialize_llvm_targets();
  t.triple = llvm::Triple::normalize(llvm::sys::getProcessTriple());
  t.cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> feats;
  std::vector<std::string> list;
  if (llvm::sys::getHostCPUFeatures(feats)) {
    for (const auto& kv : feats) list.push_back((kv.second ? "+" : "-") + kv.first().str());
  }
  // StringMap iteration order is unspecified; sorted, host().str() is deterministic.
  std::sort(list.begin(), list.end(), [](const std::string& a, const std::string& b) { return a.substr(1) < b.substr(1); });
  for (size_t i = 0; i < list.size(); ++i) t.features += (i ? "," : "") + list[i];

  t.facts = target_detail::isa_facts(t);
  target_detail::set_machine_facts(&t, t.cpu, nullptr);  // table (or default) first: sysfs may lack a level
  CpuFacts machine = t.facts;
  int64_t l1d = 0, l2 = 0, l3 = 0;
  read_caches(&l1d, &l2, &l3);
  if (l1d) machine.l1d_bytes = l1d;
  if (l2) machine.l2_bytes = l2;
  if (l3) machine.l3_bytes = l3;
  machine.cores = usable_cores();
  target_detail::set_machine_facts(&t, t.cpu, &machine);
  return t;
}

}  // namespace

Target Target::host() {
  static const Target host = detect_host();
  return host;
}

}  // namespace kiln
