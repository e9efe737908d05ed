// kiln's demo: compiles a matmul and a conv2d through the compiler's own path (the target's
// strategy, template and default knobs, the loop passes, LLVM) for this CPU, runs each kernel,
// checks it against a plain-loop reference and prints the achieved GFLOPS.
//
//   kiln_demo [--print-ir] [--print-llvm] [--print-asm]
// prints the matmul's graph and loop IR after every stage, its optimized LLVM IR, its assembly.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "kiln/autotune/measure_process.h"
#include "kiln/codegen/build.h"
#include "kiln/compiler.h"
#include "testing/reference.h"

using namespace kiln;

namespace {

double seconds_per_call(const std::function<void()>& fn) {
  autotune::TimerOptions opts;
  opts.repeat = 3;
  opts.min_duration_s = 0.2;
  return autotune::time_function(fn, opts).median;
}

// The kernels assume 64-byte aligned buffers (runtime/kernel.h).
float* aligned_copy(const std::vector<float>& v) {
  void* p = nullptr;
  if (posix_memalign(&p, 64, std::max<size_t>(v.size(), 1) * sizeof(float))) std::abort();
  std::copy(v.begin(), v.end(), static_cast<float*>(p));
  return static_cast<float*>(p);
}

bool report(const char* what, double flops, double secs, const std::vector<float>& got, const std::vector<float>& want,
            double rtol, double atol) {
  double ratio = ref::worst_error_ratio(got, want, rtol, atol);
  bool ok = ratio <= 1.0;
  std::printf("%-38s %8.1f GFLOPS %9.3f ms  %s (worst error %.3f of tolerance rtol=%g atol=%g)\n", what,
              flops / secs * 1e-9, secs * 1e3, ok ? "correct" : "WRONG", ratio, rtol, atol);
  return ok;
}

// What the demo asks of the compiler besides the defaults.
struct Show {
  std::string dump_ir;
  codegen::BuildOptions build;
};

// One op of the graph IR compiled as kiln compile would: its kernel, built for this CPU.
struct OneOp {
  codegen::Module module;
  kiln_kernel_fn kernel = nullptr;
};

OneOp compile_op(const std::string& op, const std::vector<relay::Expr>& params, const relay::Attrs& attrs,
                 const Show& show) {
  relay::Expr y = relay::make_call(op, params, attrs);
  CompileOptions opts;
  opts.dump_ir_stage = show.dump_ir;
  CompiledModel c = compile(relay::Module::make(params, {y}, {"y"}), opts);
  OneOp r;
  r.module = codegen::build(c.kernels, opts.target, show.build);
  r.kernel = r.module.get_function(c.kernels.at(0).name);
  return r;
}

relay::Expr f32_input(const std::string& name, relay::Shape shape) {
  return relay::make_var(name, relay::tensor_type(relay::DataType::f32(), std::move(shape)));
}

bool demo_matmul(int64_t n, const Show& show) {
  OneOp k = compile_op("nn.matmul", {f32_input("a", {n, n}), f32_input("b", {n, n})}, {}, show);
  size_t e = size_t(n) * n;
  auto av = ref::random_floats(e, 1), bv = ref::random_floats(e, 2);
  float *a = aligned_copy(av), *b = aligned_copy(bv), *c = aligned_copy(std::vector<float>(e));
  void* args[] = {a, b, c};
  double t = seconds_per_call([&] { k.kernel(args, 3); });
  char what[64];
  std::snprintf(what, sizeof what, "matmul %ldx%ldx%ld", long(n), long(n), long(n));
  bool ok = report(what, 2.0 * n * n * n, t, std::vector<float>(c, c + e), ref::matmul(av, bv, int(n), int(n), int(n)),
                   1e-4, 1e-4);
  std::free(a); std::free(b); std::free(c);
  return ok;
}

bool demo_conv2d(const Show& show) {
  // A resnet18 layer: 64 -> 64 channels, 3x3, stride 1, pad 1, on 56x56. The weight is an input
  // here, so the kernel transforms it per call (a model's constant weight is packed at compile time).
  ref::Conv2dShape sh{1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1};
  relay::Attrs attrs = relay::Attrs().set_ints("strides", {1, 1}).set_ints("padding", {1, 1, 1, 1})
                           .set_ints("dilation", {1, 1}).set_int("groups", 1);
  Show quiet = show;
  quiet.dump_ir.clear();
  OneOp k = compile_op("nn.conv2d", {f32_input("x", {sh.n, sh.c, sh.h, sh.w}), f32_input("w", {sh.oc, sh.c, sh.kh, sh.kw})},
                       attrs, quiet);
  auto xv = ref::random_floats(size_t(sh.n) * sh.c * sh.h * sh.w, 3);
  auto wv = ref::random_floats(size_t(sh.oc) * sh.c * sh.kh * sh.kw, 4);
  size_t ny = size_t(sh.n) * sh.oc * sh.out_h() * sh.out_w();
  float *xp = aligned_copy(xv), *wp = aligned_copy(wv), *yp = aligned_copy(std::vector<float>(ny));
  void* args[] = {xp, wp, yp};
  double t = seconds_per_call([&] { k.kernel(args, 3); });
  double flops = 2.0 * ny * sh.c * sh.kh * sh.kw;
  bool ok = report("conv2d 1x64x56x56 * 64x64x3x3, pad 1", flops, t, std::vector<float>(yp, yp + ny),
                   ref::conv2d_nchw(xv, wv, sh), 1e-4, 1e-4);
  std::free(xp); std::free(wp); std::free(yp);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Show show;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--print-ir") show.dump_ir = "all";
    else if (a == "--print-llvm") show.build.dump_llvm_ir = true;
    else if (a == "--print-asm") show.build.dump_asm = true;
    else {
      std::fprintf(stderr, "kiln_demo: unknown option '%s' (expected --print-ir, --print-llvm, --print-asm)\n", argv[i]);
      return 2;
    }
  }
  try {
    std::printf("kiln demo on %s, %d threads\n", Target::host().summary().c_str(), kiln_get_num_threads());
    bool ok = demo_matmul(512, show);
    ok = demo_conv2d(show) && ok;
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln_demo: %s\n", e.what());
    return 1;
  }
}
