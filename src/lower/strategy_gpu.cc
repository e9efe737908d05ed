// The cuda and opencl entries of the strategy table: every op family computed by the op table's
// plain lowering (no packed weights or blocked layouts; dense as one plain reduction) and
// scheduled by a GPU template: injective groups by injective_gpu.h, windowed pools by
// pool_gpu.h, 2-d depthwise convs by depthwise_gpu.h, products and 2-d convs of one group
// (float32, or float16 / bfloat16 on tensor cores) by shared-memory tiles (matmul_gpu.h), other
// 2-d convs by direct shared-memory tiles (conv_direct_gpu.h), and everything else by the
// generic GPU template (generic_gpu.h), so every group that compiles for a CPU compiles for a
// GPU. A group a template does not take gets the generic one under its own name, "gpu_generic",
// so the fallback shows in the tuning task it makes. float16 / bfloat16 products and convs on
// CUDA sm_80+ are padded to whole tensor-core tiles.
#include "schedule/templates/conv_direct_gpu.h"
#include "schedule/templates/depthwise_gpu.h"
#include "schedule/templates/generic_gpu.h"
#include "schedule/templates/injective_gpu.h"
#include "schedule/templates/matmul_gpu.h"
#include "schedule/templates/pool_gpu.h"
#include "kiln/te/ops/nn_conv.h"
#include "kiln/te/ops/nn_dense.h"
#include "op_table.h"
#include "strategy_table.h"

namespace kiln::lower::detail {

namespace {

// A strategy scheduling the group's anchor with `tmpl` (generic_gpu.h's schedule_anchor_gpu).
Strategy anchored(const char* name, schedule::GpuAnchorTemplate tmpl) {
  Strategy s;
  s.template_name = name;
  s.schedule = [tmpl](const std::vector<te::Tensor>& outs, const te::Tensor& anchor, const Target& t,
                      schedule::Config& cfg) { return schedule::schedule_anchor_gpu(outs, anchor, tmpl, t, cfg); };
  return s;
}

}  // namespace

void add_gpu_strategies(StrategyTable* table) {
  Strategy generic;
  generic.template_name = "gpu_generic";
  generic.schedule = [](const std::vector<te::Tensor>& outs, const te::Tensor&, const Target& t, schedule::Config& cfg) {
    schedule::Schedule s = schedule::create(outs);
    schedule::schedule_generic_gpu(s, outs, t, cfg);
    return s;
  };
  Strategy injective;
  injective.template_name = "gpu_injective";
  injective.schedule = [](const std::vector<te::Tensor>& outs, const te::Tensor&, const Target& t,
                          schedule::Config& cfg) {
    schedule::Schedule s = schedule::create(outs);
    schedule::schedule_injective_gpu(s, outs, t, cfg);
    return s;
  };
  // Products: shared-memory tiles (matmul_gpu.h) where the anchor is a product of matrices,
  // else the generic schedule (a product of vectors). A float16 product ends in the cast of its
  // float32 sum (and a slice where padded to whole tiles): the sum is what the template tiles.
  Strategy product;
  product.template_name = "gpu_matmul";
  product.schedule = [](const std::vector<te::Tensor>& outs, const te::Tensor& anchor, const Target& t,
                        schedule::Config& cfg) {
    if (const te::Tensor sum = schedule::product_under(anchor); schedule::matmul_gpu_applies(sum))
      return schedule::schedule_anchor_gpu(outs, sum, schedule::schedule_matmul_gpu, t, cfg);
    schedule::Schedule s = schedule::create(outs);
    schedule::schedule_generic_gpu(s, outs, t, cfg);
    return s;
  };
  Strategy dense = product;
  dense.lower = [](const std::vector<te::Tensor>& in, const relay::Attrs&, const relay::Type&) {
    return std::vector<te::Tensor>{te::ops::dense_plain(in[0], in[1])};
  };
  // A matrix-vector product (one row: a classifier at batch 1) has nothing to tile: the generic
  // schedule reduces each output across a block's threads instead.
  auto unless_one_row = [generic](Strategy tiled) {
    return [generic, tiled](const relay::FusedGroup& g, const Target&, const StrategyOptions&) {
      const auto& out = *g.anchor.as<relay::CallNode>()->type.as<relay::TensorTypeNode>();
      if (out.shape.size() < 2 || out.shape[out.shape.size() - 2] != 1) return tiled;
      Strategy s = generic;
      s.lower = tiled.lower;
      return s;
    };
  };
  // float16 / bfloat16 products on a GPU with mma.sync (CUDA sm_80+): padded to whole
  // tensor-core tiles (te::ops::ProductPad), the form the matmul template's tensor-core
  // schedule takes (matmul_tensorcore_gpu.h; its knob tensor_core turns it off).
  const te::ops::ProductPad mma_tiles{16, 8, 16};
  auto has_mma = [](const relay::DataType& dtype, const Target& t) {
    const bool half = dtype == relay::DataType::f16() || dtype == relay::DataType::bf16();
    return half && t.kind == TargetKind::kCUDA && t.gpu.mma_m16n8k16();
  };
  // Convolutions: 2-d ones of one group as implicit GEMMs in shared-memory tiles (matmul_gpu.h):
  // float32 ones everywhere, float16 / bfloat16 ones where they take the tensor cores (padded,
  // as products are: any 2-d conv's OC, OW and C KH KW pad to whole tiles, so none falls back
  // for its shape). 2-d depthwise ones in shared-memory tiles of a channel plane
  // (depthwise_gpu.h), other 2-d ones (grouped, float16 / bfloat16 without mma.sync) directly in
  // shared-memory tiles of a group's channels (conv_direct_gpu.h); 1-d and 3-d ones as plain
  // NC[D]HW reductions, which the generic schedule computes in a register inside their
  // epilogue's thread.
  auto conv = [generic, mma_tiles, has_mma](const relay::FusedGroup& g, const Target& t, const StrategyOptions&) {
    const relay::CallNode& call = *g.anchor.as<relay::CallNode>();
    const ConvNdAttrs a = conv_attrs(call.attrs, false);
    const auto& w = *call.args[1]->type.as<relay::TensorTypeNode>();
    const std::string base = call.op_name().substr(3);  // "conv2d"
    const bool depthwise = a.groups > 1 && w.shape[1] == 1;
    const bool tensor_cores = has_mma(w.dtype, t);
    if (!depthwise && a.dims() == 2 && a.groups == 1 && (w.dtype == relay::DataType::f32() || tensor_cores)) {
      Strategy s = anchored("gpu_conv_gemm", schedule::schedule_conv_gemm_gpu);
      const te::ops::ProductPad pad = tensor_cores ? mma_tiles : te::ops::ProductPad{};
      s.lower = [a, base, pad](const std::vector<te::Tensor>& in, const relay::Attrs&, const relay::Type&) {
        return std::vector<te::Tensor>{te::ops::conv2d_gemm(in[0], in[1], a, base, pad)};
      };
      return s;
    }
    Strategy s = a.dims() != 2 ? generic
                 : depthwise   ? anchored("gpu_depthwise", schedule::schedule_depthwise_gpu)
                               : anchored("gpu_conv_direct", schedule::schedule_conv_direct_gpu);
    s.lower = [a, base, depthwise](const std::vector<te::Tensor>& in, const relay::Attrs&, const relay::Type&) {
      return std::vector<te::Tensor>{depthwise ? te::ops::depthwise_conv_nd(in[0], in[1], a, 1, "dw" + base)
                                               : te::ops::conv_nd_plain(in[0], in[1], a, base)};
    };
    return s;
  };
  auto on_tensor_cores = [mma_tiles, has_mma](StrategyFn base, bool dense_op) {
    return [=](const relay::FusedGroup& g, const Target& t, const StrategyOptions& o) {
      Strategy s = base(g, t, o);
      const relay::CallNode& call = *g.anchor.as<relay::CallNode>();
      const auto& a = *call.args[0]->type.as<relay::TensorTypeNode>();
      const auto& b = *call.args[1]->type.as<relay::TensorTypeNode>();
      if (s.template_name != "gpu_matmul" || !has_mma(a.dtype, t) || a.shape.size() < 2 || b.shape.size() < 2)
        return s;
      s.lower = [dense_op, mma_tiles](const std::vector<te::Tensor>& in, const relay::Attrs&, const relay::Type&) {
        return std::vector<te::Tensor>{dense_op ? te::ops::dense_plain(in[0], in[1], false, "dense", mma_tiles)
                                                : te::ops::batch_matmul(in[0], in[1], 1, "matmul", mma_tiles)};
      };
      return s;
    };
  };
  auto fixed = [](Strategy s) {
    return [s](const relay::FusedGroup&, const Target&, const StrategyOptions&) { return s; };
  };
  for (TargetKind kind : {TargetKind::kCUDA, TargetKind::kOpenCL}) {
    (*table)[{kind, OpFamily::kConv}] = conv;
    (*table)[{kind, OpFamily::kInjective}] = fixed(injective);
    (*table)[{kind, OpFamily::kPool}] = fixed(anchored("gpu_pool", schedule::schedule_pool_gpu));
    for (OpFamily f : {OpFamily::kConvTranspose, OpFamily::kConvBlocked, OpFamily::kDepthwiseBlocked,
                       OpFamily::kGlobalPool, OpFamily::kSoftmax, OpFamily::kNorm, OpFamily::kOpaque,
                       OpFamily::kReduction})
      (*table)[{kind, f}] = fixed(generic);
    (*table)[{kind, OpFamily::kDense}] = unless_one_row(dense);
    (*table)[{kind, OpFamily::kMatmul}] = unless_one_row(product);
    if (kind == TargetKind::kCUDA) {
      (*table)[{kind, OpFamily::kDense}] = on_tensor_cores(unless_one_row(dense), true);
      (*table)[{kind, OpFamily::kMatmul}] = on_tensor_cores(unless_one_row(product), false);
    }
  }
}

}  // namespace kiln::lower::detail
