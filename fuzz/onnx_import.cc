// libFuzzer target: ONNX model bytes through the importer and the graph passes
// (onnx_import_target.h).
#include <cstdint>
#include <string>

#include "fuzz_guard.h"
#include "onnx_import_target.h"
#include "scratch_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  return kiln::fuzz::guarded([&] { kiln::fuzz::import_through_graph_passes(bytes, kiln::fuzz::scratch_dir()); });
}
