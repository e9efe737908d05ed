// What verify_gpu and split_host_device both call a kernel: a top-level statement of a GPU
// function, under the function's global allocations (the buffers the host allocates).
#pragma once

#include <vector>

#include "kiln/ir/stmt.h"

namespace kiln::ir::detail {

struct DeviceRegions {
  std::vector<Stmt> kernels;     // in execution order
  std::vector<Buffer> workspace; // global allocations around them
};

DeviceRegions device_regions(const Stmt& body);

}  // namespace kiln::ir::detail
