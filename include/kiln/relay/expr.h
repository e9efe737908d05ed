// The graph IR: a typed dataflow graph of operator calls.
//
// One node pattern for every IR level (docs/architecture.md, "IR levels"): nodes are immutable, built by checking make
// functions, held by shared_ptr handles and downcast through a kind enum with `e.as<CallNode>()`.
// A graph is a DAG: a node used twice is one shared node, and every traversal visits it once.
//
// Types are inferred eagerly: make_call runs the op's type relation on the argument types, so
// every node carries its type and an ill-typed call cannot be built (kiln::Error naming the op,
// its source node and the input types). infer_types (transforms.h) re-derives them for a whole
// module.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/relay/attrs.h"
#include "kiln/relay/host_tensor.h"
#include "kiln/relay/type.h"
#include "kiln/support/handle.h"

namespace kiln::relay {

struct OpDef;  // op.h

enum class ExprKind : uint8_t { Var, Constant, Call, Tuple, TupleGetItem };
const char* kind_name(ExprKind k);

struct ExprNode {
  const ExprKind kind;
  const Type type;  // always defined: TensorType or TupleType
  virtual ~ExprNode() = default;

 protected:
  ExprNode(ExprKind k, Type t) : kind(k), type(std::move(t)) {}
};

class Expr : public support::Handle<ExprNode> {
 public:
  using Handle::Handle;
  ExprKind kind() const { return get()->kind; }
  const Type& type() const { return get()->type; }
  // The tensor type of a tensor-valued node; KILN_CHECK fails on a tuple.
  const TensorTypeNode& tensor_type() const;
};

// A graph input. Identity matters: two Vars with the same name are different inputs.
struct VarNode : ExprNode {
  std::string name;
  VarNode(std::string n, Type t) : ExprNode(ExprKind::Var, std::move(t)), name(std::move(n)) {}
  static bool matches(ExprKind k) { return k == ExprKind::Var; }
};

// A tensor known at compile time: weights, folded shapes, scalars.
struct ConstantNode : ExprNode {
  HostTensor value;
  explicit ConstantNode(HostTensor v) : ExprNode(ExprKind::Constant, v.type()), value(std::move(v)) {}
  static bool matches(ExprKind k) { return k == ExprKind::Constant; }
};

// op(args..., attrs). `name` is where the call came from (the ONNX node name), for messages.
struct CallNode : ExprNode {
  const OpDef* op;
  std::vector<Expr> args;
  Attrs attrs;
  std::string name;
  CallNode(Type t, const OpDef* o, std::vector<Expr> a, Attrs at, std::string n)
      : ExprNode(ExprKind::Call, std::move(t)), op(o), args(std::move(a)), attrs(std::move(at)), name(std::move(n)) {}
  ~CallNode() override;  // iterative: see release_inputs in expr.cc
  static bool matches(ExprKind k) { return k == ExprKind::Call; }
  const std::string& op_name() const;
};

struct TupleNode : ExprNode {
  std::vector<Expr> fields;
  TupleNode(Type t, std::vector<Expr> f) : ExprNode(ExprKind::Tuple, std::move(t)), fields(std::move(f)) {}
  ~TupleNode() override;
  static bool matches(ExprKind k) { return k == ExprKind::Tuple; }
};

struct TupleGetItemNode : ExprNode {
  Expr tuple;
  int index;
  TupleGetItemNode(Type t, Expr tup, int i) : ExprNode(ExprKind::TupleGetItem, std::move(t)), tuple(std::move(tup)), index(i) {}
  ~TupleGetItemNode() override;
  static bool matches(ExprKind k) { return k == ExprKind::TupleGetItem; }
};

// ---------------------------------------------------------------------------------------------
// Checking constructors.

// `type` must be a TensorType.
Expr make_var(std::string name, Type type);
Expr make_constant(HostTensor value);
// The value of a Constant node; nullptr for any other expression (graph passes matching patterns).
const HostTensor* constant_value(const Expr& e);
// Looks the op up (kiln::Error on an unknown name), checks the argument count and runs its type
// relation; errors read "nn.conv2d (node 'Conv_0') on (float32[1,3,8,8], float32[4,2,3,3]): ...".
Expr make_call(const std::string& op, std::vector<Expr> args, Attrs attrs = {}, std::string name = "");
Expr make_call(const OpDef& op, std::vector<Expr> args, Attrs attrs = {}, std::string name = "");
Expr make_tuple(std::vector<Expr> fields);
// `tuple` must have a TupleType with more than `index` fields.
Expr make_tuple_get_item(Expr tuple, int index);

// ---------------------------------------------------------------------------------------------
// Traversal.

// Every node reachable from `roots`, each once, children before parents; ties broken by
// argument order, so the order is deterministic. Iterative: deep graphs do not overflow.
std::vector<Expr> post_order(const std::vector<Expr>& roots);

// The direct inputs of a node (call args, tuple fields, the tuple of a get-item).
std::vector<Expr> children(const Expr& e);

// Rebuilds a graph bottom-up, each node once, so shared nodes stay shared. The default rewrite
// of a node rebuilds it only when one of its inputs changed (types re-inferred); otherwise the
// very same node is returned. Override rewrite_* to replace nodes.
class ExprMutator {
 public:
  virtual ~ExprMutator() = default;
  Expr mutate(const Expr& e);
  std::vector<Expr> mutate(const std::vector<Expr>& es);

 protected:
  // `self` is the original node; `args`/`fields`/`tuple` are its already rewritten inputs.
  virtual Expr rewrite_var(const VarNode*, const Expr& self) { return self; }
  virtual Expr rewrite_constant(const ConstantNode*, const Expr& self) { return self; }
  virtual Expr rewrite_call(const CallNode* op, const Expr& self, std::vector<Expr> args);
  virtual Expr rewrite_tuple(const TupleNode* op, const Expr& self, std::vector<Expr> fields);
  virtual Expr rewrite_tuple_get_item(const TupleGetItemNode* op, const Expr& self, Expr tuple);

  // The rewritten form of a node already visited (KILN_CHECK that it was).
  const Expr& rewritten(const Expr& original) const;

 private:
  std::unordered_map<const ExprNode*, Expr> memo_;
};

}  // namespace kiln::relay
