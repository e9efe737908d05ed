// The strategy table (strategy.cc) and the files that fill it, one per target kind:
// strategy_cpu.cc for llvm targets, strategy_gpu.cc for cuda and opencl.
#pragma once

#include <functional>
#include <map>
#include <utility>

#include "kiln/lower/strategy.h"

namespace kiln::lower::detail {

// What a group's anchor op is, for choosing how to compute and schedule it; groups without an
// anchor are injective or reductions as a whole.
enum class OpFamily {
  kConv,           // nn.conv1d/2d/3d (plain, grouped or depthwise)
  kConvTranspose,  // nn.conv*_transpose
  kConvBlocked,    // nn.conv2d_NCHWc (relay::alter_layout)
  kDepthwiseBlocked,  // nn.depthwise_conv2d_NCHWc (relay::alter_layout)
  kDense,          // nn.dense
  kMatmul,         // nn.matmul
  kConvInteger,    // nn.conv2d_integer
  kDenseInteger,   // nn.dense_integer
  kPool,           // nn.max/avg/lp_pool*
  kGlobalPool,     // nn.global_avg/max_pool
  kSoftmax,        // nn.softmax, nn.log_softmax
  kNorm,           // nn.layer_norm, instance_norm, group_norm, lrn
  kOpaque,         // every other anchor op (einsum, resize, topk, cumsum, scatter, ...)
  kInjective,      // no anchor: elementwise, broadcast, injective ops
  kReduction,      // no anchor: reductions with their producers and tails
};

using StrategyFn = std::function<Strategy(const relay::FusedGroup& group, const Target& target,
                                          const StrategyOptions& options)>;
using StrategyTable = std::map<std::pair<TargetKind, OpFamily>, StrategyFn>;

void add_cpu_strategies(StrategyTable* table);
void add_gpu_strategies(StrategyTable* table);

// conv_stays_nchw on an llvm target.
bool cpu_conv_stays_nchw(const relay::CallNode& call, const Target& target, const StrategyOptions& options);

}  // namespace kiln::lower::detail
