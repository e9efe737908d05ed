// The ONNX importer: walks the graph in its (topological) order and converts node by node.
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "convert.h"
#include "kiln/relay/error.h"
#include "kiln/relay/verify.h"
#include "kiln/support/error.h"
#include "support/grouped_names.h"

namespace kiln::relay {

using namespace onnx_frontend;

namespace {

// Opsets kiln knows the semantics of: all of them, the old forms of opsets 1 to 6 included
// (convert_legacy.cc). Newer opsets import too, with the newest semantics known here: the
// changes after 21 are new types and new ops, which fail as such.
constexpr int kMinOpset = 1;

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// A node's key in the converter table: its op type, prefixed by its domain outside the default
// one ("com.microsoft.QLinearAdd").
std::string converter_key(const ::onnx::NodeProto& n) {
  return is_default_domain(n.domain()) ? n.op_type() : n.domain() + "." + n.op_type();
}

std::string display_name(const ::onnx::NodeProto& n, int index) {
  if (!n.name().empty()) return "'" + n.name() + "'";
  return "#" + std::to_string(index) + (n.output_size() ? " (-> " + n.output(0) + ")" : "");
}

// Sequence, optional and map values are valid ONNX that kiln does not implement.
void check_tensor_input(const ::onnx::ValueInfoProto& in, const std::string& what) {
  const auto& t = in.type();
  const char* kind = t.has_sequence_type() ? "a sequence" : t.has_optional_type() ? "an optional"
                     : t.has_map_type()    ? "a map"      : t.has_sparse_tensor_type() ? "a sparse tensor" : nullptr;
  KILN_SUPPORTED(kind == nullptr) << what << " is " << kind << "; kiln compiles tensor inputs only";
  KILN_USER_CHECK(t.has_tensor_type()) << what << " has no tensor type";
}

class Importer {
 public:
  Importer(const ::onnx::ModelProto& model, std::string origin, const OnnxImportOptions& opts, std::string model_dir)
      : model_(model), graph_(model.graph()), origin_(std::move(origin)), opts_(opts), dir_(std::move(model_dir)) {}

  Module run() {
    check_supported();
    read_opset();
    find_shape_inputs();
    add_initializers();
    add_inputs();
    for (int i = 0; i < graph_.node_size(); ++i)
      for (const auto& o : graph_.node(i).output()) producer_.emplace(o, i);
    for (int i = 0; i < graph_.node_size(); ++i) convert_node(graph_.node(i), i);
    std::vector<Expr> outputs;
    std::vector<std::string> names;
    std::set<std::string> seen;
    for (const auto& o : graph_.output()) {
      // The module's outputs are found by name: each must have one of its own.
      KILN_USER_CHECK(!o.name().empty()) << origin_ << ": a graph output has no name";
      KILN_USER_CHECK(seen.insert(o.name()).second) << origin_ << ": graph output '" << o.name() << "' is listed twice";
      outputs.push_back(lookup(o.name(), origin_ + ": graph output '" + o.name() + "'"));
      names.push_back(o.name());
    }
    KILN_USER_CHECK(!outputs.empty()) << origin_ << ": the graph has no outputs";
    if (!unread_unsupported_.empty()) throw UnsupportedError(unread_unsupported_);
    Module m = Module::make(params_, outputs, names);
    verify(m);
    return m;
  }

 private:
  void read_opset() {
    // Models of IR versions 1 and 2 (ONNX 1.0) import no opsets: theirs is opset 1 (as the ONNX
    // checker reads them).
    if (model_.ir_version() < 3 && model_.opset_import_size() == 0) {
      opset_ = 1;
      return;
    }
    bool found = false;
    for (const auto& o : model_.opset_import()) {
      if (is_default_domain(o.domain())) {
        opset_ = static_cast<int>(o.version());
        found = true;
      }
    }
    // From IR version 3 a model names its opsets; one that names only other domains is no ONNX model.
    KILN_USER_CHECK(found) << origin_ << ": the model imports no default-domain opset";
    KILN_USER_CHECK(opset_ >= kMinOpset) << origin_ << ": opset " << opset_ << " is not an ONNX opset (they start at "
                                          << kMinOpset << ")";
  }

  // The op types of `g` and of its subgraphs (If, Loop, Scan bodies) that no converter takes.
  // A subgraph's nodes are named "subgraph/node" (their numbers count within it).
  static void find_missing(const ::onnx::GraphProto& g, std::map<std::string, std::vector<std::string>>& missing,
                           const std::string& prefix = "") {
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& n = g.node(i);
      std::string key = converter_key(n);
      if (!converters().count(key)) missing[key].push_back(prefix + display_name(n, i));
      for (const auto& a : n.attribute()) {
        if (a.has_g()) find_missing(a.g(), missing, prefix + "'" + (a.g().name().empty() ? a.name() : a.g().name()) + "'/");
        for (const auto& sub : a.graphs()) find_missing(sub, missing, prefix + "'" + sub.name() + "'/");
      }
    }
  }

  // All unsupported operators in one message, so a user sees the whole gap at once.
  void check_supported() {
    std::map<std::string, std::vector<std::string>> missing;
    find_missing(graph_, missing);
    if (missing.empty()) return;
    std::ostringstream os;
    os << origin_ << ": unsupported ONNX operator" << (missing.size() > 1 ? "s" : "") << " (" << missing.size()
       << " op type" << (missing.size() > 1 ? "s" : "") << "): " << support::grouped_names(missing, "node", "; ");
    throw UnsupportedError(os.str());
  }

  // Graph inputs whose values some node needs at compile time (directly or through other nodes,
  // e.g. size -> Cast -> Range): with a value in input_values they become constants.
  void find_shape_inputs() {
    std::set<std::string> needed;
    for (int i = graph_.node_size() - 1; i >= 0; --i) {
      const auto& n = graph_.node(i);
      bool feeds = false;
      for (const auto& o : n.output()) feeds = feeds || needed.count(o);
      for (int k = 0; k < n.input_size(); ++k)
        if (feeds || is_shape_input(n.op_type(), k)) needed.insert(n.input(k));
    }
    for (const auto& in : graph_.input())
      if (needed.count(in.name()) && opts_.input_values.count(in.name())) bound_.insert(in.name());
  }

  // A graph input or initializer of an element type kiln does not compute in (float8, int4,
  // ...) is refused by the first node that reads it, so the message names that node and its op;
  // one that no node reads is refused after the nodes.
  bool defer_unsupported_type(const std::string& name, const char* kind, int code, const std::string& what) {
    try {
      dtype_from_onnx(code, what);
      return false;
    } catch (const UnsupportedError& e) {
      unproduced_[name] = std::string(kind) + " '" + name + "' of element type " + onnx_dtype_name(code);
      if (unread_unsupported_.empty()) unread_unsupported_ = e.what();
      return true;
    }
  }

  void add_initializers() {
    for (const auto& t : graph_.initializer()) {
      if (defer_unsupported_type(t.name(), "initializer", t.data_type(), origin_ + ": initializer '" + t.name() + "'"))
        continue;
      try {
        values_[t.name()] = make_constant(tensor_from_proto(t, dir_));
      } catch (const UnsupportedError& e) {
        throw UnsupportedError(origin_ + ": initializer '" + t.name() + "': " + e.what());
      } catch (const Error& e) {
        throw Error(origin_ + ": initializer '" + t.name() + "': " + e.what());
      }
    }
    KILN_SUPPORTED(graph_.sparse_initializer_size() == 0) << origin_ << ": sparse initializers are not supported";
  }

  // The graph inputs that are not initializers, quoted: 'x', 'y'.
  std::string input_list() const {
    std::string out;
    for (const auto& in : graph_.input())
      if (!values_.count(in.name())) out += (out.empty() ? "'" : ", '") + in.name() + "'";
    return out.empty() ? "none" : out;
  }

  void add_inputs() {
    std::set<std::string> names;
    for (const auto& in : graph_.input()) {
      // Inputs are bound by name (kiln run --input NAME=..., the runtime's set_input).
      KILN_USER_CHECK(!in.name().empty()) << origin_ << ": a graph input has no name";
      KILN_USER_CHECK(names.insert(in.name()).second) << origin_ << ": graph input '" << in.name() << "' is listed twice";
    }
    for (const auto& [name, shape] : opts_.input_shapes)
      KILN_USER_CHECK(names.count(name) && !values_.count(name))
          << origin_ << ": a shape is given for '" << name << "', which is not a model input (its inputs: "
          << input_list() << ")";
    for (const auto& [name, value] : opts_.input_values)
      KILN_USER_CHECK(names.count(name)) << origin_ << ": a value is given for '" << name << "', which is not a model input";
    for (const auto& [name, value] : opts_.bind)
      KILN_USER_CHECK(names.count(name) && !values_.count(name))
          << origin_ << ": cannot bind '" << name << "': the model has no graph input of that name";
    for (const auto& in : graph_.input()) {
      // An initializer listed as an input (old exporters).
      if (values_.count(in.name()) || unproduced_.count(in.name())) continue;
      std::string what = origin_ + ": graph input '" + in.name() + "'";
      check_tensor_input(in, what);
      const auto& tt = in.type().tensor_type();
      if (defer_unsupported_type(in.name(), "graph input", tt.elem_type(), what)) continue;
      DataType dtype = dtype_from_onnx(tt.elem_type(), what);
      // A shape given by the user (input_shapes, or the shape of a given value) overrides
      // symbolic dims and must agree with static ones.
      const Shape* given = nullptr;
      if (auto it = opts_.input_shapes.find(in.name()); it != opts_.input_shapes.end()) given = &it->second;
      const HostTensor* value = nullptr;
      if (auto it = opts_.input_values.find(in.name()); it != opts_.input_values.end()) value = &it->second;
      if (auto it = opts_.bind.find(in.name()); it != opts_.bind.end()) value = &it->second;
      if (value) {
        KILN_USER_CHECK(value->dtype() == dtype)
            << what << " is " << dtype.str() << ", its given value " << value->dtype().str();
        KILN_USER_CHECK(!given || *given == value->shape())
            << what << ": the given shape and the given value's shape differ";
        given = &value->shape();
      }
      // The messages name the CLI flag: that is where users meet them (the library's callers
      // set OnnxImportOptions::input_shapes, which the flag fills).
      const std::string flag = "--input-shape " + in.name() + "=...";
      Shape shape;           // -1 for a symbolic dim
      std::string declared;  // the model's shape with dim names, for messages: [batch,3,224,224]
      if (tt.has_shape()) {
        int first_symbolic = -1;
        for (int d = 0; d < tt.shape().dim_size(); ++d) {
          const auto& dim = tt.shape().dim(d);
          shape.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
          declared += (d ? "," : "") + (dim.has_dim_value() ? std::to_string(dim.dim_value())
                                                            : dim.has_dim_param() ? dim.dim_param() : std::string("?"));
          if (!dim.has_dim_value() && first_symbolic < 0) first_symbolic = d;
        }
        declared = "[" + declared + "]";
        if (first_symbolic >= 0) {
          const auto& dim = tt.shape().dim(first_symbolic);
          KILN_USER_CHECK(given) << what << " has a symbolic dim " << first_symbolic
                                 << (dim.has_dim_param() ? " '" + dim.dim_param() + "'" : "") << " (shape " << declared
                                 << "): give its shape, " << flag << " (kiln compiles static shapes)";
        }
      } else {
        KILN_USER_CHECK(given) << what << " has no shape: give it, " << flag << " (kiln compiles static shapes)";
      }
      if (given) {
        KILN_USER_CHECK(!tt.has_shape() || given->size() == shape.size())
            << what << " has rank " << shape.size() << " " << declared << ", the given shape " << shape_str(*given)
            << " has rank " << given->size();
        for (size_t d = 0; d < shape.size(); ++d)
          KILN_USER_CHECK(shape[d] < 0 || shape[d] == (*given)[d])
              << what << ": dim " << d << " is " << shape[d] << " in the model " << declared << ", the given shape "
              << shape_str(*given) << " has " << (*given)[d];
        shape = *given;
      }
      try {  // a declared 1e12-element input is refused here, naming it, before any use of its size
        checked_tensor_bytes(dtype, shape);
      } catch (const Error& e) {
        throw Error(what + ": " + e.what());
      }
      if (opts_.bind.count(in.name())) {  // specialized: a constant everywhere, no longer an input
        values_[in.name()] = make_constant(*value);
        continue;
      }
      Expr v = make_var(in.name(), tensor_type(dtype, shape));
      params_.push_back(v);
      // A bound input stays a param (the model's signature does not change) but nodes read its value.
      values_[in.name()] = bound_.count(in.name()) ? make_constant(opts_.input_values.at(in.name())) : v;
      // So does an input with no elements: it has no data, so nodes read an empty constant
      // (a reduction over it folds to its identity; no kernel sees an empty tensor).
      if (num_elements(shape) == 0) values_[in.name()] = make_constant(HostTensor(dtype, shape, std::vector<uint8_t>{}));
    }
  }

  // The value `name` that `user` (node number `reader`, or -1 for a graph output) reads.
  Expr lookup(const std::string& name, const std::string& user, int reader = -1) {
    auto it = values_.find(name);
    if (it != values_.end()) return it->second;
    auto un = unproduced_.find(name);
    KILN_SUPPORTED(un == unproduced_.end()) << user << " reads '" << name << "', " << un->second
                                             << ", which kiln does not support";
    // Nodes convert in graph order, so a value made by this node or a later one is a cycle (or
    // a graph out of the topological order ONNX requires): say so rather than "not produced".
    auto p = producer_.find(name);
    if (reader >= 0 && p != producer_.end() && p->second >= reader) {
      const auto& n = graph_.node(p->second);
      KILN_USER_CHECK(p->second != reader) << user << " reads '" << name << "', its own output: the graph has a cycle";
      KILN_THROW() << user << " reads '" << name << "', which node " << display_name(n, p->second) << " ("
                   << n.op_type() << ") produces after it: the graph has a cycle, or its nodes are not in "
                   << "topological order";
    }
    KILN_THROW() << user << " reads '" << name
                 << "', which no earlier node, initializer or graph input produces";
    return {};
  }

  // A node of the main graph, or (subgraph non-empty) of a subgraph: the enclosing node's
  // messages name the model, so a nested node's name that subgraph instead, and the main graph's
  // node order says nothing of it.
  void convert_node(const ::onnx::NodeProto& node, int index, const std::string& subgraph = "") {
    std::string where = subgraph.empty() ? origin_ + ": ONNX node " : "ONNX node ";
    where += display_name(node, index) + " (" + node.op_type() + ")";
    if (!subgraph.empty()) where += " of subgraph '" + subgraph + "'";
    std::vector<Expr> inputs;
    for (const auto& name : node.input())
      inputs.push_back(name.empty() ? Expr() : lookup(name, where, subgraph.empty() ? index : -1));
    NodeContext ctx(node, opset_, std::move(inputs), opts_, dir_);
    ctx.set_graph_runner([this](const ::onnx::GraphProto& g, const std::vector<Expr>& in) { return run_subgraph(g, in); });
    std::vector<Expr> outs;
    try {
      outs = converters().at(converter_key(node))(ctx);
    } catch (const UnsupportedError& e) {
      throw UnsupportedError(where + ": " + e.what());
    } catch (const CompileTimeInputError& e) {
      throw CompileTimeInputError(where + ": " + e.what(), e.inputs());
    } catch (const Error& e) {
      throw Error(where + ": " + e.what());
    }
    for (int i = 0; i < node.output_size(); ++i) {
      const std::string& name = node.output(i);
      if (name.empty()) continue;
      if (i < static_cast<int>(outs.size()) && outs[i].defined()) {
        values_[name] = outs[i];
      } else {
        unproduced_[name] = "output " + std::to_string(i) + " of node " + display_name(node, index) + " (" +
                            node.op_type() + ")";
      }
    }
  }

  // Converts subgraph `g` with its inputs bound to `inputs`, in a scope nested in the current
  // one: the names it defines shadow the enclosing ones only while it converts (a Loop body runs
  // once per unrolled iteration, rebinding the same names).
  std::vector<Expr> run_subgraph(const ::onnx::GraphProto& g, const std::vector<Expr>& inputs) {
    std::string gname = g.name().empty() ? "(unnamed)" : g.name();
    KILN_USER_CHECK(g.input_size() == static_cast<int>(inputs.size()))
        << "subgraph '" << gname << "' has " << g.input_size() << " inputs, the node gives it " << inputs.size();
    std::vector<std::string> defined;
    for (const auto& in : g.input()) defined.push_back(in.name());
    for (const auto& t : g.initializer()) defined.push_back(t.name());
    for (const auto& n : g.node()) defined.insert(defined.end(), n.output().begin(), n.output().end());
    std::vector<std::pair<std::string, std::optional<Expr>>> saved_values;
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_unproduced;
    for (const auto& name : defined) {
      auto v = values_.find(name);
      saved_values.emplace_back(name, v == values_.end() ? std::nullopt : std::optional<Expr>(v->second));
      auto u = unproduced_.find(name);
      saved_unproduced.emplace_back(name, u == unproduced_.end() ? std::nullopt : std::optional<std::string>(u->second));
    }
    std::vector<Expr> outs;
    // Restored on every exit, errors included.
    struct Restore {
      Importer* self;
      decltype(saved_values)* values;
      decltype(saved_unproduced)* unproduced;
      ~Restore() {
        for (auto it = values->rbegin(); it != values->rend(); ++it) {
          if (it->second) {
            self->values_[it->first] = *it->second;
          } else {
            self->values_.erase(it->first);
          }
        }
        for (auto it = unproduced->rbegin(); it != unproduced->rend(); ++it) {
          if (it->second) {
            self->unproduced_[it->first] = *it->second;
          } else {
            self->unproduced_.erase(it->first);
          }
        }
      }
    } restore{this, &saved_values, &saved_unproduced};
    for (int i = 0; i < g.input_size(); ++i) values_[g.input(i).name()] = inputs[static_cast<size_t>(i)];
    for (const auto& t : g.initializer()) values_[t.name()] = make_constant(tensor_from_proto(t, dir_));
    for (int i = 0; i < g.node_size(); ++i) convert_node(g.node(i), i, gname);
    for (const auto& o : g.output()) outs.push_back(lookup(o.name(), "subgraph '" + gname + "': output '" + o.name() + "'"));
    return outs;
  }

  const ::onnx::ModelProto& model_;
  const ::onnx::GraphProto& graph_;
  std::string origin_;
  const OnnxImportOptions& opts_;
  std::string dir_;
  int opset_ = 0;
  std::vector<Expr> params_;
  std::unordered_map<std::string, Expr> values_;
  std::unordered_map<std::string, std::string> unproduced_;
  std::unordered_map<std::string, int> producer_;  // value name -> the first node that outputs it
  std::set<std::string> bound_;
  std::string unread_unsupported_;  // the first deferred refusal of an element type
};

}  // namespace

namespace {
::onnx::ModelProto parse_model(const std::string& bytes, const std::string& origin) {
  ::onnx::ModelProto model;
  // Protobuf accepts many byte strings; a model without a graph or an opset is not a model
  // (before IR version 3 the opset was implied).
  KILN_USER_CHECK(model.ParseFromString(bytes) && model.has_graph() &&
                  (model.opset_import_size() > 0 || (model.ir_version() >= 1 && model.ir_version() < 3)))
      << origin << ": not an ONNX model (cannot parse a ModelProto with a graph and an opset)";
  return model;
}

std::string read_model_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_USER_CHECK(in.good()) << "cannot open ONNX model '" << path << "'";
  std::stringstream ss;
  ss << in.rdbuf();
  KILN_USER_CHECK(!in.bad()) << "cannot read ONNX model '" << path << "'";
  return ss.str();
}

// The graph inputs of the model at `path` that are not initializers (the ones a caller feeds).
std::vector<::onnx::ValueInfoProto> data_inputs(const std::string& path) {
  ::onnx::ModelProto model = parse_model(read_model_file(path), "'" + path + "'");
  std::set<std::string> inits;
  for (const auto& t : model.graph().initializer()) inits.insert(t.name());
  std::vector<::onnx::ValueInfoProto> out;
  for (const auto& in : model.graph().input())
    if (!inits.count(in.name())) out.push_back(in);
  return out;
}
}  // namespace

Module from_onnx_bytes(const std::string& bytes, const std::string& origin, const OnnxImportOptions& opts,
                       const std::string& model_dir) {
  ::onnx::ModelProto model = parse_model(bytes, origin);
  return Importer(model, origin, opts, model_dir).run();
}

Module from_onnx(const std::string& path, const OnnxImportOptions& opts) {
  std::string bytes = read_model_file(path);
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash);
  return from_onnx_bytes(bytes, "'" + path + "'", opts, dir);
}

std::vector<std::string> onnx_graph_inputs(const std::string& path) {
  std::vector<std::string> names;
  for (const auto& in : data_inputs(path)) {
    check_tensor_input(in, "'" + path + "': graph input '" + in.name() + "'");
    names.push_back(in.name());
  }
  return names;
}

std::vector<std::string> onnx_symbolic_inputs(const std::string& path) {
  std::vector<std::string> names;
  for (const auto& in : data_inputs(path)) {
    const auto& tt = in.type().tensor_type();
    bool symbolic = !tt.has_shape();
    for (const auto& dim : tt.shape().dim()) symbolic = symbolic || !dim.has_dim_value();
    if (symbolic) names.push_back(in.name());
  }
  return names;
}

std::vector<std::string> onnx_supported_ops() {
  std::vector<std::string> names;
  for (const auto& [n, c] : converters()) names.push_back(n);
  return names;
}

}  // namespace kiln::relay
