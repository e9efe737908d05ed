// Constant weights packed on the host at compile time into the layouts the op library's
// kernels read (te/ops/nn_conv.h, nn_dense.h, nn_winograd.h), so a kernel never repacks a
// constant per call (resnet18: ~44 MB copied per inference otherwise). The block sizes are the
// strategy's (lower/strategy.h), from the target.
#pragma once

#include <cstdint>

#include "kiln/relay/host_tensor.h"

namespace kiln::lower {

// [OC, C/groups, K...] -> [OC/co, C/groups, K..., co] (channels past OC are zero).
relay::HostTensor pack_conv_weight(const relay::HostTensor& w, int64_t groups, int64_t co);

// [N, K] (or, kn, [K, N]) -> panels [NB, K, nr], NB the panels N needs rounded up to a multiple
// of panel_group (columns past N are zero).
relay::HostTensor pack_dense_weight(const relay::HostTensor& w, int64_t nr, int64_t panel_group = 1, bool kn = false);

// The Winograd F(2x2, 3x3) filter transform U = G g Gt of a float32 [OC, C, 3, 3] weight ->
// [16, OC/co, C, co] (channels past OC are zero), computed in double.
relay::HostTensor pack_winograd_weight(const relay::HostTensor& w, int64_t co);

// The exact integer Winograd filter transform of an int8 weight [OC, C, 3, 3] -> U' = (2G) g
// (2G)t as int16 [16, OC/L, C/2, L, 2] (zero past OC and C; te/ops/nn_winograd.h).
relay::HostTensor pack_winograd_int8_weight(const relay::HostTensor& w, int64_t lanes);

// An int8 weight [O, C, K...] (conv [OC, C, KY, KX] or dense [N, K]) -> [O/L, C/G, K..., L, G],
// zero-padded: L outputs x G channels contiguous for int8_dot (te/ops/nn_int8.h).
relay::HostTensor pack_int8_weight(const relay::HostTensor& w, int64_t lanes, int64_t group);

}  // namespace kiln::lower
