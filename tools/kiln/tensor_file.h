// The tensor files the CLI reads and writes: ONNX TensorProto (.pb, the test-data layout) and
// NumPy .npy (what Python users have at hand, and what kiln-runner exchanges). One reader for
// both, so `kiln run --input`, `--bind` and `kiln check`'s data sets accept either.
#pragma once

#include <string>

#include "kiln/relay/host_tensor.h"
#include "npy.h"

namespace kiln::cli {

enum class TensorFormat { kPb, kNpy };

// "pb" or "npy" (--output-format); kiln::Error naming anything else.
TensorFormat parse_tensor_format(const std::string& name);
// The file extension of a format, with its dot.
const char* extension_of(TensorFormat f);

// A tensor file's value: .npy when the name ends in .npy or the file starts with NumPy's magic
// (\x93NUMPY), else a TensorProto. Errors name the file (npy::Error or kiln::Error).
relay::HostTensor load_tensor_file(const std::string& path);
// Writes `value` as DIR/<name>.pb or DIR/<name>.npy and returns the path; `what` ("output 'y'")
// names the tensor when the format cannot hold its dtype (.npy has no bfloat16).
std::string save_tensor_file(const std::string& dir, const std::string& name, const relay::HostTensor& value,
                             TensorFormat format, const std::string& what);

// Conversions between host tensors and .npy arrays (the bytes are the same: C order, little-endian).
npy::Array to_npy(const relay::HostTensor& t, const std::string& what);
relay::HostTensor from_npy(npy::Array a);

}  // namespace kiln::cli
