// The GPU backend's code generation: kernels with their launch records (the pipeline's GPU stages
// made them: src/pipeline.cc, docs/architecture.md "Pipeline") printed into one module of CUDA C
// or OpenCL C source in the target's dialect (source/codegen_c.h), and for CUDA compiled by NVRTC
// into cubins for the target's image sms and PTX, with ptxas's registers, spills and shared
// memory per kernel in the notes. kiln::build_gpu (pipeline.h) runs the GPU part of the pipeline
// on loop-level functions.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/ir/device_program.h"
#include "kiln/ir/stmt.h"
#include "kiln/runtime/device_graph.h"
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
  // CUDA, compiled: ptxas's report over the kernels (highest sm): the most registers per
  // thread, and the most spill bytes (stores + loads) per thread. 0 otherwise.
  int max_registers = 0;
  int max_spill_bytes = 0;
  // Built with GpuBuildOptions::race_check: every kernel takes the race record as one more
  // argument, and race_checked_buffers[id - 1] names ("kernel.buffer") the shared buffer that
  // the record's id refers to.
  bool race_check = false;
  std::vector<std::string> race_checked_buffers;
};

struct GpuBuildOptions {
  // CUDA: compile the source with NVRTC (false: print it only, e.g. to save it for reading).
  bool compile = true;
  // CUDA: cubins for these sms and the PTX of the highest; empty: the target's images
  // (Target::cuda_image_sms). The tuner builds the target's own sm only: a candidate runs on
  // one GPU, and NVRTC's time is most of a candidate's build.
  std::vector<int> image_sms;
  // OpenCL only (kiln::Error for CUDA): print kernels that check their own shared-memory
  // accesses for races, the check docs/gpu.md describes for PoCL, which runs the work-items of a
  // group one after another between barriers and so often computes the right numbers from a
  // racy kernel.
  //   Each shared buffer of N elements gets four N-element shadow arrays in shared memory (one
  //   array of 4 N ints): the last writer (flat local id) of each element and the epoch of that
  //   write, the last reader (-2 for several) and the epoch of that read. A work-item's epoch counts the kiln barriers it
  //   has passed (all work-items pass the same ones, so epochs agree across the group; the
  //   barrier after the kernel's prologue, which sets the shadow epochs to -1, is not counted).
  //   A load of an element written in the current epoch by another work-item is a race (read
  //   after write); so is a store to an element read in the current epoch by another
  //   (write after read). Two stores in one epoch are not: a te stage writes each element one
  //   value, and insert_thread_sync relies on that.
  //   Argument convention: every kernel of the module takes one more argument after its
  //   buffers, `__global int* kiln_races` of at least 5 ints zeroed before the first launch:
  //   [0] the number of racy accesses, [1] how many of them were writes after reads; for the
  //   first one, [2] the buffer's id (see GpuModule::race_checked_buffers), [3] the element and
  //   [4] 1 for a read after write, 2 for a write after read. Which of the two a missing barrier
  //   shows as depends on the order the work-items ran in (PoCL: one after another, so a later
  //   work-item's write meets an earlier one's read). For tests (test_gpu_util.h); the runtime
  //   does not pass the argument.
  bool race_check = false;
  // A test hook: applied to each kernel after insert_thread_sync, before printing (e.g. to
  // remove a barrier and see race_check report the races).
  std::function<ir::PrimFunc(const ir::PrimFunc&)> after_sync;
};

// A CUDA kernel past the static shared-memory limit takes its shared buffers as dynamic shared
// memory: sets launch->dynamic_shared_bytes (kiln::Error when even the opt-in limit is passed).
void set_dynamic_shared(const ir::PrimFunc& kernel, const Target& target, ir::KernelLaunch* launch);

// m->programs (their kernels through the pipeline's GPU stages) printed into m->source in the
// target's dialect (race-checking kernels with m->race_check).
void print_gpu_source(GpuModule* m);

// CUDA: m->source compiled by NVRTC into cubins for `image_sms` (empty: the target's images,
// Target::cuda_image_sms) and the PTX of the highest, with ptxas's report in m->notes and the
// register and spill maxima; kiln::Error with NVRTC's or ptxas's message for a kernel they
// reject. OpenCL: nothing (the source is built when a device loads it).
void compile_gpu_source(GpuModule* m, const std::vector<int>& image_sms = {});

// Writes the module's code for reading into `dir` (created if missing): per program (fused
// group) NAME.cu or NAME.cl with its kernels, and for CUDA NAME.ptx, the PTX of those kernels
// cut from the module's PTX image; and module.cu / module.cl, the whole source as compiled.
// Returns the files written. kiln::Error naming a file it cannot write.
std::vector<std::string> write_device_code(const GpuModule& m, const std::string& dir);

// True when this kiln was built with the CUDA toolkit's NVRTC (else CUDA targets print source
// but compile_gpu_source refuses to compile it, saying so).
bool cuda_codegen_available();

// The verifier's limits for a GPU target.
ir::GpuLimits gpu_limits(const Target& target);

// The images a device loads the module from: the OpenCL C source, or the cubins and PTX.
std::vector<runtime::DeviceImage> device_images(const GpuModule& m);

// A launch record as the device layer takes it.
runtime::LaunchDims launch_dims(const ir::KernelLaunch& launch);

}  // namespace kiln::codegen
