// Measuring a GPU kernel for the tuner: the candidate's module (build_gpu) is loaded on the device
// by the isolated child that measures it (measure_process.h). The tuner's own process never
// opens a device: CUDA is not fork-safe once initialized, and a child forked from a process
// that holds a CUDA context cannot use it. So the reference run (the default schedule) and every
// candidate each open the device in a child of their own; the device's setup (PoCL compiling the
// OpenCL C, the driver loading a cubin) happens before the timing.
#pragma once
#include <memory>
#include "kiln/autotune/kernel_measure.h"
#include "kiln/codegen/gpu_build.h"

namespace kiln::autotune {

// Opens the target's device in an isolated child and closes it: throws kiln::Error("cannot
// measure on the cuda device: needs a CUDA driver: libcuda.so.1 not found ...") when it cannot
// be opened, so that a tuner says why once, before any task, rather than per candidate.
void check_gpu_device(const Target& target);

// Runs the module's first program once on host buffers (KernelReference::make's `run`): opens
// the target's device, copies the arguments in, launches every kernel of the program in order
// (with device workspace buffers), copies the arguments back.
RunOnHost run_gpu_on_host(const codegen::GpuModule& module);

// The GPU counterpart of measure_kernel: runs the module's first program once on the reference
// inputs, throws kiln::Error("wrong result: ...") on a mismatch, then times its launches with
// a device synchronization after each run (seconds per run, one per sample). Every kiln::Error
// of the device (no driver, a launch that fails) is the candidate's error.
MeasureFn measure_gpu_kernel(const codegen::GpuModule& module, std::shared_ptr<const KernelReference> reference,
                             const TimerOptions& timer, const Tolerance& tolerance = Tolerance());

}  // namespace kiln::autotune
