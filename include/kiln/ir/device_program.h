// A function of the loop-level IR split for a GPU (ir::split_host_device): the kernels it
// launches, in order, each with its launch record, and the global buffers the host allocates
// between them. Shapes are static, so the host side needs no code: the runtime's executor walks
// the launches (docs/gpu.md, "Pipeline").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir/stmt.h"

namespace kiln::ir {

struct KernelLaunch {
  std::string kernel;                      // the name of a kernel of the DeviceProgram
  std::array<int64_t, 3> grid = {1, 1, 1};   // blocks (blockIdx.x/y/z extents)
  std::array<int64_t, 3> block = {1, 1, 1};  // threads per block (threadIdx.x/y/z extents)
  int64_t dynamic_shared_bytes = 0;
  // The kernel's parameters, in order, as buffers of the program: i < params.size() is the
  // function's parameter i, else workspace[i - params.size()].
  std::vector<int> args;
};

struct DeviceProgram {
  std::string name;
  std::vector<Buffer> params;     // the function's parameters, as the caller passes them
  std::vector<Buffer> workspace;  // global intermediates between kernels (flat)
  std::vector<PrimFunc> kernels;  // one per launch; params: the buffers it reads or writes
  std::vector<KernelLaunch> launches;
};

// What the GPU verifier checks a kernel against (from the Target's GpuFacts).
struct GpuLimits {
  int64_t max_threads_per_block = 1024;
  int64_t max_shared_bytes = 48 << 10;
  int64_t max_grid_x = (int64_t{1} << 31) - 1;
  int64_t max_grid_yz = 65535;
  int64_t max_block_xy = 1024;
  int64_t max_block_z = 64;
};

}  // namespace kiln::ir
