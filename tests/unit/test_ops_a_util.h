// Helpers of the op table tests (elementwise, injective, reductions): lower relay calls through
// their lowering (lower/op_lowering.h),
// schedule them (naive or with the default templates), compile through the whole pipeline, run
// on HostTensors of any dtype, and compare with references.
#pragma once

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/pipeline.h"
#include "kiln/relay/evaluate.h"
#include "kiln/relay/expr.h"
#include "kiln/relay/module.h"
#include "kiln/relay/op.h"
#include "kiln/runtime/ndarray.h"
#include "schedule/templates/injective_cpu.h"
#include "schedule/templates/reduction_cpu.h"
#include "kiln/lower/op_lowering.h"

namespace kiln::opsa {

using relay::DataType;
using relay::HostTensor;
using relay::Shape;

inline DLDataType to_dl(DataType t) {
  if (t.is_bool()) return runtime::dtype_bool();
  uint8_t code = t.is_int() ? kDLInt : t.is_uint() ? kDLUInt : t.is_bfloat() ? kDLBfloat : kDLFloat;
  return runtime::make_dtype(code, static_cast<uint8_t>(t.bits));
}

inline runtime::NDArray to_ndarray(const HostTensor& h, const std::vector<int64_t>& te_shape) {
  runtime::NDArray a = runtime::NDArray::empty(te_shape, to_dl(h.dtype()));
  a.copy_from_bytes(h.data(), h.nbytes());
  return a;
}

inline HostTensor from_ndarray(const runtime::NDArray& a, DataType t, const Shape& shape) {
  return HostTensor(t, shape, a.raw_data());
}

// Uniform values in [lo, hi] (integers: rounded; bool: 0/1), deterministic per seed.
inline HostTensor random_tensor(DataType t, const Shape& shape, unsigned seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(relay::num_elements(shape)));
  for (double& x : v) {
    x = dist(gen);
    if (!t.is_floating()) x = std::round(x);
    if (t.is_bool()) x = x > (lo + hi) / 2;
  }
  return HostTensor::from_doubles(t, shape, v);
}

enum class Sched { Naive, Default };

// Schedules the group of `outs` with the default template its ops call for.
inline void apply_default(schedule::Schedule& s, const std::vector<te::Tensor>& outs) {
  schedule::Config cfg;
  bool has_reduction = false;
  for (const auto& st : s.stages()) {
    const auto* c = st->op.as<te::ComputeOpNode>();
    has_reduction = has_reduction || (c && c->is_reduction());
  }
  if (has_reduction) schedule::reduction_cpu(s, outs, Target::host(), cfg);
  else schedule::injective_cpu(s, outs, Target::host(), cfg);
}

// Compiles `outs` (computed from placeholders `ins`) and runs it on `values` (one per input).
inline std::vector<HostTensor> build_and_run(const std::vector<te::Tensor>& ins, const std::vector<te::Tensor>& outs,
                                             const std::vector<HostTensor>& values,
                                             const std::vector<relay::Type>& out_types, Sched mode,
                                             std::vector<std::string>* notes = nullptr) {
  auto s = schedule::create(outs);
  if (mode == Sched::Default) apply_default(s, outs);
  std::vector<te::Tensor> args = ins;
  args.insert(args.end(), outs.begin(), outs.end());
  kiln::PipelineOptions opts;
  opts.notes = notes;
  codegen::Module mod = kiln::build(s, args, Target::host(), "kernel", opts);
  std::vector<runtime::NDArray> arrays;
  for (size_t i = 0; i < ins.size(); ++i) arrays.push_back(to_ndarray(values[i], ins[i].shape()));
  for (size_t i = 0; i < outs.size(); ++i) {
    const auto* tt = out_types[i].as<relay::TensorTypeNode>();
    arrays.push_back(runtime::NDArray::zeros(outs[i].shape(), to_dl(tt->dtype)));
  }
  std::vector<DLTensor*> dl;
  for (auto& a : arrays) dl.push_back(a.dltensor());
  mod.run("kernel", dl);
  std::vector<HostTensor> result;
  for (size_t i = 0; i < outs.size(); ++i) {
    const auto* tt = out_types[i].as<relay::TensorTypeNode>();
    result.push_back(from_ndarray(arrays[ins.size() + i], tt->dtype, tt->shape));
  }
  return result;
}

inline lower::OpLowering lowering_of(const std::string& op) {
  const lower::OpLowering* f = lower::find_op_lowering(op);
  if (!f) throw Error("no lowering of op '" + op + "'");
  return *f;
}

// The ops these tests cover: lowered elementwise, broadcast, injective and reduction ops, sorted.
inline std::vector<std::string> part_a_ops() {
  std::vector<std::string> out;
  for (const std::string& name : lower::lowered_ops())
    if (relay::get_op(name).pattern <= relay::OpPattern::CommReduce) out.push_back(name);
  return out;
}

inline std::vector<relay::Type> fields_of(const relay::Type& t) {
  if (const auto* tt = t.as<relay::TupleTypeNode>()) return tt->fields;
  return {t};
}

struct CallResult {
  relay::Expr call;                // the typed relay call
  std::vector<HostTensor> outputs;  // one per tuple field
};

// Builds the call op(inputs..., attrs), lowers, schedules, compiles and runs it.
inline CallResult run_call(const std::string& op, const std::vector<HostTensor>& inputs, const relay::Attrs& attrs,
                           Sched mode) {
  std::vector<relay::Expr> vars;
  std::vector<te::Tensor> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    vars.push_back(relay::make_var("in" + std::to_string(i), inputs[i].type()));
    ins.push_back(te::placeholder(lower::te_shape(inputs[i].type()), inputs[i].dtype(), "in" + std::to_string(i)));
  }
  relay::Expr call = relay::make_call(op, vars, attrs);
  std::vector<te::Tensor> outs = lowering_of(op)(ins, attrs, call.type());
  return {call, build_and_run(ins, outs, inputs, fields_of(call.type()), mode)};
}

// The relay evaluator's value of a call (a reference independent of te and codegen).
inline HostTensor evaluate(const relay::Expr& call, const std::vector<HostTensor>& inputs) {
  auto v = relay::evaluate_call(*call.as<relay::CallNode>(), inputs);
  if (!v) throw Error("the relay evaluator cannot compute " + call.as<relay::CallNode>()->op_name());
  return *v;
}

// Empty when `got` matches `want` (same type; integers and bools exactly, floats within
// atol + rtol * |want|, NaN matching NaN); otherwise a description of the worst element.
inline std::string mismatch(const HostTensor& got, const HostTensor& want, double rtol, double atol) {
  if (got.type() != want.type()) return "type " + got.type().str() + " vs " + want.type().str();
  std::ostringstream os;
  if (!want.dtype().is_floating()) {
    auto g = got.to_int64s(), w = want.to_int64s();
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i] != w[i]) {
        os << "element " << i << ": got " << g[i] << ", want " << w[i];
        return os.str();
      }
    return "";
  }
  auto g = got.to_doubles(), w = want.to_doubles();
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) || std::isnan(g[i])) {
      if (std::isnan(w[i]) != std::isnan(g[i])) return "NaN mismatch at element " + std::to_string(i);
      continue;
    }
    if (std::isinf(w[i]) || std::isinf(g[i])) {
      if (g[i] != w[i]) return "inf mismatch at element " + std::to_string(i);
      continue;
    }
    double r = std::fabs(g[i] - w[i]) / (atol + rtol * std::fabs(w[i]));
    if (r > worst) worst = r, at = i;
  }
  if (worst <= 1) return "";
  os << "element " << at << ": got " << g[at] << ", want " << w[at] << " (" << worst << "x the tolerance)";
  return os.str();
}

// Calls f(flat, coords) for every element of `shape`, row-major.
template <typename F>
void for_each_index(const Shape& shape, F f) {
  int64_t n = relay::num_elements(shape);
  std::vector<int64_t> c(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, c);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++c[d] < shape[d]) break;
      c[d] = 0;
    }
  }
}

inline int64_t flat_index(const Shape& shape, const std::vector<int64_t>& c) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + c[d];
  return f;
}

}  // namespace kiln::opsa
