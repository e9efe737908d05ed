#include "kiln/relay/printer.h"

#include <fmt/format.h>

#include <sstream>
#include <unordered_map>

#include "kiln/relay/op.h"
#include "kiln/support/error.h"

namespace kiln::relay {

namespace {

// Scalars read best inline, with a dtype suffix so "2i64" and "2f" are told apart.
std::string scalar_str(const HostTensor& t) {
  DataType d = t.dtype();
  if (d.is_bool()) return t.int64_at(0) ? "true" : "false";
  if (d.is_floating()) {
    double x = t.double_at(0);
    // Shortest text that round-trips the stored precision (0.1f, not 0.10000000149011612f).
    std::string v = d == DataType::f64() ? fmt::format("{}", x) : fmt::format("{}", static_cast<float>(x));
    if (d == DataType::f32()) return v + "f";
    return v + (d.is_bfloat() ? "bf" : "f") + std::to_string(d.bits);
  }
  if (d.is_uint() && d.bits == 64) return std::to_string(static_cast<uint64_t>(t.int64_at(0))) + "u64";
  return std::to_string(t.int64_at(0)) + (d.is_uint() ? "u" : "i") + std::to_string(d.bits);
}

class Printer {
 public:
  explicit Printer(const PrintOptions& opts) : opts_(opts) {}

  std::string print(const std::vector<Expr>& params, const Expr& body, const std::vector<std::string>* outputs) {
    std::ostringstream os;
    os << "fn (";
    for (size_t i = 0; i < params.size(); ++i) {
      const auto* v = params[i].as<VarNode>();
      KILN_CHECK(v != nullptr) << "function param is not a Var";
      os << (i ? ", " : "") << var_text(v->name) << ": " << params[i].type().str();
      names_[params[i].get()] = var_text(v->name);
    }
    os << ") -> " << body.type().str() << " {\n";
    for (const Expr& e : post_order({body})) line(os, e);
    os << "  return " << ref(body) << "\n}\n";
    if (outputs) {
      os << "outputs: ";
      for (size_t i = 0; i < outputs->size(); ++i) os << (i ? ", " : "") << (*outputs)[i];
      os << "\n";
    }
    for (size_t i = 0; i < meta_.size(); ++i)
      os << "meta[" << i << "] = " << (opts_.meta_values ? meta_[i].str(16) : meta_[i].str(0)) << "\n";
    return os.str();
  }

 private:
  std::string ref(const Expr& e) {
    auto it = names_.find(e.get());
    if (it != names_.end()) return it->second;
    if (auto* c = e.as<ConstantNode>()) {
      std::string s = c->value.rank() == 0 ? scalar_str(c->value) : "meta[" + std::to_string(meta_.size()) + "]";
      if (c->value.rank() != 0) meta_.push_back(c->value);
      names_[e.get()] = s;
      return s;
    }
    if (auto* v = e.as<VarNode>()) return names_[e.get()] = var_text(v->name);  // a free Var
    KILN_CHECK(false) << kind_name(e.kind()) << " printed before its definition";
    return "";
  }

  void line(std::ostringstream& os, const Expr& e) {
    if (e.as<VarNode>() || e.as<ConstantNode>()) {
      ref(e);  // numbers meta[] in order of first use
      return;
    }
    std::string rhs, comment;
    if (auto* c = e.as<CallNode>()) {
      rhs = c->op_name() + "(";
      for (size_t i = 0; i < c->args.size(); ++i) rhs += (i ? ", " : "") + ref(c->args[i]);
      std::string attrs = c->attrs.str();
      if (!attrs.empty()) rhs += (c->args.empty() ? "" : ", ") + attrs;
      rhs += ")";
      if (opts_.node_names && !c->name.empty()) comment = "  # " + c->name;
    } else if (auto* t = e.as<TupleNode>()) {
      rhs = "(";
      for (size_t i = 0; i < t->fields.size(); ++i) rhs += (i ? ", " : "") + ref(t->fields[i]);
      rhs += t->fields.size() == 1 ? ",)" : ")";
    } else if (auto* g = e.as<TupleGetItemNode>()) {
      rhs = ref(g->tuple) + "." + std::to_string(g->index);
    }
    std::string name = "%" + std::to_string(counter_++);
    os << "  " << name << " = " << rhs << " : " << e.type().str() << comment << "\n";
    names_[e.get()] = name;
  }

  PrintOptions opts_;
  std::unordered_map<const ExprNode*, std::string> names_;
  std::vector<HostTensor> meta_;
  int counter_ = 0;
};

}  // namespace

std::string to_string(const Module& m, const PrintOptions& opts) {
  return Printer(opts).print(m.params, m.body, &m.output_names);
}

std::string to_string(const Expr& e, const PrintOptions& opts) {
  // Free Vars become the params, in order of first use.
  std::vector<Expr> params;
  for (const Expr& n : post_order({e}))
    if (n.as<VarNode>()) params.push_back(n);
  return Printer(opts).print(params, e, nullptr);
}

std::string var_text(const std::string& name) {
  bool plain = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.');
  return plain ? "%" + name : "%\"" + name + "\"";
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << to_string(m); }

}  // namespace kiln::relay
