// CUDA C -> GPU images with NVRTC (docs/gpu.md, "Pipeline"): one module's translation unit is
// compiled as one NVRTC program per sm (one program for many kernels is several times faster
// than one per kernel), giving a cubin per sm and the PTX of the highest sm, which the driver
// JIT-compiles on newer GPUs. ptxas runs inside NVRTC for sm_XX, so resource errors (too much
// shared memory, too many registers for __launch_bounds__) surface here, without a GPU, and its
// report (registers, spills, stack, shared memory) becomes per-kernel records.
//
// Facts of NVRTC 13 this relies on (found by experiment, CUDA 13.0):
//  - -arch=sm_XX gives a cubin (nvrtcGetCUBIN) and PTX (nvrtcGetPTX); that PTX is byte for byte
//    what -arch=compute_XX gives, so no separate PTX compile is needed.
//  - --ptxas-options=-v (also -Xptxas -v) puts ptxas's report in the program log, but when
//    ptxas then fails, the log holds the report and not ptxas's error line: compile_cuda
//    compiles once more without -v to get the message.
//  - sm_75 is the oldest sm it supports; one -arch per program (a second one wins, with a
//    warning).
// (Not named nvrtc.h: that is the toolkit's header, which nvrtc_compile.cc includes.)
#pragma once

#include <string>
#include <vector>

#include "kiln/codegen/gpu_build.h"

namespace kiln::codegen::source {

// What ptxas reports for one kernel (an entry function) compiled for one sm.
struct KernelResources {
  std::string kernel;
  int sm = 0;
  int registers = 0;           // per thread
  int barriers = 0;            // named barriers used (bar.sync ids)
  int spill_stores_bytes = 0;  // per thread
  int spill_loads_bytes = 0;
  // Local memory per thread: the kernel's stack frame (local arrays, spills), or the
  // cumulative stack with callees where ptxas reports it and it is larger.
  int stack_bytes = 0;
  int shared_bytes = 0;        // static __shared__ per block (dynamic shared memory is not known here)
  // Constant banks on the kernel's line, summed (cmem[0] holds the parameters; ptxas names it
  // for sm_80 but not for sm_90). Module-level __constant__ data is reported apart and not here.
  int constant_bytes = 0;
};

// A cubin for sm_XX, or (ptx) the PTX text for compute_XX.
// A cubin's ELF bytes, or the PTX text with its terminating NUL (as cuModuleLoadData wants it).
using CudaImage = GpuImage;

struct NvrtcResult {
  std::vector<CudaImage> images;            // a cubin per sm, ascending, then the PTX
  std::vector<KernelResources> resources;   // every kernel, from the highest sm's cubin
  std::string log;                          // the programs' logs (ptxas's report, warnings)
  double seconds = 0;                       // wall time of compile_cuda
};

// True when kiln was built with NVRTC (CMake found the CUDA toolkit, KILN_CUDA on).
bool nvrtc_available();

// "13.0": the version of the NVRTC linked in; "" when built without it.
std::string nvrtc_version();

// Compiles `source` (one translation unit, every kernel extern "C") into one cubin per sm of
// `sms` (e.g. {80, 90}; plain sm_XX, duplicates ignored) and the PTX of the highest. Options:
// --std=c++17 -default-device --fmad=true --minimal --ptxas-options=-v, no line info; with
// `needs_headers`, the toolkit's include folder too and not --minimal (kiln's own code
// needs no CUDA header). Throws kiln::Error naming the sm: with NVRTC's log on a compile error,
// with ptxas's message on a resource error (e.g. "Entry function 'k' uses too much shared data
// (0x10000 bytes, 0xc000 max)"), for an sm this NVRTC does not support (listing those it
// does), for no sm, and when kiln was built without NVRTC. With `arch_specific`, for sm_XXa
// (`sms` one sm: a cubin alone, no PTX, which runs on that chip only).
NvrtcResult compile_cuda(const std::string& source, const std::vector<int>& sms, bool needs_headers = false,
                         bool arch_specific = false);

// Parses ptxas's -v output into one record per entry function, in the order of the report:
//   ptxas info    : Compiling entry function 'k' for 'sm_80'
//   ptxas info    : Function properties for k
//   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 32 registers, used 1 barriers, 384 bytes smem, 360 bytes cmem[0]
// Lines it does not know are skipped; so are the properties of non-entry functions. Pure.
std::vector<KernelResources> parse_ptxas_report(const std::string& log);

}  // namespace kiln::codegen::source
