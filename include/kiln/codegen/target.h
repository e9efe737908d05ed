// Target: which machine code generation compiles for. LLVM types stay out of this header.
//
// A target is written like TVM's: "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512
// -mattr=+avx512f,+fma". Plain "llvm" (or -mcpu=native) means the host: its triple, CPU and
// feature set.
#pragma once

#include <string>

namespace kiln::codegen {

struct Target {
  std::string kind = "llvm";
  std::string cpu;       // LLVM CPU name ("skylake-avx512", "generic")
  std::string features;  // LLVM feature list, comma separated ("+avx2,+fma,-avx512f")
  std::string triple;    // target triple ("x86_64-pc-linux-gnu")

  // The machine we run on: host triple, CPU name and every feature LLVM detects (+ or -).
  static Target host();
  // Parses "llvm [-mtriple=T] [-mcpu=C] [-mattr=F]"; fields not given default to the host's
  // (to "generic" and no features when -mtriple names another machine). Throws kiln::Error on
  // an unknown kind or option.
  static Target parse(const std::string& spec);
  // The spec string; parse(t.str()) == t.
  std::string str() const;
  // True if `features` enables `name` ("avx512f" matches "+avx512f"). A CPU name implies
  // features this does not see; host() lists them all explicitly.
  bool has_feature(const std::string& name) const;

  bool operator==(const Target& o) const {
    return kind == o.kind && cpu == o.cpu && features == o.features && triple == o.triple;
  }
  bool operator!=(const Target& o) const { return !(*this == o); }
};

}  // namespace kiln::codegen
