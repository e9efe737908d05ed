// The handle of an immutable, shared IR node: a value that copies cheaply (a shared pointer) and
// compares by identity. The loop IR's Expr and Stmt, the graph IR's Expr and Type, and te's
// Operation are handles of their node kinds; each adds what its IR needs (a dtype, a type, a
// name). Nodes carry `kind`, and each node struct a static `matches(kind)` for as<T>().
#pragma once

#include <memory>
#include <utility>

namespace kiln::support {

template <typename Node>
class Handle {
 public:
  Handle() = default;
  explicit Handle(std::shared_ptr<const Node> n) : node_(std::move(n)) {}

  bool defined() const { return node_ != nullptr; }
  const Node* get() const { return node_.get(); }
  const Node* operator->() const { return node_.get(); }
  const std::shared_ptr<const Node>& node() const { return node_; }
  // The same node (not merely an equal one).
  bool same_as(const Handle& o) const { return node_ == o.node_; }

  // Downcast: nullptr unless this node is a T.
  template <typename T>
  const T* as() const {
    return node_ && T::matches(node_->kind) ? static_cast<const T*>(node_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const Node> node_;
};

}  // namespace kiln::support
