// The machine's ceilings for kiln bench --roofline, measured (not taken from a data sheet) on
// the thread count the benchmark runs with.
#pragma once

#include <string>
#include <vector>

#include "kiln/target/target.h"

namespace kiln::cli {

// One level of the memory hierarchy: a stream triad a = b + s*c whose three arrays fill half of
// it (DRAM: 3 x 32 MiB per thread, far past any L3 of these machines).
struct MemoryCeiling {
  std::string name;     // "L1", "L2", "L3", "DRAM"
  double bytes = 0;     // what the threads' share of it holds (DRAM: infinity)
  double gbs = 0;
};

struct Ceilings {
  int threads = 1;
  int vector_bits = 0;       // the FMA width measured: the module's, where the host has it
  double peak_gflops = 0;    // fp32 FMA peak: independent vector FMA chains, 2 FLOPs per lane
  std::vector<MemoryCeiling> memory;  // fastest first, DRAM last

  // The level a kernel moving `bytes` is held to: the first that holds them.
  const MemoryCeiling& level_for(double bytes) const;
};

// Measures the ceilings on `threads` threads with the FMA width and cache sizes of `facts` (the
// module's target; the width capped by what the host has). Throws kiln::Error on a host it
// cannot measure.
Ceilings measure_ceilings(int threads, const CpuFacts& facts);

}  // namespace kiln::cli
