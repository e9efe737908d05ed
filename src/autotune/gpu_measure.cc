// Measuring a GPU kernel for the tuner (see gpu_measure.h).
#include "autotune/gpu_measure.h"

#include "device/device_api.h"
#include "kiln/support/error.h"

namespace kiln::autotune {
namespace {

// A program of a module, loaded on a device this process opened, with a device buffer for each
// parameter and workspace buffer.
runtime::DeviceKind device_kind(const Target& t) {
  return t.kind == TargetKind::kCUDA ? runtime::DeviceKind::kCUDA : runtime::DeviceKind::kOpenCL;
}

class LoadedProgram {
 public:
  LoadedProgram(const codegen::GpuModule& m, const std::vector<size_t>& param_bytes)
      : device_(runtime::open_device(device_kind(m.target))),
        module_(device_->load_module(codegen::device_images(m))),
        program_(m.programs.at(0)) {
    KILN_CHECK(param_bytes.size() == program_.params.size())
        << param_bytes.size() << " arguments for the " << program_.params.size() << " parameters of '"
        << program_.name << "'";
    for (size_t bytes : param_bytes) buffers_.push_back(device_->alloc(bytes));
    for (const ir::Buffer& w : program_.workspace)
      buffers_.push_back(device_->alloc(static_cast<size_t>(w.num_elements() * w->dtype.bytes())));
  }
  ~LoadedProgram() {
    for (void* b : buffers_) device_->free(b);
  }
  LoadedProgram(const LoadedProgram&) = delete;
  LoadedProgram& operator=(const LoadedProgram&) = delete;

  void copy_in(const KernelReference::Args& args) {
    for (size_t i = 0; i < args.data.size(); ++i) device_->copy_to_device(buffers_[i], args.data[i], args.bytes[i]);
  }
  void copy_out(const KernelReference::Args& args) {
    for (size_t i = 0; i < args.data.size(); ++i) device_->copy_to_host(args.data[i], buffers_[i], args.bytes[i]);
  }
  // Every launch of the program, then a wait for them.
  void run() {
    for (const ir::KernelLaunch& l : program_.launches) {
      std::vector<void*> kargs;
      for (int a : l.args) kargs.push_back(buffers_.at(static_cast<size_t>(a)));
      module_->launch(l.kernel, codegen::launch_dims(l), kargs);
    }
    device_->synchronize();
  }

 private:
  std::unique_ptr<runtime::DeviceAPI> device_;
  std::unique_ptr<runtime::DeviceModule> module_;
  const ir::DeviceProgram& program_;
  std::vector<void*> buffers_;
};

}  // namespace

void check_gpu_device(const Target& target) {
  KILN_USER_CHECK(target.is_gpu()) << "target '" << target.str() << "' is not a GPU target";
  IsolatedResult r = run_isolated([&] {
    runtime::open_device(device_kind(target));
    return std::vector<double>();
  }, 60);
  KILN_USER_CHECK(r.ok()) << "cannot measure on the " << (target.kind == TargetKind::kCUDA ? "cuda" : "opencl")
                          << " device: " << r.error;
}

RunOnHost run_gpu_on_host(const codegen::GpuModule& module) {
  KILN_CHECK(module.programs.size() == 1) << "run_gpu_on_host: a module of " << module.programs.size() << " programs";
  return [module](const std::vector<void*>& data) {
    KernelReference::Args args;
    args.data = data;
    for (const ir::Buffer& p : module.programs[0].params)
      args.bytes.push_back(static_cast<size_t>(p.num_elements() * p->dtype.bytes()));
    LoadedProgram program(module, args.bytes);
    program.copy_in(args);
    program.run();
    program.copy_out(args);
  };
}

MeasureFn measure_gpu_kernel(const codegen::GpuModule& module, std::shared_ptr<const KernelReference> reference,
                             const TimerOptions& timer, const Tolerance& tolerance) {
  KILN_CHECK(module.programs.size() == 1) << "measure_gpu_kernel: a module of " << module.programs.size() << " programs";
  KILN_USER_CHECK(reference != nullptr) << "measuring kernel '" << module.programs[0].name << "' without a reference";
  return [module, reference, timer, tolerance]() {
    KernelReference::Args args = reference->candidate_args();
    LoadedProgram program(module, args.bytes);
    // The outputs too: poisoned, so that what the candidate leaves unwritten fails the check.
    program.copy_in(args);
    program.run();
    program.copy_out(args);
    reference->check(args, tolerance);
    return time_function([&] { program.run(); }, timer).samples;
  };
}

}  // namespace kiln::autotune
