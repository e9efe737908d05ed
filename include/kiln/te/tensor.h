// Tensors and operations of the tensor-expression language (te), in the style of TVM's te.
//
// An Operation produces one or more Tensors; a Tensor is a handle (op, value_index). Reading a
// tensor in an expression, `A(i, k)`, builds an ir::ProducerLoad: te::TensorNode implements
// ir::ProducerNode so the loop-level IR can refer to tensors without depending on te.
// Identity matters: two tensors are the same iff they come from the same operation object
// (same_as) and have the same value_index.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/ir/expr.h"
#include "kiln/support/handle.h"

namespace kiln::te {

class Tensor;

enum class OpKind : uint8_t { Placeholder, Compute };

// Common part of every operation: its name and its outputs' shape (all outputs of one
// operation share the shape) and element types.
struct OperationNode {
  const OpKind kind;
  std::string name;
  std::vector<int64_t> shape;
  std::vector<ir::DataType> dtypes;  // one per output
  virtual ~OperationNode() = default;
  int num_outputs() const { return static_cast<int>(dtypes.size()); }

 protected:
  OperationNode(OpKind k, std::string n, std::vector<int64_t> s, std::vector<ir::DataType> t)
      : kind(k), name(std::move(n)), shape(std::move(s)), dtypes(std::move(t)) {}
};

class Operation : public support::Handle<OperationNode> {
 public:
  using Handle::Handle;
  const std::string& name() const { return get()->name; }
  int num_outputs() const { return get()->num_outputs(); }
  Tensor output(int i) const;
  // Tensors this operation reads, in order of first appearance (empty for a placeholder).
  std::vector<Tensor> input_tensors() const;
};

// The producer behind a te tensor. It is the only implementation of ir::ProducerNode in kiln,
// which is what makes Tensor::from_producer's static downcast sound.
struct TensorNode final : ir::ProducerNode {
  Operation op;
  int value_index = 0;
  TensorNode(Operation o, int vi) : op(std::move(o)), value_index(vi) {}
  // The op's name for single-output ops, "<op>.v<i>" for multi-output ones.
  std::string name() const override;
  ir::DataType dtype() const override;
  std::vector<int64_t> shape() const override;
  bool same_as(const ir::ProducerNode& other) const override;
  size_t hash() const override;
};

// An axis handle (data-parallel or reduce) that also reads as its variable in expressions, so
// that `A(i, k)` and `y + ry` work with the axes te::reduce_axis returns.
class IterVar : public ir::IterVar {
 public:
  IterVar() = default;
  explicit IterVar(ir::IterVar iv) : ir::IterVar(std::move(iv)) {}
  operator ir::Expr() const { return var(); }  // NOLINT(google-explicit-constructor)
};

namespace detail {
inline ir::Expr to_index(const ir::Expr& e) { return e; }
inline ir::Expr to_index(const ir::IterVar& iv) { return iv.var(); }
}  // namespace detail

class Tensor {
 public:
  Tensor() = default;
  Tensor(Operation op, int value_index);
  // The tensor behind a ProducerLoad's producer (every producer in kiln is a te tensor).
  static Tensor from_producer(const ir::Producer& p);

  bool defined() const { return node_ != nullptr; }
  const TensorNode* get() const { return node_.get(); }
  const Operation& op() const { return node_->op; }
  int value_index() const { return node_->value_index; }
  std::string name() const { return node_->name(); }
  ir::DataType dtype() const { return node_->dtype(); }
  const std::vector<int64_t>& shape() const { return node_->op->shape; }
  int ndim() const { return static_cast<int>(shape().size()); }
  ir::Producer producer() const { return node_; }
  bool same_as(const Tensor& o) const;

  // Reads the tensor: A(i, j), A(i, k) with k an axis, A(0, j + 1); or A({i, j}). The number
  // of indices must equal ndim() (kiln::Error naming the tensor otherwise).
  template <typename... Idx>
  ir::Expr operator()(const Idx&... idx) const {
    return (*this)(std::vector<ir::Expr>{detail::to_index(idx)...});
  }
  ir::Expr operator()(std::vector<ir::Expr> indices) const;

 private:
  std::shared_ptr<const TensorNode> node_;
};

// Hash and equality for maps keyed by tensor identity (op object, value_index).
struct TensorHash {
  size_t operator()(const Tensor& t) const { return t.get()->hash(); }
};
struct TensorEqual {
  bool operator()(const Tensor& a, const Tensor& b) const { return a.same_as(b); }
};

}  // namespace kiln::te
