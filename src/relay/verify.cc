#include "kiln/relay/verify.h"

#include <set>
#include <unordered_set>

#include "kiln/relay/op.h"
#include "kiln/support/error.h"

namespace kiln::relay {

namespace {
std::string describe(const Expr& e) {
  if (auto* c = e.as<CallNode>()) return "call " + c->op_name() + (c->name.empty() ? "" : " (node '" + c->name + "')");
  if (auto* v = e.as<VarNode>()) return "var %" + v->name;
  return kind_name(e.kind());
}
}  // namespace

void verify(const Module& m) {
  KILN_CHECK(m.body.defined()) << "verify: module has no body";
  std::unordered_set<const ExprNode*> params;
  std::set<std::string> names;
  for (const Expr& p : m.params) {
    const auto* v = p.as<VarNode>();
    KILN_CHECK(v != nullptr) << "verify: a param is a " << (p.defined() ? kind_name(p.kind()) : "null") << ", not a Var";
    KILN_CHECK(!v->name.empty()) << "verify: a param has no name";
    KILN_CHECK(names.insert(v->name).second) << "verify: two params are named '" << v->name << "'";
    KILN_CHECK(params.insert(p.get()).second) << "verify: param %" << v->name << " listed twice";
    KILN_CHECK(p.type().as<TensorTypeNode>() != nullptr) << "verify: param %" << v->name << " is not a tensor";
  }
  for (const Expr& e : post_order({m.body})) {
    KILN_CHECK(e.type().defined()) << "verify: " << describe(e) << " has no type";
    if (auto* v = e.as<VarNode>()) {
      KILN_CHECK(params.count(e.get())) << "verify: %" << v->name << " is read but is not a param of the module";
    } else if (auto* c = e.as<ConstantNode>()) {
      const auto* t = e.type().as<TensorTypeNode>();
      KILN_CHECK(t && c->value.defined() &&
                 static_cast<int64_t>(c->value.nbytes()) == t->num_elements() * t->dtype.bytes())
          << "verify: constant of type " << e.type().str() << " holds " << c->value.nbytes() << " bytes";
    } else if (auto* c = e.as<CallNode>()) {
      KILN_CHECK(c->op != nullptr && find_op(c->op->name) == c->op) << "verify: " << describe(e) << " has an unregistered op";
      int n = static_cast<int>(c->args.size());
      KILN_CHECK(n >= c->op->min_args && (c->op->max_args < 0 || n <= c->op->max_args))
          << "verify: " << describe(e) << " has " << n << " arguments";
      std::vector<Type> types;
      for (const Expr& a : c->args) types.push_back(a.type());
      Type derived;
      try {
        derived = c->op->relation(types, c->attrs.with_context(""));
      } catch (const Error& err) {
        KILN_CHECK(false) << "verify: " << describe(e) << " does not type-check: " << err.what();
      }
      KILN_CHECK(derived == e.type()) << "verify: " << describe(e) << " has type " << e.type().str() << " but its op derives "
                                      << derived.str();
    } else if (auto* t = e.as<TupleNode>()) {
      std::vector<Type> types;
      for (const Expr& f : t->fields) types.push_back(f.type());
      KILN_CHECK(tuple_type(types) == e.type()) << "verify: tuple type " << e.type().str() << " does not match its fields";
    } else if (auto* g = e.as<TupleGetItemNode>()) {
      const auto* tt = g->tuple.type().as<TupleTypeNode>();
      KILN_CHECK(tt && g->index >= 0 && g->index < static_cast<int>(tt->fields.size()))
          << "verify: get-item " << g->index << " of " << g->tuple.type().str();
      KILN_CHECK(tt->fields[g->index] == e.type()) << "verify: get-item " << g->index << " has a stale type";
    }
  }
  size_t n_out = m.output_names.size();
  KILN_CHECK(n_out >= 1) << "verify: module has no output names";
  if (n_out > 1) {
    const auto* t = m.body.as<TupleNode>();
    KILN_CHECK(t && t->fields.size() == n_out) << "verify: " << n_out << " output names but the body is "
                                               << m.body.type().str();
  }
  std::set<std::string> out_names;
  for (const std::string& n : m.output_names) {
    KILN_CHECK(!n.empty()) << "verify: an output has no name";
    KILN_CHECK(out_names.insert(n).second) << "verify: two outputs are named '" << n << "'";
  }
  for (const Expr& o : m.outputs())
    KILN_CHECK(o.type().as<TensorTypeNode>()) << "verify: output of type " << o.type().str() << " is not a tensor";
}

}  // namespace kiln::relay
