// NDArray: a small owning tensor over DLPack's DLTensor, for the runtime and for tests.
//
// Memory is 64-byte aligned (generated kernels assume it: code generation marks parameter
// pointers `align 64`), row-major and compact (strides == nullptr). Copies of an NDArray share
// the same storage, like a shared_ptr; use copy() for a deep copy.
//
// Element types are DLPack's DLDataType. DLPack 0.6 has no bool code: kiln stores bool as one
// byte and describes it as {kDLUInt, 1, 1} (dtype_bool()).
#pragma once

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kiln/support/error.h"

namespace kiln::runtime {

constexpr size_t kAllocAlignment = 64;

constexpr DLDataType make_dtype(uint8_t code, uint8_t bits, uint16_t lanes = 1) {
  return DLDataType{code, bits, lanes};
}
constexpr DLDataType dtype_f32() { return make_dtype(kDLFloat, 32); }
constexpr DLDataType dtype_f64() { return make_dtype(kDLFloat, 64); }
constexpr DLDataType dtype_f16() { return make_dtype(kDLFloat, 16); }
constexpr DLDataType dtype_bf16() { return make_dtype(kDLBfloat, 16); }
constexpr DLDataType dtype_i8() { return make_dtype(kDLInt, 8); }
constexpr DLDataType dtype_i32() { return make_dtype(kDLInt, 32); }
constexpr DLDataType dtype_i64() { return make_dtype(kDLInt, 64); }
constexpr DLDataType dtype_u8() { return make_dtype(kDLUInt, 8); }
constexpr DLDataType dtype_bool() { return make_dtype(kDLUInt, 1); }

inline bool operator==(const DLDataType& a, const DLDataType& b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
inline bool operator!=(const DLDataType& a, const DLDataType& b) { return !(a == b); }

// Bytes of one element (a bool or any sub-byte type takes a whole byte per lane).
inline size_t dtype_bytes(DLDataType t) { return static_cast<size_t>((t.bits + 7) / 8) * t.lanes; }
// "float32", "int8", "bfloat16", "bool", "float32x4".
std::string dtype_str(DLDataType t);
// "[2, 3, 4]"
std::string shape_str(const int64_t* shape, int ndim);

class NDArray {
 public:
  NDArray() = default;

  // Uninitialized CPU tensor; throws kiln::Error on a negative extent.
  static NDArray empty(const std::vector<int64_t>& shape, DLDataType dtype);
  // Zero-filled CPU tensor.
  static NDArray zeros(const std::vector<int64_t>& shape, DLDataType dtype);
  // CPU tensor filled with a copy of `values`; numel must equal values.size() and T must have
  // the element size of `dtype`.
  template <typename T>
  static NDArray from_vector(const std::vector<int64_t>& shape, DLDataType dtype, const std::vector<T>& values) {
    NDArray a = empty(shape, dtype);
    KILN_USER_CHECK(static_cast<int64_t>(values.size()) == a.numel())
        << "NDArray::from_vector: " << values.size() << " values for shape " << shape_str(shape.data(), static_cast<int>(shape.size()));
    a.copy_from_bytes(values.data(), values.size() * sizeof(T));
    return a;
  }

  bool defined() const { return c_ != nullptr; }
  // The DLTensor view, valid while any copy of this NDArray lives.
  DLTensor* dltensor() { return &c_->tensor; }
  const DLTensor* dltensor() const { return &c_->tensor; }

  int ndim() const { return c_->tensor.ndim; }
  const std::vector<int64_t>& shape() const { return c_->shape; }
  DLDataType dtype() const { return c_->tensor.dtype; }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_bytes(dtype()); }
  void* raw_data() { return c_->tensor.data; }
  const void* raw_data() const { return c_->tensor.data; }

  // Typed element pointer; throws kiln::Error if sizeof(T) is not the element size.
  template <typename T>
  T* data() {
    check_element_size(sizeof(T));
    return static_cast<T*>(c_->tensor.data);
  }
  template <typename T>
  const T* data() const {
    check_element_size(sizeof(T));
    return static_cast<const T*>(c_->tensor.data);
  }
  template <typename T>
  std::vector<T> to_vector() const {
    const T* p = data<T>();
    return std::vector<T>(p, p + numel());
  }

  // Copies exactly nbytes() bytes in or out; throws kiln::Error if n differs.
  void copy_from_bytes(const void* src, size_t n);
  void copy_to_bytes(void* dst, size_t n) const;
  // Copies another tensor of the same shape and dtype into this one.
  void copy_from(const NDArray& other);
  // Deep copy.
  NDArray copy() const;

 private:
  struct Container {
    DLTensor tensor{};
    std::vector<int64_t> shape;
    ~Container();
  };
  void check_element_size(size_t bytes) const;
  std::shared_ptr<Container> c_;
};

}  // namespace kiln::runtime
