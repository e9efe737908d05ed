// Private to the ONNX frontend: what a converter sees of one node, and the converter table.
//
// A converter turns one ONNX node into graph IR: it reads inputs, attributes (with the ONNX
// defaults) and the opset, and returns one Expr per node output (undefined for outputs it does
// not produce). Calls go through NodeContext::call, which names them after the node and folds
// them into constants when all their inputs are constants: that is how shape arithmetic
// (Shape -> Gather -> Concat -> Reshape) becomes static while importing.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/relay/error.h"
#include "kiln/relay/frontend/onnx.h"
#include "onnx_proto.h"

namespace kiln::relay::onnx_frontend {

// Converts a subgraph (If's branches, Loop's and Scan's body) in a scope nested in the node's:
// its inputs bound to the given values, the enclosing scopes' values visible by name; returns
// its outputs. The importer provides it.
using GraphRunner = std::function<std::vector<Expr>(const ::onnx::GraphProto&, const std::vector<Expr>&)>;

class NodeContext {
 public:
  NodeContext(const ::onnx::NodeProto& node, int opset, std::vector<Expr> inputs, const OnnxImportOptions& opts,
              const std::string& model_dir);

  const ::onnx::NodeProto& node() const { return node_; }
  int opset() const { return opset_; }
  // The node's name, or "<op_type> -> <first output>" when it has none.
  const std::string& name() const { return name_; }

  // Inputs: an omitted optional input ("" or past the end) is absent.
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].defined(); }
  // A required input; kiln::Error naming `role` when absent.
  const Expr& input(size_t i, const char* role = "input") const;
  const TensorTypeNode& input_type(size_t i, const char* role = "input") const;
  // The value of input i when it is a compile-time constant.
  std::optional<HostTensor> const_input(size_t i) const;
  // Input i must be a constant (kiln::Error otherwise: kiln compiles static shapes).
  HostTensor require_const(size_t i, const char* role) const;
  std::vector<int64_t> const_ints(size_t i, const char* role) const;
  // Outputs the model reads (a non-empty output name).
  size_t num_outputs() const { return static_cast<size_t>(node_.output_size()); }
  bool output_used(size_t i) const { return i < num_outputs() && !node_.output(static_cast<int>(i)).empty(); }

  // Attributes, with ONNX defaults for the optional ones. Wrong kinds are kiln::Errors.
  bool has_attr(const std::string& key) const;
  int64_t attr_int(const std::string& key) const;
  int64_t attr_int(const std::string& key, int64_t dflt) const;
  double attr_float(const std::string& key, double dflt) const;
  std::string attr_str(const std::string& key, const std::string& dflt) const;
  std::vector<int64_t> attr_ints(const std::string& key) const;
  std::vector<int64_t> attr_ints(const std::string& key, const std::vector<int64_t>& dflt) const;
  std::vector<double> attr_floats(const std::string& key, const std::vector<double>& dflt) const;
  HostTensor attr_tensor(const std::string& key) const;
  const ::onnx::GraphProto& attr_graph(const std::string& key) const;

  // The outputs of subgraph attribute `key` run on `inputs` (see GraphRunner).
  std::vector<Expr> run_graph(const std::string& key, const std::vector<Expr>& inputs) const;
  void set_graph_runner(GraphRunner runner) { graph_runner_ = std::move(runner); }

  // Builds a call named after this node; folded to a constant when all args are constants, the
  // result is a small tensor and the evaluator knows the op.
  Expr call(const std::string& op, std::vector<Expr> args, Attrs attrs = {}) const;
  Expr constant(HostTensor value) const { return make_constant(std::move(value)); }
  // A scalar constant of `dtype` (for alpha, beta, epsilon ... next to a tensor of that type).
  Expr scalar(DataType dtype, double value) const { return make_constant(HostTensor::scalar(dtype, value)); }

 private:
  const ::onnx::AttributeProto* find_attr(const std::string& key) const;
  const ::onnx::AttributeProto& expect_attr(const std::string& key, int type, const char* kind) const;

  const ::onnx::NodeProto& node_;
  int opset_;
  std::vector<Expr> inputs_;
  const OnnxImportOptions& opts_;
  std::string model_dir_;
  std::string name_;
  GraphRunner graph_runner_;
};

using Converter = std::function<std::vector<Expr>(NodeContext&)>;
using ConverterTable = std::map<std::string, Converter>;

// One registration function per converter family (convert_*.cc).
void register_elemwise_converters(ConverterTable& t);
void register_nn_converters(ConverterTable& t);
void register_math_converters(ConverterTable& t);
void register_tensor_converters(ConverterTable& t);
void register_resize_converters(ConverterTable& t);
void register_index_converters(ConverterTable& t);
void register_const_converters(ConverterTable& t);
void register_quantize_converters(ConverterTable& t);
void register_qlinear_converters(ConverterTable& t);
void register_attention_converters(ConverterTable& t);
void register_norm_act_converters(ConverterTable& t);
void register_sample_converters(ConverterTable& t);  // convert_sample.cc: GridSample, AffineGrid, Col2Im, ...
void register_signal_converters(ConverterTable& t);  // convert_signal.cc: DFT, STFT, MelWeightMatrix
void register_loss_converters(ConverterTable& t);
void register_misc_converters(ConverterTable& t);
void register_rnn_converters(ConverterTable& t);
void register_legacy_converters(ConverterTable& t);
void register_control_converters(ConverterTable& t);
const ConverterTable& converters();

// Whether input `index` of an `op_type` node must be known at compile time (a shape, axes,
// pads, ...). The importer binds graph inputs that feed such inputs to their given values.
bool is_shape_input(const std::string& op_type, int index);

// Small helpers the families share.
int64_t normalize_axis_for(int64_t axis, int64_t rank, const NodeContext& ctx, const char* what = "axis");
std::vector<int64_t> normalize_axes_for(std::vector<int64_t> axes, int64_t rank, const NodeContext& ctx);
// v converted to type t (v itself when it has it).
Expr cast_to(NodeContext& c, const Expr& v, DataType t);
// quantize / dequantize of x by scale and zero point (undefined: 0) along `axis` (an ONNX axis:
// may be negative, unused when both are per tensor); one-element parameters become scalars
// (per tensor), as ONNX reads them (convert_quantize.cc).
Expr quantize_of(NodeContext& c, const Expr& x, const Expr& scale, const Expr& zero_point, int64_t axis, DataType out);
Expr dequantize_of(NodeContext& c, const Expr& x, const Expr& scale, const Expr& zero_point, int64_t axis);
// The convolution of a Conv-like node (Conv, ConvInteger, QLinearConv: kernel_shape, strides,
// pads or auto_pad, dilations, group) of `data` by `weight`, without bias (convert_nn.cc).
Expr conv_of(NodeContext& c, const Expr& data, const Expr& weight);

// Forms of opsets 1 to 6 (convert_legacy.cc). B of a binary op before opset 7 (A op B), aligned
// to A as its broadcast/axis attributes say; PRelu's slope before opset 7 (per channel); Cast's target type, a code or (Cast-1) a name;
// BatchNormalization with spatial=0; Tile-1's repeats (tiles, axis inputs); Upsample-1's scales.
Expr legacy_binary_operand(NodeContext& c);
Expr legacy_prelu_slope(NodeContext& c);
DataType cast_target(NodeContext& c);
Expr batch_norm_per_feature(NodeContext& c);
std::vector<int64_t> legacy_tile_reps(NodeContext& c);
std::vector<double> legacy_upsample_scales(NodeContext& c);

}  // namespace kiln::relay::onnx_frontend
