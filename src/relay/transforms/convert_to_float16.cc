// convert_to_float16: a float32 model computed in float16 storage. Float32 inputs are cast to
// float16 where they enter, float32 constants (weights, biases) become float16 constants, casts
// and fills to float32 inside the graph produce float16 instead, and float16 outputs are cast
// back, so the module keeps its float32 interface. The kernels keep float32 where it matters:
// convolutions, products and reductions of float16 sum in float32 (te/ops: compute_type), and
// elementwise math of float16 computes in float32 per element; only what is stored between
// kernels, and the weights, are float16 (half the bytes; tensor cores on CUDA sm_80+).
// Quantized models (quantize / dequantize, whose scales are float32 by definition) are refused.
#include "kiln/relay/transforms.h"
#include "kiln/support/error.h"

namespace kiln::relay {

namespace {

class Float16Converter : public ExprMutator {
 protected:
  Expr rewrite_var(const VarNode*, const Expr& self) override {
    const auto* t = self.type().as<TensorTypeNode>();
    if (!t || t->dtype != DataType::f32()) return self;
    return make_call("cast", {self}, Attrs().set_str("dtype", "float16"));
  }

  Expr rewrite_constant(const ConstantNode* op, const Expr& self) override {
    if (op->value.dtype() != DataType::f32()) return self;
    return make_constant(HostTensor::from_doubles(DataType::f16(), op->value.shape(), op->value.to_doubles()));
  }

  Expr rewrite_call(const CallNode* op, const Expr& self, std::vector<Expr> args) override {
    const std::string& name = op->op_name();
    KILN_USER_CHECK(name != "quantize" && name != "dequantize")
        << "--precision fp16: node '" << op->name << "' (" << name
        << ") is part of a quantized model; quantized models keep their own precision";
    if (op->attrs.has("dtype") && op->attrs.get_str("dtype", "") == "float32") {
      Attrs a = op->attrs;
      a.set_str("dtype", "float16");
      return make_call(name, std::move(args), a, op->name);
    }
    return ExprMutator::rewrite_call(op, self, std::move(args));
  }
};

}  // namespace

Module convert_to_float16(const Module& m) {
  Float16Converter conv;
  std::vector<Expr> outs;
  for (const Expr& o : m.outputs()) {
    Expr e = conv.mutate(o);
    const auto* before = o.type().as<TensorTypeNode>();
    if (before && before->dtype == DataType::f32()) e = make_call("cast", {e}, Attrs().set_str("dtype", "float32"));
    outs.push_back(e);
  }
  return infer_types(Module::make(m.params, outs, m.output_names));
}

}  // namespace kiln::relay
