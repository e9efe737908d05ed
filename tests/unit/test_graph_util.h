// Helpers of the graph-compiler tests: graph builders, a plain-loop conv reference, and a runner
// of a compiled model's plan kernel by kernel (the lowerings are the lowering layer's own).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kiln/codegen/build.h"
#include "kiln/compiler.h"
#include "kiln/lower/schedule_group.h"
#include "kiln/relay/op.h"
#include "kiln/relay/transforms.h"
#include "kiln/support/error.h"

namespace kiln::graph_test {

using namespace kiln::relay;
namespace relay = ::kiln::relay;  // so tests can say relay::Expr after `using namespace graph_test`

inline relay::Expr var(const std::string& n, Shape s) { return make_var(n, tensor_type(DataType::f32(), s)); }
inline relay::Expr cst(Shape s, std::vector<double> v) {
  return make_constant(HostTensor::from_doubles(DataType::f32(), s, v));
}
inline relay::Expr scalar(double v) { return make_constant(HostTensor::scalar(DataType::f32(), v)); }
inline relay::Expr call(const std::string& op, std::vector<relay::Expr> args, Attrs a = {}, std::string name = "") {
  return make_call(op, std::move(args), a, std::move(name));
}
inline Attrs conv_attrs(int64_t pad = 1) {
  return Attrs().set_ints("strides", {1, 1}).set_ints("padding", {pad, pad, pad, pad}).set_ints("dilation", {1, 1}).set_int("groups", 1);
}
inline std::vector<double> wave(int64_t n, double scale, double phase) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = std::sin(static_cast<double>(i) * 0.731 + phase) * scale;
  return v;
}

// Plain NCHW convolution (groups 1, dilation 1, stride 1, symmetric padding `pad`) in double.
inline std::vector<double> conv_nchw_ref(const std::vector<double>& x, const Shape& xs, const std::vector<double>& w,
                                         const Shape& ws, int64_t pad) {
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], KH = ws[2], KW = ws[3];
  int64_t OH = H + 2 * pad - KH + 1, OW = W + 2 * pad - KW + 1;
  std::vector<double> y(N * O * OH * OW, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t ki = 0; ki < KH; ++ki)
              for (int64_t kj = 0; kj < KW; ++kj) {
                int64_t ii = i + ki - pad, jj = j + kj - pad;
                if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
                acc += x[((n * C + c) * H + ii) * W + jj] * w[((o * C + c) * KH + ki) * KW + kj];
              }
          y[((n * O + o) * OH + i) * OW + j] = acc;
        }
  return y;
}

// Executes a compiled model as the graph executor would, in this process: kernels JIT-built,
// storages and weights laid out as the plan says, nodes run in order. Checks each node's kernel
// and argument count against the kernels; REQUIREs every kernel to return 0.
inline std::map<std::string, HostTensor> run_plan(const CompiledModel& c,
                                                  const std::map<std::string, HostTensor>& inputs) {
  const auto& plan = c.plan;
  codegen::Module mod = codegen::build(c.kernels);
  auto aligned = [](int64_t bytes) {
    return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(std::aligned_alloc(64, (std::max<int64_t>(bytes, 1) + 63) / 64 * 64)),
                                    std::free);
  };
  std::vector<std::shared_ptr<uint8_t>> storages;
  for (int64_t b : plan.storage_bytes) storages.push_back(aligned(b));
  auto weights = aligned(plan.weights_bytes);
  if (!c.weights.empty()) std::memcpy(weights.get(), c.weights.data(), c.weights.size());
  auto ptr = [&](int e) {
    const auto& entry = plan.entries.at(e);
    return (entry.is_constant ? weights.get() : storages.at(entry.storage).get()) + entry.offset;
  };
  auto dtype = [](DLDataType t) {
    if (t.code == kDLUInt && t.bits == 1) return DataType::boolean();
    ir::TypeCode code = t.code == kDLInt ? ir::TypeCode::Int : t.code == kDLUInt ? ir::TypeCode::UInt
                        : t.code == kDLBfloat ? ir::TypeCode::BFloat : ir::TypeCode::Float;
    return DataType(code, t.bits);
  };
  for (const auto& io : plan.inputs) {
    const HostTensor& v = inputs.at(io.name);
    const auto& e = plan.entries[io.entry];
    REQUIRE(v.shape() == e.shape);
    REQUIRE(v.dtype() == dtype(e.dtype));
    std::memcpy(ptr(io.entry), v.data(), v.nbytes());
  }
  REQUIRE(plan.nodes.size() == c.kernels.size());
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    const auto& node = plan.nodes[i];
    REQUIRE(node.kernel == c.kernels[i].name);
    REQUIRE(node.args.size() == c.kernels[i].params.size());
    std::vector<void*> args;
    for (int e : node.args) args.push_back(ptr(e));
    INFO("kernel " << node.kernel << " (" << node.label << ")");
    REQUIRE(mod.get_function(node.kernel)(args.data(), static_cast<int32_t>(args.size())) == 0);
  }
  std::map<std::string, HostTensor> out;
  for (const auto& io : plan.outputs) {
    const auto& e = plan.entries[io.entry];
    out[io.name] = HostTensor(dtype(e.dtype), e.shape, ptr(io.entry));
  }
  return out;
}

}  // namespace kiln::graph_test
