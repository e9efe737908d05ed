// The register tile of a broadcast-FMA micro-kernel, chosen from the target's register file and
// FMA pipeline (the analytical model of BLIS: Low et al., "Analytical modeling is enough for
// high-performance BLIS", 2016). Each reduction step of the kernel loads `vectors` vectors (a
// conv's weights: vectors x lanes output channels), broadcasts `scalars` values (its inputs:
// one per output column or row of the tile) and issues vectors x scalars FMAs into as many
// accumulators. The conv and Winograd templates size their tiles with it; the matrix products
// blocks (gemm_blocking.h) share its register constraint and rank by FMAs per load instead
// (their two operands stream alike, where a conv's weights come from farther than its inputs).
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/target/target.h"

namespace kiln::schedule {

struct RegisterTile {
  int64_t vectors = 1, scalars = 1;
  int64_t accumulators() const { return vectors * scalars; }
  bool operator==(const RegisterTile& o) const { return vectors == o.vectors && scalars == o.scalars; }
};

// Vector registers the tile occupies: its accumulators, the loaded vectors and one broadcast.
int64_t tile_registers(const RegisterTile& t);

// Fraction of the target's FMA issue rate a reduction step of the tile reaches: the step lasts
// the longest of its FMAs at the issue rate, its loads at the load rate, and one FMA latency
// (each accumulator's chain gets one FMA per step). 0 when the tile needs more vector registers
// than the target has (it would spill).
double tile_efficiency(const Target& target, const RegisterTile& t);

// The most accumulators a default tile of `vectors` vectors has: chains for two FMA pipes over
// two FMA latencies, within the register file. Measured (resnet18's convs, tuned, 2 threads):
// AVX-512 best at 7-16 accumulators (Xeon and Zen 4), larger tiles slower (28: 6-20%); AVX2
// code on Zen 4 (16 registers) best at 7 to 14 with one or two weight vectors, and every
// default with more registers than the file (17 to 19) 2-3x slower from spills.
int64_t max_accumulators(const Target& target, int64_t vectors);

// The order a template ranks a tile by (smaller is better): tiles over
// max_accumulators last; then the highest efficiency, the most broadcasts per loaded vector (a
// conv's weights come from farther caches than its inputs), the most accumulators.
std::vector<double> tile_rank(const Target& target, const RegisterTile& t);

}  // namespace kiln::schedule
