// kiln compile MODEL.onnx -o OUT.so [--target T] [--dump-ir STAGE] [--dump-dot STAGE FILE ...]
//              [--dot-profile PROFILE.json] [--tuning-log LOG] [--bind NAME=FILE] [--input-shape NAME=D0,D1,...]
//              [--save-device-code DIR]
#include <filesystem>
#include <iostream>

#include "bind.h"
#include "commands.h"
#include "graph_choice_flags.h"
#include "graph_pictures.h"
#include "kiln/autotune/apply_log.h"
#include "kiln/compiler.h"
#include "kiln/relay/frontend/onnx.h"

namespace kiln::cli {
namespace {

// What the pictures call the model: its file's stem, or its folder's name for the test-case
// layout's model.onnx ("tiny_cnn").
std::string model_title(const std::string& model) {
  std::filesystem::path p = std::filesystem::absolute(model).lexically_normal();
  return p.stem() == "model" && p.has_parent_path() ? p.parent_path().filename().string() : p.stem().string();
}

}  // namespace

void add_compile(CLI::App& app, int* status) {
  struct Args {
    std::string model, out, target = "llvm", dump_ir, tuning_log, device_code;
    std::vector<std::string> bind, input_shapes;
    std::vector<std::pair<std::string, std::string>> dump_dot;
    std::string dot_profile;
    GraphChoiceFlags graph;
    bool no_int8 = false;
    std::string precision = "fp32";
  };
  auto args = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("compile", "compile an ONNX model into one deployable .so");
  c->add_option("model", args->model, "the .onnx model")->required();
  c->add_option("-o,--output", args->out, "the shared library to write")->required();
  c->add_option("--target", args->target, "code generation target (llvm: this CPU; llvm -mcpu=... -mattr=...)");
  c->add_option("--dump-ir", args->dump_ir,
                "print the IR after this stage of the pipeline (`kiln stages` lists them) or after each ('all') to stderr");
  c->add_option("--dump-dot", args->dump_dot,
                "STAGE FILE: write the graph after graph pass STAGE as Graphviz DOT (fuse_ops: kernels as clusters); "
                "repeatable");
  c->add_option("--dot-profile", args->dot_profile,
                "PROFILE.json (kiln bench --profile-json): add each kernel's share of the time to the fuse_ops picture");
  c->add_option("--tuning-log", args->tuning_log, "apply the best schedules of this autotuning log");
  c->add_option("--bind", args->bind, "NAME=FILE (.pb or .npy): graph input NAME becomes this constant (static shapes)")
      ->check(name_equals_file());
  add_input_shape_option(c, &args->input_shapes, /*batch_range=*/true);
  c->add_option("--save-device-code", args->device_code,
                "DIR: cuda/opencl targets: write each kernel's CUDA C or OpenCL C (and PTX) into DIR");
  args->graph.add(c, "compute every conv directly (no Winograd F(2x2,3x3) for 3x3 stride-1 convs)");
  c->add_flag("--no-int8", args->no_int8, "compute quantized models' convs and dense layers in float on dequantized values, not as int8 kernels");
  c->add_option("--precision", args->precision, "fp32, or fp16: activations and weights stored in float16, sums in float32 (inputs and outputs stay float32)");
  c->callback([args, status] {
    *status = guarded("compile", [&] {
      // Before the import: a wrong stage name or profile must not wait for a big model.
      GraphPictures pictures(args->dump_dot, args->dot_profile, model_title(args->model));
      BatchRange batch;
      relay::Module m = import_for_compile(args->model, args->bind, args->input_shapes, &batch);
      CompileOptions opts;
      opts.batch_min = batch.min;
      opts.batch_max = batch.max;
      if (!args->dump_dot.empty()) opts.on_graph = std::ref(pictures);
      opts.target = Target::parse(args->target);
      opts.dump_ir_stage = args->dump_ir;
      args->graph.apply(&opts);
      opts.int8_kernels = !args->no_int8;
      opts.float16 = parse_precision(args->precision);
      std::optional<autotune::AppliedTuningLog> log;
      if (!args->tuning_log.empty()) {
        log.emplace(args->tuning_log, m, &opts, args->graph.given());
        for (const std::string& note : log->notes()) std::cerr << "note: " << note << "\n";
      }
      KILN_USER_CHECK(args->device_code.empty() || opts.target.is_gpu())
          << "--save-device-code needs a cuda or opencl target (this one is '" << args->target << "')";
      CompiledModel compiled = compile(m, opts);
      pictures.check_all_written();
      for (const std::string& note : compiled.notes) std::cerr << "note: " << note << "\n";
      if (!args->device_code.empty()) {
        std::vector<std::string> files = codegen::write_device_code(*compiled.device, args->device_code);
        std::cerr << "note: wrote " << files.size() << " files of device code into " << args->device_code << "\n";
      }
      export_library(compiled, args->out);
      std::cout << "compiled " << args->model << " -> " << args->out << " (" << compiled.kernels.size()
                << " kernels, " << compiled.weights.size() << " bytes of weights)\n";
      return kOk;
    });
  });
}

void add_stages(CLI::App& app, int* status) {
  CLI::App* c = app.add_subcommand("stages", "print the compiler's pipeline: every stage, its unit, when it runs, what it does");
  c->callback([status] {
    std::cout << pipeline_markdown();
    *status = kOk;
  });
}

}  // namespace kiln::cli
