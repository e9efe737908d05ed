#include "kiln/relay/module.h"

#include "kiln/support/error.h"

namespace kiln::relay {

std::vector<std::string> Module::input_names() const {
  std::vector<std::string> names;
  for (const Expr& p : params) {
    const auto* v = p.as<VarNode>();
    KILN_CHECK(v != nullptr) << "module param is a " << kind_name(p.kind()) << ", not a Var";
    names.push_back(v->name);
  }
  return names;
}

std::vector<Expr> Module::outputs() const {
  if (output_names.size() != 1) {
    if (auto* t = body.as<TupleNode>()) return t->fields;
  }
  return {body};
}

std::vector<Type> Module::output_types() const {
  std::vector<Type> types;
  for (const Expr& e : outputs()) types.push_back(e.type());
  return types;
}

Module Module::with_body(Expr new_body) const {
  Module m = *this;
  m.body = std::move(new_body);
  KILN_CHECK(m.outputs().size() == outputs().size()) << "with_body changed the number of outputs";
  return m;
}

Module Module::make(std::vector<Expr> params, std::vector<Expr> outputs, std::vector<std::string> output_names) {
  KILN_CHECK(!outputs.empty()) << "a module needs at least one output";
  KILN_CHECK(outputs.size() == output_names.size())
      << outputs.size() << " outputs but " << output_names.size() << " output names";
  Module m;
  m.params = std::move(params);
  m.body = outputs.size() == 1 ? outputs[0] : make_tuple(outputs);
  m.output_names = std::move(output_names);
  return m;
}

}  // namespace kiln::relay
