// The cuda and opencl entries of the strategy table: every op family computed by the op table's
// plain lowering (no packed weights or blocked layouts) and scheduled by the generic GPU
// template (schedule/templates/generic_gpu.h), so every group that compiles for a CPU compiles
// for a GPU. Op-specific GPU templates replace entries here as they come.
#include "kiln/schedule/templates/generic_gpu.h"
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
  auto fixed = [](Strategy s) {
    return [s](const relay::FusedGroup&, const Target&, const StrategyOptions&) { return s; };
  };
  for (TargetKind kind : {TargetKind::kCUDA, TargetKind::kOpenCL})
    for (OpFamily f : {OpFamily::kConv, OpFamily::kConvTranspose, OpFamily::kConvBlocked, OpFamily::kDepthwiseBlocked,
                       OpFamily::kDense, OpFamily::kMatmul, OpFamily::kPool, OpFamily::kGlobalPool, OpFamily::kSoftmax,
                       OpFamily::kNorm, OpFamily::kOpaque, OpFamily::kInjective, OpFamily::kReduction})
      (*table)[{kind, f}] = fixed(generic);
}

}  // namespace kiln::lower::detail
