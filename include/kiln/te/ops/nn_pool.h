// Pooling of the op library over 1 to 3 spatial dims of NC[D]HW data, and global pooling.
//
// Windowed pools read a padded copy of the input (stage "<name>.pad": -inf / the lowest value
// for max, zeros for the sums) so that the window loop carries no bounds test; the average
// divides by the number of window elements inside the input (or inside input + explicit pads
// with count_include_pad), so ceil_mode windows that hang over the end count only what they
// cover. Stages: <name>.pad (when needed), <name>.sum (avg/lp), <name>.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/te/operation.h"

namespace kiln::te::ops {

struct PoolNdAttrs {
  std::vector<int64_t> kernel, strides, padding, dilation;  // d, d, 2d (begins then ends), d
  bool ceil_mode = false;
  bool count_include_pad = false;  // avg only
  int64_t p = 2;                   // lp only
  // The data has a trailing channel-block axis after the spatial ones (NCHW[x]c: [N, C/x, H, W,
  // x]), carried through unchanged.
  bool blocked = false;
  size_t dims() const { return kernel.size(); }
};

// Output spatial extents (ceil_mode drops a window that would start in the end padding).
std::vector<int64_t> pooled_shape(const std::vector<int64_t>& in, const PoolNdAttrs& a);

Tensor max_pool_nd(const Tensor& x, const PoolNdAttrs& a, const std::string& name = "max_pool");
Tensor avg_pool_nd(const Tensor& x, const PoolNdAttrs& a, const std::string& name = "avg_pool");
Tensor lp_pool_nd(const Tensor& x, const PoolNdAttrs& a, const std::string& name = "lp_pool");

// Mean / max over every axis from 2 on; the result keeps them with extent 1.
// With `partial` = {lanes, chains} other than {1, 1} (a CPU strategy's choice: one vector
// register, and enough of them to cover the add latency), each plane of P elements is read flat
// in blocks of lanes x chains: "<name>.part" [N, C, chains, lanes] reduces elements
// (k * chains + q) * lanes + l (a guard for those past P), "<name>.lane" [N, C, lanes] folds the
// chains and the result the lanes. One running sum is one dependent add per element.
struct GlobalPartial {
  int64_t lanes = 1, chains = 1;
};
Tensor global_avg_pool(const Tensor& x, const std::string& name = "global_avg_pool", GlobalPartial partial = {});
Tensor global_max_pool(const Tensor& x, const std::string& name = "global_max_pool", GlobalPartial partial = {});

}  // namespace kiln::te::ops
