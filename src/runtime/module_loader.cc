// LoadedModule::load: dlopen a module library and validate it (module_loader.h). The checks run
// cheapest and most telling first, so that a wrong file is named as such ("not a kiln module")
// rather than by whatever its contents happen to break.
#include "kiln/runtime/module_loader.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "runtime/cpu_features.h"
#include "runtime/module_format.h"
#include "kiln/runtime/version.h"

namespace kiln::runtime {
namespace {

[[noreturn]] void fail(ErrorKind kind, const std::string& path, const std::string& why) {
  throw RuntimeError(kind, "cannot load module '" + path + "': " + why);
}

// "0.1.3" -> "0.1"
std::string major_minor(const std::string& v) {
  size_t dot = v.find('.');
  if (dot == std::string::npos) return v;
  size_t dot2 = v.find('.', dot + 1);
  return v.substr(0, dot2);
}

#if defined(__x86_64__)
constexpr int kElfMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr int kElfMachine = EM_AARCH64;
#else
constexpr int kElfMachine = -1;  // not checked
#endif

std::string elf_machine_name(int machine) {
  switch (machine) {
    case EM_X86_64: return "x86_64";
    case EM_AARCH64: return "aarch64";
    case EM_386: return "i386";
    case EM_RISCV: return "riscv64";  // a 64-bit ELF file (checked before)
    default: return "ELF machine " + std::to_string(machine);
  }
}

// Checks that `path` is a complete ELF shared library for this machine before dlopen sees it:
// glibc maps a truncated library's segments past the end of the file and dies of SIGBUS
// touching them, and names a foreign one only by "wrong ELF class".
void check_file(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) fail(ErrorKind::kFile, path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(ErrorKind::kFile, path, "not a regular file");
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) fail(ErrorKind::kFile, path, std::strerror(errno));
  Elf64_Ehdr eh;
  std::memset(&eh, 0, sizeof(eh));
  size_t got = std::fread(&eh, 1, sizeof(eh), f);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  auto refuse = [&](const std::string& why) {
    std::fclose(f);
    fail(ErrorKind::kInvalidModule, path, why);
  };
  if (got < 4 || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    refuse("not a kiln module (not a shared library: no ELF header)");
  if (got < sizeof(eh) || eh.e_ident[EI_CLASS] != ELFCLASS64)
    refuse("not a kiln module for this machine (not a 64-bit ELF file)");
  if (eh.e_type != ET_DYN) refuse("not a kiln module (an ELF file, but not a shared library)");
  if (kElfMachine >= 0 && eh.e_machine != kElfMachine)
    refuse("the library is for another machine architecture: " + elf_machine_name(eh.e_machine) + ", this machine is " +
           elf_machine_name(kElfMachine) + " (compile the model for this machine, or run it where it belongs)");
  const char* truncated = "the file is truncated (its ELF headers describe more bytes than it has)";
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff + uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr) > size)
    refuse(truncated);
  if (eh.e_shoff + uint64_t(eh.e_shnum) * eh.e_shentsize > size) refuse(truncated);
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (std::fseek(f, static_cast<long>(eh.e_phoff + i * sizeof(Elf64_Phdr)), SEEK_SET) != 0 ||
        std::fread(&ph, 1, sizeof(ph), f) != sizeof(ph))
      refuse(truncated);
    if (ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > size) refuse(truncated);
  }
  std::fclose(f);
}

}  // namespace

bool version_compatible(const std::string& module_version) {
  return major_minor(module_version) == major_minor(KILN_VERSION_STRING);
}

GraphPlan validate_module_data(const ModuleData& d, const std::string& path) {
  if (!version_compatible(d.version))
    fail(ErrorKind::kIncompatible, path,
         "written by kiln " + d.version + ", this runtime is kiln " KILN_VERSION_STRING +
             " (recompile the model with this version)");
  if (!d.device) {
    std::string why = target_incompatibility(d.target, host_cpu_features());
    if (!why.empty()) fail(ErrorKind::kIncompatible, path, why);
  }

  GraphPlan plan;
  try {
    plan = decode_plan(d.plan, d.plan_size);
  } catch (const kiln::Error& e) {
    fail(ErrorKind::kInvalidModule, path, std::string("corrupt kiln module: ") + e.what());
  }
  if (plan.target != d.target || plan.kiln_version != d.version || (plan.device_type != kDLCPU) != d.device)
    fail(ErrorKind::kInvalidModule, path,
         "corrupt kiln module: its plan and its metadata disagree on target, version or device");

  if (static_cast<int64_t>(d.weights_size) != plan.weights_bytes || d.weights_checksum != plan.weights_checksum)
    fail(ErrorKind::kInvalidModule, path, "corrupt kiln module: its plan and its metadata disagree on the weights");
  if (reinterpret_cast<uintptr_t>(d.weights) % KILN_MODULE_WEIGHTS_ALIGNMENT != 0)
    fail(ErrorKind::kInvalidModule, path, "corrupt kiln module: the weights are not 64-byte aligned");
  uint64_t actual = fnv1a64(d.weights, d.weights_size);
  if (actual != d.weights_checksum) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "weights checksum mismatch (expected %016llx, computed %016llx): the weights are corrupt",
                  static_cast<unsigned long long>(d.weights_checksum), static_cast<unsigned long long>(actual));
    fail(ErrorKind::kInvalidModule, path, buf);
  }

  std::string problem = plan_problem(plan, plan.weights_bytes);
  if (!problem.empty()) fail(ErrorKind::kInvalidModule, path, "corrupt kiln module: malformed plan: " + problem);
  return plan;
}

std::shared_ptr<const LoadedModule> LoadedModule::load(const std::string& path) {
  if (path.empty()) throw RuntimeError(ErrorKind::kInvalidArgument, "cannot load module: empty path");
  check_file(path);
  std::shared_ptr<LoadedModule> m(new LoadedModule());
  m->path_ = path;
  // A name without a slash would make dlopen search the library path instead of this file.
  std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
  // RTLD_NOW: a symbol the kernels need and the process lacks fails here, not mid-run.
  // RTLD_LOCAL: two modules' kernels and metadata never interpose each other.
  dlerror();
  m->handle_ = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (m->handle_ == nullptr) {
    const char* err = dlerror();
    fail(ErrorKind::kInvalidModule, path, std::string("dlopen failed: ") + (err ? err : "unknown error"));
  }

  // Symbols must come from the module itself: dlsym also searches its dependencies (libm has
  // an `exp`, and a kernel could be named anything).
  void* base = nullptr;
  auto sym = [&](const char* name) -> void* {
    void* p = dlsym(m->handle_, name);
    if (p == nullptr) return nullptr;
    Dl_info info;
    if (base != nullptr && (dladdr(p, &info) == 0 || info.dli_fbase != base)) return nullptr;
    return p;
  };
  const char* magic = static_cast<const char*>(sym(KILN_SYM_MAGIC));
  Dl_info info;
  if (magic == nullptr || dladdr(magic, &info) == 0)
    fail(ErrorKind::kInvalidModule, path, "not a kiln module (it has no " KILN_SYM_MAGIC " symbol)");
  base = info.dli_fbase;
  ModuleData d;
  d.device = std::strncmp(magic, KILN_MODULE_MAGIC_DEVICE, sizeof(KILN_MODULE_MAGIC_DEVICE)) == 0;
  if (!d.device && std::strncmp(magic, KILN_MODULE_MAGIC, sizeof(KILN_MODULE_MAGIC)) != 0)
    fail(ErrorKind::kIncompatible, path,
         std::string("module format '") + std::string(magic, strnlen(magic, 64)) + "', this runtime reads '" +
             KILN_MODULE_MAGIC + "' and '" KILN_MODULE_MAGIC_DEVICE "'");

  auto need = [&](const char* name) {
    void* p = sym(name);
    if (p == nullptr) fail(ErrorKind::kInvalidModule, path, std::string("corrupt kiln module: no symbol ") + name);
    return p;
  };
  d.version = static_cast<const char*>(need(KILN_SYM_VERSION));
  d.target = static_cast<const char*>(need(KILN_SYM_TARGET));
  d.plan = need(KILN_SYM_PLAN);
  d.plan_size = *static_cast<const uint64_t*>(need(KILN_SYM_PLAN_SIZE));
  d.weights = static_cast<const uint8_t*>(need(KILN_SYM_WEIGHTS));
  d.weights_size = *static_cast<const uint64_t*>(need(KILN_SYM_WEIGHTS_SIZE));
  d.weights_checksum = *static_cast<const uint64_t*>(need(KILN_SYM_WEIGHTS_CHECKSUM));
  m->plan_ = validate_module_data(d, path);
  m->version_ = d.version;
  m->target_ = d.target;
  m->weights_ = d.weights;
  if (d.device) {
    const void* images = need(KILN_SYM_DEVICE_IMAGES);
    uint64_t size = *static_cast<const uint64_t*>(need(KILN_SYM_DEVICE_IMAGES_SIZE));
    m->device_graph_.reset(load_device_graph(m->plan_, images, size, m->weights_, path, &m->device_library_));
    return m;
  }

  for (size_t n = 0; n < m->plan_.nodes.size(); ++n) {
    const GraphNode& node = m->plan_.nodes[n];
    void* fn = sym(node.kernel.c_str());
    if (fn == nullptr)
      fail(ErrorKind::kInvalidModule, path,
           "kernel '" + node.kernel + "' of node " + std::to_string(n) + " '" + node.label + "' is missing");
    m->node_kernels_.push_back(reinterpret_cast<kiln_kernel_fn>(fn));
  }

  // Last: the module is valid, connect its kernels to this runtime's thread pool.
  // Atomic: the same library loaded from two threads at once is one mapping, and both write
  // the slot (the same value) while the first may already run kernels that read it.
  auto* slot = static_cast<void**>(need(KILN_SYM_PARALLEL_FOR_SLOT));
  __atomic_store_n(slot, reinterpret_cast<void*>(&kiln_parallel_for), __ATOMIC_RELEASE);
  return m;
}

LoadedModule::~LoadedModule() {
  device_graph_.reset();
  if (device_library_ != nullptr) dlclose(device_library_);
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace kiln::runtime
