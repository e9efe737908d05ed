// realize_integer_ops: a float conv or dense whose operands are dequantized int8 values becomes
// the integer op on the int8 values, its int32 sums dequantized once per output:
//
//   conv2d(dequantize(xq, xs, xzp), dequantize(wq, ws, 0))
//     = dequantize(conv2d_integer(xq, wq, xzp, sums(wq)), xs * ws, axis=1)
//
// exactly in real arithmetic (the sums are exact in int32; float rounding differs only in the
// order of the scalings). The bias and a following quantize stay as they are: fused into the
// integer kernel's tail, they requantize its output in registers, as QLinearConv does. dense
// alike (its scale along the last axis), and matmul with a constant 2-D B (transposed to dense's
// [N, K]). Required: per-tensor data scale and zero point, int8 weights with zero points 0
// (symmetric, as ONNX Runtime's quantizer makes them), per-tensor or per-output weight scales,
// 2-d convs of one group or depthwise (groups = channels). Anything else keeps the float op on
// dequantized values.
#include <optional>

#include "kiln/relay/transforms.h"
#include "kiln/support/error.h"

namespace kiln::relay {

namespace {

// dequantize(q, scale, zero point) with its operands: q any expression, the rest constants.
struct Dequantized {
  Expr q;
  std::vector<double> scale;  // one value (per tensor) or one per entry along `axis`
  std::vector<double> zero_point;
  int64_t axis = 0;
};

std::optional<Dequantized> match_dequantize(const Expr& e) {
  const auto* c = e.as<CallNode>();
  if (!c || c->op_name() != "dequantize") return std::nullopt;
  const HostTensor* s = constant_value(c->args[1]);
  if (!s) return std::nullopt;
  Dequantized d{c->args[0], s->to_doubles(), {0.0}, c->attrs.get_int("axis", 0)};
  if (c->args.size() > 2) {
    const HostTensor* zp = constant_value(c->args[2]);
    if (!zp) return std::nullopt;
    d.zero_point = zp->to_doubles();
  }
  return d;
}

bool all_zero(const std::vector<double>& v) {
  for (double x : v)
    if (x != 0.0) return false;
  return true;
}

// The data side: int8/uint8 values with one scale and one zero point.
bool per_tensor_data(const Dequantized& x) {
  DataType t = x.q.tensor_type().dtype;
  return (t == DataType::i8() || t == DataType::u8()) && x.scale.size() == 1 && x.zero_point.size() == 1;
}

// The weight side: constant int8 [O, ...], zero points 0, scales per tensor or along axis 0.
const HostTensor* symmetric_weight(const Dequantized& w, int64_t outputs_axis) {
  const HostTensor* q = constant_value(w.q);
  if (!q || q->dtype() != DataType::i8() || !all_zero(w.zero_point)) return nullptr;
  if (w.scale.size() != 1 && (w.axis != outputs_axis || static_cast<int64_t>(w.scale.size()) != q->shape()[outputs_axis]))
    return nullptr;
  return q;
}

Expr scalar_constant(DataType t, double v) { return make_constant(HostTensor::scalar(t, v)); }

// dequantize(acc, x scale * w scale per output) along `axis` of the int32 result.
Expr dequantize_sums(const Expr& acc, const Dequantized& x, const Dequantized& w, int64_t outputs, int64_t axis,
                     const std::string& name) {
  std::vector<double> scale(static_cast<size_t>(outputs));
  for (int64_t o = 0; o < outputs; ++o) {
    // As ONNX Runtime's QLinearConv: the product of the two float scales, rounded to float.
    scale[o] = static_cast<float>(static_cast<float>(x.scale[0]) * static_cast<float>(w.scale[w.scale.size() == 1 ? 0 : o]));
  }
  Expr s = make_constant(HostTensor::from_doubles(DataType::f32(), {outputs}, scale));
  return make_call("dequantize", {acc, s}, Attrs().set_int("axis", axis), name);
}

// A per-tensor dequantize, or a reshape of one (a Flatten before a Gemm): the reshape moves
// onto the int8 values, which a per-tensor scale and zero point leave the same.
std::optional<Dequantized> match_data_through_reshape(const Expr& e) {
  const auto* c = e.as<CallNode>();
  if (!c || c->op_name() != "reshape") return match_dequantize(e);
  auto x = match_dequantize(c->args[0]);
  if (!x || !per_tensor_data(*x)) return std::nullopt;
  x->q = make_call("reshape", {x->q}, c->attrs, c->name);
  return x;
}

class IntegerRealizer : public ExprMutator {
 protected:
  Expr rewrite_call(const CallNode* op, const Expr& self, std::vector<Expr> args) override {
    Expr e = ExprMutator::rewrite_call(op, self, args);
    const auto* c = e.as<CallNode>();
    const auto* t = c ? c->type.as<TensorTypeNode>() : nullptr;  // not a tuple (split)
    if (!t || t->dtype != DataType::f32()) return e;
    const std::string& name = c->op_name();
    if (name == "nn.conv2d") return conv(c).value_or(e);
    if (name == "nn.dense" || name == "nn.matmul") return dense(c, name == "nn.matmul", t->rank()).value_or(e);
    return e;
  }

 private:
  std::optional<Expr> conv(const CallNode* c) {
    auto x = match_dequantize(c->args[0]);
    auto w = match_dequantize(c->args[1]);
    if (!x || !w || !per_tensor_data(*x)) return std::nullopt;
    const int64_t groups = c->attrs.get_int("groups"), channels = x->q.tensor_type().shape[1];
    const bool depthwise = groups == channels && w->q.tensor_type().shape[1] == 1;
    if (groups != 1 && !depthwise) return std::nullopt;
    const HostTensor* wq = symmetric_weight(*w, 0);
    if (!wq) return std::nullopt;
    DataType xt = x->q.tensor_type().dtype;
    IntegerWeight iw = integer_weight(*wq, 0);
    Expr acc = make_call("nn.conv2d_integer", {x->q, c->args[1].as<CallNode>()->args[0],
                                               scalar_constant(xt, x->zero_point[0]), make_constant(iw.sums)},
                         c->attrs, c->name);
    return dequantize_sums(acc, *x, *w, wq->shape()[0], 1, c->name);
  }

  // dense(x, w [N, K]) or matmul(x, w [K, N]) with a constant 2-D w; the result has `rank` dims.
  std::optional<Expr> dense(const CallNode* c, bool kn, int64_t rank) {
    auto x = match_data_through_reshape(c->args[0]);
    auto w = match_dequantize(c->args[1]);
    if (!x || !w || !per_tensor_data(*x) || x->q.tensor_type().rank() < 2 || w->q.tensor_type().rank() != 2)
      return std::nullopt;
    const HostTensor* wq = symmetric_weight(*w, kn ? 1 : 0);
    if (!wq) return std::nullopt;
    IntegerWeight iw = integer_weight(*wq, kn ? 1 : 0);
    Expr weight = kn ? make_constant(iw.weight) : c->args[1].as<CallNode>()->args[0];
    DataType xt = x->q.tensor_type().dtype;
    Expr acc = make_call("nn.dense_integer",
                         {x->q, weight, scalar_constant(xt, x->zero_point[0]), make_constant(iw.sums)}, Attrs(), c->name);
    return dequantize_sums(acc, *x, *w, iw.weight.shape()[0], rank - 1, c->name);
  }
};

}  // namespace

IntegerWeight integer_weight(const HostTensor& w, int64_t output_axis) {
  KILN_CHECK(w.dtype() == DataType::i8() && w.rank() >= 2 && (output_axis == 0 || (output_axis == 1 && w.rank() == 2)))
      << "integer_weight: " << w.type().str() << " along axis " << output_axis;
  HostTensor nk = w;
  if (output_axis == 1) {  // [K, N] -> [N, K]
    const int64_t k = w.shape()[0], n = w.shape()[1];
    std::vector<uint8_t> bytes(static_cast<size_t>(k * n));
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n; ++j) bytes[j * k + i] = w.data()[i * n + j];
    nk = HostTensor(w.dtype(), {n, k}, std::move(bytes));
  }
  const int64_t o = nk.shape()[0], per = nk.numel() / o;
  const auto* v = nk.data_as<int8_t>();
  std::vector<double> sums(static_cast<size_t>(o), 0.0);
  for (int64_t i = 0; i < o; ++i)
    for (int64_t j = 0; j < per; ++j) sums[i] += v[i * per + j];
  return {nk, HostTensor::from_doubles(DataType::i32(), {o}, sums)};
}

Module realize_integer_ops(const Module& m) {
  Expr body = IntegerRealizer().mutate(m.body);
  return body.same_as(m.body) ? m : infer_types(m.with_body(body));
}

}  // namespace kiln::relay
