// Running a compiled module in another process through kiln-runner (tools/runner): for a module
// built for aarch64 on another machine, under qemu-aarch64 (user-mode emulation); on this
// machine when `kiln check --runner` asks for it. Inputs and outputs travel as .npy files in a
// scratch directory.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/target/target.h"
#include "kiln/relay/host_tensor.h"
#include "tensor_file.h"

namespace kiln::cli {

// How to start a kiln-runner: the emulator and its arguments (empty on this machine), then the
// runner.
struct RunnerCommand {
  std::vector<std::string> emulator;
  std::string runner;
  std::string description;  // "kiln-runner under qemu-aarch64", for messages
};

// The architecture of a triple as the runtime names it ("aarch64", "x86_64").
std::string triple_arch(const std::string& triple);
// True when modules for `target` cannot run in this process (another architecture).
bool is_foreign(const Target& target);

// The runner for modules of architecture `arch`: `runner` if not empty (--runner), else for
// this machine's architecture <kiln's dir>/kiln-runner, and for aarch64 elsewhere
// <kiln's dir>/../aarch64/bin/kiln-runner under qemu-aarch64 -L /usr/aarch64-linux-gnu ($KILN_QEMU
// names another emulator). Throws kiln::Error naming the missing piece and how to get it.
RunnerCommand find_runner(const std::string& arch, const std::string& runner = "");

// The architecture an ELF file is for ("aarch64", "x86_64", "" when it is not ELF or unknown).
std::string elf_arch(const std::string& path);

// A module loaded by a runner process, with LoadedModel's interface where `kiln check` uses it:
// inputs are written as .npy files when set, run() starts the runner, outputs are read back.
class RunnerModule {
 public:
  RunnerModule(RunnerCommand cmd, std::string module_path, std::vector<std::string> input_names,
               std::vector<std::string> output_names);
  ~RunnerModule();
  RunnerModule(const RunnerModule&) = delete;
  RunnerModule& operator=(const RunnerModule&) = delete;

  int num_inputs() const { return static_cast<int>(input_names_.size()); }
  int num_outputs() const { return static_cast<int>(output_names_.size()); }
  void set_input(const std::string& name, const relay::HostTensor& value);
  void run();
  relay::HostTensor output(int i) const;

 private:
  RunnerCommand cmd_;
  std::string module_, dir_;
  std::vector<std::string> input_names_, output_names_;
  std::map<std::string, std::string> input_files_;
  std::vector<relay::HostTensor> outputs_;
};

// `kiln run` of a module for another architecture: runs it under the runner with the inputs
// (name, value, file), writes each output as output_dir/<name>.pb or .npy (`format`) and prints a
// line for each, as `kiln run` does in process.
struct RunnerInput {
  std::string name;
  relay::HostTensor value;
  std::string source;  // the file the user named, for messages in place of the scratch .npy
};
void run_with_runner(const RunnerCommand& cmd, const std::string& module, const std::vector<RunnerInput>& inputs,
                     const std::string& output_dir, TensorFormat format);

}  // namespace kiln::cli
