// Target: host detection through LLVM, and the "llvm -mcpu=... -mattr=..." spec syntax.
#include "kiln/codegen/target.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <sstream>
#include <vector>

#include "kiln/support/error.h"

namespace kiln::codegen {

Target Target::host() {
  Target t;
  t.kind = "llvm";
  t.triple = llvm::Triple::normalize(llvm::sys::getProcessTriple());
  t.cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> feats;
  std::vector<std::string> list;
  if (llvm::sys::getHostCPUFeatures(feats)) {
    for (const auto& kv : feats) list.push_back((kv.second ? "+" : "-") + kv.first().str());
  }
  // StringMap iteration order is unspecified; sort so host().str() is deterministic.
  std::sort(list.begin(), list.end(), [](const std::string& a, const std::string& b) {
    return a.substr(1) < b.substr(1);
  });
  for (size_t i = 0; i < list.size(); ++i) t.features += (i ? "," : "") + list[i];
  return t;
}

Target Target::parse(const std::string& spec) {
  std::istringstream is(spec);
  std::string kind;
  is >> kind;
  KILN_USER_CHECK(kind == "llvm") << "target '" << spec << "': unknown kind '" << kind
                                  << "' (the CPU backend understands 'llvm')";
  bool has_cpu = false, has_attr = false, has_triple = false;
  Target t;
  std::string tok;
  while (is >> tok) {
    auto value_of = [&](const std::string& prefix) { return tok.substr(prefix.size()); };
    if (tok.rfind("-mcpu=", 0) == 0) {
      t.cpu = value_of("-mcpu="), has_cpu = true;
    } else if (tok.rfind("-mattr=", 0) == 0) {
      t.features = value_of("-mattr="), has_attr = true;
    } else if (tok.rfind("-mtriple=", 0) == 0) {
      t.triple = llvm::Triple::normalize(value_of("-mtriple=")), has_triple = true;
    } else {
      KILN_THROW() << "target '" << spec << "': unknown option '" << tok
                   << "' (expected -mtriple=, -mcpu= or -mattr=)";
    }
  }
  Target h = host();
  bool is_host_triple = !has_triple || t.triple == h.triple;
  if (!has_triple) t.triple = h.triple;
  if (has_cpu && t.cpu == "native") {
    KILN_USER_CHECK(is_host_triple) << "target '" << spec << "': -mcpu=native with a foreign -mtriple";
    t.cpu = h.cpu;
    if (!has_attr) t.features = h.features;
  } else if (!has_cpu) {
    t.cpu = is_host_triple ? h.cpu : "generic";
    if (!has_attr && is_host_triple) t.features = h.features;
  }
  return t;
}

std::string Target::str() const {
  std::string s = kind;
  if (!triple.empty()) s += " -mtriple=" + triple;
  if (!cpu.empty()) s += " -mcpu=" + cpu;
  if (!features.empty()) s += " -mattr=" + features;
  return s;
}

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

}  // namespace kiln::codegen
