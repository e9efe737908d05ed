// kiln bench --roofline: each kernel of a compiled model against the machine's ceilings.
#pragma once

#include <string>
#include <vector>

#include "roofline_ceilings.h"

namespace kiln::cli {

struct RooflineKernel {
  std::string kernel, label;
  double seconds = 0;  // median per call
  double flops = 0;    // per call (te::count_flops)
  double bytes = 0;    // per call: every argument read or written once
};

struct RooflinePoint {
  double intensity = 0;    // FLOP/byte
  double gflops = 0;       // achieved
  double roof_gflops = 0;  // attainable: min(peak, intensity x bandwidth)
  double gbs = 0;          // achieved bandwidth (minimum traffic / time)
  const MemoryCeiling* level = nullptr;  // the memory level it is held to
  bool memory_bound = false;
  // Of the attainable roof; a kernel that only moves data (no FLOPs: a layout transform, a
  // copy) has no place on the FLOP axis and is measured against the bandwidth instead.
  double share() const { return gflops > 0 ? gflops / roof_gflops : gbs / level->gbs; }
  bool drawable() const { return intensity > 0 && gflops > 0; }  // on log-log axes
};

// The point of `k` under `c`: a kernel is held to the bandwidth of the fastest level that holds
// its minimum traffic (Ceilings::level_for).
RooflinePoint roofline_point(const RooflineKernel& k, const Ceilings& c);

// The ceilings, then one row per kernel (plan order) and a summary of what bounds them.
std::string roofline_table(const std::vector<RooflineKernel>& kernels, const Ceilings& c);

// A log-log SVG: the roofs (peak, each memory level's bandwidth) and one labelled circle per
// kernel with FLOPs, coloured by its level.
std::string roofline_svg(const std::vector<RooflineKernel>& kernels, const Ceilings& c, const std::string& title);

}  // namespace kiln::cli
