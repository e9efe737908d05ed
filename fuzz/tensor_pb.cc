// libFuzzer target: TensorProto bytes through the .pb reader (tensor_pb_target.h).
#include <cstdint>
#include <string>

#include "fuzz_guard.h"
#include "scratch_dir.h"
#include "tensor_pb_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  return kiln::fuzz::guarded([&] { kiln::fuzz::read_tensor_pb(bytes, kiln::fuzz::scratch_dir()); });
}
