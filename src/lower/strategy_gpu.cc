// The cuda and opencl entries of the strategy table: every op family computed by the op table's
// plain lowering (no packed weights or blocked layouts; dense as one plain reduction) and
// scheduled by the generic GPU template (schedule/templates/generic_gpu.h), so every group
// that compiles for a CPU compiles for a GPU; dense and matmul by shared-memory tiles
// (matmul_gpu.h). Op-specific GPU templates replace entries here as they come.
#include "kiln/schedule/templates/generic_gpu.h"
#include "kiln/schedule/templates/matmul_gpu.h"
#include "kiln/te/ops/nn_conv.h"
#include "kiln/te/ops/nn_dense.h"
#include "op_table.h"
#include "strategy_table.h"

namespace kiln::lower::detail {

void add_gpu_strategies(StrategyTable* table) {
  Strategy generic;
  generic.template_name = "gpu_generic";
  generic.schedule = [](const std::vector<te::Tensor>& outs, const te::Tensor&, const Target& t, schedule::Config& cfg) {
    schedule::Schedule s = schedule::create(outs);
    schedule::schedule_generic_gpu(s, outs, t, cfg);
    return s;
  };
  // Products: shared-memory tiles (matmul_gpu.h) where the anchor is a product of matrices
  // with more than one row, else the generic schedule (matrix-vector products).
  Strategy product;
  product.template_name = "gpu_matmul";
  product.schedule = [](const std::vector<te::Tensor>& outs, const te::Tensor& anchor, const Target& t,
                        schedule::Config& cfg) {
    // A matrix-vector product (one row: a classifier at batch 1) has nothing to tile: the
    // generic schedule reduces each output across a block's threads instead.
    const bool one_row = anchor.ndim() >= 2 && anchor.shape()[anchor.ndim() - 2] == 1;
    if (schedule::matmul_gpu_applies(anchor) && !one_row)
      return schedule::schedule_anchor_gpu(outs, anchor, schedule::schedule_matmul_gpu, t, cfg);
    schedule::Schedule s = schedule::create(outs);
    schedule::schedule_generic_gpu(s, outs, t, cfg);
    return s;
  };
  Strategy dense = product;
  dense.lower = [](const std::vector<te::Tensor>& in, const relay::Attrs&, const relay::Type&) {
    return std::vector<te::Tensor>{te::ops::dense_plain(in[0], in[1])};
  };
  // Convolutions: 2-d float32 ones of one group as implicit GEMMs in shared-memory tiles
  // (matmul_gpu.h); others as plain NC[D]HW reductions (depthwise ones by depthwise_conv_nd),
  // which the generic schedule computes in a register inside their epilogue's thread.
  auto conv = [generic](const relay::FusedGroup& g, const Target&, const StrategyOptions&) {
    const relay::CallNode& call = *g.anchor.as<relay::CallNode>();
    const ConvNdAttrs a = conv_attrs(call.attrs, false);
    const auto& w = *call.args[1]->type.as<relay::TensorTypeNode>();
    const std::string base = call.op_name().substr(3);  // "conv2d"
    Strategy s = generic;
    const bool depthwise = a.groups > 1 && w.shape[1] == 1;
    // 2-d float32 convs of one group: implicit GEMM in shared-memory tiles.
    if (!depthwise && a.dims() == 2 && a.groups == 1 && w.dtype == relay::DataType::f32()) {
      s.template_name = "gpu_conv_gemm";
      s.schedule = [](const std::vector<te::Tensor>& outs, const te::Tensor& anchor, const Target& t,
                      schedule::Config& cfg) {
        return schedule::schedule_anchor_gpu(outs, anchor, schedule::schedule_conv_gemm_gpu, t, cfg);
      };
      s.lower = [a, base](const std::vector<te::Tensor>& in, const relay::Attrs&, const relay::Type&) {
        return std::vector<te::Tensor>{te::ops::conv2d_gemm(in[0], in[1], a, base)};
      };
      return s;
    }
    s.lower = [a, base, depthwise](const std::vector<te::Tensor>& in, const relay::Attrs&, const relay::Type&) {
      return std::vector<te::Tensor>{depthwise ? te::ops::depthwise_conv_nd(in[0], in[1], a, 1, "dw" + base)
                                               : te::ops::conv_nd_plain(in[0], in[1], a, base)};
    };
    return s;
  };
  auto fixed = [](Strategy s) {
    return [s](const relay::FusedGroup&, const Target&, const StrategyOptions&) { return s; };
  };
  for (TargetKind kind : {TargetKind::kCUDA, TargetKind::kOpenCL}) {
    (*table)[{kind, OpFamily::kConv}] = conv;
    for (OpFamily f : {OpFamily::kConvTranspose, OpFamily::kConvBlocked, OpFamily::kDepthwiseBlocked,
                       OpFamily::kPool, OpFamily::kGlobalPool, OpFamily::kSoftmax, OpFamily::kNorm, OpFamily::kOpaque,
                       OpFamily::kInjective, OpFamily::kReduction})
      (*table)[{kind, f}] = fixed(generic);
    (*table)[{kind, OpFamily::kDense}] = fixed(dense);
    (*table)[{kind, OpFamily::kMatmul}] = fixed(product);
  }
}

}  // namespace kiln::lower::detail
