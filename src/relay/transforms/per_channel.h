// Private to the graph passes that fold per-channel constants (fold_batch_norm,
// combine_parallel): the values of a constant per output channel.
#pragma once

#include <optional>
#include <vector>

#include "kiln/relay/host_tensor.h"

namespace kiln::relay {

// The values of constant `c` per channel when it broadcasts against a value of rank `rank`
// along `axis` only (a scalar, [C], [C,1,1], [1,C,1,1] for NCHW's axis 1), `channels` of them
// (a scalar or size-1 dim repeated); nothing when it varies along another axis.
inline std::optional<std::vector<double>> per_channel(const HostTensor& c, int64_t rank, int64_t axis,
                                                      int64_t channels) {
  if (c.rank() > rank) return std::nullopt;
  const int64_t at = axis - (rank - c.rank());  // where the value's channel axis lands in c
  int64_t n = 1;
  for (int64_t i = 0; i < c.rank(); ++i) {
    if (i == at && (c.shape()[i] == channels || c.shape()[i] == 1)) {
      n = c.shape()[i];
    } else if (c.shape()[i] != 1) {
      return std::nullopt;
    }
  }
  std::vector<double> v = c.to_doubles();
  return n == 1 ? std::vector<double>(static_cast<size_t>(channels), v[0]) : v;
}

}  // namespace kiln::relay
