// Register tiles from the target's facts (see register_tile.h).
#include "schedule/templates/register_tile.h"

#include <algorithm>

namespace kiln::schedule {

int64_t tile_registers(const RegisterTile& t) { return t.accumulators() + t.vectors + 1; }

double tile_efficiency(const Target& target, const RegisterTile& t) {
  const CpuFacts& f = target.facts;
  if (tile_registers(t) > f.vector_registers) return 0;
  double fma = double(t.accumulators()) / f.fma_per_cycle;
  double loads = double(t.vectors + t.scalars) / f.loads_per_cycle;
  double step = std::max({fma, loads, double(f.fma_latency)});
  return fma / step;
}

int64_t max_accumulators(const Target& target, int64_t vectors) {
  const CpuFacts& f = target.facts;
  int64_t room = f.vector_registers - vectors - 1;  // the loaded vectors and the broadcast
  // Chains for two FMA pipes over two latencies: enough to hide the latency with slack for the
  // out-of-order core; larger tiles measured no faster (see the header).
  return std::max<int64_t>(1, std::min<int64_t>(4 * f.fma_latency, room));
}

std::vector<double> tile_rank(const Target& target, const RegisterTile& t) {
  if (t.accumulators() > max_accumulators(target, t.vectors)) return {1.0};  // last
  // Highest efficiency; then the most broadcasts per loaded vector (the vectors, weights, come
  // from farther caches than the broadcast inputs); then the most accumulators.
  return {-tile_efficiency(target, t), -double(t.scalars), -double(t.accumulators())};
}

}  // namespace kiln::schedule
