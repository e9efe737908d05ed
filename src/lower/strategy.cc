// select_strategy: the strategy table, keyed by target kind and op family (see strategy.h).
#include "kiln/lower/strategy.h"

#include <mutex>
#include <string>

#include "kiln/support/error.h"
#include "strategy_table.h"

namespace kiln::lower {

namespace {

using detail::OpFamily;

OpFamily family_of(const relay::FusedGroup& group) {
  if (group.pattern < relay::OpPattern::OutElementwiseFusable)
    return group.pattern == relay::OpPattern::CommReduce ? OpFamily::kReduction : OpFamily::kInjective;
  const std::string& op = group.anchor.as<relay::CallNode>()->op_name();
  auto starts = [&](const char* p) { return op.rfind(p, 0) == 0; };
  auto ends = [&](const char* s) { return op.size() >= std::string(s).size() && op.compare(op.size() - std::string(s).size(), std::string::npos, s) == 0; };
  if (op == "nn.conv2d_NCHWc") return OpFamily::kConvBlocked;
  if (op == "nn.depthwise_conv2d_NCHWc") return OpFamily::kDepthwiseBlocked;
  if (starts("nn.conv") && ends("_transpose")) return OpFamily::kConvTranspose;
  if (op == "nn.conv1d" || op == "nn.conv2d" || op == "nn.conv3d") return OpFamily::kConv;
  if (op == "nn.dense") return OpFamily::kDense;
  if (op == "nn.matmul") return OpFamily::kMatmul;
  if (op == "nn.conv2d_integer" || op == "nn.conv2d_integer_NCHWc") return OpFamily::kConvInteger;
  if (op == "nn.dense_integer") return OpFamily::kDenseInteger;
  if (starts("nn.max_pool") || starts("nn.avg_pool") || starts("nn.lp_pool")) return OpFamily::kPool;
  if (op == "nn.global_avg_pool" || op == "nn.global_max_pool") return OpFamily::kGlobalPool;
  if (op == "nn.softmax" || op == "nn.log_softmax") return OpFamily::kSoftmax;
  if (op == "nn.layer_norm" || op == "nn.instance_norm" || op == "nn.group_norm" || op == "nn.lrn") return OpFamily::kNorm;
  return OpFamily::kOpaque;
}

const detail::StrategyTable& table() {
  static detail::StrategyTable t;
  static std::once_flag once;
  std::call_once(once, [] {
    detail::add_cpu_strategies(&t);
    detail::add_gpu_strategies(&t);
  });
  return t;
}

const char* kind_name(TargetKind k) {
  switch (k) {
    case TargetKind::kLLVM: return "llvm";
    case TargetKind::kCUDA: return "cuda";
    case TargetKind::kOpenCL: return "opencl";
  }
  return "?";
}

}  // namespace

Strategy select_strategy(const relay::FusedGroup& group, const Target& target, const StrategyOptions& options) {
  const detail::StrategyTable& t = table();
  OpFamily family = family_of(group);
  auto it = t.find({target.kind, family});
  // A family a target has no entry for is computed by the target's generic anchor strategy.
  if (it == t.end() && family != OpFamily::kInjective && family != OpFamily::kReduction)
    it = t.find({target.kind, OpFamily::kOpaque});
  KILN_USER_CHECK(it != t.end()) << "no code generation strategy for target kind '" << kind_name(target.kind)
                                 << "' (group " << group.label() << ")";
  return it->second(group, target, options);
}

bool conv_stays_nchw(const relay::CallNode& call, const Target& target, const StrategyOptions& options) {
  if (target.kind != TargetKind::kLLVM) return true;
  return detail::cpu_conv_stays_nchw(call, target, options);
}

}  // namespace kiln::lower
