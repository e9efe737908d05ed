#include "tensor_file.h"

#include <filesystem>
#include <fstream>

#include "kiln/relay/frontend/onnx.h"
#include "kiln/support/error.h"
#include "module_io.h"

namespace kiln::cli {
namespace {

bool has_npy_magic(const std::string& path) {
  char magic[6] = {};
  std::ifstream in(path, std::ios::binary);
  // An unreadable file is left to the TensorProto reader, whose message names it.
  return in.read(magic, sizeof magic) && std::string(magic, sizeof magic) == "\x93NUMPY";
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

TensorFormat parse_tensor_format(const std::string& name) {
  if (name == "npy") return TensorFormat::kNpy;
  KILN_USER_CHECK(name == "pb") << "--output-format '" << name << "': expected pb or npy";
  return TensorFormat::kPb;
}

const char* extension_of(TensorFormat f) { return f == TensorFormat::kNpy ? ".npy" : ".pb"; }

relay::HostTensor load_tensor_file(const std::string& path) {
  if (ends_with(path, ".npy") || has_npy_magic(path)) return from_npy(npy::read(path));
  return relay::load_tensor_pb(path).value;
}

std::string save_tensor_file(const std::string& dir, const std::string& name, const relay::HostTensor& value,
                             TensorFormat format, const std::string& what) {
  std::string path = (std::filesystem::path(dir) / (name + extension_of(format))).string();
  if (format == TensorFormat::kNpy)
    npy::write(path, to_npy(value, what));
  else
    relay::save_tensor_pb(path, value, name);
  return path;
}

npy::Array to_npy(const relay::HostTensor& t, const std::string& what) {
  npy::Array a;
  a.dtype = to_dl(t.dtype());
  KILN_USER_CHECK(!npy::descr_of(a.dtype).empty())
      << what << " is " << t.dtype().str() << ", which a .npy file cannot hold (NumPy has no such dtype)";
  a.shape.assign(t.shape().begin(), t.shape().end());
  a.data.assign(t.data(), t.data() + t.nbytes());
  return a;
}

relay::HostTensor from_npy(npy::Array a) {
  relay::Shape shape(a.shape.begin(), a.shape.end());
  return relay::HostTensor(from_dl(a.dtype), shape, std::move(a.data));
}

}  // namespace kiln::cli
