// The ONNX frontend: a .onnx model (opsets 1 to 21 for the ops it supports, with the old attribute
// forms of opsets 1 to 6) to a relay::Module with static shapes, and TensorProto .pb files to and
// from HostTensors. Control flow decided at compile time (If, Loop, Scan) and recurrent layers
// (RNN, GRU, LSTM) are unrolled into the graph.
//
// Newer opsets import too, with the semantics of opset 21: what changed after it is new element
// types and new operators, which fail as unsupported.
//
// Errors are kiln::Error naming the culprit: the file (missing, unreadable, not a model), the
// node and its op type (bad attributes, shape mismatches). Valid models that use what kiln does
// not implement throw UnsupportedError (kiln/relay/error.h): for operators, one message listing
// every unsupported op type with its node names; also element types (float8, string, ...) and
// training-only modes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/relay/module.h"
#include "kiln/support/error.h"

namespace kiln::relay {

struct OnnxImportOptions {
  // Shapes for graph inputs, by name: needed for inputs with symbolic dims ("batch"), and
  // allowed to confirm static ones (a mismatch with a static dim is an error).
  std::map<std::string, Shape> input_shapes;
  // Values of graph inputs known at compile time, by name. Where a node needs an input as a
  // constant (Reshape's shape, Slice's starts, Pad's pads, ...) and that input is a graph input,
  // its value is taken from here; the input stays a graph input for its other uses. The value
  // also fixes the input's shape. Without it, such a model fails: kiln compiles static shapes.
  std::map<std::string, HostTensor> input_values;
  // Graph inputs bound to constants (static-shape specialization, as binding params in TVM):
  // every use reads the value and the input leaves the module's signature, so the compiled
  // module takes only the remaining inputs. `kiln compile --bind` and `kiln check` fill it.
  std::map<std::string, HostTensor> bind;
  // Calls whose inputs are all constants and whose result has at most this many elements are
  // evaluated during import: this is what makes shape arithmetic static. Bigger ones (weight
  // transposes) are left to the fold_constants pass.
  int64_t fold_limit = 1 << 16;
};

// Thrown (a kiln::Error) when a node needs a value at compile time (a Pad's pads, a Slice's
// starts, ...) that depends on graph inputs which are not bound: `inputs` names them, so a
// caller can bind exactly those (OnnxImportOptions::bind) and import again.
class CompileTimeInputError : public Error {
 public:
  CompileTimeInputError(const std::string& msg, std::vector<std::string> inputs)
      : Error(msg), inputs_(std::move(inputs)) {}
  const std::vector<std::string>& inputs() const { return inputs_; }

 private:
  std::vector<std::string> inputs_;
};

// Imports a model file.
Module from_onnx(const std::string& path, const OnnxImportOptions& opts = {});
// Imports a serialized ModelProto; `origin` names it in messages. `model_dir` is where
// external tensor data files are looked up (empty: the current directory); a location that
// leaves it (an absolute path, "..", a symlink pointing out) is an error.
Module from_onnx_bytes(const std::string& bytes, const std::string& origin, const OnnxImportOptions& opts = {},
                       const std::string& model_dir = "");

// The model's graph inputs that are not initializers, in graph order (the order of the
// input_N.pb files of a test data set), without importing the graph.
std::vector<std::string> onnx_graph_inputs(const std::string& path);
// Those of them whose declared shape has a symbolic dim or is missing: the inputs that need
// OnnxImportOptions::input_shapes (or a value) to import.
std::vector<std::string> onnx_symbolic_inputs(const std::string& path);

// The ONNX op types the importer converts, sorted ("Abs", "Add", ...).
std::vector<std::string> onnx_supported_ops();

struct NamedTensor {
  std::string name;
  HostTensor value;
};
// Reads a serialized TensorProto (raw_data or typed fields; float, double, float16, bfloat16,
// int8..int64, uint8..uint64 and bool).
NamedTensor load_tensor_pb(const std::string& path);
// The same from the bytes of one; `origin` names it in messages, and external data is looked up
// in `dir` (empty: the current directory) and must stay inside it.
NamedTensor parse_tensor_pb(const std::string& bytes, const std::string& origin, const std::string& dir = "");
// Writes one as a TensorProto with raw_data.
void save_tensor_pb(const std::string& path, const HostTensor& value, const std::string& name);

}  // namespace kiln::relay
