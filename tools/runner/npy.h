// NumPy .npy files (format versions 1.0-3.0): what kiln-runner reads its inputs from and writes
// its outputs to, what `kiln check` exchanges with a runner under emulation, and a tensor file
// format of `kiln run` / `kiln check` / `--bind` (tools/kiln/tensor_file.h). Little-endian,
// C order only; dtypes by their DLPack type. Depends on nothing but the standard library and
// dlpack.h, so it builds with the runtime alone.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::npy {

// A user error about a file (unreadable, malformed, an unsupported dtype or layout); the message
// names the file.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Array {
  DLDataType dtype{kDLFloat, 32, 1};  // bool is {kDLUInt, 1, 1}, one byte per element
  std::vector<int64_t> shape;         // () is a scalar: one element
  std::vector<uint8_t> data;          // C order, little-endian

  int64_t num_elements() const;
  // Bytes of one element (bool: 1).
  static size_t element_bytes(DLDataType t);
};

// The .npy type string of a dtype ("<f4", "|b1"), or "" for one NumPy has no name for (bfloat16,
// vector lanes).
std::string descr_of(DLDataType t);
// A dtype's readable name, as the runtime's messages spell it ("float32", "bool").
std::string dtype_name(DLDataType t);

// Reads `path`; throws npy::Error naming the file and what is wrong with it.
Array read(const std::string& path);
// The same from a file's bytes; `path` only names it in messages.
Array parse(const std::string& bytes, const std::string& path);
// Writes `a` as a version 1.0 file; throws npy::Error naming the file or the dtype.
void write(const std::string& path, const Array& a);

}  // namespace kiln::npy
