// The CPU (llvm) entries of the strategy table: how each op family is computed and scheduled on
// a CPU target. Channel blocks and panel widths are one vector register of the target.
#include <algorithm>
#include <string>

#include "lower/weight_packing.h"
#include "schedule/templates/anchor_cpu.h"
#include "schedule/templates/conv2d_cpu.h"
#include "schedule/templates/dense_cpu.h"
#include "schedule/templates/depthwise_cpu.h"
#include "schedule/templates/gemm_blocking.h"
#include "schedule/templates/injective_cpu.h"
#include "schedule/templates/int8_cpu.h"
#include "schedule/templates/norm_cpu.h"
#include "schedule/templates/pool_cpu.h"
#include "schedule/templates/reduction_cpu.h"
#include "schedule/templates/winograd_cpu.h"
#include "kiln/te/ops/nn_dense.h"
#include "kiln/te/ops/nn_int8.h"
#include "kiln/te/ops/nn_norm.h"
#include "kiln/te/ops/nn_pool.h"
#include "kiln/te/ops/nn_winograd.h"
#include "op_table.h"
#include "strategy_table.h"

namespace kiln::lower::detail {

namespace {

using relay::FusedGroup;
using Inputs = std::vector<te::Tensor>;

const relay::CallNode& anchor_call(const FusedGroup& g) { return *g.anchor.as<relay::CallNode>(); }
const relay::TensorTypeNode& tensor_type(const relay::Type& t) { return *t.as<relay::TensorTypeNode>(); }

// A template for the group's anchor; the rest of the group inlines around it.
Strategy anchored(const char* name, schedule::AnchorTemplate tmpl) {
  Strategy s;
  s.template_name = name;
  s.schedule = [tmpl](const std::vector<te::Tensor>& outs, const te::Tensor& anchor, const Target& t,
                      schedule::Config& cfg) { return schedule::schedule_anchor_cpu(outs, anchor, tmpl, t, cfg); };
  return s;
}

// A one-output anchor lowering from a function of the inputs and the call's attributes.
OpLowering single_with_attrs(std::function<te::Tensor(const Inputs&, const relay::Attrs&)> f) {
  return [f](const Inputs& in, const relay::Attrs& a, const relay::Type&) { return std::vector<te::Tensor>{f(in, a)}; };
}

// A one-output anchor lowering from a function of the inputs.
OpLowering single(std::function<te::Tensor(const Inputs&)> f) {
  return [f](const Inputs& in, const relay::Attrs&, const relay::Type&) { return std::vector<te::Tensor>{f(in)}; };
}

// A conv Winograd F(2x2, 3x3) pays for, float or integer: 3x3, stride 1, dilation 1, one group,
// at least 8 input channels, a 2x2 output at least, and a transformed weight of at most 4 MiB
// (`u_bytes`; larger ones stream from the last-level cache on every call and lose to the direct
// conv: resnet18's 512-channel layer, 16 MiB of floats, measured 1.47 ms against 0.95 on a
// 2-core AVX-512 Xeon).
bool winograd_shape_pays(const relay::CallNode& call, const ConvNdAttrs& a, int64_t u_bytes) {
  const auto& w = tensor_type(call.args[1]->type);
  const auto& out = tensor_type(call.type);
  if (a.dims() != 2 || a.groups != 1 || w.shape[2] != 3 || w.shape[3] != 3) return false;
  for (size_t i = 0; i < 2; ++i)
    if (a.strides[i] != 1 || a.dilation[i] != 1) return false;
  return out.shape[2] >= 2 && out.shape[3] >= 2 && w.shape[1] >= 8 && u_bytes <= (int64_t{4} << 20);
}

// Winograd for a float32 conv2d, U [16, OC/co, C, co] floats.
bool winograd_pays(const relay::CallNode& call, const ConvNdAttrs& a, int64_t co) {
  const auto& w = tensor_type(call.args[1]->type);
  int64_t oc = w.shape[0], c = w.shape[1];
  return w.dtype == relay::DataType::f32() && winograd_shape_pays(call, a, 16 * c * ((oc + co - 1) / co * co) * 4);
}

Strategy conv(const FusedGroup& g, const Target& t, const StrategyOptions& o) {
  const relay::CallNode& call = anchor_call(g);
  const ConvNdAttrs a = conv_attrs(call.attrs, false);
  const auto& w = tensor_type(call.args[1]->type);
  const int64_t lanes = t.lanes(32), oc = tensor_type(call.type).shape[1];
  const std::string base = call.op_name().substr(3);  // "conv2d"
  if (a.groups > 1 && w.shape[1] == 1) {
    // Depthwise: one input channel per group, a block of output channels would span groups.
    Strategy s = anchored("depthwise", schedule::schedule_depthwise_cpu);
    s.lower = single([a, lanes, base](const Inputs& in) { return te::ops::depthwise_conv_nd(in[0], in[1], a, lanes, "dw" + base); });
    return s;
  }
  const int64_t co = te::ops::conv_channel_block(a.groups == 1 ? oc : oc / a.groups, a.groups, lanes);
  WeightPacking p;
  p.arg = 1;
  if (o.winograd && winograd_pays(call, a, co)) {
    Strategy s = anchored("conv_winograd", schedule::schedule_conv_winograd_cpu);
    s.lower = single([a, co, oc, lanes, base](const Inputs& in) {
      return te::ops::conv2d_winograd_packed(in[0], te::ops::winograd_weight_transform(in[1], co, base), oc, a, lanes, base);
    });
    p.pack = [co](const relay::HostTensor& wt) { return pack_winograd_weight(wt, co); };
    p.lower_packed = single([a, oc, lanes, base](const Inputs& in) {
      return te::ops::conv2d_winograd_packed(in[0], in[1], oc, a, lanes, base);
    });
    s.packing = p;
    return s;
  }
  Strategy s = anchored("conv", schedule::schedule_conv_cpu);
  s.lower = single([a, co, lanes, base](const Inputs& in) { return te::ops::conv_nd(in[0], in[1], a, {co, lanes}, base); });
  p.pack = [groups = a.groups, co](const relay::HostTensor& wt) { return pack_conv_weight(wt, groups, co); };
  p.lower_packed = single([a, oc, lanes, base](const Inputs& in) { return te::ops::conv_nd_packed(in[0], in[1], oc, a, lanes, base); });
  s.packing = p;
  return s;
}

// A product with a weight laid out in panels (dense, or matmul with a constant 2-D B): the
// target's register block (gemm_blocking.h) sets the panel width (one vector), pads the panel
// count to its vectors and the rows to its mr, so every tile is whole: odd N (an LM head's
// 50257 columns) gets zero columns instead of scalar code, M = 128 tiles of 6 rows.
Strategy dense_panels(const relay::CallNode& call, const Target& t, bool kn) {
  const auto& out = tensor_type(call.type);
  const int64_t m = out.shape[out.shape.size() - 2], n = out.shape.back();
  const schedule::RegisterBlock rb = schedule::register_block(t, m, n);
  const te::ops::DenseBlocks blocks{te::ops::dense_panel_width(n, t.lanes(32)), rb.nv, rb.mr, kn};
  Strategy s = anchored("dense", schedule::schedule_dense_cpu);
  s.lower = single([blocks](const Inputs& in) { return te::ops::dense(in[0], in[1], blocks); });
  WeightPacking p;
  p.arg = 1;
  p.pack = [blocks](const relay::HostTensor& wt) {
    return pack_dense_weight(wt, blocks.panel, blocks.panel_group, blocks.weight_kn);
  };
  p.lower_packed = single([n, rows = blocks.rows](const Inputs& in) { return te::ops::dense_packed(in[0], in[1], n, rows); });
  s.packing = p;
  return s;
}

Strategy dense(const FusedGroup& g, const Target& t, const StrategyOptions&) {
  return dense_panels(anchor_call(g), t, false);
}

// numpy matmul: with a constant 2-D B (a projection exported as MatMul) as dense, its B packed
// at compile time; else the matmul template on the operands in place, the rows padded to the
// register block's mr.
Strategy matmul(const FusedGroup& g, const Target& t, const StrategyOptions&) {
  const relay::CallNode& call = anchor_call(g);
  const auto& a = tensor_type(call.args[0]->type);
  const auto& b = tensor_type(call.args[1]->type);
  if (call.args[1].as<relay::ConstantNode>() && b.shape.size() == 2 && a.shape.size() >= 2 && a.dtype == b.dtype)
    return dense_panels(call, t, true);
  Strategy s = anchored("matmul", schedule::schedule_matmul_cpu);
  if (a.shape.size() >= 2 && b.shape.size() >= 2) {
    const auto& out = tensor_type(call.type).shape;
    const int64_t rows = schedule::matmul_register_block(t, out[out.size() - 2], out.back()).mr;
    s.lower = single([rows](const Inputs& in) { return te::ops::batch_matmul(in[0], in[1], rows); });
  }
  return s;
}

// Softmax and layer norm over rows: statistics of the last dim reduced through one partial
// per vector lane (te/ops/nn_norm.h), which the norm template keeps in a register (gpt2_mini's
// 128 x 8 x 128 softmax: 0.42 ms as scalar chains on Zen 4).
Strategy row_norm(const FusedGroup& g, const Target& t, const StrategyOptions&) {
  const std::string op = anchor_call(g).op_name();
  Strategy s = anchored(op == "nn.layer_norm" ? "norm" : "softmax", schedule::schedule_norm_cpu);
  const int64_t lanes = t.lanes(32);
  if (op == "nn.softmax" || op == "nn.log_softmax") {
    bool log = op == "nn.log_softmax";
    s.lower = single_with_attrs([lanes, log](const Inputs& in, const relay::Attrs& a) {
      int64_t axis = a.get_int("axis");
      return log ? te::ops::log_softmax(in[0], axis, "log_softmax", lanes) : te::ops::softmax(in[0], axis, "softmax", lanes);
    });
  } else if (op == "nn.layer_norm") {
    s.lower = single_with_attrs([lanes](const Inputs& in, const relay::Attrs& a) {
      return te::ops::layer_norm(in[0], in[1], in.size() > 2 ? in[2] : te::Tensor(), a.get_int("axis"),
                                 a.get_float("epsilon"), "layer_norm", lanes);
    });
  }
  return s;
}

// Global pooling: partial sums in vectors of the target's lanes, as many chains as keep the adds
// in flight (the FMA pipe's latency x issue rate), at most one block per 4 vectors of the plane
// so each chain has several steps. One running sum took 0.42 ms for efficientnet_b0's
// 144x56x56 SE pool on an AMD EPYC Zen 4 (2 threads), one dependent add per element.
Strategy global_pool(const FusedGroup& g, const Target& t, const StrategyOptions&) {
  const relay::CallNode& call = anchor_call(g);
  const auto& in = tensor_type(call.args[0]->type);
  int64_t plane = 1;
  for (size_t i = 2; i < in.shape.size(); ++i) plane *= in.shape[i];
  te::ops::GlobalPartial p;
  p.lanes = t.lanes(in.dtype.bits);
  p.chains = std::max<int64_t>(1, std::min<int64_t>(t.facts.fma_in_flight(), plane / (4 * p.lanes)));
  Strategy s = anchored("global_pool", schedule::schedule_pool_cpu);
  const bool avg = call.op_name() == "nn.global_avg_pool";
  s.lower = single([avg, p](const Inputs& x) {
    return avg ? te::ops::global_avg_pool(x[0], "global_avg_pool", p) : te::ops::global_max_pool(x[0], "global_max_pool", p);
  });
  return s;
}

Strategy group_template(const char* name, void (*tmpl)(schedule::Schedule&, const std::vector<te::Tensor>&,
                                                       const Target&, schedule::Config&)) {
  Strategy s;
  s.template_name = name;
  s.schedule = [tmpl](const std::vector<te::Tensor>& outs, const te::Tensor&, const Target& t, schedule::Config& cfg) {
    schedule::Schedule sch = schedule::create(outs);
    tmpl(sch, outs, t, cfg);
    return sch;
  };
  return s;
}

// The integer conv and dense in the layout of the target's int8 dot product, tensorized onto it
// (int8_cpu.h); a constant weight (argument 1) packed at compile time into that layout.
Strategy int8_strategy(const char* name, schedule::AnchorTemplate tmpl, const te::ops::Int8Layout& layout,
                       OpLowering lower, OpLowering lower_packed) {
  Strategy s = anchored(name, tmpl);
  s.lower = std::move(lower);
  WeightPacking p;
  p.arg = 1;
  p.pack = [layout](const relay::HostTensor& wt) { return pack_int8_weight(wt, layout.lanes, layout.group); };
  p.lower_packed = std::move(lower_packed);
  s.packing = p;
  return s;
}

// The exact integer Winograd F(2x2, 3x3) for an integer conv2d on AVX2's int16 pairs (the
// transformed operands need int16; vpdpbusd and sdot read bytes), with few enough channels for
// exact int32 sums; U' [16, OC/L, C/2, L, 2] int16. resnet18_int8's 3x3 64->64 conv on a Zen 3
// (AVX2, 2 threads): direct 1.6-1.8 ms, as long as the float32 Winograd conv it should beat.
bool winograd_int8_pays(const relay::CallNode& call, const ConvNdAttrs& a, const te::ops::Int8Layout& layout) {
  const auto& w = tensor_type(call.args[1]->type);
  const int64_t oc = w.shape[0], c = w.shape[1], L = layout.lanes;
  const int64_t u_bytes = 16 * ((c + 1) / 2 * 2) * ((oc + L - 1) / L * L) * 2;
  return layout.group == 2 && c <= te::ops::kWinogradInt8MaxChannels && winograd_shape_pays(call, a, u_bytes);
}

// A depthwise integer conv: the float depthwise templates over a plane of x - zero point (exact
// sums, nn_int8.h), the weight's int8 values packed as float32 for broadcasts from memory; in
// NCHW or in NCHW[b]c (`block`).
Strategy depthwise_integer(const ConvNdAttrs& a, int64_t block, const Target& t) {
  const std::string name = "dwconv_int8";
  Strategy s = block ? anchored("depthwise_int8_nchwc", schedule::schedule_depthwise_nchwc_cpu)
                     : anchored("depthwise_int8", schedule::schedule_depthwise_cpu);
  const int64_t lanes = t.lanes(32);
  auto lower_with = [a, lanes, name](const Tensor& x, const Tensor& w, const Tensor& zp) {
    return te::ops::depthwise_conv2d_int8(x, w, scalar_value(zp), a, lanes, name);
  };
  s.lower = single([lower_with, block, name](const Inputs& in) {
    return lower_with(in[0], block ? block_depthwise_weight(in[1], block, name) : in[1], in[2]);
  });
  WeightPacking p;
  p.arg = 1;
  p.pack = [block](const relay::HostTensor& wt) {
    const relay::Shape& ws = wt.shape();
    relay::HostTensor w = block ? pack_conv_weight(wt, ws[0], block).reshaped({ws[0] / block, ws[2], ws[3], block}) : wt;
    return relay::HostTensor::from_doubles(relay::DataType::f32(), w.shape(), w.to_doubles());
  };
  p.lower_packed = single([lower_with](const Inputs& in) { return lower_with(in[0], in[1], in[2]); });
  s.packing = p;
  return s;
}

Strategy conv_integer(const FusedGroup& g, const Target& t, const StrategyOptions& o) {
  const relay::CallNode& call = anchor_call(g);
  const ConvNdAttrs a = conv_attrs(call.attrs, false);
  const te::ops::Int8Layout layout = schedule::int8_layout(t);
  const te::ops::Int8ConvIO io = integer_conv_io(call.op_name(), call.attrs);
  const int64_t oc = tensor_type(call.args[1]->type).shape[0];
  if (a.groups > 1) return depthwise_integer(a, io.in_block, t);
  if (io.out_block == 0 && o.winograd && winograd_int8_pays(call, a, layout)) {
    Strategy s = anchored("conv_winograd_int8", schedule::schedule_conv_winograd_int8_cpu);
    const int64_t lanes = layout.lanes;
    s.lower = single([a, oc, lanes](const Inputs& in) {
      return te::ops::conv2d_winograd_int8_packed(in[0], scalar_value(in[2]),
                                                  te::ops::winograd_int8_weight_transform(in[1], lanes), oc, a);
    });
    WeightPacking p;
    p.arg = 1;
    p.pack = [lanes](const relay::HostTensor& wt) { return pack_winograd_int8_weight(wt, lanes); };
    p.lower_packed = single([a, oc](const Inputs& in) {
      return te::ops::conv2d_winograd_int8_packed(in[0], scalar_value(in[2]), in[1], oc, a);
    });
    s.packing = p;
    return s;
  }
  return int8_strategy(io.out_block ? "conv_int8_nchwc" : "conv_int8", schedule::schedule_conv2d_int8_cpu, layout,
                       single([a, layout, io](const Inputs& in) {
                         return te::ops::conv2d_int8(in[0], in[1], scalar_value(in[2]), a, layout, "conv_int8", in[3], io);
                       }),
                       single([a, layout, oc, io](const Inputs& in) {
                         return te::ops::conv2d_int8_packed(in[0], in[1], oc, scalar_value(in[2]), a, layout, "conv_int8",
                                                            in[3], io);
                       }));
}

Strategy dense_integer(const FusedGroup& g, const Target& t, const StrategyOptions&) {
  const te::ops::Int8Layout layout = schedule::int8_layout(t);
  const int64_t n = tensor_type(anchor_call(g).type).shape.back();
  return int8_strategy("dense_int8", schedule::schedule_dense_int8_cpu, layout, single([layout](const Inputs& in) {
    return te::ops::dense_int8(in[0], in[1], scalar_value(in[2]), layout, "dense_int8", in[3]);
  }), single([layout, n](const Inputs& in) {
    return te::ops::dense_int8_packed(in[0], in[1], n, scalar_value(in[2]), layout, "dense_int8", in[3]);
  }));
}

}  // namespace

bool cpu_conv_stays_nchw(const relay::CallNode& call, const Target& t, const StrategyOptions& o) {
  // The integer Winograd conv reads and writes NCHW.
  if (call.op_name() == "nn.conv2d_integer")
    return o.winograd && winograd_int8_pays(call, conv_attrs(call.attrs, false), schedule::int8_layout(t));
  // The blocked kernels sum in the data type: float16 convs keep NCHW's float32 sums.
  if (tensor_type(call.type).dtype != relay::DataType::f32()) return true;
  const ConvNdAttrs a = conv_attrs(call.attrs, false);
  const int64_t oc = tensor_type(call.type).shape[1];
  return o.winograd && winograd_pays(call, a, te::ops::conv_channel_block(oc, a.groups, t.lanes(32)));
}

void add_cpu_strategies(StrategyTable* table) {
  auto add = [&](OpFamily f, StrategyFn fn) { (*table)[{TargetKind::kLLVM, f}] = std::move(fn); };
  auto fixed = [](Strategy s) { return [s](const FusedGroup&, const Target&, const StrategyOptions&) { return s; }; };
  add(OpFamily::kConv, conv);
  add(OpFamily::kDense, dense);
  add(OpFamily::kConvBlocked, fixed(anchored("conv_nchwc", schedule::schedule_conv_nchwc_cpu)));
  add(OpFamily::kDepthwiseBlocked, fixed(anchored("depthwise_nchwc", schedule::schedule_depthwise_nchwc_cpu)));
  add(OpFamily::kMatmul, matmul);
  add(OpFamily::kConvInteger, conv_integer);
  add(OpFamily::kDenseInteger, dense_integer);
  add(OpFamily::kPool, [](const FusedGroup& g, const Target&, const StrategyOptions&) {
    return anchor_call(g).attrs.get_str("layout", "NCHW") == "NCHW" ? anchored("pool", schedule::schedule_pool_cpu)
                                                                      : anchored("pool_nchwc", schedule::schedule_pool_nchwc_cpu);
  });
  add(OpFamily::kGlobalPool, global_pool);
  add(OpFamily::kSoftmax, row_norm);
  add(OpFamily::kNorm, row_norm);
  // Transposed convs and the opaque ops (einsum, resize, topk, ...): generic loops.
  add(OpFamily::kConvTranspose, fixed(anchored("generic", nullptr)));
  add(OpFamily::kOpaque, fixed(anchored("generic", nullptr)));
  add(OpFamily::kInjective, fixed(group_template("injective", schedule::injective_cpu)));
  add(OpFamily::kReduction, fixed(group_template("reduction", schedule::reduction_cpu)));
}

}  // namespace kiln::lower::detail
