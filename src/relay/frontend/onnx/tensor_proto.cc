// TensorProto reading and writing: initializers, Constant values, and the .pb test data files.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/relay/error.h"
#include "kiln/relay/frontend/onnx.h"
#include "kiln/support/error.h"
#include "onnx_proto.h"

namespace kiln::relay::onnx_frontend {

std::string onnx_dtype_name(int code) {
  static const char* names[] = {"UNDEFINED", "FLOAT",     "UINT8",       "INT8",         "UINT16",
                                "INT16",     "INT32",     "INT64",       "STRING",       "BOOL",
                                "FLOAT16",   "DOUBLE",    "UINT32",      "UINT64",       "COMPLEX64",
                                "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                "FLOAT8E5M2FNUZ", "UINT4", "INT4",       "FLOAT4E2M1",   "FLOAT8E8M0",
                                "UINT2",     "INT2"};
  if (code >= 0 && code < static_cast<int>(sizeof(names) / sizeof(names[0]))) return names[code];
  return "type " + std::to_string(code);
}

DataType dtype_from_onnx(int code, const std::string& what) {
  using TP = ::onnx::TensorProto;
  switch (code) {
    case TP::FLOAT: return DataType::f32();
    case TP::DOUBLE: return DataType::f64();
    case TP::FLOAT16: return DataType::f16();
    case TP::BFLOAT16: return DataType::bf16();
    case TP::INT8: return DataType::i8();
    case TP::INT16: return DataType::i16();
    case TP::INT32: return DataType::i32();
    case TP::INT64: return DataType::i64();
    case TP::UINT8: return DataType::u8();
    case TP::UINT16: return DataType::u16();
    case TP::UINT32: return DataType::u32();
    case TP::UINT64: return DataType::u64();
    case TP::BOOL: return DataType::boolean();
    default: break;
  }
  KILN_SUPPORTED(false) << what << " has element type " << onnx_dtype_name(code) << ", which kiln does not support";
  return {};
}

int dtype_to_onnx(DataType t) {
  using TP = ::onnx::TensorProto;
  if (t == DataType::f32()) return TP::FLOAT;
  if (t == DataType::f64()) return TP::DOUBLE;
  if (t == DataType::f16()) return TP::FLOAT16;
  if (t == DataType::bf16()) return TP::BFLOAT16;
  if (t == DataType::i8()) return TP::INT8;
  if (t == DataType::i16()) return TP::INT16;
  if (t == DataType::i32()) return TP::INT32;
  if (t == DataType::i64()) return TP::INT64;
  if (t == DataType::u8()) return TP::UINT8;
  if (t == DataType::u16()) return TP::UINT16;
  if (t == DataType::u32()) return TP::UINT32;
  if (t == DataType::u64()) return TP::UINT64;
  if (t == DataType::boolean()) return TP::BOOL;
  KILN_THROW() << "no ONNX element type for " << t.str();
  return 0;
}

namespace {

// An external_data number (offset, length): decimal digits only, within int64.
int64_t external_number(const ::onnx::TensorProto& t, const std::string& key, const std::string& text) {
  bool digits = !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
  KILN_USER_CHECK(digits) << "tensor '" << t.name() << "': external data " << key << " '" << text
                          << "' is not a byte count";
  return std::stoll(text);
}

// The file an external_data location names, which must lie inside the model's folder once
// symlinks and ".." are resolved: a downloaded model must not read /etc/passwd or ~/.ssh through
// "../../", an absolute path or a symlink planted beside it (as ONNX's own checker refuses). It
// must be a regular file, so that a FIFO or a device cannot hang or flood the reader.
std::string external_path(const ::onnx::TensorProto& t, const std::string& location, const std::string& model_dir) {
  namespace fs = std::filesystem;
  const std::string what = "tensor '" + t.name() + "'";
  KILN_USER_CHECK(!location.empty()) << what << " has external data without a location";
  KILN_USER_CHECK(location.find('\0') == std::string::npos) << what << ": external data location has a NUL byte";
  KILN_USER_CHECK(fs::path(location).is_relative())
      << what << ": external data location '" << location
      << "' is an absolute path; it must be relative to the model's folder";
  std::string path = model_dir.empty() ? location : model_dir + "/" + location;
  std::error_code ec;
  fs::path real = fs::canonical(path, ec);
  KILN_USER_CHECK(!ec) << "cannot open external data file '" << path << "' of " << what;
  fs::path folder = fs::canonical(model_dir.empty() ? "." : model_dir, ec);
  KILN_USER_CHECK(!ec) << "cannot open the model's folder '" << model_dir << "' for the external data of " << what;
  auto inside = std::mismatch(folder.begin(), folder.end(), real.begin(), real.end()).first == folder.end();
  KILN_USER_CHECK(inside)
      << what << ": external data location '" << location << "' resolves to '" << real.string()
      << "', outside the model's folder '" << folder.string() << "'";
  KILN_USER_CHECK(fs::is_regular_file(real, ec)) << what << ": external data file '" << path << "' is not a regular file";
  return real.string();
}

std::string read_external(const ::onnx::TensorProto& t, const std::string& model_dir, int64_t nbytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") location = kv.value();
    if (kv.key() == "offset") offset = external_number(t, "offset", kv.value());
    if (kv.key() == "length") length = external_number(t, "length", kv.value());
  }
  const std::string shown = model_dir.empty() ? location : model_dir + "/" + location;
  std::string path = external_path(t, location, model_dir);
  // Sizes are checked against the file before anything is allocated: a tiny file must not make
  // kiln allocate what a hostile shape declares.
  KILN_USER_CHECK(length < 0 || length == nbytes)
      << "tensor '" << t.name() << "': external data length " << length << " bytes, its type needs " << nbytes;
  std::error_code ec;
  auto size = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  KILN_USER_CHECK(!ec && offset <= size && nbytes <= size - offset)
      << "external data file '" << shown << "' is too short for tensor '" << t.name() << "' (" << nbytes
      << " bytes at offset " << offset << ")";
  std::ifstream in(path, std::ios::binary);
  KILN_USER_CHECK(in.good()) << "cannot open external data file '" << shown << "' of tensor '" << t.name() << "'";
  std::string bytes(static_cast<size_t>(nbytes), '\0');
  in.seekg(offset);
  in.read(bytes.data(), static_cast<std::streamsize>(nbytes));
  KILN_USER_CHECK(in.gcount() == nbytes)
      << "external data file '" << shown << "' is too short for tensor '" << t.name() << "'";
  return bytes;
}

}  // namespace

HostTensor tensor_from_proto(const ::onnx::TensorProto& t, const std::string& model_dir) {
  using TP = ::onnx::TensorProto;
  std::string what = "tensor '" + t.name() + "'";
  KILN_SUPPORTED(!t.has_segment()) << what << " is segmented, which kiln does not support";
  DataType dtype = dtype_from_onnx(t.data_type(), what);
  Shape shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape) KILN_USER_CHECK(d >= 0) << what << " has a negative dim in " << shape_str(shape);
  int64_t n = num_elements(shape), nbytes = 0;
  try {
    nbytes = checked_tensor_bytes(dtype, shape);
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }

  if (t.data_location() == TP::EXTERNAL) {
    std::string raw = read_external(t, model_dir, nbytes);
    return HostTensor(dtype, shape, raw.data());
  }
  if (t.has_raw_data()) {
    // raw_data is little-endian, as is every host kiln targets.
    KILN_USER_CHECK(static_cast<int64_t>(t.raw_data().size()) == nbytes) << what << " raw_data holds " << t.raw_data().size()
                                                    << " bytes, its type " << dtype.str() << shape_str(shape)
                                                    << " needs " << nbytes;
    return HostTensor(dtype, shape, t.raw_data().data());
  }
  // Typed fields: which one holds the values depends on the element type (onnx.proto).
  auto check_count = [&](int64_t have) {
    KILN_USER_CHECK(have == n) << what << " has " << have << " values for shape " << shape_str(shape);
  };
  switch (t.data_type()) {
    case TP::FLOAT: {
      check_count(t.float_data_size());
      return HostTensor(dtype, shape, t.float_data().data());
    }
    case TP::DOUBLE: {
      check_count(t.double_data_size());
      return HostTensor(dtype, shape, t.double_data().data());
    }
    case TP::INT64: {
      check_count(t.int64_data_size());
      return HostTensor(dtype, shape, t.int64_data().data());
    }
    case TP::UINT32:
    case TP::UINT64: {
      check_count(t.uint64_data_size());
      std::vector<int64_t> v(t.uint64_data().begin(), t.uint64_data().end());
      return HostTensor::from_int64s(dtype, shape, v);
    }
    case TP::FLOAT16:
    case TP::BFLOAT16: {
      // 16-bit floats travel as their bit patterns in int32_data.
      check_count(t.int32_data_size());
      std::vector<uint16_t> bits(t.int32_data().begin(), t.int32_data().end());
      return HostTensor(dtype, shape, bits.data());
    }
    default: {  // INT32, INT16, INT8, UINT16, UINT8, BOOL: int32_data
      check_count(t.int32_data_size());
      std::vector<int64_t> v(t.int32_data().begin(), t.int32_data().end());
      return HostTensor::from_int64s(dtype, shape, v);
    }
  }
}

}  // namespace kiln::relay::onnx_frontend

namespace kiln::relay {

NamedTensor parse_tensor_pb(const std::string& bytes, const std::string& origin, const std::string& dir) {
  ::onnx::TensorProto proto;
  // Protobuf parses many byte strings; a TensorProto without an element type is not one.
  KILN_USER_CHECK(proto.ParseFromString(bytes) && proto.data_type() != 0)
      << origin << " is not a serialized ONNX TensorProto";
  try {
    return {proto.name(), onnx_frontend::tensor_from_proto(proto, dir)};
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(origin + ": " + e.what());
  } catch (const Error& e) {
    throw Error(origin + ": " + e.what());
  }
}

NamedTensor load_tensor_pb(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_USER_CHECK(in.good()) << "cannot open tensor file '" << path << "'";
  std::stringstream ss;
  ss << in.rdbuf();
  // External data of a .pb lives beside it, as an initializer's beside its model.
  size_t slash = path.find_last_of('/');
  return parse_tensor_pb(ss.str(), "'" + path + "'", slash == std::string::npos ? "" : path.substr(0, slash));
}

void save_tensor_pb(const std::string& path, const HostTensor& value, const std::string& name) {
  KILN_CHECK(value.defined()) << "save_tensor_pb of an empty HostTensor";
  ::onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(onnx_frontend::dtype_to_onnx(value.dtype()));
  for (int64_t d : value.shape()) proto.add_dims(d);
  proto.set_raw_data(std::string(reinterpret_cast<const char*>(value.data()), value.nbytes()));
  std::ofstream out(path, std::ios::binary);
  KILN_USER_CHECK(out.good()) << "cannot write tensor file '" << path << "'";
  KILN_USER_CHECK(proto.SerializeToOstream(&out)) << "writing tensor file '" << path << "' failed";
}

}  // namespace kiln::relay
