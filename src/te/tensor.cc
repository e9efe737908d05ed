#include "kiln/te/tensor.h"

#include <functional>

#include "kiln/ir/functor.h"
#include "kiln/support/error.h"
#include "kiln/te/operation.h"

namespace kiln::te {

Tensor Operation::output(int i) const {
  KILN_CHECK(defined() && i >= 0 && i < num_outputs()) << "output " << i << " of an operation with "
                                                       << (defined() ? num_outputs() : 0) << " outputs";
  return Tensor(*this, i);
}

std::vector<Tensor> Operation::input_tensors() const {
  std::vector<Tensor> out;
  auto* c = as<ComputeOpNode>();
  if (!c) return out;
  for (const ir::Expr& b : c->body) {
    ir::post_order_visit(b, [&](const ir::Expr& e) {
      auto* load = e.as<ir::ProducerLoadNode>();
      if (!load) return;
      Tensor t = Tensor::from_producer(load->producer);
      for (const Tensor& seen : out) {
        if (seen.same_as(t)) return;
      }
      out.push_back(t);
    });
  }
  return out;
}

std::string TensorNode::name() const {
  if (op.num_outputs() == 1) return op.name();
  return op.name() + ".v" + std::to_string(value_index);
}

ir::DataType TensorNode::dtype() const { return op->dtypes[value_index]; }

std::vector<int64_t> TensorNode::shape() const { return op->shape; }

bool TensorNode::same_as(const ir::ProducerNode& other) const {
  // Sound because TensorNode is the only ProducerNode (see the header).
  auto& t = static_cast<const TensorNode&>(other);
  return op.same_as(t.op) && value_index == t.value_index;
}

size_t TensorNode::hash() const {
  return std::hash<const void*>()(op.get()) * 31 + static_cast<size_t>(value_index);
}

Tensor::Tensor(Operation op, int value_index)
    : node_(std::make_shared<const TensorNode>(std::move(op), value_index)) {}

Tensor Tensor::from_producer(const ir::Producer& p) {
  KILN_CHECK(p != nullptr) << "null producer";
  Tensor t;
  t.node_ = std::static_pointer_cast<const TensorNode>(p);
  return t;
}

bool Tensor::same_as(const Tensor& o) const {
  if (!defined() || !o.defined()) return node_ == o.node_;
  return node_->same_as(*o.node_);
}

ir::Expr Tensor::operator()(std::vector<ir::Expr> indices) const {
  KILN_USER_CHECK(defined()) << "indexing an undefined tensor";
  KILN_USER_CHECK(indices.size() == shape().size())
      << "tensor '" << name() << "' has " << shape().size() << " dimensions but is indexed with "
      << indices.size() << " indices";
  for (size_t i = 0; i < indices.size(); ++i) {
    KILN_USER_CHECK(indices[i].defined() && indices[i].dtype().is_integer() && indices[i].dtype().is_scalar())
        << "tensor '" << name() << "': index " << i << " is not a scalar integer expression";
    // Index arithmetic is int32 like the loop variables (an int64_t literal would otherwise
    // make a mixed-type subtraction when lowering offsets the index).
    if (indices[i].dtype() != ir::DataType::i32()) indices[i] = ir::cast(ir::DataType::i32(), indices[i]);
  }
  return ir::producer_load(node_, std::move(indices));
}

}  // namespace kiln::te
