// kiln's demo: declares, schedules, compiles and runs a matmul and a conv2d on this CPU, checks
// each against a plain-loop reference and prints the achieved GFLOPS.
//
//   kiln_demo [--print-ir] [--print-llvm] [--print-asm]
// prints the matmul kernel's loop IR after every pass, its optimized LLVM IR, its assembly.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "kiln/autotune/measure_process.h"
#include "kiln/codegen/driver.h"
#include "kiln/schedule/templates/matmul_cpu.h"
#include "kiln/te/ops/nn.h"
#include "kiln/testing/reference.h"

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

bool demo_matmul(int64_t n, const codegen::PipelineOptions& show) {
  schedule::Config cfg;
  auto p = schedule::matmul_cpu(n, n, n, cfg);
  auto mod = codegen::build(p.sched, p.args(), Target::host(), "matmul", show);
  size_t e = size_t(n) * n;
  auto av = ref::random_floats(e, 1), bv = ref::random_floats(e, 2);
  float *a = aligned_copy(av), *b = aligned_copy(bv), *c = aligned_copy(std::vector<float>(e));
  void* args[] = {a, b, c};
  auto k = mod.get_function("matmul");
  double t = seconds_per_call([&] { k(args, 3); });
  char what[64];
  std::snprintf(what, sizeof what, "matmul %ldx%ldx%ld", long(n), long(n), long(n));
  bool ok = report(what, 2.0 * n * n * n, t, std::vector<float>(c, c + e), ref::matmul(av, bv, int(n), int(n), int(n)),
                   1e-4, 1e-4);
  std::printf("  schedule knobs: %s\n", cfg.str().c_str());
  std::free(a); std::free(b); std::free(c);
  return ok;
}

bool demo_conv2d() {
  // A resnet18 layer: 64 -> 64 channels, 3x3, stride 1, pad 1, on 56x56.
  ref::Conv2dShape sh{1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1};
  const auto f32 = ir::DataType::f32();
  auto x = te::placeholder({sh.n, sh.c, sh.h, sh.w}, f32, "x");
  auto w = te::placeholder({sh.oc, sh.c, sh.kh, sh.kw}, f32, "w");
  te::ops::Conv2dAttrs attrs;
  attrs.pad = {1, 1, 1, 1};
  auto y = te::ops::conv2d_nchw(x, w, attrs, "conv");
  auto s = schedule::create({y});
  // A register tile of 4 output channels x 8 output columns accumulates over (rc, ry, rx).
  auto yl = s.cache_write(y, "local");
  auto ax = s[y].op_axis();
  auto [oco, oci] = s[y].split(ax[1], 4);
  auto [owo, owi] = s[y].split(ax[3], 8);
  s[y].reorder({ax[0], oco, ax[2], owo, oci, owi});
  s[y].vectorize(owi);
  s[yl].compute_at(s[y], owo);
  auto la = s[yl].op_axis(), lr = s[yl].reduce_axis();
  s[yl].reorder({lr[0], lr[1], lr[2], la[1], la[3]});
  s[yl].unroll(la[1]);
  s[yl].vectorize(la[3]);
  s[y].parallel(s[y].fuse(ax[0], oco));
  auto mod = codegen::build(s, {x, w, y}, Target::host(), "conv2d");

  auto xv = ref::random_floats(size_t(sh.n) * sh.c * sh.h * sh.w, 3);
  auto wv = ref::random_floats(size_t(sh.oc) * sh.c * sh.kh * sh.kw, 4);
  size_t ny = size_t(sh.n) * sh.oc * sh.out_h() * sh.out_w();
  float *xp = aligned_copy(xv), *wp = aligned_copy(wv), *yp = aligned_copy(std::vector<float>(ny));
  void* args[] = {xp, wp, yp};
  auto k = mod.get_function("conv2d");
  double t = seconds_per_call([&] { k(args, 3); });
  double flops = 2.0 * ny * sh.c * sh.kh * sh.kw;
  bool ok = report("conv2d 1x64x56x56 * 64x64x3x3, pad 1", flops, t, std::vector<float>(yp, yp + ny),
                   ref::conv2d_nchw(xv, wv, sh), 1e-4, 1e-4);
  std::free(xp); std::free(wp); std::free(yp);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  codegen::PipelineOptions show;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--print-ir") show.dump_ir_after = "all";
    else if (a == "--print-llvm") show.build.dump_llvm_ir = true;
    else if (a == "--print-asm") show.build.dump_asm = true;
    else {
      std::fprintf(stderr, "kiln_demo: unknown option '%s' (expected --print-ir, --print-llvm, --print-asm)\n", argv[i]);
      return 2;
    }
  }
  try {
    std::printf("kiln demo on %s, %d threads\n", Target::host().str().c_str(), kiln_get_num_threads());
    bool ok = demo_matmul(512, show);
    ok = demo_conv2d() && ok;
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln_demo: %s\n", e.what());
    return 1;
  }
}
