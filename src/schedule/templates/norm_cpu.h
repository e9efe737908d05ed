// CPU schedule of the op library's normalizations and softmax (te/ops/nn_norm.h): the output
// is parallel over its leading "row" dims (those the statistics do not reduce) and vectorized
// over its innermost dim; the statistics stages (max, sum, mean, variance, exp) of a row are
// computed inside that row's task (compute_at), so a row is read from cache after its first
// pass. When the rows give no parallelism (e.g. softmax over axis 0), the statistics are
// computed at the root with their own parallel loops instead.
//   stats_at   1: statistics per row (compute_at); 0: at the root   [1 when rows >= 2]
#pragma once

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::schedule {

// `norm` is what a te::ops normalization / softmax / lrn returned; `tiled` is it or the group's
// output of the same shape.
void schedule_norm_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& norm, const Target& target, Config& cfg);

}  // namespace kiln::schedule
