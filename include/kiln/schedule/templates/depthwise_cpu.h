// CPU schedule of depthwise_conv_nd (te/ops/nn_conv.h): each (image, channel) plane is one
// parallel task; its padded input plane is built right there (compute_at, so it is still in
// cache when read), and each output row is computed in runs of `owv` columns held in one vector
// register (the reduction stage, scope "local"), then written through the inlined tail.
//   tile_ow    [W/owv, owv] columns per vector                [16, else W's divisor <= 16]
#pragma once

#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// `conv` is what depthwise_conv_nd returned; `tiled` is conv itself or the group's output of
// the same shape.
void schedule_depthwise_cpu(Schedule& s, const te::Tensor& tiled, const te::Tensor& conv, Config& cfg);

}  // namespace kiln::schedule
