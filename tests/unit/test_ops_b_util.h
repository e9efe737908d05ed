// Helpers of the nn op tests: lower one relay call as the anchor of its own group (the target's
// strategy: its lowering and template, the weight read unpacked), schedule it (naive, or with
// the strategy's template), compile it through the whole pipeline and run it on HostTensors,
// and compare element by element.
#pragma once

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/pipeline.h"
#include "kiln/relay/expr.h"
#include "kiln/relay/op.h"
#include "kiln/runtime/ndarray.h"
#include "schedule/templates/anchor_cpu.h"
#include "kiln/lower/op_lowering.h"
#include "kiln/lower/strategy.h"

namespace kiln::opsb_test {

using relay::DataType;
using relay::HostTensor;
using relay::Shape;

inline DLDataType to_dl(DataType t) {
  if (t.is_bool()) return runtime::dtype_bool();
  uint8_t code = t.is_float() ? kDLFloat : t.is_bfloat() ? kDLBfloat : t.is_uint() ? kDLUInt : kDLInt;
  return runtime::make_dtype(code, t.bits);
}

inline HostTensor random_tensor(DataType t, const Shape& s, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::vector<double> v(relay::num_elements(s));
  if (t.is_floating()) {
    std::uniform_real_distribution<double> d(lo, hi);
    for (double& x : v) x = d(rng);
  } else {
    std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
    for (double& x : v) x = static_cast<double>(d(rng));
  }
  return HostTensor::from_doubles(t, s, v);
}

struct Lowered {
  relay::Expr call;
  Target target = Target::host();
  lower::Strategy strategy;  // the call's strategy on `target`, as the anchor of its own group
  std::vector<te::Tensor> inputs, outputs;
  std::vector<te::Tensor> args() const {
    std::vector<te::Tensor> a = inputs;
    a.insert(a.end(), outputs.begin(), outputs.end());
    return a;
  }
  // The strategy's template for the call, with cfg's knobs.
  schedule::Schedule template_schedule(schedule::Config& cfg) const {
    return strategy.schedule(outputs, outputs[0], target, cfg);
  }
};

// The attributes of nn.conv1d/conv2d and their transposes.
inline relay::Attrs conv_attrs(std::vector<int64_t> strides, std::vector<int64_t> pads, std::vector<int64_t> dilation,
                               int64_t groups) {
  relay::Attrs a;
  a.set_ints("strides", strides).set_ints("padding", pads).set_ints("dilation", dilation).set_int("groups", groups);
  return a;
}

inline Shape te_shape(const Shape& s) { return s.empty() ? Shape{1} : s; }

// Builds op(inputs of `types`, attrs) in the graph IR and lowers it as its target's strategy
// does (the op table's lowering where the strategy keeps it).
inline Lowered lower_call(const std::string& op, const std::vector<relay::Type>& types, relay::Attrs attrs,
                          const Target& target = Target::host()) {
  Lowered l;
  l.target = target;
  std::vector<relay::Expr> vars;
  for (size_t i = 0; i < types.size(); ++i) {
    vars.push_back(relay::make_var("in" + std::to_string(i), types[i]));
    const auto* tt = types[i].as<relay::TensorTypeNode>();
    l.inputs.push_back(te::placeholder(te_shape(tt->shape), tt->dtype, "in" + std::to_string(i)));
  }
  l.call = relay::make_call(op, vars, std::move(attrs), "node");
  const auto* c = l.call.as<relay::CallNode>();
  relay::FusedGroup group;
  group.calls = {l.call};
  group.root = group.anchor = l.call;
  group.pattern = c->op->pattern;
  group.inputs = vars;
  l.strategy = lower::select_strategy(group, target);
  const lower::OpLowering* table = lower::find_op_lowering(op);
  const lower::OpLowering& f = l.strategy.lower ? l.strategy.lower : *table;
  l.outputs = f(l.inputs, c->attrs, c->type);
  return l;
}

// lower_call's call with its weight (argument 1) a constant packed at compile time, as
// lower::prepack_weights does: inputs are the data and the packed weight, *packed its value.
inline Lowered lower_packed(const std::string& op, const relay::Type& data, const HostTensor& weight, relay::Attrs attrs,
                            HostTensor* packed, const Target& target = Target::host()) {
  Lowered l = lower_call(op, {data, weight.type()}, std::move(attrs), target);
  if (!l.strategy.packing) throw Error(op + ": its strategy packs no weight");
  *packed = l.strategy.packing->pack(weight);
  l.inputs[1] = te::placeholder(packed->shape(), packed->dtype(), "packed");
  const auto* c = l.call.as<relay::CallNode>();
  l.outputs = l.strategy.packing->lower_packed(l.inputs, c->attrs, c->type);
  return l;
}

// Runs a schedule of `l` on `inputs`; returns the outputs in the call's shapes.
inline std::vector<HostTensor> run(const schedule::Schedule& s, const Lowered& l, const std::vector<HostTensor>& inputs,
                                   std::vector<std::string>* notes = nullptr) {
  kiln::PipelineOptions opts;
  opts.notes = notes;
  codegen::Module mod = kiln::build(s, l.args(), Target::host(), "kernel", opts);
  std::vector<runtime::NDArray> arrays;
  for (size_t i = 0; i < inputs.size(); ++i) {
    runtime::NDArray a = runtime::NDArray::empty(l.inputs[i].shape(), to_dl(inputs[i].dtype()));
    a.copy_from_bytes(inputs[i].data(), inputs[i].nbytes());
    arrays.push_back(a);
  }
  for (const te::Tensor& o : l.outputs) arrays.push_back(runtime::NDArray::zeros(o.shape(), to_dl(o.dtype())));
  std::vector<DLTensor*> dl;
  for (auto& a : arrays) dl.push_back(a.dltensor());
  mod.run("kernel", dl);
  std::vector<relay::Type> out_types;
  if (!l.call.defined()) {
    for (const te::Tensor& o : l.outputs) out_types.push_back(relay::tensor_type(o.dtype(), o.shape()));
  } else if (const auto* tup = l.call->type.as<relay::TupleTypeNode>()) {
    out_types = tup->fields;
  } else {
    out_types.push_back(l.call->type);
  }
  std::vector<HostTensor> outs;
  for (size_t i = 0; i < l.outputs.size(); ++i) {
    const runtime::NDArray& a = arrays[inputs.size() + i];
    const auto* tt = out_types[i].as<relay::TensorTypeNode>();
    outs.emplace_back(tt->dtype, tt->shape, a.raw_data());
  }
  return outs;
}

// "" when every element is within atol + rtol * |want|; else the worst offender.
inline std::string compare(const HostTensor& got, const HostTensor& want, double rtol, double atol) {
  std::ostringstream os;
  if (got.shape() != want.shape()) {
    os << "shape " << relay::shape_str(got.shape()) << " vs " << relay::shape_str(want.shape());
    return os.str();
  }
  std::vector<double> g = got.to_doubles(), w = want.to_doubles();
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    bool equal = g[i] == w[i];
    bool both_nan = std::isnan(g[i]) && std::isnan(w[i]);
    bool same_inf = std::isinf(g[i]) && g[i] == w[i];
    double r = equal || both_nan || same_inf ? 0 : std::fabs(g[i] - w[i]) / (atol + rtol * std::fabs(w[i]));
    if (std::isnan(r)) r = 1e30;
    if (r > worst) {
      worst = r;
      at = i;
    }
  }
  if (worst <= 1.0) return "";
  os << "element " << at << ": got " << g[at] << ", want " << w[at] << " (" << worst << "x the tolerance)";
  return os.str();
}

// Lowers op, runs it under the naive schedule and under the anchor template, and compares both
// with `want`. Returns "" or what differed.
inline std::string check_op(const std::string& op, const std::vector<HostTensor>& inputs, const relay::Attrs& attrs,
                            const std::vector<HostTensor>& want, double rtol, double atol) {
  std::vector<relay::Type> types;
  for (const auto& t : inputs) types.push_back(t.type());
  Lowered l = lower_call(op, types, attrs);
  schedule::Config cfg;
  std::vector<std::pair<std::string, schedule::Schedule>> scheds = {
      {"naive", schedule::create(l.outputs)}, {"template", l.template_schedule(cfg)}};
  for (auto& [which, s] : scheds) {
    std::vector<HostTensor> got = run(s, l, inputs);
    for (size_t i = 0; i < want.size(); ++i) {
      std::string diff = compare(got[i], want[i], rtol, atol);
      if (!diff.empty()) return op + " (" + which + ", output " + std::to_string(i) + "): " + diff;
    }
  }
  return "";
}

}  // namespace kiln::opsb_test
