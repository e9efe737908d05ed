// End to end on the CPU: te programs, scheduled, lowered, through the IR passes the build
// driver runs (flatten_storage, simplify, vectorize_loops, unroll_loops, simplify), compiled by
// the LLVM backend and run natively, against plain C++ loops (src/testing/reference.h).
// Outputs start as NaN, so an element the kernel misses fails the comparison. Sizes are not
// multiples of the split factors, so guards and tails are exercised.
// Tolerance: float32 accumulation (FMAs allowed) against a double reference,
// |err| <= 1e-5 + 1e-5 * |ref|.
#include <catch2/catch.hpp>

#include <cmath>
#include <iostream>
#include <limits>
#include <sstream>

#include "kiln/pipeline.h"
#include "kiln/ir/printer.h"
#include "kiln/runtime/kernel.h"
#include "testing/reference.h"
#include "test_codegen_util.h"
#include "test_schedule_fixtures.h"

using namespace kiln;
using namespace kiln::testing;
using ir::Var;
using runtime::NDArray;

namespace {

// Lowers, compiles (the driver runs the IR passes) and runs the schedule on N-d tensors of the
// arguments' logical shapes; inputs fill the first args, the rest are outputs (NaN first).
std::vector<NDArray> compile_and_run(const schedule::Schedule& s, const std::vector<te::Tensor>& args,
                                     const std::vector<std::vector<float>>& inputs) {
  codegen::Module m = kiln::build(s, args, Target::host(), "f");
  std::vector<NDArray> arrays;
  for (size_t i = 0; i < args.size(); ++i) {
    ir::DataType t = args[i].dtype();
    NDArray a = NDArray::empty(args[i].shape(), test::dl_type(t));
    if (i < inputs.size()) {
      a.copy_from_bytes(inputs[i].data(), inputs[i].size() * sizeof(float));
    } else if (t == ir::DataType::f32()) {
      for (int64_t k = 0; k < a.numel(); ++k) a.data<float>()[k] = std::numeric_limits<float>::quiet_NaN();
    } else {
      for (int64_t k = 0; k < a.numel(); ++k) a.data<int32_t>()[k] = -12345;
    }
    arrays.push_back(a);
  }
  test::run(m, "f", arrays);
  return arrays;
}

double matmul_error(const std::function<void(schedule::Schedule&, const Matmul&)>& sched, int M = 37, int N = 29,
                    int K = 19) {
  Matmul m(M, N, K);
  auto s = schedule::create({m.C});
  sched(s, m);
  auto a = ref::random_floats(M * K, 1), b = ref::random_floats(K * N, 2);
  auto out = compile_and_run(s, m.args(), {a, b});
  return ref::worst_error_ratio(out[2].to_vector<float>(), ref::matmul(a, b, M, N, K), 1e-5, 1e-5);
}

}  // namespace

TEST_CASE("scheduled matmuls compile and compute the matmul", "[codegen][e2e]") {
  SECTION("default schedule") { CHECK(matmul_error([](schedule::Schedule&, const Matmul&) {}) <= 1.0); }
  SECTION("tiled, reduce loop split, vectorized and unrolled inner loops") {
    CHECK(matmul_error([](schedule::Schedule& s, const Matmul& m) {
            auto t = s[m.C].tile(s[m.C].op_axis(0), s[m.C].op_axis(1), 8, 16);
            auto [ko, ki] = s[m.C].split(m.k, 4);
            s[m.C].reorder({t[0], t[1], ko, t[2], ki, t[3]});
            s[m.C].vectorize(t[3]);
            s[m.C].unroll(ki);
          }) <= 1.0);
  }
  SECTION("fused outer loops run in parallel") {
    int32_t saved = kiln_get_num_threads();
    for (int threads : {1, 2, 3}) {
      kiln_set_num_threads(threads);
      CHECK(matmul_error([](schedule::Schedule& s, const Matmul& m) {
              auto [jo, ji] = s[m.C].split_nparts(s[m.C].op_axis(1), 4);
              auto f = s[m.C].fuse(s[m.C].op_axis(0), jo);
              s[m.C].parallel(f);
            }) <= 1.0);
    }
    kiln_set_num_threads(saved);
  }
  SECTION("CPU GEMM shape: local accumulator tile, vectorized columns, unrolled rows, parallel rows") {
    auto sched = [](schedule::Schedule& s, const Matmul& m) {
      auto CL = s.cache_write(m.C, "local");
      auto t = s[m.C].tile(s[m.C].op_axis(0), s[m.C].op_axis(1), 4, 16);
      s[CL].compute_at(s[m.C], t[1]);
      s[CL].reorder({s[CL].reduce_axis(0), s[CL].op_axis(0), s[CL].op_axis(1)});
      s[CL].unroll(s[CL].op_axis(0));
      s[CL].vectorize(s[CL].op_axis(1));
      s[m.C].vectorize(t[3]);
      s[m.C].parallel(t[0]);
    };
    CHECK(matmul_error(sched) <= 1.0);
    CHECK(matmul_error(sched, 64, 64, 32) <= 1.0);  // no tails: full vector tiles
  }
}

TEST_CASE("a padded convolution compiles and computes the reference convolution", "[codegen][e2e]") {
  ref::Conv2dShape shape{1, 3, 11, 9, 4, 3, 3};
  shape.pad = 1;
  Conv c(3, 11, 9, 4);
  auto x = ref::random_floats(3 * 11 * 9, 3), w = ref::random_floats(4 * 3 * 9, 4);
  auto expect = ref::conv2d_nchw(x, w, shape);
  auto check = [&](const schedule::Schedule& s) {
    auto out = compile_and_run(s, c.args(), {x, w});
    CHECK(ref::worst_error_ratio(out[2].to_vector<float>(), expect, 1e-5, 1e-5) <= 1.0);
  };
  SECTION("padding at the root") { check(schedule::create({c.Y})); }
  SECTION("padding inlined: the select guards the input loads") {
    auto s = schedule::create({c.Y});
    s[c.P].compute_inline();
    check(s);
  }
  SECTION("padding inlined into a vectorized output row") {
    auto s = schedule::create({c.Y});
    s[c.P].compute_inline();
    auto [xo, xi] = s[c.Y].split(s[c.Y].op_axis(3), 8);
    s[c.Y].reorder({s[c.Y].op_axis(1), s[c.Y].op_axis(2), xo, s[c.Y].reduce_axis(0), s[c.Y].reduce_axis(1),
                    s[c.Y].reduce_axis(2), xi});
    s[c.Y].vectorize(xi);
    check(s);
  }
  SECTION("padding per tile, output through a local cache, parallel channels") {
    auto s = schedule::create({c.Y});
    auto YL = s.cache_write(c.Y, "local");
    auto [yo, yi] = s[c.Y].split(s[c.Y].op_axis(2), 4);
    auto [xo, xi] = s[c.Y].split(s[c.Y].op_axis(3), 4);
    s[c.Y].reorder({s[c.Y].op_axis(1), yo, xo, yi, xi});
    s[YL].compute_at(s[c.Y], xo);
    s[c.P].compute_at(s[c.Y], xo);
    s[c.Y].parallel(s[c.Y].op_axis(1));
    check(s);
  }
}

TEST_CASE("elementwise chain and argmax compile end to end", "[codegen][e2e]") {
  const int M = 13, N = 7;
  Chain c(M, N);
  auto a = ref::random_floats(M * N, 5);
  auto s = schedule::create({c.D});
  auto t = s[c.D].tile(s[c.D].op_axis(0), s[c.D].op_axis(1), 4, 3);
  s[c.B].compute_at(s[c.D], t[1]);
  s[c.C].compute_at(s[c.D], t[2]);
  s[c.C].vectorize(s[c.C].op_axis(1));
  auto out = compile_and_run(s, c.args(), {a});
  for (int i = 0; i < M * N; ++i) {
    float u = a[i] * 2.0f + 1.0f;  // may fuse into an FMA: one rounding instead of two
    float want = u * u;
    CHECK(std::abs(out[1].data<float>()[i] - want) <= 1e-6f * std::abs(want) + 1e-7f);
  }

  const int R = 6, L = 23;
  auto X = te::placeholder({R, L}, kF32, "X");
  auto r = te::reduce_axis(L, "r");
  auto am = te::compute_multi(
      {R}, [&](Var i) { return te::comm_reduce(te::argmax_reducer(ir::DataType::i32(), kF32), {r.var(), X(i, r)}, {r}); },
      "argmax", {"i"});
  auto s2 = schedule::create({am[0], am[1]});
  auto [ro, ri] = s2[am[0]].split(r, 5);
  s2[am[0]].reorder({ro, s2[am[0]].op_axis(0), ri});
  auto x = ref::random_floats(R * L, 6);
  x[2 * L + 7] = x[2 * L + 19] = 5.0f;  // a tie: the smaller index wins
  auto out2 = compile_and_run(s2, {X, am[0], am[1]}, {x});
  for (int i = 0; i < R; ++i) {
    int best = 0;
    for (int j = 1; j < L; ++j) best = x[i * L + j] > x[i * L + best] ? j : best;
    CHECK(out2[1].data<int32_t>()[i] == best);
    CHECK(out2[2].data<float>()[i] == x[i * L + best]);
  }
}

// The tensorize micro-kernel the JIT-compiled code calls: c[j] (+)= sum_k a[k] * b[k*stride + j].
extern "C" __attribute__((visibility("default"))) int32_t kiln_e2e_gemv(float* c, const float* a, const float* b,
                                                                      int32_t stride) {
  for (int j = 0; j < 16; ++j) {
    float acc = 0;
    for (int k = 0; k < 8; ++k) acc += a[k] * b[k * stride + j];
    c[j] = acc;
  }
  return 0;
}
extern "C" __attribute__((visibility("default"))) int32_t kiln_e2e_gemv_update(float* c, const float* a,
                                                                             const float* b, int32_t stride) {
  for (int j = 0; j < 16; ++j) {
    float acc = c[j];
    for (int k = 0; k < 8; ++k) acc += a[k] * b[k * stride + j];
    c[j] = acc;
  }
  return 0;
}

TEST_CASE("a tensorized matmul calls its extern micro-kernel through address_of", "[codegen][e2e]") {
  auto a = te::placeholder({8}, kF32, "a");
  auto b = te::placeholder({8, 16}, kF32, "b");
  auto k = te::reduce_axis(8, "k");
  auto c = te::compute({16}, [&](Var j) { return te::sum(a(k) * b(k, j), {k}); }, "c", {"j"});
  auto emit = [](const char* fn) {
    return [fn](const std::vector<schedule::TensorIntrinBuffer>& in, const std::vector<schedule::TensorIntrinBuffer>& out) {
      return ir::evaluate(ir::call_extern(ir::DataType::i32(), fn,
                                          {out[0].address(), in[0].address(), in[1].address(),
                                           ir::Expr(static_cast<int>(in[1].strides[0]))}));
    };
  };
  schedule::TensorIntrin gemv{"gemv", c, emit("kiln_e2e_gemv"), emit("kiln_e2e_gemv_update")};
  const int M = 5, N = 48, K = 24;
  auto check = [&](bool k_outside) {
    CHECK(matmul_error(
              [&](schedule::Schedule& s, const Matmul& m) {
                auto [jo, ji] = s[m.C].split(s[m.C].op_axis(1), 16);
                auto [ko, ki] = s[m.C].split(m.k, 8);
                if (k_outside) s[m.C].reorder({s[m.C].op_axis(0), jo, ko, ji, ki});
                else s[m.C].reorder({s[m.C].op_axis(0), jo, ji, ko, ki});
                s[m.C].tensorize(ji, gemv);
              },
              M, N, K) <= 1.0);
  };
  SECTION("update form: reduce loop outside the intrinsic") { check(true); }
}

TEST_CASE("the driver runs the IR passes: what reaches LLVM is flat vector IR", "[codegen][e2e]") {
  Chain c(16, 16);
  auto s = schedule::create({c.D});
  s[c.D].vectorize(s[c.D].op_axis(1));
  std::ostringstream captured;
  kiln::PipelineOptions o;
  o.dump = kiln::StageDumper("all", &captured);
  auto m = kiln::build(s, c.args(), Target::host(), "chain", o);
  std::string lowered = ir::to_string(m.lowered_function("chain"));
  CHECK(test::contains(lowered, "ramp("));
  CHECK_FALSE(test::contains(lowered, "vectorized"));
  CHECK(test::contains(captured.str(), "after flatten_storage"));
  CHECK(test::contains(captured.str(), "after vectorize_loops"));
  // 16 lanes whatever the target's vector width: the schedule vectorized a 16-wide axis.
  for (const Target& target : test::inspected_targets()) {
    INFO(target.cpu);
    CHECK(test::contains(kiln::build(s, c.args(), target, "chain").llvm_ir(), "<16 x float>"));
  }
  // run() checks the logical shapes of the parameters as lowered, not the flattened ones.
  NDArray a = NDArray::zeros({16, 16}, runtime::dtype_f32()), d = NDArray::zeros({16, 16}, runtime::dtype_f32());
  CHECK_NOTHROW(test::run(m, "chain", {a, d}));
  CHECK_THROWS_WITH(test::run(m, "chain", {NDArray::zeros({256}, runtime::dtype_f32()), d}),
                    Catch::Contains("'A'") && Catch::Contains("[16, 16]"));
  CHECK(d.data<float>()[17] == 1.0f);  // (0 * 2 + 1)^2
}
