// Elementwise and broadcast compute definitions of the op library (part A), and the scalar math
// they are made of.
//
//   auto y = te::ops::elementwise({a, b}, te::ops::broadcast_shape(a.shape(), b.shape()),
//                                 [](const std::vector<ir::Expr>& v) { return v[0] + v[1]; }, "add");
//
// Broadcasting follows numpy: shapes align on the right and a dimension of 1 repeats. Relay
// scalars (shape []) are te tensors of shape {1} (te has no rank-0 tensors), which broadcast the
// same way. float16/bfloat16 math runs in float32 (compute_type) and rounds once at the end.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/te/operation.h"

namespace kiln::te::ops {

// The numpy broadcast of two shapes; kiln::Error when a pair of dims is neither equal nor 1.
std::vector<int64_t> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// Reads `t` at the index `idx` of a tensor it broadcasts to (t.ndim() <= idx.size(); t's dims
// align with the last ones of idx, and its dims of extent 1 read element 0).
ir::Expr broadcast_load(const Tensor& t, const std::vector<ir::Var>& idx);

using ScalarFn = std::function<ir::Expr(const std::vector<ir::Expr>& values)>;

// out[i] = f(in_0[i], in_1[i], ...) over `shape`, every input broadcast to it. The element type
// is whatever f returns.
Tensor elementwise(const std::vector<Tensor>& inputs, const std::vector<int64_t>& shape, const ScalarFn& f,
                   const std::string& name);

// The type math on `t` runs in: float32 for float16 and bfloat16 (the backend has no half
// arithmetic worth using), `t` itself otherwise.
ir::DataType compute_type(ir::DataType t);

// f applied in compute_type: arguments of float16/bfloat16 type are widened to float32, and a
// floating result is narrowed back to `out` (non-floating results, e.g. bool, pass through).
ir::Expr apply_in_compute_type(const ScalarFn& f, const std::vector<ir::Expr>& args, ir::DataType out);

// Scalar math built from the IR's intrinsics (exp log sqrt sin cos ...), accurate to a few ulp
// of float32 unless stated. They take and return one floating type; the integer helpers take
// integers of any width and signedness.
namespace math {
ir::Expr expm1(const ir::Expr& x);  // exp(x) - 1 without cancellation near 0 (Kahan's trick)
ir::Expr log1p(const ir::Expr& x);  // log(1 + x) without cancellation near 0 (Goldberg's trick)
ir::Expr softplus(const ir::Expr& x);  // log(1 + exp(x)), stable for large |x|
ir::Expr tan(const ir::Expr& x);
ir::Expr atan(const ir::Expr& x);  // Cephes' atanf polynomial: ~1e-7 relative, also for float64
ir::Expr asin(const ir::Expr& x);
ir::Expr acos(const ir::Expr& x);
ir::Expr sinh(const ir::Expr& x);
ir::Expr cosh(const ir::Expr& x);
ir::Expr asinh(const ir::Expr& x);
ir::Expr acosh(const ir::Expr& x);
ir::Expr atanh(const ir::Expr& x);
ir::Expr sign(const ir::Expr& x);  // -1, 0 or 1 in x's type (any numeric type)
// Integer bit operations, built from arithmetic (the IR has no bitwise nodes): and/or/xor by
// bit decomposition (one term per bit), not, and shifts by a power of two built from the bits of
// the shift amount (amounts outside [0, bits) give unspecified results, as in C).
enum class BitOp { And, Or, Xor };
ir::Expr bitwise(BitOp op, const ir::Expr& a, const ir::Expr& b);
ir::Expr bitwise_not(const ir::Expr& a);
ir::Expr shift_left(const ir::Expr& a, const ir::Expr& amount);
ir::Expr shift_right(const ir::Expr& a, const ir::Expr& amount);  // logical shift
// a^b on integers by repeated squaring (b < 0 gives 0 unless |a| == 1).
ir::Expr int_pow(const ir::Expr& a, const ir::Expr& b);
// Remainder: `c_fmod` true takes the dividend's sign (C fmod), false the divisor's (Python %).
// Integers divide exactly; floats compute a - trunc(a/b)*b (or floor), exact for quotients
// below 2^24 (float32).
ir::Expr mod(const ir::Expr& a, const ir::Expr& b, bool c_fmod);
}  // namespace math

}  // namespace kiln::te::ops
