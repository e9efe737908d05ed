#include <algorithm>
#include <sstream>

#include "convert.h"
#include "kiln/relay/evaluate.h"
#include "kiln/relay/op.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {
const char* attr_type_name(int t) {
  switch (t) {
    case ::onnx::AttributeProto::FLOAT: return "a float";
    case ::onnx::AttributeProto::INT: return "an int";
    case ::onnx::AttributeProto::STRING: return "a string";
    case ::onnx::AttributeProto::TENSOR: return "a tensor";
    case ::onnx::AttributeProto::GRAPH: return "a graph";
    case ::onnx::AttributeProto::FLOATS: return "a float list";
    case ::onnx::AttributeProto::INTS: return "an int list";
    case ::onnx::AttributeProto::STRINGS: return "a string list";
    default: return "of another kind";
  }
}

// Old exporters leave AttributeProto.type unset; the populated field tells the kind then.
int attr_kind(const ::onnx::AttributeProto& a) {
  if (a.type() != ::onnx::AttributeProto::UNDEFINED) return a.type();
  if (a.ints_size()) return ::onnx::AttributeProto::INTS;
  if (a.floats_size()) return ::onnx::AttributeProto::FLOATS;
  if (a.strings_size()) return ::onnx::AttributeProto::STRINGS;
  if (a.has_t()) return ::onnx::AttributeProto::TENSOR;
  if (a.has_g()) return ::onnx::AttributeProto::GRAPH;
  if (a.has_s()) return ::onnx::AttributeProto::STRING;
  if (a.has_f()) return ::onnx::AttributeProto::FLOAT;
  if (a.has_i()) return ::onnx::AttributeProto::INT;
  return ::onnx::AttributeProto::UNDEFINED;
}
}  // namespace

NodeContext::NodeContext(const ::onnx::NodeProto& node, int opset, std::vector<Expr> inputs,
                         const OnnxImportOptions& opts, const std::string& model_dir)
    : node_(node), opset_(opset), inputs_(std::move(inputs)), opts_(opts), model_dir_(model_dir) {
  name_ = !node.name().empty() ? node.name()
                               : node.op_type() + " -> " + (node.output_size() ? node.output(0) : std::string("?"));
}

const Expr& NodeContext::input(size_t i, const char* role) const {
  KILN_USER_CHECK(has_input(i)) << "input " << i << " (" << role << ") is required";
  return inputs_[i];
}

const TensorTypeNode& NodeContext::input_type(size_t i, const char* role) const {
  const Expr& e = input(i, role);
  const auto* t = e.type().as<TensorTypeNode>();
  KILN_USER_CHECK(t != nullptr) << "input " << i << " (" << role << ") is not a tensor";
  return *t;
}

std::optional<HostTensor> NodeContext::const_input(size_t i) const {
  if (!has_input(i)) return std::nullopt;
  if (const auto* c = inputs_[i].as<ConstantNode>()) return c->value;
  return std::nullopt;
}

HostTensor NodeContext::require_const(size_t i, const char* role) const {
  input(i, role);
  auto v = const_input(i);
  if (v) return *v;
  // Not constant: it depends on graph inputs (the importer's only vars). Name them, so the
  // caller can bind exactly those and import again; binding them makes this input fold.
  std::vector<std::string> needed;
  for (const Expr& e : post_order({inputs_[i]}))
    if (const auto* var = e.as<VarNode>()) needed.push_back(var->name);
  std::ostringstream os;
  os << "input " << i << " (" << role << ") ";
  if (const auto* var = inputs_[i].as<VarNode>()) {
    os << "is graph input '" << var->name << "', whose value";
  } else {
    os << "is computed from graph input" << (needed.size() > 1 ? "s " : " ");
    for (size_t k = 0; k < needed.size(); ++k) os << (k ? ", " : "") << "'" << needed[k] << "'";
    os << ", and its value";
  }
  os << " is needed at compile time (kiln compiles static shapes only): bind "
     << (needed.size() > 1 ? "them" : "it") << " to a value at compile time";
  // A non-constant without graph inputs (a value too big to fold) cannot be fixed by binding.
  if (needed.empty()) KILN_THROW() << "input " << i << " (" << role << ") must be a compile-time constant "
                                   << "(kiln compiles static shapes only)";
  throw CompileTimeInputError(os.str(), needed);
}

std::vector<int64_t> NodeContext::const_ints(size_t i, const char* role) const {
  HostTensor t = require_const(i, role);
  KILN_USER_CHECK(t.dtype().is_integer()) << "input " << i << " (" << role << ") must be integers, got "
                                          << t.dtype().str();
  return t.to_int64s();
}

const ::onnx::AttributeProto* NodeContext::find_attr(const std::string& key) const {
  for (const auto& a : node_.attribute())
    if (a.name() == key) return &a;
  return nullptr;
}

bool NodeContext::has_attr(const std::string& key) const { return find_attr(key) != nullptr; }

const ::onnx::AttributeProto& NodeContext::expect_attr(const std::string& key, int type, const char* kind) const {
  const auto* a = find_attr(key);
  KILN_USER_CHECK(a != nullptr) << "attribute '" << key << "' is required";
  int k = attr_kind(*a);
  // An empty list has no populated field to tell its kind: accept it as any list.
  bool empty_list = k == ::onnx::AttributeProto::UNDEFINED &&
                    (type == ::onnx::AttributeProto::INTS || type == ::onnx::AttributeProto::FLOATS);
  KILN_USER_CHECK(k == type || empty_list) << "attribute '" << key << "' must be " << kind << ", got "
                                           << attr_type_name(k);
  return *a;
}

int64_t NodeContext::attr_int(const std::string& key) const {
  return expect_attr(key, ::onnx::AttributeProto::INT, "an int").i();
}
int64_t NodeContext::attr_int(const std::string& key, int64_t dflt) const {
  return has_attr(key) ? attr_int(key) : dflt;
}
double NodeContext::attr_float(const std::string& key, double dflt) const {
  if (!has_attr(key)) return dflt;
  return expect_attr(key, ::onnx::AttributeProto::FLOAT, "a float").f();
}
std::string NodeContext::attr_str(const std::string& key, const std::string& dflt) const {
  if (!has_attr(key)) return dflt;
  return expect_attr(key, ::onnx::AttributeProto::STRING, "a string").s();
}
std::vector<int64_t> NodeContext::attr_ints(const std::string& key) const {
  const auto& a = expect_attr(key, ::onnx::AttributeProto::INTS, "an int list");
  return {a.ints().begin(), a.ints().end()};
}
std::vector<int64_t> NodeContext::attr_ints(const std::string& key, const std::vector<int64_t>& dflt) const {
  return has_attr(key) ? attr_ints(key) : dflt;
}
std::vector<double> NodeContext::attr_floats(const std::string& key, const std::vector<double>& dflt) const {
  if (!has_attr(key)) return dflt;
  const auto& a = expect_attr(key, ::onnx::AttributeProto::FLOATS, "a float list");
  return {a.floats().begin(), a.floats().end()};
}
HostTensor NodeContext::attr_tensor(const std::string& key) const {
  return tensor_from_proto(expect_attr(key, ::onnx::AttributeProto::TENSOR, "a tensor").t(), model_dir_);
}

const ::onnx::GraphProto& NodeContext::attr_graph(const std::string& key) const {
  return expect_attr(key, ::onnx::AttributeProto::GRAPH, "a graph").g();
}

std::vector<Expr> NodeContext::run_graph(const std::string& key, const std::vector<Expr>& inputs) const {
  KILN_CHECK(graph_runner_) << "no graph runner for node " << name_;
  return graph_runner_(attr_graph(key), inputs);
}

Expr NodeContext::call(const std::string& op, std::vector<Expr> args, Attrs attrs) const {
  Expr e = make_call(op, std::move(args), std::move(attrs), name_);
  const auto* c = e.as<CallNode>();
  const auto* t = e.type().as<TensorTypeNode>();
  // A result with no elements has no data to compute (a Slice past the end): a constant, so
  // that no kernel sees an empty tensor.
  if (t && t->num_elements() == 0) return make_constant(HostTensor(t->dtype, t->shape, std::vector<uint8_t>{}));
  if (!t || t->num_elements() > opts_.fold_limit || !can_evaluate(*c->op)) return e;
  std::vector<HostTensor> values;
  for (const Expr& a : c->args) {
    const auto* k = a.as<ConstantNode>();
    if (!k) return e;
    values.push_back(k->value);
  }
  auto v = evaluate_call(*c, values);
  return v ? make_constant(*v) : e;
}

bool is_shape_input(const std::string& op_type, int index) {
  static const std::map<std::string, std::vector<int>> slots = {
      {"Reshape", {1}},   {"Slice", {1, 2, 3, 4}}, {"Split", {1}},        {"Squeeze", {1}},   {"Unsqueeze", {1}},
      {"Pad", {1, 2, 3}}, {"Resize", {1, 2, 3}},   {"Upsample", {1}},     {"Tile", {1, 2}},   {"Expand", {1}},
      {"ConstantOfShape", {0}}, {"Range", {0, 1, 2}}, {"Trilu", {1}},     {"Dropout", {1, 2}}, {"ReduceSum", {1}},
      {"ReduceMean", {1}}, {"ReduceMax", {1}},     {"ReduceMin", {1}},    {"ReduceProd", {1}}, {"ReduceL1", {1}},
      {"ReduceL2", {1}},  {"ReduceSumSquare", {1}}, {"ReduceLogSum", {1}}, {"ReduceLogSumExp", {1}}, {"CumSum", {1}},
      {"OneHot", {1}},    {"TopK", {1}},           {"DFT", {1, 2}},       {"STFT", {1, 3}},   {"AffineGrid", {1}},
      {"Col2Im", {1, 2}}, {"MelWeightMatrix", {0, 1, 2, 3, 4}}, {"CumProd", {1}},      {"CenterCropPad", {1}},
      {"HannWindow", {0}}, {"HammingWindow", {0}}, {"BlackmanWindow", {0}}, {"MaxUnpool", {2}},
      {"ConstantFill", {0}}, {"RNN", {4}}, {"GRU", {4}}, {"LSTM", {4}}, {"If", {0}}, {"Loop", {0, 1}}};
  auto it = slots.find(op_type);
  return it != slots.end() && std::find(it->second.begin(), it->second.end(), index) != it->second.end();
}

int64_t normalize_axis_for(int64_t axis, int64_t rank, const NodeContext&, const char* what) {
  KILN_USER_CHECK(axis >= -rank && axis < rank) << what << " " << axis << " is out of range for rank " << rank;
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes_for(std::vector<int64_t> axes, int64_t rank, const NodeContext& ctx) {
  for (auto& a : axes) a = normalize_axis_for(a, rank, ctx, "axis");
  std::sort(axes.begin(), axes.end());
  KILN_USER_CHECK(std::adjacent_find(axes.begin(), axes.end()) == axes.end())
      << "axes " << shape_str(axes) << " repeat an axis";
  return axes;
}

const ConverterTable& converters() {
  static const ConverterTable table = [] {
    ConverterTable t;
    register_elemwise_converters(t);
    register_nn_converters(t);
    register_math_converters(t);
    register_tensor_converters(t);
    register_resize_converters(t);
    register_index_converters(t);
    register_const_converters(t);
    register_quantize_converters(t);
    register_qlinear_converters(t);
    register_attention_converters(t);
    register_norm_act_converters(t);
    register_sample_converters(t);
    register_signal_converters(t);
    register_loss_converters(t);
    register_misc_converters(t);
    register_rnn_converters(t);
    register_legacy_converters(t);
    register_control_converters(t);
    return t;
  }();
  return table;
}

}  // namespace kiln::relay::onnx_frontend
