// The compiled module `kiln run` and `kiln bench` work on: a .so as given, or an .onnx model
// compiled for --target into a temporary .so first (so `kiln bench model.onnx --target
// "llvm -mcpu=x86-64-v3"` times AVX2 code without a separate compile step).
#pragma once

#include <string>

namespace kiln::cli {

class ModuleFile {
 public:
  // `path`: a .so, or an .onnx model (compiled for `target_spec`, "" meaning this CPU). With a
  // .so, a non-empty `target_spec` must name the instruction set it was built for (kiln::Error
  // naming both otherwise).
  ModuleFile(const std::string& path, const std::string& target_spec);
  ~ModuleFile();
  ModuleFile(const ModuleFile&) = delete;
  ModuleFile& operator=(const ModuleFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool temporary_ = false;
};

}  // namespace kiln::cli
