// Real-kernel measurement for the tuner (see kernel_measure.h).
#include "kiln/autotune/kernel_measure.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

#include "kiln/autotune/space_ops.h"
#include "kiln/runtime/kernel.h"
#include "kiln/support/error.h"

namespace kiln::autotune {

namespace {

int64_t numel_of(const ir::Buffer& param) {
  int64_t n = 1;
  for (const ir::Expr& d : param->shape) {
    std::optional<int64_t> v = ir::as_const_int(d);
    KILN_USER_CHECK(v.has_value()) << "parameter '" << param->name << "' has a non-constant shape";
    n *= *v;
  }
  return n;
}

}  // namespace

// One kernel argument, static shape, on pages of its own as the graph executor places
// activations (its arena): a kernel's speed depends on where its operands lie relative to each
// other, and candidates timed on 64-byte aligned buffers from separate allocations measured
// the same config 54 to 97 GFLOPS (mobilenet_v2's 1x1 16->96 at 112x112; 97 in bench_ops and
// in the model).
struct KernelReference::Buffer {
  ir::DataType dtype;
  int64_t numel = 1;
  std::unique_ptr<uint8_t, decltype(&std::free)> data{nullptr, &std::free};

  explicit Buffer(const ir::Buffer& param) : dtype(param->dtype), numel(numel_of(param)) {
    constexpr size_t kPage = 4096;
    const size_t bytes = (static_cast<size_t>(numel) * dtype.bytes() + kPage - 1) / kPage * kPage;
    data.reset(static_cast<uint8_t*>(std::aligned_alloc(kPage, bytes == 0 ? kPage : bytes)));
    KILN_USER_CHECK(data != nullptr) << "cannot allocate " << bytes << " bytes for parameter '" << param->name << "'";
    std::memset(data.get(), 0, bytes);
  }
  size_t bytes() const { return static_cast<size_t>(numel) * dtype.bytes(); }
  bool is_f32() const { return dtype == ir::DataType::f32(); }
  bool is_f64() const { return dtype == ir::DataType::f64(); }

  double at(int64_t i) const {
    const uint8_t* p = data.get();
    if (is_f32()) return reinterpret_cast<const float*>(p)[i];
    if (is_f64()) return reinterpret_cast<const double*>(p)[i];
    switch (dtype.bits) {  // integers and bool: compared exactly through their value
      case 1: case 8: return dtype.is_int() ? reinterpret_cast<const int8_t*>(p)[i] : p[i];
      case 16: return dtype.is_int() ? reinterpret_cast<const int16_t*>(p)[i] : reinterpret_cast<const uint16_t*>(p)[i];
      case 32: return dtype.is_int() ? reinterpret_cast<const int32_t*>(p)[i] : reinterpret_cast<const uint32_t*>(p)[i];
      default: return dtype.is_int() ? static_cast<double>(reinterpret_cast<const int64_t*>(p)[i])
                                     : static_cast<double>(reinterpret_cast<const uint64_t*>(p)[i]);
    }
  }
  // NaN in every float element, 0xA5 bytes elsewhere: what a candidate leaves unwritten shows.
  void poison() {
    if (is_f32()) std::fill_n(reinterpret_cast<float*>(data.get()), numel, std::numeric_limits<float>::quiet_NaN());
    else if (is_f64()) std::fill_n(reinterpret_cast<double*>(data.get()), numel, std::numeric_limits<double>::quiet_NaN());
    else std::memset(data.get(), 0xA5, bytes());
  }
};

namespace {

kiln_kernel_fn kernel_of(const codegen::Module& module, const ir::PrimFunc& func) {
  KILN_USER_CHECK(module.defined()) << "kernel '" << func.name << "' was not built";
  return module.get_function(func.name);
}

void call(kiln_kernel_fn fn, const std::vector<void*>& args, const std::string& name) {
  int32_t rc = fn(args.data(), static_cast<int32_t>(args.size()));
  // The codes of the generated code (codegen_llvm.cc): -2 for a wrong argument count, -1 for a
  // failed heap allocation of a buffer it allocates itself (or a parallel task that failed).
  KILN_USER_CHECK(rc == 0) << "kernel '" << name << "' returned " << rc
                           << (rc == -1   ? ": a heap allocation of one of its buffers failed (out of memory), or one of "
                                            "its parallel tasks did"
                               : rc == -2 ? ": called with the wrong number of arguments"
                                          : "");
}

// Demotes the buffers from every core's private caches to the shared last level: each thread of
// the pool does it (one task each), since a kernel's tasks leave what they read in the L1/L2 of
// whichever core ran them. A task waits (up to 2 ms) for all to start, so that no thread runs
// two of them while another core sleeps.
void demote_on_every_core(const std::vector<std::pair<const void*, size_t>>& buffers) {
  struct Job {
    const std::vector<std::pair<const void*, size_t>>* buffers;
    std::atomic<int> started{0};
    int tasks;
  } job{&buffers, {0}, kiln_get_num_threads()};
  kiln_parallel_for([](int32_t, int32_t, void* closure) -> int32_t {
    Job& j = *static_cast<Job*>(closure);
    j.started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
    while (j.started.load() < j.tasks && std::chrono::steady_clock::now() < deadline) {
    }
    for (const auto& [data, bytes] : *j.buffers) demote_to_llc(data, bytes);
    return 0;
  }, &job, job.tasks);
}

}  // namespace

KernelReference::~KernelReference() = default;
size_t KernelReference::num_inputs() const { return inputs_.size(); }
size_t KernelReference::num_outputs() const { return output_params_.size(); }
const void* KernelReference::input(size_t i) const { return inputs_.at(i)->data.get(); }
size_t KernelReference::input_bytes(size_t i) const { return inputs_.at(i)->bytes(); }

KernelReference::Args::Args() = default;
KernelReference::Args::Args(Args&&) noexcept = default;
KernelReference::Args::~Args() = default;

KernelReference::Args KernelReference::candidate_args() const {
  Args a;
  for (const auto& b : inputs_) {
    a.data.push_back(b->data.get());
    a.bytes.push_back(b->bytes());
  }
  for (const ir::Buffer& p : output_params_) {
    a.outputs.push_back(std::make_unique<Buffer>(p));
    a.outputs.back()->poison();
    a.data.push_back(a.outputs.back()->data.get());
    a.bytes.push_back(a.outputs.back()->bytes());
  }
  return a;
}

void KernelReference::check(const Args& args, const Tolerance& tol) const {
  KILN_CHECK(args.outputs.size() == expected_.size()) << args.outputs.size() << " outputs for " << expected_.size();
  for (size_t o = 0; o < args.outputs.size(); ++o) {
    const std::vector<double>& want = expected_[o];
    double scale = 0;
    for (double w : want) scale = std::isfinite(w) ? std::max(scale, std::abs(w)) : scale;
    for (int64_t e = 0; e < args.outputs[o]->numel; ++e) {
      const double g = args.outputs[o]->at(e), w = want[static_cast<size_t>(e)];
      if (std::isnan(g) && std::isnan(w)) continue;
      if (g == w) continue;  // also equal infinities
      if (std::abs(g - w) <= tol.rtol * std::abs(w) + tol.atol_rel * scale) continue;
      throw Error(fmt::format("wrong result: output {} element {}: got {}, expected {} (rtol {}, atol {} x max|expected| {})",
                              o, e, g, w, tol.rtol, tol.atol_rel, scale));
    }
  }
}

std::shared_ptr<const KernelReference> KernelReference::make(const codegen::Module& module, const ir::PrimFunc& func,
                                                             size_t num_outputs, uint64_t seed, double timeout_s) {
  kiln_kernel_fn fn = kernel_of(module, func);
  return make(func, num_outputs, seed, [fn, name = func.name](const std::vector<void*>& args) { call(fn, args, name); },
              timeout_s);
}

std::shared_ptr<const KernelReference> KernelReference::make(const ir::PrimFunc& func, size_t num_outputs,
                                                             uint64_t seed, const RunOnHost& run, double timeout_s) {
  KILN_USER_CHECK(num_outputs >= 1 && num_outputs <= func.params.size())
      << "kernel '" << func.name << "' has " << func.params.size() << " parameters, not " << num_outputs << " outputs";
  std::shared_ptr<KernelReference> ref(new KernelReference());
  std::mt19937_64 rng(seed);
  const size_t num_inputs = func.params.size() - num_outputs;
  for (size_t i = 0; i < num_inputs; ++i) {
    auto b = std::make_unique<Buffer>(func.params[i]);
    for (int64_t e = 0; e < b->numel; ++e) {
      double v = 2 * uniform_real(rng) - 1;
      if (b->is_f32()) reinterpret_cast<float*>(b->data.get())[e] = static_cast<float>(v);
      if (b->is_f64()) reinterpret_cast<double*>(b->data.get())[e] = v;
    }
    ref->inputs_.push_back(std::move(b));
  }
  ref->output_params_.assign(func.params.begin() + static_cast<long>(num_inputs), func.params.end());

  // Run in a child: a failing reference must not take the tuner down. The outputs come back
  // as doubles, concatenated.
  IsolatedResult r = run_isolated([&] {
    Args args = ref->candidate_args();
    run(args.data);
    std::vector<double> all;
    for (const auto& o : args.outputs)
      for (int64_t e = 0; e < o->numel; ++e) all.push_back(o->at(e));
    return all;
  }, timeout_s);
  KILN_USER_CHECK(r.ok()) << "the reference run of kernel '" << func.name << "' failed: " << r.error;
  size_t at = 0;
  for (const ir::Buffer& p : ref->output_params_) {
    const int64_t n = numel_of(p);
    KILN_CHECK(at + static_cast<size_t>(n) <= r.values.size()) << "reference outputs of '" << func.name << "' cut short";
    ref->expected_.emplace_back(r.values.begin() + static_cast<long>(at), r.values.begin() + static_cast<long>(at + n));
    at += static_cast<size_t>(n);
  }
  return ref;
}

MeasureFn measure_kernel(const codegen::Module& module, const ir::PrimFunc& func,
                         std::shared_ptr<const KernelReference> reference, const TimerOptions& timer,
                         const Tolerance& tol, const std::vector<size_t>& cold_inputs) {
  KILN_USER_CHECK(reference != nullptr) << "measuring kernel '" << func.name << "' without a reference";
  KILN_USER_CHECK(func.params.size() == reference->num_inputs() + reference->num_outputs())
      << "kernel '" << func.name << "' has " << func.params.size() << " parameters; its reference has "
      << reference->num_inputs() + reference->num_outputs();
  for (size_t i : cold_inputs)
    KILN_USER_CHECK(i < reference->num_inputs()) << "kernel '" << func.name << "': cold input " << i << " is not an input";
  kiln_kernel_fn fn = kernel_of(module, func);
  // `module` is captured: the kernel's code lives as long as the hook.
  return [module, fn, name = func.name, reference, timer, tol, cold_inputs]() {
    const KernelReference& ref = *reference;
    KernelReference::Args args = ref.candidate_args();
    call(fn, args.data, name);
    ref.check(args, tol);
    TimerOptions t = timer;
    if (!cold_inputs.empty()) {
      t.min_duration_s = 0;
      std::vector<std::pair<const void*, size_t>> cold;
      for (size_t i : cold_inputs) cold.emplace_back(ref.input(i), ref.input_bytes(i));
      t.before_sample = [cold] { demote_on_every_core(cold); };
    }
    return time_function([&] { call(fn, args.data, name); }, t).samples;
  };
}

}  // namespace kiln::autotune
