// The caller's DLPack tensors at the device layer (device_internal.h): the checks that turn a
// tensor on the wrong device, of the wrong dtype or shape, or in a buffer that cannot hold it into
// a message naming it, before a driver sees it (a driver answers with an error code at best, and
// reads or writes past a buffer at worst).
#include "device_internal.h"

namespace kiln::runtime::device {
namespace {

std::string device_name(DLDevice d) {
  const char* kind = d.device_type == kDLCPU       ? "CPU"
                     : d.device_type == kDLCUDA    ? "CUDA"
                     : d.device_type == kDLOpenCL  ? "OpenCL"
                     : d.device_type == kDLCUDAHost ? "CUDA host memory"
                                                   : nullptr;
  return (kind ? std::string(kind) : "device type " + std::to_string(d.device_type)) + " device " +
         std::to_string(d.device_id);
}

// "float32", "int64", "bool8" (DLPack's own codes; kiln's plans write bool as uint1).
std::string dtype_name(DLDataType t) {
  static const char* codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  std::string s = t.code < 7 ? codes[t.code] : "code" + std::to_string(t.code);
  s += std::to_string(t.bits);
  return t.lanes == 1 ? s : s + "x" + std::to_string(t.lanes);
}

std::string shape_text(const int64_t* shape, int ndim) {
  std::string s = "[";
  for (int d = 0; d < ndim; ++d) s += (d ? "," : "") + std::to_string(shape[d]);
  return s + "]";
}

// A caller's tensor may describe a bool as DLPack >= 0.8 does (kDLBool = 6, 8 bits), as the
// runtime accepts it in host memory.
bool dtype_matches(DLDataType want, DLDataType got) {
  if (want.code == got.code && want.bits == got.bits && want.lanes == got.lanes) return true;
  return want.code == kDLUInt && want.bits == 1 && want.lanes == 1 && got.code == 6 && got.bits == 8 && got.lanes == 1;
}

}  // namespace

bool is_host(const DLTensor& t) { return t.device.device_type == kDLCPU || t.device.device_type == kDLCUDAHost; }

size_t check_tensor(const std::string& what, const DLTensor& t, DLDataType dtype, const int64_t* shape, int ndim,
                    DLDevice device, DeviceAPI& dev) {
  const bool host = is_host(t);
  KILN_USER_CHECK(host || (t.device.device_type == device.device_type && t.device.device_id == device.device_id))
      << what << ": the tensor is on " << device_name(t.device) << ", the module runs on " << device_name(device);
  KILN_USER_CHECK(dtype_matches(dtype, t.dtype))
      << what << ": expected dtype " << dtype_name(dtype) << ", got " << dtype_name(t.dtype);
  bool same = t.ndim == ndim && (ndim == 0 || t.shape != nullptr);
  for (int d = 0; same && d < ndim; ++d) same = t.shape[d] == shape[d];
  KILN_USER_CHECK(same) << what << ": expected shape " << shape_text(shape, ndim) << ", got "
                        << (t.ndim > 0 && t.shape == nullptr ? "a null shape" : shape_text(t.shape, t.ndim));
  // Strides count elements; extents of 1 may have any.
  int64_t elements = 1;
  bool compact = true;
  for (int d = ndim - 1; d >= 0; --d) {
    if (t.strides && shape[d] != 1 && t.strides[d] != elements) compact = false;
    elements *= shape[d];
  }
  const size_t bytes = static_cast<size_t>(elements) * ((dtype.bits * dtype.lanes + 7) / 8);
  KILN_USER_CHECK(compact) << what << ": the tensor must be compact (strides NULL or dense)";
  KILN_USER_CHECK(t.data != nullptr || bytes == 0) << what << ": the tensor's data is null";
  if (!host && bytes > 0) {
    std::string problem = dev.buffer_problem(t.data, t.byte_offset + bytes);
    KILN_USER_CHECK(problem.empty()) << what << ": " << problem;
  }
  return bytes;
}

void copy_tensor(const DLTensor& from, const DLTensor& to, DLDevice device, DeviceAPI& dev) {
  KILN_USER_CHECK(!is_host(from) || !is_host(to))
      << "both tensors are in host memory: kiln_module_device_copy copies to or from the device";
  KILN_USER_CHECK(from.ndim >= 0 && (from.ndim == 0 || from.shape != nullptr)) << "from: the tensor's shape is null";
  const size_t bytes = check_tensor("from", from, from.dtype, from.shape, from.ndim, device, dev);
  check_tensor("to", to, from.dtype, from.shape, from.ndim, device, dev);
  if (is_host(from)) {
    dev.copy_to_device(to.data, static_cast<const char*>(from.data) + from.byte_offset, bytes, to.byte_offset);
  } else if (is_host(to)) {
    dev.copy_to_host(static_cast<char*>(to.data) + to.byte_offset, from.data, bytes, from.byte_offset);
  } else {
    dev.copy_device_to_device(to.data, from.data, bytes, to.byte_offset, from.byte_offset);
    dev.synchronize();
  }
}

}  // namespace kiln::runtime::device
