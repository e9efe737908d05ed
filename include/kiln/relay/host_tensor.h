// HostTensor: a dense, row-major tensor in host memory, owned by the graph IR (constants,
// tensor attributes, test data). Immutable once built; copies share the bytes.
//
// The runtime's NDArray is a separate type on purpose: the compiler keeps weights as plain
// bytes here and only the artifact writer hands them to the runtime format.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kiln/relay/type.h"

namespace kiln::relay {

class HostTensor {
 public:
  HostTensor() = default;
  // Copies `nbytes` = numel * dtype.bytes() bytes from `data` (may be null for an empty tensor).
  HostTensor(DataType dtype, Shape shape, const void* data);
  // Takes ownership of `bytes`; its size must be numel * dtype.bytes().
  HostTensor(DataType dtype, Shape shape, std::vector<uint8_t> bytes);

  static HostTensor zeros(DataType dtype, Shape shape);
  // Values converted to dtype (float -> int truncates toward zero, bool is v != 0).
  static HostTensor from_doubles(DataType dtype, Shape shape, const std::vector<double>& values);
  static HostTensor from_int64s(DataType dtype, Shape shape, const std::vector<int64_t>& values);
  static HostTensor scalar(DataType dtype, double value) { return from_doubles(dtype, {}, {value}); }

  bool defined() const { return bytes_ != nullptr; }
  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const;
  size_t nbytes() const { return bytes_ ? bytes_->size() : 0; }
  const uint8_t* data() const { return bytes_ ? bytes_->data() : nullptr; }
  template <typename T>
  const T* data_as() const {
    return reinterpret_cast<const T*>(data());
  }
  Type type() const { return tensor_type(dtype_, shape_); }

  // All elements converted to int64 (integers, bool; floats truncate) or to double (any dtype;
  // float16 / bfloat16 decoded). Used by the constant evaluator and for shape-like inputs.
  std::vector<int64_t> to_int64s() const;
  std::vector<double> to_doubles() const;
  // Element i, converted.
  int64_t int64_at(int64_t i) const;
  double double_at(int64_t i) const;

  // Same bytes, another shape of equal element count.
  HostTensor reshaped(Shape shape) const;
  // Same dtype, shape and bytes.
  bool bitwise_equal(const HostTensor& o) const;
  size_t hash() const;
  // "float32[2,3]{1, 2, 3, 4, 5, 6}": values for small tensors (at most `max_values`), else
  // just the type.
  std::string str(int64_t max_values = 16) const;

 private:
  DataType dtype_;
  Shape shape_;
  std::shared_ptr<const std::vector<uint8_t>> bytes_;
};

// IEEE half and bfloat16 conversions (round to nearest even), used for float16 data.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bfloat16_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);

}  // namespace kiln::relay
