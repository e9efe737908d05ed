#include "module_file.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "bind.h"
#include "kiln/compiler.h"
#include "kiln/runtime/graph_executor.h"
#include "kiln/support/error.h"
#include "kiln/target/target.h"

namespace kiln::cli {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

ModuleFile::ModuleFile(const std::string& path, const std::string& target_spec) : path_(path) {
  if (ends_with(path, ".onnx")) {
    CompileOptions opts;
    if (!target_spec.empty()) opts.target = Target::parse(target_spec);
    CompiledModel compiled = compile(import_for_compile(path, {}, {}), opts);
    static int serial = 0;
    path_ = (std::filesystem::temp_directory_path() /
             ("kiln_module_" + std::to_string(getpid()) + "_" + std::to_string(serial++) + ".so")).string();
    temporary_ = true;
    export_library(compiled, path_);
    return;
  }
  if (target_spec.empty()) return;
  std::string built_for = runtime::GraphExecutor::load(path).module().target();
  std::string wanted = Target::parse(target_spec).isa();
  KILN_USER_CHECK(Target::isa_of(built_for) == wanted)
      << "'" << path << "' was built for '" << Target::isa_of(built_for) << "', not for --target '" << target_spec
      << "' (give the .onnx model to compile it for that target)";
}

ModuleFile::~ModuleFile() {
  if (temporary_) std::remove(path_.c_str());
}

}  // namespace kiln::cli
