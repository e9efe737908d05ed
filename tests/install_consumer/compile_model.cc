// compile_model.cc: compiles an ONNX model into a module through kiln's C++ API, as
// `kiln compile` does with default options.
//
//   kiln_compile_model MODEL.onnx OUT.so [TARGET]     (TARGET: "llvm" by default, e.g. "opencl")
#include <iostream>

#include "kiln/compiler.h"
#include "kiln/relay/frontend/onnx.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::cerr << "usage: kiln_compile_model MODEL.onnx OUT.so [TARGET]\n";
    return 2;
  }
  try {
    kiln::CompileOptions options;
    options.target = kiln::Target::parse(argc == 4 ? argv[3] : "llvm");
    kiln::CompiledModel compiled = kiln::compile(kiln::relay::from_onnx(argv[1]), options);
    kiln::export_library(compiled, argv[2]);
    std::cout << "compiled " << argv[1] << " -> " << argv[2] << " (" << compiled.kernels.size() << " kernels)\n";
    return 0;
  } catch (const std::exception& e) {  // kiln::Error (bad input) or kiln::InternalError
    std::cerr << "kiln_compile_model: " << e.what() << "\n";
    return 1;
  }
}
