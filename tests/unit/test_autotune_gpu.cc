// GPU candidates measured for the tuner (autotune/gpu_measure.h): on the OpenCL device (PoCL on
// CPUs), in isolated children, against the default schedule's outputs.
#include <catch2/catch.hpp>

#include <regex>

#include "autotune/gpu_measure.h"
#include "kiln/pipeline.h"
#include "schedule/templates/generic_gpu.h"
#include "kiln/support/error.h"
#include "kiln/te/operation.h"

using namespace kiln;

namespace {

// out = A + B (or A * B: a wrong candidate) under the generic GPU schedule with the threads
// knob's choice `threads` (0: 64 threads per block): the lowered function and its module.
std::pair<ir::PrimFunc, codegen::GpuModule> add_kernel(size_t threads, bool multiply = false,
                                                       const Target& target = Target::parse("opencl")) {
  te::Tensor a = te::placeholder({33, 70}, ir::DataType::f32(), "A");
  te::Tensor b = te::placeholder({33, 70}, ir::DataType::f32(), "B");
  te::Tensor out = te::compute({33, 70}, [&](ir::Var i, ir::Var j) { return multiply ? a(i, j) * b(i, j) : a(i, j) + b(i, j); },
                               "out");
  schedule::Schedule s = schedule::create({out});
  schedule::Config cfg = schedule::Config::with_choices({{"threads", threads}});
  schedule::schedule_generic_gpu(s, {out}, target, cfg);
  ir::PrimFunc f = kiln::loop_ir(s, {a, b, out}, "add");
  return {f, kiln::build_gpu({f}, target)};
}

}  // namespace

TEST_CASE("autotune: GPU candidates are checked and timed on the device in children", "[autotune][gpu][opencl]") {
  try {
    autotune::check_gpu_device(Target::parse("opencl"));
  } catch (const Error& e) {
    WARN("skipped: " << e.what());
    return;
  }
  const auto [func, reference_module] = add_kernel(2);
  auto ref = autotune::KernelReference::make(func, 1, 7, autotune::run_gpu_on_host(reference_module));
  autotune::TimerOptions timer;
  timer.repeat = 3;
  timer.min_duration_s = 0;
  // Another config of the same kernel: right, and timed.
  std::vector<double> samples = autotune::measure_gpu_kernel(add_kernel(0).second, ref, timer)();
  REQUIRE(samples.size() == 3);
  for (double s : samples) CHECK(s > 0);
  // A kernel computing something else is rejected by its outputs.
  REQUIRE_THROWS_WITH(autotune::measure_gpu_kernel(add_kernel(0, true).second, ref, timer)(),
                      Catch::Contains("wrong result: output 0 element"));
}

TEST_CASE("autotune: a GPU target without its driver is refused before tuning", "[autotune][gpu]") {
  setenv("KILN_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  REQUIRE_THROWS_WITH(autotune::check_gpu_device(Target::parse("cuda -arch=sm_90")),
                      Catch::Contains("cannot measure on the cuda device: needs a CUDA driver"));
  unsetenv("KILN_CUDA_DRIVER");
}

TEST_CASE("autotune: a CUDA module carries ptxas's registers and spills for the cost model", "[autotune][gpu]") {
  if (!codegen::cuda_codegen_available()) {
    WARN("skipped: this kiln was built without NVRTC");
    return;
  }
  const codegen::GpuModule m = add_kernel(2, false, Target::parse("cuda -arch=sm_90")).second;
  // The same numbers as the compile notes' "kernel K (sm_90): N registers, ..., spills S/L bytes".
  int registers = 0, spills = 0;
  const std::regex note(R"(kernel \S+ \(sm_90\): (\d+) registers, .* spills (\d+)/(\d+) bytes)");
  for (const std::string& n : m.notes) {
    std::smatch g;
    if (!std::regex_search(n, g, note)) continue;
    registers = std::max(registers, std::stoi(g[1]));
    spills = std::max(spills, std::stoi(g[2]) + std::stoi(g[3]));
  }
  CHECK(registers > 0);
  CHECK(m.max_registers == registers);
  CHECK(m.max_spill_bytes == spills);
}
