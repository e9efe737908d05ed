// LLVM backend: math intrinsics against <cmath>, casts between all types, floor division.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "test_codegen_util.h"

using namespace kiln;
using namespace kiln::ir;
using kiln::runtime::NDArray;
using kiln::test::array_for;
using kiln::test::flat_buffer;
using kiln::test::prim_func;

namespace {

constexpr int kLanes = 16;

// OUT[i] = f(IN0[i], ...) over n elements: the first half as 16-lane vector code, the second
// half as scalar code, so both lowerings of every operation are checked.
ir::PrimFunc map_func(const std::string& name, std::vector<Buffer> ins, Buffer out, int n,
                      const std::function<Expr(const std::vector<Expr>&)>& f) {
  Var v("v"), i("i");
  std::vector<Expr> vec_args, scalar_args;
  Expr r = ramp(v * kLanes, 1, kLanes);
  for (const Buffer& b : ins) {
    vec_args.push_back(buffer_load(b, {r}));
    scalar_args.push_back(buffer_load(b, {i}));
  }
  int half = n / 2 / kLanes * kLanes;
  Stmt body = seq({for_loop(v, 0, half / kLanes, ForKind::Serial, buffer_store(out, f(vec_args), {r})),
                   for_loop(i, half, n - half, ForKind::Serial, buffer_store(out, f(scalar_args), {i}))});
  std::vector<Buffer> params = ins;
  params.push_back(out);
  return prim_func(name, params, body);
}

std::vector<float> spread(int n, float lo, float hi) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n - 1);
  return v;
}

// Runs OUT = f(IN) for float32 and returns OUT.
std::vector<float> run_unary(const std::string& intrin, const std::vector<float>& x) {
  int n = static_cast<int>(x.size());
  Buffer in = flat_buffer("X", DataType::f32(), n), out = flat_buffer("Y", DataType::f32(), n);
  auto m = test::build({map_func("k", {in}, out, n, [&](const std::vector<Expr>& a) { return make_intrinsic(intrin, {a[0]}); })});
  NDArray Y = NDArray::zeros({n}, runtime::dtype_f32());
  test::run(m, "k", {array_for(in, x), Y});
  return Y.to_vector<float>();
}

float bf16_round_ref(float f) {
  // Round to nearest even on the upper 16 bits (the bf16 definition), NaN kept NaN.
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return f;
  uint32_t lower = u & 0xffffu, upper = u >> 16;
  if (lower > 0x8000u || (lower == 0x8000u && (upper & 1u))) ++upper;
  u = upper << 16;
  std::memcpy(&f, &u, 4);
  return f;
}

// float32 -> float16 bits, rounded to nearest even, by exact arithmetic on doubles (nearbyint in
// the default rounding mode): a reference of its own, where the compiler's _Float16 is missing
// (clang before 15 on x86). No NaN among the test's values.
uint16_t f16_round_ref(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7c00u;  // halfway from 65504, the largest, to 2^16: infinity
  if (a < std::ldexp(1.0, -14))             // subnormal: units of 2^-24 (1024 of them: the least normal)
    return sign | static_cast<uint16_t>(std::nearbyint(a * std::ldexp(1.0, 24)));
  int e = 0;
  std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1): 11 significant bits are units of 2^(e - 11)
  double q = std::nearbyint(a * std::ldexp(1.0, 11 - e));
  int exp = e - 1 + 15;
  if (q == 2048) q = 1024, ++exp;
  return sign | static_cast<uint16_t>(exp << 10) | static_cast<uint16_t>(static_cast<int>(q) - 1024);
}

// The float16 value of `bits` (no NaN or infinity here), exactly.
float f16_value(uint16_t bits) {
  const int exp = (bits >> 10) & 0x1f, mant = bits & 0x3ff;
  const double v = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
  return static_cast<float>((bits & 0x8000u) ? -v : v);
}

int64_t floordiv_ref(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floormod_ref(int64_t a, int64_t b) { return a - floordiv_ref(a, b) * b; }

}  // namespace

TEST_CASE("math intrinsics match <cmath>", "[codegen]") {
  const int n = 1000;
  struct Case {
    const char* name;
    float lo, hi;
    std::function<double(double)> ref;
    double rel_tol;  // 0: bit-exact with the float reference computed below
  };
  // libm-backed (log sin cos), inline (exp) and composite (sigmoid) functions: within 2e-6
  // relative of the double result (float libm is within an ulp, 6e-8). tanh/erf are inline polynomials:
  // measured error 3.3e-7 relative, tolerance 1e-6. Correctly rounded operations are exact.
  std::vector<Case> cases = {
      {"exp", -20.f, 20.f, [](double x) { return std::exp(x); }, 2e-6},
      {"log", 1e-3f, 100.f, [](double x) { return std::log(x); }, 2e-6},
      {"sin", -10.f, 10.f, [](double x) { return std::sin(x); }, 2e-6},
      {"cos", -10.f, 10.f, [](double x) { return std::cos(x); }, 2e-6},
      {"sigmoid", -30.f, 30.f, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, 2e-6},
      {"tanh", -10.f, 10.f, [](double x) { return std::tanh(x); }, 1e-6},
      {"erf", -5.f, 5.f, [](double x) { return std::erf(x); }, 1e-6},
      {"sqrt", 0.f, 100.f, nullptr, 0},
      {"rsqrt", 1e-3f, 100.f, nullptr, 0},
      {"fabs", -10.f, 10.f, nullptr, 0},
      {"floor", -10.f, 10.f, nullptr, 0},
      {"ceil", -10.f, 10.f, nullptr, 0},
      {"round", -10.f, 10.f, nullptr, 0},
      {"trunc", -10.f, 10.f, nullptr, 0},
  };
  for (const Case& c : cases) {
    auto x = spread(n, c.lo, c.hi);
    // Values that catch the edge cases: exact halves for round (to even), tiny values for
    // tanh/erf (their small-argument branch).
    x[1] = 0.5f, x[2] = 1.5f, x[3] = 2.5f, x[4] = -0.5f, x[5] = -2.5f;
    if (c.lo < 0) x[6] = 1e-5f, x[7] = -3e-4f, x[8] = 1e-30f;
    if (c.lo >= 0) x[4] = 0.75f, x[5] = 3.f;  // domains without negatives
    auto y = run_unary(c.name, x);
    for (int i = 0; i < n; ++i) {
      CAPTURE(c.name, i, x[i], y[i]);
      if (c.ref) {
        double want = c.ref(x[i]);
        REQUIRE(std::fabs(y[i] - want) <= c.rel_tol * std::fabs(want) + 1e-37);
      } else {
        std::string nm = c.name;
        float want = nm == "sqrt"    ? std::sqrt(x[i])
                     : nm == "rsqrt" ? 1.f / std::sqrt(x[i])
                     : nm == "fabs"  ? std::fabs(x[i])
                     : nm == "floor" ? std::floor(x[i])
                     : nm == "ceil"  ? std::ceil(x[i])
                     : nm == "round" ? std::nearbyint(x[i])  // half to even
                                     : std::trunc(x[i]);
        REQUIRE(y[i] == want);
      }
    }
  }
}

TEST_CASE("tanh and erf saturate and keep NaN", "[codegen]") {
  float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {inf, -inf, nan, 50.f, -50.f, 0.f, -0.f, 1e-38f};
  x.resize(64, 0.25f);
  auto t = run_unary("tanh", x), e = run_unary("erf", x);
  REQUIRE(t[0] == 1.f);
  REQUIRE(t[1] == -1.f);
  REQUIRE(std::isnan(t[2]));
  REQUIRE(std::fabs(t[3] - 1.f) <= 1e-6f);
  REQUIRE(t[5] == 0.f);
  REQUIRE(std::signbit(t[6]));
  REQUIRE(t[7] == 1e-38f);
  REQUIRE(e[0] == 1.f);
  REQUIRE(e[1] == -1.f);
  REQUIRE(std::isnan(e[2]));
  REQUIRE(e[5] == 0.f);
}

TEST_CASE("exp is within 2 ulps over the float range, underflows, overflows and keeps NaN", "[codegen]") {
  // Normal results (x >= -87.3) within 2 ulps of the double exp (measured: 1); subnormal ones
  // within one subnormal step (they carry fewer bits).
  auto x = spread(20000, -103.f, 88.7f);
  auto y = run_unary("exp", x);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double want = std::exp(double(x[i]));
    double ulp = want >= 1.1754943508222875e-38 ? std::ldexp(1.0, std::ilogb(want) - 23) : 1.401298464324817e-45;
    CAPTURE(x[i], y[i], want);
    REQUIRE(std::fabs(y[i] - want) <= 2 * ulp);
    worst = std::max(worst, std::fabs(y[i] - want) / ulp);
  }
  INFO("worst " << worst << " ulps");
  float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> e = {inf, -inf, nan, 88.8f, -104.f, -200.f, 0.f, -0.f};
  e.resize(64, 1.f);
  auto r = run_unary("exp", e);
  REQUIRE(r[0] == inf);
  REQUIRE(r[1] == 0.f);
  REQUIRE(std::isnan(r[2]));
  REQUIRE(r[3] == inf);
  REQUIRE(r[4] == 0.f);
  REQUIRE(r[5] == 0.f);
  REQUIRE(r[6] == 1.f);
  REQUIRE(r[7] == 1.f);
  REQUIRE(r[8] == std::exp(1.f));
}

TEST_CASE("pow with a constant exponent of 1 to 4 is multiplication", "[codegen]") {
  const int n = 64;
  auto xv = spread(n, -3.f, 3.f);
  Buffer a = flat_buffer("A", DataType::f32(), n), y = flat_buffer("Y", DataType::f32(), n);
  for (double e : {1.0, 2.0, 3.0, 4.0, 0.5}) {
    auto m = test::build({map_func("k", {a}, y, n, [&](auto& v) {
      return make_intrinsic("pow", {v[0], make_const(v[0].dtype(), e)});
    })});
    NDArray Y = NDArray::zeros({n}, runtime::dtype_f32());
    test::run(m, "k", {array_for(a, xv), Y});
    for (int i = 0; i < n; ++i) {
      CAPTURE(e, xv[i]);
      float x = xv[i], want = e == 1 ? x : e == 2 ? x * x : e == 3 ? x * x * x : e == 4 ? (x * x) * (x * x) : std::pow(x, 0.5f);
      if (std::isnan(want)) REQUIRE(std::isnan(Y.data<float>()[i]));
      else REQUIRE(Y.data<float>()[i] == want);
    }
  }
}

TEST_CASE("binary and ternary intrinsics, float64 tanh/erf through libm", "[codegen]") {
  const int n = 200;
  Buffer a = flat_buffer("A", DataType::f32(), n), b = flat_buffer("B", DataType::f32(), n),
         c = flat_buffer("C", DataType::f32(), n), y = flat_buffer("Y", DataType::f32(), n);
  auto pow_m = test::build({map_func("k", {a, b}, y, n, [](auto& v) { return make_intrinsic("pow", {v[0], v[1]}); })});
  auto fma_m = test::build({map_func("k", {a, b, c}, y, n, [](auto& v) { return make_intrinsic("fma", {v[0], v[1], v[2]}); })});
  auto av = spread(n, 0.1f, 10.f), bv = spread(n, -3.f, 3.f), cv = spread(n, 5.f, -5.f);
  NDArray Y = NDArray::zeros({n}, runtime::dtype_f32());
  test::run(pow_m, "k", {array_for(a, av), array_for(b, bv), Y});
  for (int i = 0; i < n; ++i) {
    double want = std::pow(double(av[i]), double(bv[i]));
    REQUIRE(std::fabs(Y.data<float>()[i] - want) <= 2e-6 * std::fabs(want));
  }
  test::run(fma_m, "k", {array_for(a, av), array_for(b, bv), array_for(c, cv), Y});
  for (int i = 0; i < n; ++i) REQUIRE(Y.data<float>()[i] == std::fma(av[i], bv[i], cv[i]));  // one rounding

  Buffer d = flat_buffer("D", DataType::f64(), n), dy = flat_buffer("DY", DataType::f64(), n);
  std::vector<double> dv(n);
  for (int i = 0; i < n; ++i) dv[i] = -4.0 + 8.0 * i / (n - 1);
  for (const char* fn : {"tanh", "erf"}) {
    auto m = test::build({map_func("k", {d}, dy, n, [&](auto& v) { return make_intrinsic(fn, {v[0]}); })});
    NDArray DY = NDArray::zeros({n}, runtime::dtype_f64());
    test::run(m, "k", {array_for(d, dv), DY});
    for (int i = 0; i < n; ++i)
      REQUIRE(DY.data<double>()[i] == (std::string(fn) == "tanh" ? std::tanh(dv[i]) : std::erf(dv[i])));
  }
}

TEST_CASE("casts between integer, float, half, bfloat16 and bool types", "[codegen]") {
  const int n = 64;
  std::vector<float> fv(n);
  for (int i = 0; i < n; ++i) fv[i] = (i - 31) * 7.3f + (i % 5) * 0.125f;
  fv[0] = 0.f, fv[1] = -0.f, fv[2] = 1.00390625f /* bf16 tie, rounds down to even */,
  fv[3] = 1.01171875f /* bf16 tie, rounds up to even */, fv[4] = 65504.f, fv[5] = 1e-8f;
  Buffer f32 = flat_buffer("F", DataType::f32(), n);

  auto convert = [&](DataType to) {
    Buffer out = flat_buffer("O", to, n);
    auto m = test::build({map_func("k", {f32}, out, n, [&](auto& v) { return cast(to.with_lanes(v[0].dtype().lanes), v[0]); })});
    NDArray O = NDArray::zeros({n}, test::dl_type(to));
    test::run(m, "k", {array_for(f32, fv), O});
    return O;
  };
  SECTION("float32 to int32, uint8 (truncating), float64, bool") {
    std::vector<float> small(fv);
    NDArray i32 = convert(DataType::i32()), f64 = convert(DataType::f64()), bl = convert(DataType::boolean());
    for (int i = 0; i < n; ++i) {
      REQUIRE(i32.data<int32_t>()[i] == static_cast<int32_t>(fv[i]));
      REQUIRE(f64.data<double>()[i] == static_cast<double>(fv[i]));
      REQUIRE(bl.data<uint8_t>()[i] == (fv[i] != 0.f ? 1 : 0));
    }
  }
  SECTION("float32 to float16 and bfloat16 round to nearest even") {
    NDArray h = convert(DataType::f16()), bf = convert(DataType::bf16());
    for (int i = 0; i < n; ++i) {
      CAPTURE(i, fv[i]);
      REQUIRE(h.data<uint16_t>()[i] == f16_round_ref(fv[i]));
      float want_bf = bf16_round_ref(fv[i]);
      uint32_t wb;
      std::memcpy(&wb, &want_bf, 4);
      REQUIRE(bf.data<uint16_t>()[i] == (wb >> 16));
    }
    REQUIRE(bf.data<uint16_t>()[2] == 0x3f80);
    REQUIRE(bf.data<uint16_t>()[3] == 0x3f82);
  }
  SECTION("float16 and bfloat16 back to float32, and bf16 arithmetic") {
    NDArray h = convert(DataType::f16()), bf = convert(DataType::bf16());
    Buffer hb = flat_buffer("H", DataType::f16(), n), bb = flat_buffer("BB", DataType::bf16(), n);
    Buffer o1 = flat_buffer("O1", DataType::f32(), n), o2 = flat_buffer("O2", DataType::bf16(), n);
    auto m1 = test::build({map_func("k", {hb}, o1, n, [](auto& v) { return cast(DataType::f32(v[0].dtype().lanes), v[0]); })});
    // bf16 * 3 + 1 stored as bf16: computed in float, rounded once at the store.
    auto m2 = test::build({map_func("k", {bb}, o2, n, [](auto& v) { return v[0] * make_float(DataType::bf16(), 3.0) + make_float(DataType::bf16(), 1.0); })});
    NDArray O1 = NDArray::zeros({n}, runtime::dtype_f32()), O2 = NDArray::zeros({n}, runtime::dtype_bf16());
    test::run(m1, "k", {h, O1});
    test::run(m2, "k", {bf, O2});
    for (int i = 0; i < n; ++i) {
      REQUIRE(O1.data<float>()[i] == f16_value(f16_round_ref(fv[i])));
      float x = bf16_round_ref(fv[i]);
      float want = bf16_round_ref(std::fma(x, 3.f, 1.f));  // the FMA may fuse; both round once
      float want_unfused = bf16_round_ref(x * 3.f + 1.f);
      uint32_t w1, w2;
      std::memcpy(&w1, &want, 4);
      std::memcpy(&w2, &want_unfused, 4);
      uint16_t got = O2.data<uint16_t>()[i];
      REQUIRE((got == (w1 >> 16) || got == (w2 >> 16)));
    }
  }
  SECTION("integer widening, narrowing, signedness and bool") {
    std::vector<int32_t> iv(n);
    for (int i = 0; i < n; ++i) iv[i] = (i - 32) * 9876 + (i % 3) * 200;
    Buffer i32 = flat_buffer("I", DataType::i32(), n);
    auto conv = [&](DataType to) {
      Buffer out = flat_buffer("O", to, n);
      auto m = test::build({map_func("k", {i32}, out, n, [&](auto& v) { return cast(to.with_lanes(v[0].dtype().lanes), v[0]); })});
      NDArray O = NDArray::zeros({n}, test::dl_type(to));
      test::run(m, "k", {array_for(i32, iv), O});
      return O;
    };
    NDArray i8 = conv(DataType::i8()), u8 = conv(DataType::u8()), i64 = conv(DataType::i64()),
            f = conv(DataType::f32()), bl = conv(DataType::boolean());
    for (int i = 0; i < n; ++i) {
      REQUIRE(i8.data<int8_t>()[i] == static_cast<int8_t>(iv[i]));
      REQUIRE(u8.data<uint8_t>()[i] == static_cast<uint8_t>(iv[i]));
      REQUIRE(i64.data<int64_t>()[i] == static_cast<int64_t>(iv[i]));
      REQUIRE(f.data<float>()[i] == static_cast<float>(iv[i]));
      REQUIRE(bl.data<uint8_t>()[i] == (iv[i] != 0));
    }
    // Back up: int8 sign-extends, uint8 zero-extends, bool becomes 0/1.
    Buffer s8 = flat_buffer("S8", DataType::i8(), n), z8 = flat_buffer("Z8", DataType::u8(), n),
           bb = flat_buffer("BB", DataType::boolean(), n);
    Buffer o = flat_buffer("O", DataType::i32(), 3 * n), of = flat_buffer("OF", DataType::f32(), n);
    Var i("i");
    Stmt body = for_loop(i, 0, n, ForKind::Serial,
                         seq({buffer_store(o, cast(DataType::i32(), buffer_load(s8, {i})), {i}),
                              buffer_store(o, cast(DataType::i32(), buffer_load(z8, {i})), {i + n}),
                              buffer_store(o, cast(DataType::i32(), buffer_load(bb, {i})), {i + 2 * n}),
                              buffer_store(of, cast(DataType::f32(), buffer_load(bb, {i})), {i})}));
    auto m = test::build({prim_func("widen", {s8, z8, bb, o, of}, body)});
    NDArray O = NDArray::zeros({3 * n}, runtime::dtype_i32()), OF = NDArray::zeros({n}, runtime::dtype_f32());
    test::run(m, "widen", {i8, u8, bl, O, OF});
    for (int k = 0; k < n; ++k) {
      REQUIRE(O.data<int32_t>()[k] == static_cast<int8_t>(iv[k]));
      REQUIRE(O.data<int32_t>()[k + n] == static_cast<uint8_t>(iv[k]));
      REQUIRE(O.data<int32_t>()[k + 2 * n] == (iv[k] != 0 ? 1 : 0));
      REQUIRE(OF.data<float>()[k] == (iv[k] != 0 ? 1.f : 0.f));
    }
  }
}

TEST_CASE("floordiv and floormod on negative values, truncdiv and truncmod", "[codegen]") {
  const int n = 96;
  std::vector<int32_t> av(n), bv(n);
  for (int i = 0; i < n; ++i) {
    av[i] = i - 48;
    int d[] = {-7, -3, -1, 1, 2, 3, 5, 8};
    bv[i] = d[i % 8];
  }
  Buffer a = flat_buffer("A", DataType::i32(), n), b = flat_buffer("B", DataType::i32(), n);
  Buffer q = flat_buffer("Q", DataType::i32(), n), r = flat_buffer("R", DataType::i32(), n);
  auto check = [&](const std::function<Expr(Expr, Expr)>& fq, const std::function<Expr(Expr, Expr)>& fr,
                   const std::function<int64_t(int64_t, int64_t)>& rq, const std::function<int64_t(int64_t, int64_t)>& rr,
                   int constant_divisor) {
    Var v("v"), i("i");
    Expr rv = ramp(v * kLanes, 1, kLanes);
    auto div_of = [&](Expr idx) { return constant_divisor ? Expr(constant_divisor) : buffer_load(b, {idx}); };
    Stmt body = seq({for_loop(v, 0, n / 2 / kLanes, ForKind::Serial,
                              seq({buffer_store(q, fq(buffer_load(a, {rv}), div_of(rv)), {rv}),
                                   buffer_store(r, fr(buffer_load(a, {rv}), div_of(rv)), {rv})})),
                     for_loop(i, n / 2, n / 2, ForKind::Serial,
                              seq({buffer_store(q, fq(buffer_load(a, {i}), div_of(i)), {i}),
                                   buffer_store(r, fr(buffer_load(a, {i}), div_of(i)), {i})}))});
    auto m = test::build({prim_func("divs", {a, b, q, r}, body)});
    NDArray Q = NDArray::zeros({n}, runtime::dtype_i32()), R = NDArray::zeros({n}, runtime::dtype_i32());
    test::run(m, "divs", {array_for(a, av), array_for(b, bv), Q, R});
    for (int k = 0; k < n; ++k) {
      int64_t d = constant_divisor ? constant_divisor : bv[k];
      CAPTURE(av[k], d);
      REQUIRE(Q.data<int32_t>()[k] == rq(av[k], d));
      REQUIRE(R.data<int32_t>()[k] == rr(av[k], d));
    }
  };
  auto c_div = [](int64_t x, int64_t y) { return x / y; };
  auto c_mod = [](int64_t x, int64_t y) { return x % y; };
  // Variable divisors of both signs, then constant divisors: powers of two (shift/mask),
  // other positive ones, negative ones.
  for (int d : {0, 1, 2, 8, 3, 7, -3, -8}) {
    CAPTURE(d);
    check([](Expr x, Expr y) { return floordiv(x, y); }, [](Expr x, Expr y) { return floormod(x, y); }, floordiv_ref,
          floormod_ref, d);
    check([](Expr x, Expr y) { return truncdiv(x, y); }, [](Expr x, Expr y) { return truncmod(x, y); }, c_div, c_mod, d);
  }
}

TEST_CASE("floordiv by a constant on int64", "[codegen]") {
  const int n = 40;
  Buffer a = flat_buffer("A", DataType::i64(), n), q = flat_buffer("Q", DataType::i64(), n);
  Var i("i");
  Stmt body = for_loop(i, 0, n, ForKind::Serial,
                       buffer_store(q, floordiv(buffer_load(a, {i}), Expr(int64_t{6})) * Expr(int64_t{100}) +
                                           floormod(buffer_load(a, {i}), Expr(int64_t{6})),
                                    {i}));
  auto m = test::build({prim_func("div64", {a, q}, body)});
  std::vector<int64_t> av(n);
  for (int k = 0; k < n; ++k) av[k] = (k - 20) * 1000000007LL;
  NDArray Q = NDArray::zeros({n}, runtime::dtype_i64());
  test::run(m, "div64", {array_for(a, av), Q});
  for (int k = 0; k < n; ++k) REQUIRE(Q.data<int64_t>()[k] == floordiv_ref(av[k], 6) * 100 + floormod_ref(av[k], 6));
}
