#include "kiln/te/ops/elemwise.h"

#include <algorithm>
#include <cmath>

#include "kiln/support/error.h"

namespace kiln::te::ops {

using ir::DataType;
using ir::Expr;
using ir::Var;

std::vector<int64_t> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    KILN_USER_CHECK(x == y || x == 1 || y == 1) << "cannot broadcast shapes of dims " << x << " and " << y;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Expr broadcast_load(const Tensor& t, const std::vector<Var>& idx) {
  int nd = t.ndim(), on = static_cast<int>(idx.size());
  std::vector<Expr> src(nd);
  for (int d = 0; d < nd; ++d) {
    int od = on - nd + d;
    // A te tensor of shape {1} may stand for a relay scalar broadcast into a scalar ({1}) too.
    KILN_CHECK(od >= 0 || t.shape()[d] == 1) << "tensor " << t.name() << " has more dims than its broadcast";
    src[d] = (od < 0 || t.shape()[d] == 1) ? Expr(0) : Expr(idx[od]);
  }
  return t(src);
}

Tensor elementwise(const std::vector<Tensor>& inputs, const std::vector<int64_t>& shape, const ScalarFn& f,
                   const std::string& name) {
  return compute(shape, [&](const std::vector<Var>& idx) {
    std::vector<Expr> v;
    for (const Tensor& t : inputs) v.push_back(broadcast_load(t, idx));
    return f(v);
  }, name);
}

DataType compute_type(DataType t) {
  return (t.is_bfloat() || (t.is_float() && t.bits == 16)) ? DataType::f32(t.lanes) : t;
}

Expr apply_in_compute_type(const ScalarFn& f, const std::vector<Expr>& args, DataType out) {
  std::vector<Expr> wide;
  for (const Expr& a : args) wide.push_back(ir::cast(compute_type(a.dtype()), a));
  Expr r = f(wide);
  return r.dtype().is_floating() && out.is_floating() ? ir::cast(out, r) : r;
}

namespace math {
namespace {
Expr c(const Expr& like, double v) { return ir::make_const(like.dtype(), v); }
Expr call(const char* fn, const Expr& x) { return ir::make_intrinsic(fn, {x}); }
Expr abs(const Expr& x) { return call("fabs", x); }
constexpr double kPi = 3.14159265358979323846;
constexpr double kLn2 = 0.69314718055994530942;
}  // namespace

Expr expm1(const Expr& x) {
  // (u - 1) * x / log(u) cancels the rounding error of u = exp(x); beyond |x| > 40, u - 1 is
  // exact to the type's precision (and log(u) would overflow or vanish).
  Expr u = call("exp", x);
  Expr kahan = (u - c(x, 1)) * (x / call("log", u));
  return ir::select(ir::eq(u, c(x, 1)), x, ir::select(abs(x) > c(x, 40), u - c(x, 1), kahan));
}

Expr log1p(const Expr& x) {
  // log(u) * x / (u - 1) with u = 1 + x corrects the rounding of u; u == 1 means |x| < ulp/2.
  Expr u = c(x, 1) + x;
  Expr inf = c(x, INFINITY);
  return ir::select(ir::eq(u, c(x, 1)), x, ir::select(ir::eq(u, inf), inf, call("log", u) * (x / (u - c(x, 1)))));
}

Expr softplus(const Expr& x) { return ir::max(x, c(x, 0)) + log1p(call("exp", -abs(x))); }

Expr tan(const Expr& x) { return call("sin", x) / call("cos", x); }

Expr atan(const Expr& x) {
  // Cephes atanf: reduce |x| to [0, tan(pi/8)] by atan(x) = pi/2 - atan(1/x) and
  // atan(x) = pi/4 + atan((x-1)/(x+1)), then an odd polynomial.
  Expr ax = abs(x);
  Expr big = ax > c(x, 2.414213562373095), mid = ax > c(x, 0.4142135623730950);
  Expr xr = ir::select(big, c(x, -1) / ax, ir::select(mid, (ax - c(x, 1)) / (ax + c(x, 1)), ax));
  Expr y0 = ir::select(big, c(x, kPi / 2), ir::select(mid, c(x, kPi / 4), c(x, 0)));
  Expr z = xr * xr;
  Expr p = (((c(x, 8.05374449538e-2) * z - c(x, 1.38776856032e-1)) * z + c(x, 1.99777106478e-1)) * z -
            c(x, 3.33329491539e-1)) * z * xr + xr;
  Expr r = y0 + p;
  return ir::select(x < c(x, 0), -r, r);
}

// asin(x) = atan(x / sqrt(1 - x^2)); (1 - x)(1 + x) avoids the cancellation of 1 - x*x near 1.
Expr asin(const Expr& x) { return atan(x / call("sqrt", (c(x, 1) - x) * (c(x, 1) + x))); }

// acos(x) = 2 atan(sqrt((1 - x) / (1 + x))): no cancellation near x = 1, where acos is small.
Expr acos(const Expr& x) { return c(x, 2) * atan(call("sqrt", (c(x, 1) - x) / (c(x, 1) + x))); }

// (expm1(x) - expm1(-x)) / 2: the two terms have opposite signs, so nothing cancels near 0.
Expr sinh(const Expr& x) { return c(x, 0.5) * (expm1(x) - expm1(-x)); }

Expr cosh(const Expr& x) {
  Expr e = call("exp", abs(x));
  return c(x, 0.5) * (e + c(x, 1) / e);
}

Expr asinh(const Expr& x) {
  // sign(x) * log1p(|x| + x^2 / (1 + sqrt(1 + x^2))); for huge |x|, x^2 overflows: log(2|x|).
  Expr ax = abs(x);
  Expr small = log1p(ax + ax * ax / (c(x, 1) + call("sqrt", c(x, 1) + ax * ax)));
  Expr r = ir::select(ax > c(x, 1e15), call("log", ax) + c(x, kLn2), small);
  return ir::select(x < c(x, 0), -r, r);
}

Expr acosh(const Expr& x) {
  // log1p((x - 1) + sqrt((x - 1)(x + 1))) keeps precision near 1; log(2x) for huge x.
  Expr t = x - c(x, 1);
  Expr near = log1p(t + call("sqrt", t * (x + c(x, 1))));
  return ir::select(x > c(x, 1e15), call("log", x) + c(x, kLn2), near);
}

Expr atanh(const Expr& x) { return c(x, 0.5) * log1p(c(x, 2) * x / (c(x, 1) - x)); }

Expr sign(const Expr& x) {
  return ir::select(x > c(x, 0), c(x, 1), ir::select(x < c(x, 0), c(x, -1), c(x, 0)));
}

namespace {
DataType unsigned_of(DataType t) { return DataType(ir::TypeCode::UInt, t.bits, t.lanes); }

// Bitwise op of two unsigned values of at most 32 bits, one term per bit.
Expr bitwise_narrow(BitOp op, const Expr& a, const Expr& b, int bits) {
  Expr r = ir::make_zero(a.dtype());
  for (int k = 0; k < bits; ++k) {
    Expr p = ir::make_int(a.dtype(), int64_t{1} << k);
    Expr ba = ir::floormod(ir::floordiv(a, p), c(a, 2)), bb = ir::floormod(ir::floordiv(b, p), c(b, 2));
    Expr bit = op == BitOp::And ? ba * bb : op == BitOp::Or ? ir::max(ba, bb) : ir::floormod(ba + bb, c(a, 2));
    r = r + bit * p;
  }
  return r;
}
}  // namespace

Expr bitwise(BitOp op, const Expr& a, const Expr& b) {
  DataType t = a.dtype();
  KILN_USER_CHECK(t.element_of().is_integer() && b.dtype() == t) << "bitwise op needs two integers of one type";
  DataType ut = unsigned_of(t);
  Expr ua = ir::cast(ut, a), ub = ir::cast(ut, b);
  if (t.bits <= 32) return ir::cast(t, bitwise_narrow(op, ua, ub, t.bits));
  // 64 bits: on the two 32-bit halves, so no constant needs the top bit (the arithmetic
  // analysis keeps constants as int64).
  DataType u32 = DataType::u32(t.lanes);
  Expr half = ir::make_int(ut, int64_t{1} << 32);
  Expr lo = bitwise_narrow(op, ir::cast(u32, ua), ir::cast(u32, ub), 32);
  Expr hi = bitwise_narrow(op, ir::cast(u32, ir::floordiv(ua, half)), ir::cast(u32, ir::floordiv(ub, half)), 32);
  return ir::cast(t, ir::cast(ut, hi) * half + ir::cast(ut, lo));
}

Expr bitwise_not(const Expr& a) {
  DataType t = a.dtype();
  // -1 - a never overflows for signed types; unsigned: all ones minus a.
  if (t.element_of().is_int()) return c(a, -1) - a;
  DataType ut = unsigned_of(t);
  if (t.bits < 64) return ir::make_int(ut, (int64_t{1} << t.bits) - 1) - a;
  return ir::make_int(ut, 0) - a - ir::make_int(ut, 1);  // wraps modulo 2^64 to ~a
}

namespace {
// 2^amount in unsigned type ut, as a product over the bits of amount (exact, no libm call).
Expr pow2(DataType ut, const Expr& amount) {
  Expr n = ir::cast(DataType::i32(amount.dtype().lanes), amount);
  Expr p = ir::make_int(ut, 1);
  for (int j = 0; (1 << j) < ut.bits; ++j) {
    Expr bit = ir::eq(ir::floormod(ir::floordiv(n, 1 << j), 2), 0);
    p = p * ir::select(bit, ir::make_int(ut, 1), ir::make_int(ut, int64_t{1} << (1 << j)));
  }
  return p;
}
}  // namespace

Expr shift_left(const Expr& a, const Expr& amount) {
  DataType ut = unsigned_of(a.dtype());
  return ir::cast(a.dtype(), ir::cast(ut, a) * pow2(ut, amount));
}

Expr shift_right(const Expr& a, const Expr& amount) {
  DataType ut = unsigned_of(a.dtype());
  return ir::cast(a.dtype(), ir::truncdiv(ir::cast(ut, a), pow2(ut, amount)));
}

Expr int_pow(const Expr& a, const Expr& b) {
  DataType t = a.dtype();
  Expr e = ir::cast(t, b);
  Expr r = c(a, 1), base = a;
  for (int j = 0; j < 7; ++j) {  // exponents up to 127: larger ones overflow anyway
    Expr bit = ir::eq(ir::floormod(ir::floordiv(e, c(e, double(1 << j))), c(e, 2)), c(e, 1));
    r = ir::select(bit, r * base, r);
    if (j < 6) base = base * base;
  }
  if (!t.element_of().is_int()) return r;
  Expr odd = ir::eq(ir::floormod(e, c(e, 2)), c(e, 1));
  Expr neg = ir::select(ir::eq(a, c(a, 1)), c(a, 1),
                        ir::select(ir::eq(a, c(a, -1)), ir::select(odd, c(a, -1), c(a, 1)), c(a, 0)));
  return ir::select(e < c(e, 0), neg, r);
}

Expr mod(const Expr& a, const Expr& b, bool c_fmod) {
  DataType t = a.dtype();
  if (t.element_of().is_uint()) return ir::truncmod(a, b);
  if (t.element_of().is_int()) {
    Expr r = ir::truncmod(a, b);
    if (c_fmod) return r;
    Expr adjust = ir::ne(r, c(r, 0)) && ir::ne(r < c(r, 0), b < c(b, 0));
    return ir::select(adjust, r + b, r);
  }
  Expr q = call(c_fmod ? "trunc" : "floor", a / b);
  return a - q * b;
}
}  // namespace math

}  // namespace kiln::te::ops
