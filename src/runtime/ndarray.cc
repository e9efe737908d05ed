// NDArray: owning, 64-byte aligned, compact CPU tensors over DLTensor.
#include "kiln/runtime/ndarray.h"

#include <cstdlib>

namespace kiln::runtime {

std::string dtype_str(DLDataType t) {
  std::string s;
  if (t.code == kDLUInt && t.bits == 1) {
    s = "bool";
  } else {
    switch (t.code) {
      case kDLInt: s = "int"; break;
      case kDLUInt: s = "uint"; break;
      case kDLFloat: s = "float"; break;
      case kDLBfloat: s = "bfloat"; break;
      default: s = "code" + std::to_string(t.code) + "_"; break;
    }
    s += std::to_string(t.bits);
  }
  if (t.lanes != 1) s += "x" + std::to_string(t.lanes);
  return s;
}

std::string shape_str(const int64_t* shape, int ndim) {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {
// Messages are built with std::string, not the streams of KILN_USER_CHECK: the runtime's size
// budget (issue 11).
[[noreturn]] void fail(const std::string& message) { throw Error(message); }
std::string describe(const NDArray& a) { return dtype_str(a.dtype()) + " " + shape_str(a.shape().data(), a.ndim()); }
}  // namespace

NDArray::Container::~Container() { std::free(tensor.data); }

NDArray NDArray::empty(const std::vector<int64_t>& shape, DLDataType dtype) {
  int64_t n = 1;
  for (int64_t e : shape) {
    if (e < 0) fail("NDArray::empty: negative extent in shape " + shape_str(shape.data(), static_cast<int>(shape.size())));
    n *= e;
  }
  if (dtype.lanes < 1 || dtype.bits < 1) fail("NDArray::empty: invalid dtype " + dtype_str(dtype));
  NDArray a;
  a.c_ = std::make_shared<Container>();
  a.c_->shape = shape;
  size_t bytes = static_cast<size_t>(n) * dtype_bytes(dtype);
  void* p = nullptr;
  // posix_memalign with size 0 may return nullptr; allocate at least one aligned block so
  // data pointers are always valid and aligned.
  if (posix_memalign(&p, kAllocAlignment, bytes == 0 ? kAllocAlignment : bytes) != 0 || p == nullptr) {
    fail("NDArray::empty: cannot allocate " + std::to_string(bytes) + " bytes");
  }
  DLTensor& t = a.c_->tensor;
  t.data = p;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = static_cast<int>(shape.size());
  t.dtype = dtype;
  t.shape = a.c_->shape.data();
  t.strides = nullptr;
  t.byte_offset = 0;
  return a;
}

NDArray NDArray::zeros(const std::vector<int64_t>& shape, DLDataType dtype) {
  NDArray a = empty(shape, dtype);
  std::memset(a.raw_data(), 0, a.nbytes());
  return a;
}

int64_t NDArray::numel() const {
  int64_t n = 1;
  for (int64_t e : c_->shape) n *= e;
  return n;
}

void NDArray::check_element_size(size_t bytes) const {
  if (!defined()) fail("NDArray: access to an undefined array");
  if (bytes != dtype_bytes(dtype()))
    fail("NDArray: element type of " + std::to_string(bytes) + " bytes does not match dtype " + dtype_str(dtype()));
}

void NDArray::copy_from_bytes(const void* src, size_t n) {
  if (n != nbytes())
    fail("NDArray::copy_from_bytes: " + std::to_string(n) + " bytes into an array of " + std::to_string(nbytes()) +
         " bytes (" + describe(*this) + ")");
  if (n) std::memcpy(raw_data(), src, n);
}

void NDArray::copy_to_bytes(void* dst, size_t n) const {
  if (n != nbytes())
    fail("NDArray::copy_to_bytes: " + std::to_string(n) + " bytes from an array of " + std::to_string(nbytes()) +
         " bytes (" + describe(*this) + ")");
  if (n) std::memcpy(dst, raw_data(), n);
}

void NDArray::copy_from(const NDArray& other) {
  if (!other.defined() || !defined()) fail("NDArray::copy_from: undefined array");
  if (other.dtype() != dtype() || other.shape() != shape())
    fail("NDArray::copy_from: source " + describe(other) + " does not match destination " + describe(*this));
  if (nbytes()) std::memcpy(raw_data(), other.raw_data(), nbytes());
}

NDArray NDArray::copy() const {
  NDArray a = empty(shape(), dtype());
  a.copy_from(*this);
  return a;
}

}  // namespace kiln::runtime
