// NVRTC compilation of one CUDA C module into cubins and PTX, and ptxas's resource report
// (see nvrtc_compile.h for the facts of NVRTC 13 this relies on).
#include "nvrtc_compile.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <sstream>

#include "kiln/support/error.h"

#ifdef KILN_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace kiln::codegen::source {

// ---- parse_ptxas_report ---------------------------------------------------------------------------

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// The text between the first pair of single quotes after `from`, or "".
std::string quoted(const std::string& line, size_t from) {
  size_t b = line.find('\'', from);
  if (b == std::string::npos) return "";
  size_t e = line.find('\'', b + 1);
  if (e == std::string::npos) return "";
  return line.substr(b + 1, e - b - 1);
}

// Applies the comma-separated items of a "Used ..." or "... stack frame ..." line: each is a
// count then what it counts ("32 registers", "used 1 barriers", "384 bytes smem").
void apply_items(const std::string& items, KernelResources& r) {
  std::stringstream in(items);
  std::string item;
  while (std::getline(in, item, ',')) {
    item = trim(item);
    if (starts_with(item, "Used ") || starts_with(item, "used ")) item = trim(item.substr(5));
    size_t digits = 0;
    while (digits < item.size() && std::isdigit(static_cast<unsigned char>(item[digits]))) ++digits;
    if (digits == 0 || digits > 9) continue;  // not a count, or absurd
    int n = std::atoi(item.substr(0, digits).c_str());
    std::string what = trim(item.substr(digits));
    if (what == "registers") r.registers = n;
    else if (what == "barriers") r.barriers = n;
    else if (what == "bytes smem") r.shared_bytes = n;
    else if (starts_with(what, "bytes cmem[")) r.constant_bytes += n;
    else if (what == "bytes stack frame") r.stack_bytes = std::max(r.stack_bytes, n);
    else if (what == "bytes cumulative stack size") r.stack_bytes = std::max(r.stack_bytes, n);
    else if (what == "bytes spill stores") r.spill_stores_bytes = n;
    else if (what == "bytes spill loads") r.spill_loads_bytes = n;
  }
}

}  // namespace

std::vector<KernelResources> parse_ptxas_report(const std::string& log) {
  std::vector<KernelResources> out;
  // The entry being compiled ("Used" lines), and the one whose properties follow ("stack frame"
  // lines); -1 while none (a non-entry function's properties, or lines before any entry).
  int entry = -1, props = -1;
  std::stringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    size_t at;
    if ((at = line.find("Compiling entry function")) != std::string::npos) {
      KernelResources r;
      r.kernel = quoted(line, at);
      size_t sm_at = line.find("for 'sm_", at);
      if (sm_at != std::string::npos) r.sm = std::atoi(line.c_str() + sm_at + 8);
      out.push_back(r);
      entry = static_cast<int>(out.size()) - 1;
      props = -1;
    } else if ((at = line.find("Function properties for ")) != std::string::npos) {
      std::string name = trim(line.substr(at + 24));
      props = -1;
      for (int i = static_cast<int>(out.size()) - 1; i >= 0; --i)
        if (out[i].kernel == name) {
          props = i;
          break;
        }
    } else if (line.find("bytes stack frame") != std::string::npos) {
      if (props >= 0) {
        size_t dot = line.find(" . ");  // NVRTC's "ptxas         .     0 bytes stack frame, ..."
        apply_items(dot == std::string::npos ? line : line.substr(dot + 3), out[props]);
      }
    } else if ((at = line.find("Used ")) != std::string::npos && line.find("registers", at) != std::string::npos) {
      if (entry >= 0) apply_items(line.substr(at), out[entry]);
    }
  }
  return out;
}

// ---- compile_cuda -------------------------------------------------------------------------------

#ifndef KILN_HAVE_NVRTC

bool nvrtc_available() { return false; }
std::string nvrtc_version() { return ""; }

NvrtcResult compile_cuda(const std::string&, const std::vector<int>&, bool, bool) {
  KILN_THROW() << "CUDA code generation needs the CUDA toolkit's NVRTC; this kiln was built without it";
  return {};
}

#else

namespace {

constexpr const char* kProgramName = "kiln_module.cu";

// Sorted, without duplicates; refuses an empty list.
std::vector<int> checked_sms(const std::vector<int>& sms) {
  KILN_USER_CHECK(!sms.empty()) << "CUDA code generation: no sm to compile for";
  std::vector<int> out = sms;
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// NVRTC's call failed outside a compilation (out of memory, a bad option): a kiln bug or a
// broken toolkit, reported with the call.
void check(nvrtcResult r, const char* call) {
  KILN_USER_CHECK(r == NVRTC_SUCCESS) << "NVRTC " << nvrtc_version() << ": " << call
                                      << " failed: " << nvrtcGetErrorString(r);
}

// One NVRTC program: destroyed on every path.
class Program {
 public:
  explicit Program(const std::string& source) {
    check(nvrtcCreateProgram(&prog_, source.c_str(), kProgramName, 0, nullptr, nullptr), "nvrtcCreateProgram");
  }
  ~Program() { nvrtcDestroyProgram(&prog_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  nvrtcResult compile(const std::vector<std::string>& options) {
    std::vector<const char*> argv;
    for (const std::string& o : options) argv.push_back(o.c_str());
    return nvrtcCompileProgram(prog_, static_cast<int>(argv.size()), argv.data());
  }
  std::string log() {
    size_t size = 0;
    check(nvrtcGetProgramLogSize(prog_, &size), "nvrtcGetProgramLogSize");
    std::string s(size, '\0');
    if (size) check(nvrtcGetProgramLog(prog_, &s[0]), "nvrtcGetProgramLog");
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
  }
  std::string cubin() {
    size_t size = 0;
    check(nvrtcGetCUBINSize(prog_, &size), "nvrtcGetCUBINSize");
    std::string s(size, '\0');
    if (size) check(nvrtcGetCUBIN(prog_, &s[0]), "nvrtcGetCUBIN");
    return s;
  }
  std::string ptx() {  // with its terminating NUL
    size_t size = 0;
    check(nvrtcGetPTXSize(prog_, &size), "nvrtcGetPTXSize");
    std::string s(size, '\0');
    if (size) check(nvrtcGetPTX(prog_, &s[0]), "nvrtcGetPTX");
    return s;
  }

 private:
  nvrtcProgram prog_ = nullptr;
};

std::vector<int> supported_sms() {
  int n = 0;
  check(nvrtcGetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(n);
  if (n) check(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  return archs;
}

std::vector<std::string> options_for(int sm, bool arch_specific, bool needs_headers, bool verbose) {
  std::vector<std::string> o = {"--gpu-architecture=sm_" + std::to_string(sm) + (arch_specific ? "a" : ""),
                                "--std=c++17", "-default-device",
                                "--fmad=true"};
  if (verbose) o.push_back("--ptxas-options=-v");
  if (needs_headers)
    o.push_back(std::string("--include-path=") + KILN_CUDA_INCLUDE);
  else
    o.push_back("--minimal");  // no texture types, runtime API or device launches: kiln uses none
  return o;
}

}  // namespace

bool nvrtc_available() { return true; }

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "?";
  return std::to_string(major) + "." + std::to_string(minor);
}

NvrtcResult compile_cuda(const std::string& source, const std::vector<int>& requested, bool needs_headers,
                         bool arch_specific) {
  auto start = std::chrono::steady_clock::now();
  std::vector<int> sms = checked_sms(requested);
  KILN_CHECK(!arch_specific || sms.size() == 1) << "CUDA code generation: an arch-specific build is for one sm";
  std::vector<int> supported = supported_sms();
  for (int sm : sms)
    if (std::find(supported.begin(), supported.end(), sm) == supported.end()) {
      std::ostringstream list;
      for (size_t i = 0; i < supported.size(); ++i) list << (i ? ", " : "") << "sm_" << supported[i];
      KILN_THROW() << "CUDA code generation: sm_" << sm << " is not supported by NVRTC " << nvrtc_version()
                   << " (it supports " << list.str() << ")";
    }

  NvrtcResult result;
  for (int sm : sms) {
    Program prog(source);
    nvrtcResult r = prog.compile(options_for(sm, arch_specific, needs_headers, true));
    std::string log = prog.log();
    if (r == NVRTC_ERROR_COMPILATION) {
      // With -v, NVRTC 13's log keeps ptxas's report and drops its error line: when ptxas ran
      // (a front-end error stops before it), compile again without -v for the message.
      if (log.empty() || log.find("ptxas info") != std::string::npos) {
        Program again(source);
        again.compile(options_for(sm, arch_specific, needs_headers, false));
        std::string plain = again.log();
        if (!plain.empty()) log = plain;
      }
      KILN_THROW() << "NVRTC " << nvrtc_version() << " could not compile the CUDA module for sm_" << sm << ":\n"
                   << trim(log);
    }
    check(r, "nvrtcCompileProgram");
    CudaImage cubin;
    cubin.sm = sm;
    cubin.bytes = prog.cubin();
    KILN_CHECK(!cubin.bytes.empty()) << "NVRTC gave no cubin for sm_" << sm;
    result.images.push_back(std::move(cubin));
    if (!log.empty()) result.log += log + (log.back() == '\n' ? "" : "\n");
    if (sm == sms.back()) result.resources = parse_ptxas_report(log);
    if (sm == sms.back() && !arch_specific) {
      // The PTX of -arch=sm_XX is that of -arch=compute_XX: the image for newer GPUs.
      CudaImage ptx;
      ptx.sm = sm;
      ptx.ptx = true;
      ptx.bytes = prog.ptx();
      KILN_CHECK(ptx.bytes.size() > 1) << "NVRTC gave no PTX for sm_" << sm;
      result.images.push_back(std::move(ptx));
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

#endif  // KILN_HAVE_NVRTC

}  // namespace kiln::codegen::source
