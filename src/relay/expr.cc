#include "kiln/relay/expr.h"

#include <unordered_set>

#include "kiln/relay/op.h"
#include "kiln/support/error.h"

namespace kiln::relay {

const char* kind_name(ExprKind k) {
  switch (k) {
    case ExprKind::Var: return "Var";
    case ExprKind::Constant: return "Constant";
    case ExprKind::Call: return "Call";
    case ExprKind::Tuple: return "Tuple";
    case ExprKind::TupleGetItem: return "TupleGetItem";
  }
  return "?";
}

const TensorTypeNode& Expr::tensor_type() const {
  KILN_CHECK(defined()) << "tensor_type of an undefined expression";
  const auto* t = get()->type.as<TensorTypeNode>();
  KILN_CHECK(t != nullptr) << kind_name(get()->kind) << " of type " << get()->type.str() << " is not a tensor";
  return *t;
}

const std::string& CallNode::op_name() const { return op->name; }

namespace {
// The inputs of the nodes being destroyed on this thread, while an outer destructor drains them.
thread_local std::vector<Expr>* dying = nullptr;

// Destroying a node releases its inputs, whose destructors would release theirs in turn: a
// recursion as deep as the graph, which overflows the stack on a chain of some 200000 nodes
// (issue 11). Instead, a dying node hands its inputs to the outermost such destructor on the
// thread, which releases them one at a time; those that die add their own inputs to its list.
void release_inputs(std::vector<Expr>& inputs) {
  if (dying) {
    for (Expr& e : inputs) dying->push_back(std::move(e));
    return;
  }
  std::vector<Expr> list = std::move(inputs);
  dying = &list;
  while (!list.empty()) {
    Expr last = std::move(list.back());
    list.pop_back();
    last = Expr();  // if this was the last reference, its destructor appends to `list`
  }
  dying = nullptr;
}
}  // namespace

CallNode::~CallNode() { release_inputs(args); }
TupleNode::~TupleNode() { release_inputs(fields); }
TupleGetItemNode::~TupleGetItemNode() {
  std::vector<Expr> input{std::move(tuple)};
  release_inputs(input);
}

Expr make_var(std::string name, Type type) {
  KILN_USER_CHECK(type.as<TensorTypeNode>() != nullptr)
      << "graph input '" << name << "' must have a tensor type, not " << type.str();
  return Expr(std::make_shared<VarNode>(std::move(name), std::move(type)));
}

Expr make_constant(HostTensor value) {
  KILN_CHECK(value.defined()) << "constant without a value";
  return Expr(std::make_shared<ConstantNode>(std::move(value)));
}

const HostTensor* constant_value(const Expr& e) {
  const auto* k = e.as<ConstantNode>();
  return k ? &k->value : nullptr;
}

Expr make_call(const std::string& op, std::vector<Expr> args, Attrs attrs, std::string name) {
  return make_call(get_op(op), std::move(args), std::move(attrs), std::move(name));
}

Expr make_call(const OpDef& op, std::vector<Expr> args, Attrs attrs, std::string name) {
  std::string ctx = op.name + (name.empty() ? "" : " (node '" + name + "')");
  int n = static_cast<int>(args.size());
  std::vector<Type> types;
  std::string type_list;
  for (const Expr& a : args) {
    KILN_CHECK(a.defined()) << ctx << ": undefined argument";
    types.push_back(a.type());
    type_list += (type_list.empty() ? "" : ", ") + a.type().str();
  }
  if (n < op.min_args || (op.max_args >= 0 && n > op.max_args)) {
    std::string want = op.max_args < 0             ? "at least " + std::to_string(op.min_args)
                       : op.min_args == op.max_args ? std::to_string(op.min_args)
                                                    : std::to_string(op.min_args) + " to " + std::to_string(op.max_args);
    KILN_THROW() << ctx << ": takes " << want << " argument(s), got " << n;
  }
  // The relation sees the attrs without context: the wrapper below names op and node once.
  if (!attrs.context().empty()) attrs = attrs.with_context("");
  Type out;
  try {
    out = op.relation(types, attrs);
  } catch (const Error& e) {
    throw Error(ctx + " on (" + type_list + "): " + e.what());
  }
  KILN_CHECK(out.defined()) << ctx << ": type relation returned no type";
  return Expr(std::make_shared<CallNode>(std::move(out), &op, std::move(args), attrs.with_context(ctx), std::move(name)));
}

Expr make_tuple(std::vector<Expr> fields) {
  std::vector<Type> types;
  for (const Expr& f : fields) {
    KILN_CHECK(f.defined()) << "tuple with an undefined field";
    types.push_back(f.type());
  }
  return Expr(std::make_shared<TupleNode>(tuple_type(std::move(types)), std::move(fields)));
}

Expr make_tuple_get_item(Expr tuple, int index) {
  KILN_CHECK(tuple.defined()) << "get-item of an undefined tuple";
  const auto* tt = tuple.type().as<TupleTypeNode>();
  KILN_CHECK(tt != nullptr) << "get-item " << index << " of a non-tuple of type " << tuple.type().str();
  KILN_CHECK(index >= 0 && index < static_cast<int>(tt->fields.size()))
      << "get-item " << index << " of a tuple of " << tt->fields.size() << " fields";
  Type t = tt->fields[index];
  return Expr(std::make_shared<TupleGetItemNode>(std::move(t), std::move(tuple), index));
}

// ---------------------------------------------------------------------------------------------

std::vector<Expr> children(const Expr& e) {
  if (auto* c = e.as<CallNode>()) return c->args;
  if (auto* t = e.as<TupleNode>()) return t->fields;
  if (auto* g = e.as<TupleGetItemNode>()) return {g->tuple};
  return {};
}

std::vector<Expr> post_order(const std::vector<Expr>& roots) {
  std::vector<Expr> order;
  std::unordered_set<const ExprNode*> done;
  struct Frame {
    Expr e;
    std::vector<Expr> kids;
    size_t next = 0;
  };
  std::vector<Frame> stack;
  for (const Expr& r : roots) {
    if (!r.defined() || done.count(r.get())) continue;
    stack.push_back({r, children(r)});
    done.insert(r.get());
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next < f.kids.size()) {
        Expr k = f.kids[f.next++];
        if (k.defined() && done.insert(k.get()).second) stack.push_back({k, children(k)});
        continue;
      }
      order.push_back(f.e);
      stack.pop_back();
    }
  }
  return order;
}

// ---------------------------------------------------------------------------------------------

std::vector<Expr> ExprMutator::mutate(const std::vector<Expr>& es) {
  for (const Expr& e : post_order(es)) {
    if (memo_.count(e.get())) continue;
    Expr out;
    if (auto* v = e.as<VarNode>()) {
      out = rewrite_var(v, e);
    } else if (auto* c = e.as<ConstantNode>()) {
      out = rewrite_constant(c, e);
    } else if (auto* c = e.as<CallNode>()) {
      std::vector<Expr> args;
      for (const Expr& a : c->args) args.push_back(rewritten(a));
      out = rewrite_call(c, e, std::move(args));
    } else if (auto* t = e.as<TupleNode>()) {
      std::vector<Expr> fields;
      for (const Expr& f : t->fields) fields.push_back(rewritten(f));
      out = rewrite_tuple(t, e, std::move(fields));
    } else if (auto* g = e.as<TupleGetItemNode>()) {
      out = rewrite_tuple_get_item(g, e, rewritten(g->tuple));
    }
    KILN_CHECK(out.defined()) << "mutator rewrote a " << kind_name(e.kind()) << " to nothing";
    memo_.emplace(e.get(), std::move(out));
  }
  std::vector<Expr> result;
  for (const Expr& e : es) result.push_back(e.defined() ? rewritten(e) : e);
  return result;
}

Expr ExprMutator::mutate(const Expr& e) { return mutate(std::vector<Expr>{e})[0]; }

const Expr& ExprMutator::rewritten(const Expr& original) const {
  auto it = memo_.find(original.get());
  KILN_CHECK(it != memo_.end()) << "mutator: " << kind_name(original.kind()) << " not visited yet";
  return it->second;
}

namespace {
bool same_nodes(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_as(b[i])) return false;
  return true;
}
}  // namespace

Expr ExprMutator::rewrite_call(const CallNode* op, const Expr& self, std::vector<Expr> args) {
  if (same_nodes(op->args, args)) return self;
  return make_call(*op->op, std::move(args), op->attrs, op->name);
}

Expr ExprMutator::rewrite_tuple(const TupleNode* op, const Expr& self, std::vector<Expr> fields) {
  if (same_nodes(op->fields, fields)) return self;
  return make_tuple(std::move(fields));
}

Expr ExprMutator::rewrite_tuple_get_item(const TupleGetItemNode* op, const Expr& self, Expr tuple) {
  if (op->tuple.same_as(tuple)) return self;
  return make_tuple_get_item(std::move(tuple), op->index);
}

}  // namespace kiln::relay
