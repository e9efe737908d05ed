#include "external_runner.h"

#include <elf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "kiln/relay/frontend/onnx.h"
#include "runtime/cpu_features.h"
#include "kiln/support/error.h"
#include "support/subprocess.h"
#include "module_io.h"
#include "tensor_file.h"


namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

// Debian's cross toolchain keeps the aarch64 C library here (libc6-arm64-cross); qemu-aarch64 -L
// makes it the emulated program's root for its dynamic loader and libraries.
const char kAarch64Sysroot[] = "/usr/aarch64-linux-gnu";

bool is_exec(const std::string& p) { return access(p.c_str(), X_OK) == 0 && !fs::is_directory(p); }

std::string search_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return is_exec(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && is_exec(dir + "/" + name)) return dir + "/" + name;
  return "";
}

// The directory of the running kiln executable (build/bin in a build tree).
fs::path self_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  KILN_CHECK(n > 0) << "cannot read /proc/self/exe: " << std::strerror(errno);
  return fs::path(std::string(buf, static_cast<size_t>(n))).parent_path();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Runs argv with stdout and stderr into files; returns "" on exit status 0, else what went wrong
// with the program's stderr.
std::string spawn_wait(const std::vector<std::string>& argv, const std::string& out_path, const std::string& err_path) {
  support::ProgramOutcome run = support::run_program(argv, out_path, err_path);
  if (!run.start_error.empty()) return run.start_error;
  if (run.ok()) return "";
  const int status = run.status;
  std::string output = support::read_log(err_path);
  while (!output.empty() && output.back() == '\n') output.pop_back();
  return (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                            : "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                                  strsignal(WTERMSIG(status)) + ")") +
         (output.empty() ? std::string() : ": " + output);
}

// A scratch directory, removed with its contents.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/kiln_runner_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    KILN_USER_CHECK(mkdtemp(buf.data()) != nullptr)
        << "cannot create a temporary directory from '" << tmpl << "': " << std::strerror(errno);
    path = buf.data();
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// kiln-runner reads and writes .npy files only; the message says so when a dtype has none.
void write_npy(const std::string& path, const std::string& input, const relay::HostTensor& t) {
  npy::write(path, to_npy(t, "input '" + input + "' (kiln-runner reads .npy)"));
}

void check_runner_arch(const std::string& runner, const std::string& arch) {
  std::string runner_arch = elf_arch(runner);
  KILN_USER_CHECK(runner_arch == arch) << "'" << runner << "' is "
                                       << (runner_arch.empty() ? "not an ELF program" : "a program for " + runner_arch)
                                       << ", not a kiln-runner for " << arch;
}

std::vector<std::string> runner_argv(const RunnerCommand& cmd, const std::string& module) {
  std::vector<std::string> argv = cmd.emulator;
  argv.push_back(cmd.runner);
  argv.push_back(module);
  return argv;
}

}  // namespace

std::string triple_arch(const std::string& triple) {
  std::string arch = triple.substr(0, triple.find('-'));
  if (arch == "arm64") return "aarch64";
  if (arch == "amd64") return "x86_64";
  return arch;
}

bool is_foreign(const Target& target) {
  // A GPU module is a library for this machine (the device images ride in it).
  if (target.is_gpu()) return false;
  return triple_arch(target.triple) != runtime::host_cpu_features().arch;
}

std::string elf_arch(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr eh{};
  if (!in.read(reinterpret_cast<char*>(&eh), sizeof(eh)) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return "";
  switch (eh.e_machine) {
    case EM_X86_64: return "x86_64";
    case EM_AARCH64: return "aarch64";
    case EM_386: return "i386";
    case EM_RISCV: return "riscv64";
    default: return "ELF machine " + std::to_string(eh.e_machine);
  }
}

RunnerCommand find_runner(const std::string& arch, const std::string& runner) {
  const std::string host = runtime::host_cpu_features().arch;
  RunnerCommand cmd;
  if (arch == host) {
    cmd.runner = runner.empty() ? (self_dir() / "kiln-runner").string() : runner;
    cmd.description = "kiln-runner";
    KILN_USER_CHECK(is_exec(cmd.runner))
        << "no kiln-runner at '" << cmd.runner
        << "' (it is built with kiln: cmake --build build --target kiln_runner; or give one with --runner)";
    check_runner_arch(cmd.runner, arch);
  } else if (arch == "aarch64") {
    const char* env = std::getenv("KILN_QEMU");
    bool from_env = env != nullptr && *env != '\0';
    std::string qemu = search_path(from_env ? env : "qemu-aarch64");
    KILN_USER_CHECK(!qemu.empty())
        << (from_env ? "the emulator '" + std::string(env) + "' named by KILN_QEMU was not found or is not executable"
                     : "qemu-aarch64 is not in PATH: it runs aarch64 modules on this " + host +
                           " machine (Debian package qemu-user; or name an emulator in KILN_QEMU)");
    cmd.runner = runner.empty() ? (self_dir() / ".." / "aarch64" / "bin" / "kiln-runner").lexically_normal().string()
                                : runner;
    cmd.description = "kiln-runner under qemu-aarch64";
    KILN_USER_CHECK(is_exec(cmd.runner))
        << "no aarch64 kiln-runner at '" << cmd.runner
        << "': kiln's default build cross-builds it (with the aarch64 runtime) when aarch64-linux-gnu-g++ is found at "
           "configure time (Debian package g++-aarch64-linux-gnu; then reconfigure and build: "
           "cmake -S . -B build && cmake --build build), or give one with --runner";
    check_runner_arch(cmd.runner, arch);
    KILN_USER_CHECK(fs::exists(fs::path(kAarch64Sysroot) / "lib" / "ld-linux-aarch64.so.1"))
        << "no aarch64 C library in " << kAarch64Sysroot
        << " for qemu-aarch64 to run kiln-runner with (Debian package libc6-arm64-cross)";
    cmd.emulator = {qemu, "-L", kAarch64Sysroot};
  } else {
    KILN_THROW() << "kiln runs modules for this machine (" << host << ") and, under qemu-aarch64, for aarch64; not for "
                 << arch;
  }
  return cmd;
}

RunnerModule::RunnerModule(RunnerCommand cmd, std::string module_path, std::vector<std::string> input_names,
                           std::vector<std::string> output_names)
    : cmd_(std::move(cmd)),
      module_(std::move(module_path)),
      input_names_(std::move(input_names)),
      output_names_(std::move(output_names)) {
  ScratchDir d;
  dir_ = d.path;
  d.path.clear();  // kept until this module is destroyed
}

RunnerModule::~RunnerModule() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void RunnerModule::set_input(const std::string& name, const relay::HostTensor& value) {
  std::string file = dir_ + "/input_" + std::to_string(input_files_.size()) + ".npy";
  if (input_files_.count(name)) file = input_files_[name];
  write_npy(file, name, value);
  input_files_[name] = file;
}

void RunnerModule::run() {
  std::vector<std::string> argv = runner_argv(cmd_, module_);
  for (const auto& [name, file] : input_files_) argv.insert(argv.end(), {"--input", name + "=" + file});
  std::string out_dir = dir_ + "/out";
  std::error_code ec;
  fs::remove_all(out_dir, ec);
  argv.insert(argv.end(), {"--output-dir", out_dir});
  std::string failure = spawn_wait(argv, dir_ + "/stdout.txt", dir_ + "/stderr.txt");
  KILN_USER_CHECK(failure.empty()) << cmd_.description << " failed on '" << module_ << "': " << failure;
  outputs_.clear();
  for (const std::string& name : output_names_) {
    std::string file = out_dir + "/" + name + ".npy";
    KILN_USER_CHECK(fs::exists(file)) << cmd_.description << " wrote no output '" << name << "' (" << file << ")";
    outputs_.push_back(from_npy(npy::read(file)));
  }
}

relay::HostTensor RunnerModule::output(int i) const {
  KILN_CHECK(i >= 0 && i < static_cast<int>(outputs_.size())) << "output " << i << " of " << outputs_.size();
  return outputs_[static_cast<size_t>(i)];
}

void run_with_runner(const RunnerCommand& cmd, const std::string& module, const std::vector<RunnerInput>& inputs,
                     const std::string& output_dir, TensorFormat format) {
  ScratchDir dir;
  std::vector<std::string> argv = runner_argv(cmd, module);
  std::vector<std::pair<std::string, std::string>> renames;  // scratch file -> the user's
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string file = dir.path + "/input_" + std::to_string(i) + ".npy";
    write_npy(file, inputs[i].name, inputs[i].value);
    argv.insert(argv.end(), {"--input", inputs[i].name + "=" + file});
    renames.emplace_back(file, inputs[i].source);
  }
  std::string out_dir = dir.path + "/out";
  argv.insert(argv.end(), {"--output-dir", out_dir});
  std::string failure = spawn_wait(argv, dir.path + "/stdout.txt", dir.path + "/stderr.txt");
  for (const auto& [scratch, source] : renames)
    for (size_t at = failure.find(scratch); at != std::string::npos; at = failure.find(scratch, at + source.size()))
      failure.replace(at, scratch.size(), source);
  KILN_USER_CHECK(failure.empty()) << cmd.description << " failed on '" << module << "': " << failure;
  // The runner prints "NAME: TYPE -> OUT_DIR/NAME.npy" per output, in the module's order.
  std::istringstream lines(read_text(dir.path + "/stdout.txt"));
  std::string marker = " -> " + out_dir + "/";
  fs::create_directories(output_dir);
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.rfind(marker);
    if (at == std::string::npos || line.size() < at + marker.size() + 4) continue;
    std::string name = line.substr(at + marker.size(), line.size() - at - marker.size() - 4);
    relay::HostTensor out = from_npy(npy::read(out_dir + "/" + name + ".npy"));
    std::string path = save_tensor_file(output_dir, name, out, format, "output '" + name + "'");
    std::cout << name << ": " << out.str(8) << " -> " << path << "\n";
  }
}

}  // namespace kiln::cli
