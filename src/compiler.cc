// The compiler's front door (compiler.h): option parsing and packaging. compile() and
// fuse_model() run the pipeline's table, in pipeline.cc.
#include "kiln/compiler.h"

#include "codegen/export_library.h"
#include "kiln/support/error.h"

namespace kiln {

bool parse_precision(const std::string& name) {
  KILN_USER_CHECK(name == "fp32" || name == "fp16") << "--precision '" << name << "': expected fp32 or fp16";
  return name == "fp16";
}

CompileOptions::Layout parse_layout(const std::string& name) {
  if (name == "auto") return CompileOptions::Layout::kAuto;
  if (name == "nchw") return CompileOptions::Layout::kNCHW;
  KILN_USER_CHECK(name == "blocked") << "--layout '" << name << "': expected auto, nchw or blocked";
  return CompileOptions::Layout::kBlocked;
}

lower::StrategyOptions CompileOptions::strategy_options() const {
  lower::StrategyOptions o;
  o.winograd = winograd;
  return o;
}

void export_library(const CompiledModel& model, const std::string& path) {
  if (model.device) {
    codegen::export_device_library(model.plan, *model.device, model.weights, path);
    return;
  }
  KILN_USER_CHECK(model.cpu.defined()) << "export_library: the model's kernels were not compiled (no machine code)";
  codegen::export_library(model.plan, model.cpu, model.weights, path);
}

}  // namespace kiln
