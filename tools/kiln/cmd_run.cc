// kiln run OUT.so|MODEL.onnx --input NAME=FILE.pb ... [--output-dir DIR] [--target T]: runs a
// compiled model (an .onnx model is compiled for --target first) on TensorProto inputs and
// writes each output as DIR/<output name>.pb. A module for aarch64 on another machine runs in
// kiln-runner under qemu-aarch64 (external_runner.h).
#include <filesystem>
#include <iostream>

#include "bind.h"
#include "commands.h"
#include "external_runner.h"
#include "kiln/runtime/cpu_features.h"
#include "kiln/relay/frontend/onnx.h"
#include "kiln/support/error.h"
#include "module_file.h"
#include "module_io.h"

namespace kiln::cli {

void add_run(CLI::App& app, int* status) {
  struct Args {
    std::string module, output_dir = ".", target;
    std::vector<std::string> inputs;
  };
  auto args = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("run", "run a compiled model on TensorProto (.pb) inputs");
  c->add_option("module", args->module, "the compiled model (.so), or an .onnx model to compile for --target")
      ->required();
  c->add_option("-i,--input", args->inputs, "NAME=FILE.pb, one per model input")->check(name_equals_file());
  c->add_option("--output-dir", args->output_dir, "where to write <output name>.pb files");
  c->add_option("--target", args->target, "compile an .onnx model for this target; a .so must have been built for it");
  c->callback([args, status] {
    *status = guarded("run", [&] {
      ModuleFile file(args->module, args->target);
      const std::string& module = file.path();
      // A module for another architecture (aarch64 on x86-64) runs in kiln-runner under qemu.
      std::string arch = elf_arch(module);
      if (!arch.empty() && arch != runtime::host_cpu_features().arch) {
        std::vector<RunnerInput> inputs;
        for (const std::string& spec : args->inputs) {
          auto kv = split_spec(spec);
          KILN_USER_CHECK(kv) << "--input expects NAME=FILE.pb, got '" << spec << "'";
          inputs.push_back({kv->first, relay::load_tensor_pb(kv->second).value, kv->second});
        }
        run_with_runner(find_runner(arch), module, inputs, args->output_dir);
        return kOk;
      }
      LoadedModel m(module);
      for (const std::string& spec : args->inputs) {
        auto kv = split_spec(spec);
        KILN_USER_CHECK(kv) << "--input expects NAME=FILE.pb, got '" << spec << "'";
        m.set_input(kv->first, relay::load_tensor_pb(kv->second).value);
      }
      m.run();
      std::filesystem::create_directories(args->output_dir);
      for (int i = 0; i < m.num_outputs(); ++i) {
        std::string name = m.output_info(i).name;
        std::string path = (std::filesystem::path(args->output_dir) / (name + ".pb")).string();
        relay::HostTensor out = m.output(i);
        relay::save_tensor_pb(path, out, name);
        std::cout << name << ": " << out.str(8) << " -> " << path << "\n";
      }
      return kOk;
    });
  });
}

}  // namespace kiln::cli
