#include "schedule/templates/gemm_blocking.h"

#include <algorithm>

#include "schedule/templates/register_tile.h"

namespace kiln::schedule {

int64_t max_tile_rows(const Target& target, int64_t nv) {
  int64_t mr = 1;  // the register constraint of register_tile.h: accumulators, B vectors, a broadcast
  while (tile_registers({nv, mr + 1}) <= target.facts.vector_registers) ++mr;
  return mr;
}

int64_t balanced_tile_rows(int64_t m, int64_t mr_max) {
  int64_t tiles = (m + mr_max - 1) / mr_max;
  return (m + tiles - 1) / tiles;
}

int64_t padded_rows(int64_t m, int64_t mr) { return (m + mr - 1) / mr * mr; }

int64_t max_tile_vectors(const Target& target) {
  int64_t nv = 1;
  while (2 * (2 * nv) + 1 <= target.facts.vector_registers) nv *= 2;
  return nv;
}

RegisterBlock register_block(const Target& target, int64_t m, int64_t n, int64_t max_nv) {
  const int64_t lanes = target.lanes(32), in_flight = target.facts.fma_in_flight();
  const int64_t vectors = (n + lanes - 1) / lanes;
  RegisterBlock best;
  double best_ratio = -1;
  bool best_hides = false;
  for (int64_t nv = 1; nv == 1 || (nv < 2 * vectors && nv <= max_tile_vectors(target)); nv *= 2) {
    if (max_nv > 0 && nv > max_nv) break;
    // Whole tiles when a divisor of m keeps twice the accumulators in flight, else padded rows.
    int64_t mr_max = std::min(m, max_tile_rows(target, nv)), mr = mr_max;
    while (m % mr != 0) --mr;
    if (mr * nv < 2 * in_flight) mr = balanced_tile_rows(m, mr_max);
    int64_t acc = mr * nv;
    bool hides = acc >= in_flight;
    double ratio = double(acc) / double(mr + nv);
    // Latency hidden first, then FMAs per load, then more accumulators.
    bool better = hides != best_hides ? hides
                  : ratio != best_ratio ? ratio > best_ratio
                                        : acc > best.mr * best.nv;
    if (best_ratio < 0 || better) {
      best = {mr, nv};
      best_ratio = ratio;
      best_hides = hides;
    }
  }
  return best;
}

RegisterBlock matmul_register_block(const Target& target, int64_t m, int64_t n) {
  const int64_t lanes = target.lanes(32);
  int64_t nv = 1;
  while (n % (2 * nv * lanes) == 0) nv *= 2;
  return register_block(target, m, n, nv);
}

bool pack_pays(const Target& target, int64_t k, int64_t nr) { return 2 * k * nr * 4 > target.facts.l1d_bytes; }

}  // namespace kiln::schedule
