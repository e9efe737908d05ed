// Types of the graph IR: a tensor with a static shape, or a tuple of types.
//
// kiln compiles static shapes only: every dimension is a known int64 (0 is allowed, for empty
// tensors). Types are immutable nodes behind shared_ptr handles, downcast with as<T>() like the
// loop-level IR (include/kiln/ir/expr.h); equality is structural.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/ir/dtype.h"
#include "kiln/support/handle.h"

namespace kiln::relay {

using ir::DataType;
using Shape = std::vector<int64_t>;

enum class TypeKind : uint8_t { Tensor, Tuple };

struct TypeNode {
  const TypeKind kind;
  virtual ~TypeNode() = default;

 protected:
  explicit TypeNode(TypeKind k) : kind(k) {}
};

class Type : public support::Handle<TypeNode> {
 public:
  using Handle::Handle;
  TypeKind kind() const { return get()->kind; }
  // Structural equality; an undefined type equals only an undefined type.
  bool operator==(const Type& o) const;
  bool operator!=(const Type& o) const { return !(*this == o); }
  // "float32[1,3,224,224]", "int64[]" (a scalar), "(float32[2], int64[])".
  std::string str() const;
};

struct TensorTypeNode : TypeNode {
  DataType dtype;
  Shape shape;
  TensorTypeNode(DataType t, Shape s) : TypeNode(TypeKind::Tensor), dtype(t), shape(std::move(s)) {}
  static bool matches(TypeKind k) { return k == TypeKind::Tensor; }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t num_elements() const;
};

struct TupleTypeNode : TypeNode {
  std::vector<Type> fields;
  explicit TupleTypeNode(std::vector<Type> f) : TypeNode(TypeKind::Tuple), fields(std::move(f)) {}
  static bool matches(TypeKind k) { return k == TypeKind::Tuple; }
};

// The most bytes one tensor may have: 256 GiB. A model that declares more (an input, an
// initializer, or an op whose inferred output is that big, e.g. Expand to 1e6 x 1e6) is refused
// with an error naming it, before anything is allocated or an overflowing size computed from it.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 38;
// The bytes of a dtype x shape; kiln::Error when more than kMaxTensorBytes (or a dim < 0).
int64_t checked_tensor_bytes(DataType dtype, const Shape& shape);

// Checking constructors: scalar dtypes only (no vector lanes, no handle), dims >= 0, at most
// kMaxTensorBytes.
Type tensor_type(DataType dtype, Shape shape);
Type tuple_type(std::vector<Type> fields);

// "[1,3,224,224]"
std::string shape_str(const Shape& shape);
// Product of the dims (1 for a scalar).
int64_t num_elements(const Shape& shape);

}  // namespace kiln::relay
