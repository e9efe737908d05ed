// Scheduled programs computed by the reference interpreter (test_lower_interp.cc) against plain
// C++ loops (src/testing/reference.h). Sizes are deliberately not multiples of the split
// factors, so guards and over-approximated regions are exercised; the interpreter throws on any
// out-of-bounds access and fills fresh buffers with NaN, so a missed element shows.
// Tolerance: float32 accumulation against a double reference, |err| <= 1e-5 + 1e-5 * |ref|.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "testing/reference.h"
#include "kiln/ir/transforms.h"
#include "kiln/ir/verify.h"
#include "test_lower_interp.h"
#include "test_schedule_fixtures.h"

using namespace kiln;
using namespace kiln::testing;
using ir::Var;

namespace {

std::vector<double> to_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }
std::vector<float> to_float(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

// Runs the lowered function with the given inputs; outputs start as NaN, so each must be written.
// The function must be well-formed, and give the very same results after the passes the build
// driver runs next (flatten_storage, simplify).
std::vector<std::vector<double>> run(const schedule::Schedule& s, const std::vector<te::Tensor>& args,
                                     const std::vector<std::vector<float>>& inputs) {
  ir::PrimFunc f = schedule::loop_nest(s, args, "f");
  ir::verify(f);
  std::vector<std::vector<double>> data;
  for (size_t i = 0; i < args.size(); ++i) {
    int64_t n = 1;
    for (int64_t e : args[i].shape()) n *= e;
    data.push_back(i < inputs.size() ? to_double(inputs[i]) : std::vector<double>(n, std::nan("")));
  }
  std::vector<std::vector<double>> flat_data = data;
  interpret(f, data);
  ir::PrimFunc flat = ir::simplify(ir::flatten_storage(f));
  ir::verify(flat);
  interpret(flat, flat_data);
  for (size_t i = inputs.size(); i < args.size(); ++i) CHECK(flat_data[i] == data[i]);
  return data;
}

using MatmulSchedule = std::function<void(schedule::Schedule&, const Matmul&)>;

void check_matmul(const MatmulSchedule& sched) {
  const int M = 37, N = 29, K = 19;
  Matmul m(M, N, K);
  auto s = schedule::create({m.C});
  sched(s, m);
  auto a = ref::random_floats(M * K, 1), b = ref::random_floats(K * N, 2);
  auto out = run(s, m.args(), {a, b});
  CHECK(ref::worst_error_ratio(to_float(out[2]), ref::matmul(a, b, M, N, K), 1e-5, 1e-5) <= 1.0);
}

}  // namespace

TEST_CASE("scheduled matmuls compute the matmul", "[lower]") {
  SECTION("default") { check_matmul([](schedule::Schedule&, const Matmul&) {}); }
  SECTION("tile, reduce loop split and moved out, vectorized inner loop") {
    check_matmul([](schedule::Schedule& s, const Matmul& m) {
      auto t = s[m.C].tile(s[m.C].op_axis(0), s[m.C].op_axis(1), 8, 16);
      auto [ko, ki] = s[m.C].split(m.k, 4);
      s[m.C].reorder({t[0], t[1], ko, t[2], ki, t[3]});
      s[m.C].vectorize(t[3]);
      s[m.C].unroll(ki);
    });
  }
  SECTION("split_nparts, fuse and parallel") {
    check_matmul([](schedule::Schedule& s, const Matmul& m) {
      auto [jo, ji] = s[m.C].split_nparts(s[m.C].op_axis(1), 4);
      auto f = s[m.C].fuse(s[m.C].op_axis(0), jo);
      s[m.C].parallel(f);
    });
  }
  SECTION("cache_write into a local tile with cache_read of both inputs") {
    check_matmul([](schedule::Schedule& s, const Matmul& m) {
      auto CL = s.cache_write(m.C, "local");
      auto t = s[m.C].tile(s[m.C].op_axis(0), s[m.C].op_axis(1), 8, 8);
      s[CL].compute_at(s[m.C], t[1]);
      auto [ko, ki] = s[CL].split(s[CL].reduce_axis(0), 5);
      s[CL].reorder({ko, s[CL].op_axis(0), s[CL].op_axis(1), ki});
      auto AS = s.cache_read(m.A, "shared", {CL});
      auto BS = s.cache_read(m.B, "shared", {CL});
      s[AS].compute_at(s[CL], ko);
      s[BS].compute_at(s[CL], ko);
      s[m.C].bind(t[0], "blockIdx.x");
      s[m.C].bind(t[1], "threadIdx.x");
    });
  }
}

TEST_CASE("a padded convolution computes the reference convolution", "[lower]") {
  ref::Conv2dShape shape{1, 3, 11, 9, 4, 3, 3};
  shape.pad = 1;
  Conv c(3, 11, 9, 4);
  auto x = ref::random_floats(3 * 11 * 9, 3), w = ref::random_floats(4 * 3 * 9, 4);
  auto expect = ref::conv2d_nchw(x, w, shape);
  auto check = [&](const schedule::Schedule& s) {
    auto out = run(s, c.args(), {x, w});
    CHECK(ref::worst_error_ratio(to_float(out[2]), expect, 1e-5, 1e-5) <= 1.0);
  };
  SECTION("padding at the root") { check(schedule::create({c.Y})); }
  SECTION("padding inlined") {
    auto s = schedule::create({c.Y});
    s[c.P].compute_inline();
    check(s);
  }
  SECTION("padding computed per tile of rows, output tiled through a local cache") {
    auto s = schedule::create({c.Y});
    auto YL = s.cache_write(c.Y, "local");
    auto [yo, yi] = s[c.Y].split(s[c.Y].op_axis(2), 4);
    auto [xo, xi] = s[c.Y].split(s[c.Y].op_axis(3), 4);
    s[c.Y].reorder({s[c.Y].op_axis(1), yo, xo, yi, xi});
    s[YL].compute_at(s[c.Y], xo);
    s[c.P].compute_at(s[c.Y], xo);
    s[YL].reorder({s[YL].reduce_axis(0), s[YL].reduce_axis(1), s[YL].op_axis(2), s[YL].reduce_axis(2), s[YL].op_axis(3)});
    check(s);
  }
}

TEST_CASE("elementwise chains with nested attachments", "[lower]") {
  const int M = 13, N = 7;
  Chain c(M, N);
  auto a = ref::random_floats(M * N, 5);
  std::vector<float> expect(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    float t = a[i] * 2.0f + 1.0f;
    expect[i] = t * t;
  }
  auto s = schedule::create({c.D});
  auto t = s[c.D].tile(s[c.D].op_axis(0), s[c.D].op_axis(1), 4, 3);
  s[c.B].compute_at(s[c.D], t[1]);
  s[c.C].compute_at(s[c.D], t[2]);
  s[c.C].vectorize(s[c.C].op_axis(1));
  auto out = run(s, c.args(), {a});
  CHECK(to_float(out[1]) == expect);  // the same float32 operations: exact
}

TEST_CASE("argmax as a two-slot reduction, split and reordered", "[lower]") {
  const int R = 6, L = 23;
  auto X = te::placeholder({R, L}, kF32, "X");
  auto r = te::reduce_axis(L, "r");
  auto am = te::compute_multi(
      {R}, [&](Var i) { return te::comm_reduce(te::argmax_reducer(ir::DataType::i32(), kF32), {r.var(), X(i, r)}, {r}); },
      "argmax", {"i"});
  auto s = schedule::create({am[0], am[1]});
  auto [ro, ri] = s[am[0]].split(r, 5);
  s[am[0]].reorder({ro, s[am[0]].op_axis(0), ri});
  auto x = ref::random_floats(R * L, 6);
  x[2 * L + 7] = x[2 * L + 19] = 5.0f;  // a tie: the smaller index wins
  auto out = run(s, {X, am[0], am[1]}, {x});
  for (int i = 0; i < R; ++i) {
    int best = 0;
    for (int j = 1; j < L; ++j) best = x[i * L + j] > x[i * L + best] ? j : best;
    CHECK(out[1][i] == best);
    CHECK(out[2][i] == x[i * L + best]);
  }
  CHECK(out[1][2] == 7);
}

TEST_CASE("reductions with a condition and an offset reduce axis", "[lower]") {
  const int N = 9;
  auto A = te::placeholder({N, N}, kF32, "A");
  auto k = te::reduce_axis({1, N - 1}, "k");  // k in [1, N)
  auto S = te::compute({N}, [&](Var i) { return te::sum(A(i, k), {k}, k <= i); }, "S", {"i"});
  auto s = schedule::create({S});
  auto [ko, ki] = s[S].split(k, 4);
  s[S].reorder({ko, s[S].op_axis(0), ki});
  auto a = ref::random_floats(N * N, 7);
  auto out = run(s, {A, S}, {a});
  for (int i = 0; i < N; ++i) {
    double acc = 0;
    for (int j = 1; j <= i; ++j) acc += a[i * N + j];
    CHECK(std::abs(out[1][i] - acc) <= 1e-5 + 1e-5 * std::abs(acc));
  }
}

TEST_CASE("a reduction attached inside its consumer's tile, itself split and reordered", "[lower]") {
  const int M = 21, N = 18, K = 11;
  Matmul m(M, N, K);
  auto E = te::compute({M, N}, [&](Var i, Var j) { return ir::max(m.C(i, j), ir::make_zero(kF32)) + 1.0f; }, "E",
                       {"ei", "ej"});
  auto s = schedule::create({E});
  auto t = s[E].tile(s[E].op_axis(0), s[E].op_axis(1), 8, 4);
  s[m.C].compute_at(s[E], t[1]);
  auto [ko, ki] = s[m.C].split(m.k, 3);
  s[m.C].reorder({ko, s[m.C].op_axis(0), ki, s[m.C].op_axis(1)});
  auto a = ref::random_floats(M * K, 8), b = ref::random_floats(K * N, 9);
  auto out = run(s, {m.A, m.B, E}, {a, b});
  auto c = ref::matmul(a, b, M, N, K);
  for (float& x : c) x = std::max(x, 0.0f) + 1.0f;
  CHECK(ref::worst_error_ratio(to_float(out[2]), c, 1e-5, 1e-5) <= 1.0);
  CHECK_THAT(ir::to_string(schedule::loop_nest(s, {m.A, m.B, E}, "f")),
             Catch::Matchers::Contains("allocate C: float32[8, 4], global"));
}

TEST_CASE("a multi-output elementwise stage stores every output, attached and split", "[lower]") {
  auto X = te::placeholder({10}, kF32, "X");
  auto two = te::compute_multi({10}, [&](Var i) { return std::vector<ir::Expr>{X(i) + 1.0f, X(i) * 2.0f}; }, "two",
                               {"t"});
  auto Y = te::compute({10}, [&](Var i) { return two[0](i) * two[1](i); }, "Y", {"i"});
  auto s = schedule::create({Y});
  auto [io, ii] = s[Y].split(s[Y].op_axis(0), 4);
  s[two[0]].compute_at(s[Y], io);
  CHECK(lowered_body(s, {X, Y}) ==
        "for (i.outer, 0, 3) {\n"
        "  allocate two.v0: float32[4], global\n"
        "  allocate two.v1: float32[4], global\n"
        "  for (t, 0, 4) {\n"
        "    if (i.outer*4 + t < 10) {\n"
        "      two.v0[t] = X[i.outer*4 + t] + 1f\n"
        "      two.v1[t] = X[i.outer*4 + t]*2f\n"
        "    }\n"
        "  }\n"
        "  for (i.inner, 0, 4) {\n"
        "    if (i.outer*4 + i.inner < 10) {\n"
        "      Y[i.outer*4 + i.inner] = two.v0[i.inner]*two.v1[i.inner]\n"
        "    }\n"
        "  }\n"
        "}\n");
  std::vector<float> x(10);
  for (int i = 0; i < 10; ++i) x[i] = 0.25f * i - 1;
  auto out = run(s, {X, Y}, {x});
  for (int i = 0; i < 10; ++i) CHECK(out[1][i] == double((x[i] + 1.0f) * (x[i] * 2.0f)));
}
