// Target: the spec syntax (parse, str), identity (isa) and the one-line summary.
#include "kiln/target/target.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <sstream>

#include "kiln/support/error.h"
#include "target_internal.h"

namespace kiln {

namespace target_detail {

// "32768", "48K", "1M", "1.25M" -> bytes.
int64_t parse_size(const std::string& spec, const std::string& option, const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  double scale = unit.empty() ? 1 : unit == "K" || unit == "k" ? 1024 : unit == "M" || unit == "m" ? 1 << 20 : 0;
  KILN_USER_CHECK(used > 0 && scale > 0 && v > 0)
      << "target '" << spec << "': " << option << " expects a size in bytes (e.g. 32768, 48K, 1M), got '" << text << "'";
  return static_cast<int64_t>(v * scale);
}

std::string size_str(int64_t bytes) {
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + "M";
  if (bytes % 1024 == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}

std::string human_size(int64_t bytes) {
  if (bytes >= (1 << 20) && bytes % (1 << 18) == 0) return fmt::format("{:g} MiB", bytes / double(1 << 20));
  if (bytes >= 1024) return fmt::format("{:g} KiB", bytes / 1024.0);
  return fmt::format("{} B", bytes);
}

}  // namespace target_detail

using target_detail::human_size;
using target_detail::parse_size;
using target_detail::size_str;

bool CpuFacts::operator==(const CpuFacts& o) const {
  return vector_bits == o.vector_bits && vector_registers == o.vector_registers && fma == o.fma &&
         mask_registers == o.mask_registers && int8_dot == o.int8_dot &&
         fma_latency == o.fma_latency && fma_per_cycle == o.fma_per_cycle && loads_per_cycle == o.loads_per_cycle &&
         l1d_bytes == o.l1d_bytes &&
         l2_bytes == o.l2_bytes && l3_bytes == o.l3_bytes && cores == o.cores;
}

bool Target::operator==(const Target& o) const {
  return kind == o.kind && triple == o.triple && cpu == o.cpu && features == o.features && facts == o.facts &&
         gpu == o.gpu;
}

Target Target::parse(const std::string& spec) {
  std::istringstream is(spec);
  std::string kind;
  is >> kind;
  if (kind == "cuda" || kind == "opencl") return target_detail::parse_gpu(spec, kind, is);
  KILN_USER_CHECK(kind == "llvm") << "target '" << spec << "': unknown kind '" << kind
                                  << "' (kiln generates code for 'llvm' (CPUs), 'cuda' and 'opencl')";
  std::string triple, cpu, features, tok;
  bool has_cpu = false, has_attr = false;
  int cores = 0;
  int64_t l1d = 0, l2 = 0, l3 = 0;
  while (is >> tok) {
    size_t eq = tok.find('=');
    std::string key = tok.substr(0, eq), value = eq == std::string::npos ? "" : tok.substr(eq + 1);
    static const char* const kKnown[] = {"-mtriple", "-mcpu", "-mattr", "-num-cores", "-l1d", "-l2", "-l3"};
    KILN_USER_CHECK(std::find(std::begin(kKnown), std::end(kKnown), key) != std::end(kKnown))
        << "target '" << spec << "': unknown option '" << key
        << "' (expected -mtriple=, -mcpu=, -mattr=, -num-cores=, -l1d=, -l2=, -l3=)";
    KILN_USER_CHECK(eq != std::string::npos && !value.empty())
        << "target '" << spec << "': option '" << tok << "' needs a value (" << key << "=...)";
    if (key == "-mtriple") {
      triple = value;
    } else if (key == "-mcpu") {
      cpu = value, has_cpu = true;
    } else if (key == "-mattr") {
      features = value, has_attr = true;
    } else if (key == "-num-cores") {
      int n = 0;
      try {
        n = std::stoi(value);
      } catch (const std::exception&) {
      }
      KILN_USER_CHECK(n >= 1) << "target '" << spec << "': -num-cores expects a positive count, got '" << value << "'";
      cores = n;
    } else if (key == "-l1d") {
      l1d = parse_size(spec, key, value);
    } else if (key == "-l2") {
      l2 = parse_size(spec, key, value);
    } else {
      l3 = parse_size(spec, key, value);
    }
  }

  Target h = host();
  Target t;
  t.triple = triple.empty() ? h.triple : target_detail::normalize_triple(spec, triple);
  const bool host_triple = t.triple == h.triple;
  if (has_cpu && cpu == "native") {
    KILN_USER_CHECK(host_triple) << "target '" << spec << "': -mcpu=native with a foreign -mtriple";
    cpu = h.cpu;
    if (!has_attr) features = h.features;
  } else if (!has_cpu) {
    cpu = host_triple ? h.cpu : "generic";
    if (!has_attr && host_triple) features = h.features;
  }
  t.cpu = cpu;
  t.features = features;
  target_detail::check_cpu(spec, t);
  // The machine facts: the host's where the code runs here (same triple, and the host's own
  // CPU or an ISA level such as x86-64-v3, which names no machine); a named CPU's from the table.
  t.facts = target_detail::isa_facts(t);
  const bool host_machine = host_triple && (t.cpu == h.cpu || target_detail::is_isa_level(t.cpu));
  // An ISA level run here times like the host CPU (its FMA pipes and load ports, at the level's
  // vector width).
  target_detail::set_machine_facts(&t, host_machine ? h.cpu : t.cpu, host_machine ? &h.facts : nullptr);
  if (host_triple && !host_machine) t.facts.cores = h.facts.cores;
  if (cores) t.facts.cores = cores;
  if (l1d) t.facts.l1d_bytes = l1d;
  if (l2) t.facts.l2_bytes = l2;
  if (l3) t.facts.l3_bytes = l3;
  return t;
}

std::string Target::str() const {
  if (is_gpu()) return target_detail::gpu_str(*this);
  std::string s = isa();
  s += fmt::format(" -num-cores={} -l1d={} -l2={} -l3={}", facts.cores, size_str(facts.l1d_bytes),
                   size_str(facts.l2_bytes), size_str(facts.l3_bytes));
  return s;
}

std::string Target::isa() const {
  if (is_gpu()) return target_detail::gpu_isa(*this);
  std::string s = "llvm";
  if (!triple.empty()) s += " -mtriple=" + triple;
  if (!cpu.empty()) s += " -mcpu=" + cpu;
  if (!features.empty()) s += " -mattr=" + features;
  return s;
}

std::string Target::isa_of(const std::string& spec) {
  std::istringstream is(spec);
  std::string tok, out;
  while (is >> tok) {
    std::string key = tok.substr(0, tok.find('='));
    if (key == "-num-cores" || key == "-l1d" || key == "-l2" || key == "-l3" || key == "-max-threads-per-block" ||
        key == "-max-shared" || key == "-multiprocessors")
      continue;
    out += (out.empty() ? "" : " ") + tok;
  }
  return out;
}

std::string Target::brief() const {
  if (is_gpu()) return kind == TargetKind::kCUDA ? fmt::format("cuda sm_{}{}", gpu.sm, gpu.arch_specific ? "a" : "")
                                                 : std::string("opencl");
  std::string isa = is_aarch64()                ? "NEON"
                    : !is_x86()                 ? ""
                    : facts.vector_bits >= 512  ? "AVX-512"
                    : facts.vector_bits >= 256  ? (facts.fma ? "AVX2" : "AVX")
                                                : "SSE";
  std::string out = cpu.empty() || cpu == "generic" ? "generic " + triple.substr(0, triple.find('-')) : cpu;
  if (!isa.empty()) out += ", " + isa;
  return out + fmt::format(", {} core{}", facts.cores, facts.cores == 1 ? "" : "s");
}

std::string Target::brief_of(const std::string& spec) {
  try {
    return parse(spec).brief();
  } catch (const Error&) {
    std::istringstream is(spec);
    for (std::string tok; is >> tok;)
      if (tok.rfind("-mcpu=", 0) == 0) return tok.substr(6);
    return spec;
  }
}

std::string Target::summary() const {
  if (is_gpu()) return target_detail::gpu_summary(*this);
  std::string arch = triple.substr(0, triple.find('-'));
  std::string fma = facts.fma ? fmt::format("FMA ({} cycles, {}/cycle)", facts.fma_latency, facts.fma_per_cycle)
                              : std::string("no FMA");
  return fmt::format("{} {}: {}-bit vectors ({} x f32), {} vector registers, {}, L1d {}, L2 {}, L3 {}, {} core{}",
                     arch, cpu, facts.vector_bits, lanes(32), facts.vector_registers, fma,
                     human_size(facts.l1d_bytes), human_size(facts.l2_bytes), human_size(facts.l3_bytes), facts.cores,
                     facts.cores == 1 ? "" : "s");
}

bool Target::is_x86() const { return triple.rfind("x86_64", 0) == 0 || triple.rfind("i686", 0) == 0; }
bool Target::is_aarch64() const { return triple.rfind("aarch64", 0) == 0 || triple.rfind("arm64", 0) == 0; }

bool Target::has_feature(const std::string& name) const {
  std::string want = "+" + name;
  size_t pos = 0;
  while (pos <= features.size()) {
    size_t end = features.find(',', pos);
    if (end == std::string::npos) end = features.size();
    if (features.compare(pos, end - pos, want) == 0) return true;
    pos = end + 1;
  }
  return false;
}

}  // namespace kiln
