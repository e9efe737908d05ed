#include "kiln/te/ops/nn_quantize.h"

#include "kiln/support/error.h"
#include "kiln/te/ops/elemwise.h"

namespace kiln::te::ops {

using ir::DataType;
using ir::Expr;
using ir::Var;

bool is_quantized_type(DataType t) {
  return t.is_scalar() && t.is_integer() && (t.bits == 8 || t.bits == 16);
}

std::pair<int64_t, int64_t> quantized_range(DataType t) {
  KILN_USER_CHECK(is_quantized_type(t)) << "quantized type must be int8, uint8, int16 or uint16, got " << t.str();
  if (t.is_uint()) return {0, (int64_t{1} << t.bits) - 1};
  return {-(int64_t{1} << (t.bits - 1)), (int64_t{1} << (t.bits - 1)) - 1};
}

namespace {

// Whether parameter p (scale or zero point) applies per axis (1-d of x's extent along axis)
// rather than per tensor (one element); kiln::Error naming the op and the role otherwise.
bool per_axis(const Tensor& p, const Tensor& x, int64_t axis, const char* role, const std::string& name) {
  int64_t n = 1;
  for (int64_t d : p.shape()) n *= d;
  if (n == 1) return false;
  KILN_USER_CHECK(axis >= 0 && axis < x.ndim()) << name << ": axis " << axis << " is out of range for rank "
                                                << x.ndim();
  KILN_USER_CHECK(p.ndim() == 1 && p.shape()[0] == x.shape()[axis])
      << name << ": " << role << " must have one element (per tensor) or " << x.shape()[axis] << " (per axis "
      << axis << "), got " << n;
  return true;
}

// The element of a parameter that applies at output index idx.
Expr param_at(const Tensor& p, bool along_axis, const std::vector<Var>& idx, int64_t axis) {
  std::vector<Expr> at(static_cast<size_t>(p.ndim()), Expr(0));
  if (along_axis) at[0] = idx[axis];
  return p(at);
}

}  // namespace

Tensor quantize(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis, DataType out_dtype,
                const std::string& name) {
  const DataType xt = x.dtype();
  KILN_USER_CHECK(xt.is_floating()) << name << ": input must be floating-point, got " << xt.str();
  KILN_USER_CHECK(scale.dtype() == xt) << name << ": scale must have the input's type " << xt.str() << ", got "
                                       << scale.dtype().str();
  // Named, not a structured binding, which the lambda below could capture only from C++20.
  const std::pair<int64_t, int64_t> range = quantized_range(out_dtype);
  const int64_t lo = range.first, hi = range.second;
  const bool has_zp = zero_point.defined();
  KILN_USER_CHECK(!has_zp || zero_point.dtype() == out_dtype)
      << name << ": zero point must have the output type " << out_dtype.str() << ", got " << zero_point.dtype().str();
  const bool scale_axis = per_axis(scale, x, axis, "scale", name);
  const bool zp_axis = has_zp && per_axis(zero_point, x, axis, "zero point", name);
  const DataType ct = compute_type(xt);
  return compute(x.shape(), [&](const std::vector<Var>& idx) {
    Expr xv = ir::cast(ct, x(std::vector<Expr>(idx.begin(), idx.end())));
    Expr q = xv / ir::cast(ct, param_at(scale, scale_axis, idx, axis));
    if (ct != xt) q = ir::cast(ct, ir::cast(xt, q));
    Expr r = ir::make_intrinsic("round", {q});
    if (has_zp) r = r + ir::cast(ct, param_at(zero_point, zp_axis, idx, axis));
    // Saturate with selects whose comparisons are false for NaN, so NaN becomes the low end.
    Expr qlo = ir::make_float(ct, static_cast<double>(lo)), qhi = ir::make_float(ct, static_cast<double>(hi));
    r = ir::select(r > qlo, r, qlo);
    r = ir::select(r < qhi, r, qhi);
    return ir::cast(out_dtype, r);
  }, name);
}

Tensor dequantize(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                  const std::string& name) {
  const DataType xt = x.dtype();
  KILN_USER_CHECK(is_quantized_type(xt) || xt == DataType::i32())
      << name << ": input must be int8, uint8, int16, uint16 or int32, got " << xt.str();
  KILN_USER_CHECK(scale.dtype().is_floating()) << name << ": scale must be floating-point, got " << scale.dtype().str();
  const bool has_zp = zero_point.defined();
  KILN_USER_CHECK(!has_zp || zero_point.dtype() == xt)
      << name << ": zero point must have the input's type " << xt.str() << ", got " << zero_point.dtype().str();
  const bool scale_axis = per_axis(scale, x, axis, "scale", name);
  const bool zp_axis = has_zp && per_axis(zero_point, x, axis, "zero point", name);
  const DataType st = scale.dtype(), ct = compute_type(st);
  // The difference is exact in a type wider than x.
  const DataType wide = xt.bits <= 16 ? DataType::i32() : DataType::i64();
  return compute(x.shape(), [&](const std::vector<Var>& idx) {
    Expr v = x(std::vector<Expr>(idx.begin(), idx.end()));
    if (has_zp) v = ir::cast(wide, v) - ir::cast(wide, param_at(zero_point, zp_axis, idx, axis));
    return ir::cast(st, ir::cast(ct, v) * ir::cast(ct, param_at(scale, scale_axis, idx, axis)));
  }, name);
}

}  // namespace kiln::te::ops
