// The race-checking build of the OpenCL dialect (codegen::GpuBuildOptions::race_check) on the
// OpenCL device (PoCL on CPUs). PoCL runs the work-items of a group one after another between
// barriers, so a kernel missing a barrier often still computes the right numbers there (docs/gpu.md,
// "Checked on every run without a GPU"): the instrumented kernels count the racy shared-memory
// accesses instead. A correct template must report none; the same kernel with one barrier
// removed on purpose must report some. (The generic GPU schedules use no shared memory.)
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>

#include "kiln/pipeline.h"
#include "kiln/ir/functor.h"
#include "schedule/templates/generic_gpu.h"
#include "schedule/templates/matmul_gpu.h"
#include "kiln/te/ops/nn_dense.h"
#include "kiln/te/ops/nn_norm.h"
#include "kiln/te/operation.h"
#include "testing/reference.h"
#include "test_gpu_util.h"

using namespace kiln;
using runtime::NDArray;

namespace {



// One run of the matmul template's dense (no epilogue) at knobs `choices` on `dev`.
struct DenseRun {
  std::string source;
  test::RaceReport races;
  int64_t wrong = 0;  // outputs off the double-precision reference
};

DenseRun run_dense(runtime::DeviceAPI& dev, int64_t m, int64_t n, int64_t k, const codegen::GpuBuildOptions& opt,
                   const std::map<std::string, size_t>& choices = {}) {
  te::Tensor x = te::placeholder({m, k}, ir::DataType::f32(), "X");
  te::Tensor w = te::placeholder({n, k}, ir::DataType::f32(), "W");
  te::Tensor y = te::ops::dense_plain(x, w);
  schedule::Config cfg = schedule::Config::with_choices(choices);
  const Target t = Target::parse("opencl");
  schedule::Schedule s = schedule::schedule_anchor_gpu({y}, y, schedule::schedule_matmul_gpu, t, cfg);
  codegen::GpuModule mod = kiln::build_gpu({kiln::loop_ir(s, {x, w, y}, "dense")}, t, opt);
  auto xv = ref::random_floats(m * k, 11, -4.f, 4.f), wv = ref::random_floats(n * k, 12, -4.f, 4.f);
  std::vector<NDArray> args = {NDArray::from_vector<float>({m, k}, runtime::dtype_f32(), xv),
                               NDArray::from_vector<float>({n, k}, runtime::dtype_f32(), wv),
                               NDArray::zeros({m, n}, runtime::dtype_f32())};
  DenseRun r;
  r.source = mod.source;
  test::run_on_device(dev, mod, args, 0, &r.races);
  const float* out = args[2].data<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t q = 0; q < k; ++q) acc += double(xv[i * k + q]) * wv[j * k + q];
      r.wrong += !(std::abs(out[i * n + j] - acc) <= 1e-4 * (1 + std::abs(acc)));
    }
  return r;
}

}  // namespace

TEST_CASE("race check: the matmul template's dense reports no races and the right numbers", "[gpu][opencl]") {
  REQUIRE_OPENCL(dev);
  codegen::GpuBuildOptions opt;
  opt.race_check = true;
  // The default knobs (16 x 16 threads of 4 x 4 outputs, K slices of 16) on sizes no tile
  // divides and on tiny_cnn's classifier row; then 1 x 32 threads of 8 x 1 outputs over K slices
  // of 4, a different cooperative fetch.
  struct Case {
    int64_t m, n, k;
    std::map<std::string, size_t> choices;
  };
  const std::vector<Case> cases = {
      {70, 90, 45, {}},
      {1, 10, 32, {}},
      {33, 65, 17, {{"threads_m", 0}, {"threads_n", 5}, {"rows_per_thread", 3}, {"cols_per_thread", 0}, {"tile_k", 2}}}};
  for (const Case& c : cases) {
    DenseRun r = run_dense(*dev, c.m, c.n, c.k, opt, c.choices);
    INFO("dense " << c.m << "x" << c.n << "x" << c.k << ", first race: " << r.races.first << "\n" << r.source);
    // Both staged operands are shadowed, and every barrier but the prologue's advances the epoch.
    CHECK_THAT(r.source, Catch::Contains("__local int kiln_rcs_X_shared[") &&
                             Catch::Contains("__local int kiln_rcs_W_shared[") &&
                             Catch::Contains("__global int* restrict kiln_races"));
    CHECK(test::occurrences(r.source, "++kiln_rc_epoch;") == test::occurrences(r.source, "barrier(CLK_LOCAL_MEM_FENCE);") - 1);
    CHECK(r.wrong == 0);
    CHECK(r.races.count == 0);
  }
}

TEST_CASE("race check: the dense kernel with a barrier removed reports races", "[gpu][opencl]") {
  REQUIRE_OPENCL(dev);
  // The template's K loop is { fetch the X and W slices; barrier; multiply-accumulate from
  // them; barrier }: insert_thread_sync closes the loop body with the loop-carried barrier.
  // Removing the first lets the compute read slices other work-items have not written yet;
  // removing the second lets the next iteration's fetch overwrite what others still read.
  // Which direction the checker sees for one access depends on the order the work-items ran in
  // (GpuBuildOptions::race_check), but whether they run in lockstep or one after another, some
  // work-item reads another's fetch in the first case (read after write), and some work-item's
  // fetch meets another's read of the iteration before in the second (write after read).
  for (int barrier : {0, 1}) {
    const char* what = barrier == 0 ? "the barrier between fetch and compute" : "the loop-closing barrier";
    codegen::GpuBuildOptions opt;
    opt.race_check = true;
    int dropped = 0;
    opt.after_sync = [&](const ir::PrimFunc& kernel) {
      test::DropBarrier drop(barrier);
      ir::PrimFunc f = kernel;
      f.body = drop.mutate_stmt(kernel.body);
      REQUIRE(drop.barriers == 2);  // the K loop's two and no other
      ++dropped;
      return f;
    };
    DenseRun r = run_dense(*dev, 70, 90, 45, opt);
    REQUIRE(dropped == 1);
    // For the record (docs/gpu.md: PoCL's numbers often hide a missing barrier), not a requirement.
    INFO("dense 70x90x45 without " << what << ": " << r.races.count << " races (" << r.races.write_after_read
                                   << " writes after reads), first " << r.races.first << "; " << r.wrong << " of "
                                   << 70 * 90 << " outputs wrong on PoCL\n" << r.source);
    CHECK(r.races.count > 0);
    if (barrier == 0) CHECK(r.races.count - r.races.write_after_read > 0);
    if (barrier == 1) CHECK(r.races.write_after_read > 0);
    CHECK_THAT(r.races.first, Catch::StartsWith("dense.X_shared[") || Catch::StartsWith("dense.W_shared["));
  }
}

TEST_CASE("race check: kernels without shared memory take the record and run unchanged", "[gpu][opencl]") {
  REQUIRE_OPENCL(dev);
  const int64_t rows = 37, cols = 129;
  te::Tensor a = te::placeholder({rows, cols}, ir::DataType::f32(), "A");
  te::Tensor b = te::placeholder({cols}, ir::DataType::f32(), "B");
  te::Tensor out = te::compute(
      {rows, cols}, [&](ir::Var i, ir::Var j) { return ir::max(a(i, j) + b(j), ir::make_zero(ir::DataType::f32())); },
      "out");
  schedule::Schedule s = schedule::create({out});
  schedule::Config cfg;
  const Target t = Target::parse("opencl");
  schedule::schedule_generic_gpu(s, {out}, t, cfg);
  codegen::GpuBuildOptions opt;
  opt.race_check = true;
  codegen::GpuModule m = kiln::build_gpu({kiln::loop_ir(s, {a, b, out}, "f")}, t, opt);
  INFO(m.source);
  CHECK_THAT(m.source, Catch::Contains("kiln_races") && !Catch::Contains("kiln_rc_epoch"));
  CHECK(m.race_checked_buffers.empty());
  auto av = ref::random_floats(rows * cols, 1, -4.f, 4.f), bv = ref::random_floats(cols, 2, -4.f, 4.f);
  std::vector<NDArray> args = {NDArray::from_vector<float>({rows, cols}, runtime::dtype_f32(), av),
                               NDArray::from_vector<float>({cols}, runtime::dtype_f32(), bv),
                               NDArray::zeros({rows, cols}, runtime::dtype_f32())};
  test::RaceReport races;
  test::run_on_device(*dev, m, args, 0, &races);
  CHECK(races.count == 0);
  const float* y = args[2].data<float>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) REQUIRE(y[i * cols + j] == std::max(av[i * cols + j] + bv[j], 0.f));
}

TEST_CASE("race check: refused for cuda targets", "[gpu]") {
  te::Tensor a = te::placeholder({64}, ir::DataType::f32(), "A");
  te::Tensor out = te::compute({64}, [&](ir::Var i) { return a(i) + a(i); }, "out");
  schedule::Schedule s = schedule::create({out});
  schedule::Config cfg;
  const Target t = Target::parse("cuda -arch=sm_90");
  schedule::schedule_generic_gpu(s, {out}, t, cfg);
  codegen::GpuBuildOptions opt;
  opt.race_check = true;
  opt.compile = false;
  CHECK_THROWS_WITH(kiln::build_gpu({kiln::loop_ir(s, {a, out}, "f")}, t, opt),
                    Catch::Contains("race_check instruments OpenCL kernels only"));
}

TEST_CASE("race check: the cross-thread reduction of softmax is race-free, and racy without its barrier", "[gpu][opencl]") {
  REQUIRE_OPENCL(dev);
  const int64_t rows = 3, cols = 700;
  for (int drop : {-1, 0}) {  // keep every barrier; drop the one before the partials are combined
    te::Tensor x = te::placeholder({rows, cols}, ir::DataType::f32(), "X");
    te::Tensor y = te::ops::softmax(x, 1);
    schedule::Schedule s = schedule::create({y});
    schedule::Config cfg;
    const Target t = Target::parse("opencl");
    schedule::schedule_generic_gpu(s, {y}, t, cfg);
    codegen::GpuBuildOptions opt;
    opt.race_check = true;
    if (drop >= 0) opt.after_sync = [drop](const ir::PrimFunc& k) {
      ir::PrimFunc out = k;
      out.body = test::DropBarrier(drop).mutate_stmt(k.body);
      return out;
    };
    codegen::GpuModule m = kiln::build_gpu({kiln::loop_ir(s, {x, y}, "softmax")}, t, opt);
    auto xv = ref::random_floats(rows * cols, 41, -4.f, 4.f);
    std::vector<NDArray> args = {NDArray::from_vector<float>({rows, cols}, runtime::dtype_f32(), xv),
                                 NDArray::zeros({rows, cols}, runtime::dtype_f32())};
    test::RaceReport races;
    test::run_on_device(*dev, m, args, 0, &races);
    INFO((drop < 0 ? "every barrier: " : "without the barrier: ") << races.count << " races, first " << races.first);
    if (drop < 0) {
      CHECK(races.count == 0);
      const float* out = args[1].data<float>();
      const std::vector<float> want = ref::softmax_rows(xv, rows, cols);
      for (size_t i = 0; i < want.size(); ++i) REQUIRE(std::abs(out[i] - want[i]) <= 1e-6);
    } else {
      CHECK(races.count > 0);
    }
  }
}
