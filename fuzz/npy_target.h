// What fuzz_npy does with one input (shared with tests/unit/test_fuzz_regressions.cc): the .npy
// reader of kiln-runner's --input and of `kiln check --runner` (outputs read back), with the
// invariant kiln-runner relies on when it hands the data to the runtime. npy::Error is the
// wanted rejection; a broken invariant throws std::logic_error.
#pragma once

#include <stdexcept>
#include <string>

#include "npy.h"

namespace kiln::fuzz {

inline void read_npy(const std::string& bytes) {
  npy::Array a = npy::parse(bytes, "fuzz input");
  size_t want = static_cast<size_t>(a.num_elements()) * npy::Array::element_bytes(a.dtype);
  if (a.data.size() != want) throw std::logic_error("npy::parse: data size does not match the shape");
  npy::dtype_name(a.dtype);
}

}  // namespace kiln::fuzz
