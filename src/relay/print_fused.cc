// Text of a fused module: the relay printer's layout with one line per kernel, so
// `--dump-ir fuse_ops` shows which ops each kernel holds.
#include <fmt/format.h>

#include <sstream>
#include <unordered_map>

#include "kiln/relay/printer.h"
#include "kiln/relay/transforms.h"
#include "kiln/support/error.h"

namespace kiln::relay {

namespace {

class FusedPrinter {
 public:
  FusedPrinter(const FusedModule& m, const PrintOptions& opts) : m_(m), opts_(opts) {}

  std::string print() {
    const Module& mod = m_.module;
    std::ostringstream os;
    os << "fn (";
    for (size_t i = 0; i < mod.params.size(); ++i) {
      std::string n = var_text(mod.params[i].as<VarNode>()->name);
      os << (i ? ", " : "") << n << ": " << mod.params[i].type().str();
      names_[mod.params[i].get()] = n;
    }
    os << ") -> " << mod.body.type().str() << " {\n";
    for (const Expr& e : post_order({mod.body})) line(os, e);
    os << "  return " << ref(mod.body) << "\n}\n";
    os << "outputs: ";
    for (size_t i = 0; i < mod.output_names.size(); ++i) os << (i ? ", " : "") << mod.output_names[i];
    os << "\n";
    for (size_t i = 0; i < meta_.size(); ++i)
      os << "meta[" << i << "] = " << (opts_.meta_values ? meta_[i].str(16) : meta_[i].str(0)) << "\n";
    return os.str();
  }

 private:
  // `kernel_arg`: e is an input of a group (not a module output or a tuple field).
  std::string ref(const Expr& e, bool kernel_arg = false) {
    auto it = names_.find(e.get());
    if (it != names_.end()) return it->second;
    if (auto* c = e.as<ConstantNode>()) {
      // Scalars are compiled into the kernels and never reach a group line; a module output
      // may still be one (ONNX Size of a static shape folds to a scalar).
      KILN_CHECK(!kernel_arg || c->value.rank() != 0) << "a scalar constant crosses a kernel boundary";
      meta_.push_back(c->value);
      return names_[e.get()] = "meta[" + std::to_string(meta_.size() - 1) + "]";
    }
    if (auto* v = e.as<VarNode>()) return names_[e.get()] = var_text(v->name);
    KILN_CHECK(false) << kind_name(e.kind()) << " printed before its definition";
    return "";
  }

  void line(std::ostringstream& os, const Expr& e) {
    std::string rhs, comment;
    if (e.as<CallNode>()) {
      const FusedGroup& g = m_.groups.at(m_.group_of.at(e.get()));
      if (!g.root.same_as(e)) return;  // members print with their group's root
      rhs = "fused(";
      for (size_t i = 0; i < g.calls.size(); ++i) {
        const auto* c = g.calls[i].as<CallNode>();
        rhs += (i ? ", " : "") + c->op_name();
        if (opts_.node_names && !c->name.empty()) comment += (comment.empty() ? "  # " : ", ") + c->name;
      }
      rhs += ")(";
      for (size_t i = 0; i < g.inputs.size(); ++i) rhs += (i ? ", " : "") + ref(g.inputs[i], true);
      rhs += ")";
    } else if (auto* t = e.as<TupleNode>()) {
      rhs = "(";
      for (size_t i = 0; i < t->fields.size(); ++i) rhs += (i ? ", " : "") + ref(t->fields[i]);
      rhs += t->fields.size() == 1 ? ",)" : ")";
    } else if (auto* g = e.as<TupleGetItemNode>()) {
      rhs = ref(g->tuple) + "." + std::to_string(g->index);
    } else {
      return;  // vars and constants print where they are used
    }
    std::string name = "%" + std::to_string(counter_++);
    os << "  " << name << " = " << rhs << " : " << e.type().str() << comment << "\n";
    names_[e.get()] = name;
  }

  const FusedModule& m_;
  PrintOptions opts_;
  std::unordered_map<const ExprNode*, std::string> names_;
  std::vector<HostTensor> meta_;
  int counter_ = 0;
};

}  // namespace

std::string to_string(const FusedModule& m, const PrintOptions& opts) { return FusedPrinter(m, opts).print(); }

}  // namespace kiln::relay
