// What fuzz_tensor_pb does with one input (shared with tests/unit/test_fuzz_regressions.cc): the
// .pb TensorProto reader of `kiln run --input`, `kiln compile --bind` and `kiln check` (a test
// data set's input_N.pb and output_N.pb), and what they do with the value.
#pragma once

#include <string>

#include "kiln/relay/frontend/onnx.h"

namespace kiln::fuzz {

inline void read_tensor_pb(const std::string& bytes, const std::string& dir) {
  relay::NamedTensor t = relay::parse_tensor_pb(bytes, "fuzz input", dir);
  t.value.to_doubles();  // kiln check compares every element of an expected output
  t.value.str();
}

}  // namespace kiln::fuzz
