// Whether a model computes every sample of a batch on its own, so that a dynamic-batch module
// (runtime/graph_plan.h: kernels compiled for one sample, looping over the batch at run time)
// computes what the model does.
#pragma once

#include <string>

#include "kiln/relay/module.h"

namespace kiln::relay {

// `one` and `two` are the same model imported with the batch inputs' leading dim at one
// sample's and at two samples' rows. Throws UnsupportedError naming the node and the reason
// when the model may mix samples: the two graphs differ in structure or in a constant; a
// batched value (one that depends on an input) does not have exactly twice the leading dim at
// two samples and the same other dims; or an op works along the leading axis (concatenate,
// split, a strided slice, take, softmax, layer_norm, cumsum, topk ... on axis 0) or is not
// known to keep samples apart.
void check_batch_separable(const Module& one, const Module& two);

}  // namespace kiln::relay
