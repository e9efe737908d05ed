// kiln run OUT.so|MODEL.onnx --input NAME=FILE ... [--output-dir DIR] [--output-format pb|npy]
// [--target T]: runs a compiled model (an .onnx model is compiled for --target first) on inputs
// from TensorProto (.pb) or NumPy (.npy) files and writes each output as DIR/<output name>.pb or
// .npy. A module for aarch64 on another machine runs in kiln-runner under qemu-aarch64
// (external_runner.h).
#include <filesystem>
#include <iostream>

#include "bind.h"
#include "commands.h"
#include "external_runner.h"
#include "runtime/cpu_features.h"
#include "kiln/support/error.h"
#include "module_file.h"
#include "module_io.h"
#include "tensor_file.h"

namespace kiln::cli {

void add_run(CLI::App& app, int* status) {
  struct Args {
    std::string module, output_dir = ".", target, output_format = "pb";
    std::vector<std::string> inputs;
  };
  auto args = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("run", "run a compiled model on TensorProto (.pb) or NumPy (.npy) inputs");
  c->add_option("module", args->module, "the compiled model (.so), or an .onnx model to compile for --target")
      ->required();
  c->add_option("-i,--input", args->inputs, "NAME=FILE (.pb or .npy), one per model input")->check(name_equals_file());
  c->add_option("--output-dir", args->output_dir, "where to write the <output name>.pb (or .npy) files");
  c->add_option("--output-format", args->output_format, "pb (ONNX TensorProto, the default) or npy (NumPy)");
  c->add_option("--target", args->target, "compile an .onnx model for this target; a .so must have been built for it");
  c->callback([args, status] {
    *status = guarded("run", [&] {
      // Before anything runs: a typo here must not cost a compile.
      TensorFormat format = parse_tensor_format(args->output_format);
      ModuleFile file(args->module, args->target);
      const std::string& module = file.path();
      std::vector<RunnerInput> inputs;
      for (const std::string& spec : args->inputs) {
        auto kv = split_spec(spec);
        KILN_USER_CHECK(kv) << "--input expects NAME=FILE, got '" << spec << "'";
        inputs.push_back({kv->first, load_tensor_file(kv->second), kv->second});
      }
      // A module for another architecture (aarch64 on x86-64) runs in kiln-runner under qemu.
      std::string arch = elf_arch(module);
      if (!arch.empty() && arch != runtime::host_cpu_features().arch) {
        run_with_runner(find_runner(arch), module, inputs, args->output_dir, format);
        return kOk;
      }
      LoadedModel m(module);
      for (const RunnerInput& in : inputs) {
        // The runtime's message names the input and the shapes; this names the file too.
        try {
          m.set_input(in.name, in.value);
        } catch (const Error& e) {
          throw Error("--input " + in.name + "=" + in.source + ": " + e.what());
        }
      }
      m.run();
      std::filesystem::create_directories(args->output_dir);
      for (int i = 0; i < m.num_outputs(); ++i) {
        std::string name = m.output_info(i).name;
        relay::HostTensor out = m.output(i);
        std::string path = save_tensor_file(args->output_dir, name, out, format, "output '" + name + "'");
        std::cout << name << ": " << out.str(8) << " -> " << path << "\n";
      }
      return kOk;
    });
  });
}

}  // namespace kiln::cli
