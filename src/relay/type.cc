#include "kiln/relay/type.h"

#include <cstdint>

#include "kiln/support/error.h"

namespace kiln::relay {

int64_t num_elements(const Shape& shape) {
  // Saturates at INT64_MAX instead of overflowing (undefined behaviour): a hostile or broken
  // model may declare dims whose product no int64 holds (an ONNX node-suite model's 105 x
  // 1840022140283712000); an allocation of that size then fails with its own error.
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d == 0) return 0;
    int64_t product;
    if (__builtin_mul_overflow(n, d, &product)) product = (n < 0) != (d < 0) ? INT64_MIN : INT64_MAX;
    n = product;
  }
  return n;
}

int64_t TensorTypeNode::num_elements() const { return relay::num_elements(shape); }

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t checked_tensor_bytes(DataType dtype, const Shape& shape) {
  for (int64_t d : shape) KILN_USER_CHECK(d >= 0) << "negative dimension in shape " << shape_str(shape);
  int64_t n = num_elements(shape), bytes = 0;
  // Saturated counts (num_elements) and products past the limit both land here.
  bool too_big = __builtin_mul_overflow(n, int64_t{dtype.bytes()}, &bytes) || bytes > kMaxTensorBytes;
  KILN_USER_CHECK(!too_big) << "tensor " << dtype.str() << shape_str(shape) << " has "
                            << (n == INT64_MAX ? std::string("more than 2^63") : std::to_string(n))
                            << " elements, more bytes than the 256 GiB kiln allows for one tensor";
  return bytes;
}

Type tensor_type(DataType dtype, Shape shape) {
  KILN_USER_CHECK(dtype.is_scalar() && !dtype.is_handle())
      << "a tensor element type must be a scalar data type, not " << dtype.str();
  checked_tensor_bytes(dtype, shape);
  return Type(std::make_shared<TensorTypeNode>(dtype, std::move(shape)));
}

Type tuple_type(std::vector<Type> fields) {
  for (const Type& f : fields) KILN_CHECK(f.defined()) << "tuple type with an undefined field";
  return Type(std::make_shared<TupleTypeNode>(std::move(fields)));
}

bool Type::operator==(const Type& o) const {
  if (same_as(o)) return true;
  if (!defined() || !o.defined() || get()->kind != o->kind) return false;
  if (auto* a = as<TensorTypeNode>()) {
    auto* b = o.as<TensorTypeNode>();
    return a->dtype == b->dtype && a->shape == b->shape;
  }
  auto* a = as<TupleTypeNode>();
  auto* b = o.as<TupleTypeNode>();
  return a->fields == b->fields;
}

std::string Type::str() const {
  if (!defined()) return "<untyped>";
  if (auto* t = as<TensorTypeNode>()) return t->dtype.str() + shape_str(t->shape);
  auto* t = as<TupleTypeNode>();
  std::string s = "(";
  for (size_t i = 0; i < t->fields.size(); ++i) s += (i ? ", " : "") + t->fields[i].str();
  return s + ")";
}

}  // namespace kiln::relay
