// The GPU backend's build: loop-level functions with thread-bound loops -> kernels, launch
// records and one module of CUDA C or OpenCL C source (GPU.md, pipeline steps 5-8).
//
//   verify_gpu         thread binding and the target's limits (ir/transforms.h)
//   split_host_device  each top-level statement a kernel with its launch record
//   hoist_device_allocations, insert_thread_sync   per kernel: shared buffers at the top,
//                      barriers where threads exchange data through them
//   print              one C source for the module in the target's dialect (source/codegen_c.h)
//   nvrtc              CUDA only: cubins for the target's image sms and PTX, with ptxas's
//                      registers, spills and shared memory per kernel in the notes
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/device_program.h"
#include "kiln/ir/stmt.h"
#include "kiln/target/target.h"

namespace kiln::codegen {

// A compiled image of a CUDA module: a cubin for one sm (ELF bytes), or PTX for compute_<sm>
// (text with its terminating NUL, as cuModuleLoadData wants it).
struct GpuImage {
  int sm = 0;
  bool ptx = false;
  std::string bytes;
};

struct GpuModule {
  Target target;
  std::vector<ir::DeviceProgram> programs;  // one per function, in order
  std::string source;                       // CUDA C or OpenCL C of every kernel
  std::vector<GpuImage> images;             // CUDA: NVRTC's output; OpenCL: none (the source is built at load)
  std::vector<std::string> notes;           // per-kernel resources and NVRTC's time (CUDA)
};

struct GpuBuildOptions {
  // CUDA: compile the source with NVRTC (false: print it only, e.g. to save it for reading).
  bool compile = true;
};

// kiln::Error naming the function and the culprit for IR a GPU cannot run (see verify_gpu), or
// a kernel NVRTC or ptxas rejects (with their message).
GpuModule build_gpu(const std::vector<ir::PrimFunc>& funcs, const Target& target,
                    const GpuBuildOptions& options = GpuBuildOptions());

// Writes the module's code for reading into `dir` (created if missing): per program (fused
// group) NAME.cu or NAME.cl with its kernels, and for CUDA NAME.ptx, the PTX of those kernels
// cut from the module's PTX image; and module.cu / module.cl, the whole source as compiled.
// Returns the files written. kiln::Error naming a file it cannot write.
std::vector<std::string> write_device_code(const GpuModule& m, const std::string& dir);

// True when this kiln was built with the CUDA toolkit's NVRTC (else CUDA targets print source
// but build_gpu refuses to compile it, saying so).
bool cuda_codegen_available();

// The verifier's limits for a GPU target.
ir::GpuLimits gpu_limits(const Target& target);

}  // namespace kiln::codegen
