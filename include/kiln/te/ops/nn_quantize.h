// Linear quantization of the op library, with ONNX's QuantizeLinear / DequantizeLinear
// semantics (and ONNX Runtime's: the quotient x / scale is a division, not a product with the
// reciprocal, which rounds differently).
//
//   quantize:   y = saturate(round_half_to_even(x / scale) + zero_point)
//   dequantize: y = (x - zero_point) * scale
//
// Per tensor, scale and zero_point have one element (a relay scalar is a te tensor of shape
// {1}); per axis, they are 1-d of x's extent along `axis` and element i applies to the slice
// x[..., i, ...] of that axis. An undefined zero_point is 0. Each op is one elementwise stage.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "kiln/te/operation.h"

namespace kiln::te::ops {

// The integer types quantize produces, and their ranges: int8 [-128, 127], uint8 [0, 255],
// int16 [-32768, 32767], uint16 [0, 65535]. kiln::Error naming the type for any other.
bool is_quantized_type(ir::DataType t);
std::pair<int64_t, int64_t> quantized_range(ir::DataType t);

// x floating (float32, float16, bfloat16, float64), scale of x's type, zero_point of
// `out_dtype` (a quantized type). The quotient is rounded to x's type first (float16 divides
// in float16, as ONNX's reference does; computed in float32 and rounded once, which is the
// correctly rounded float16 quotient), then rounded half to even in that precision; NaN
// saturates to the low end of the range (what ONNX's reference gives on x86-64, whose float to
// int32 conversion makes NaN INT_MIN).
Tensor quantize(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis, ir::DataType out_dtype,
                const std::string& name = "quantize");

// x int8/uint8/int16/uint16/int32, zero_point of x's type, scale floating. The result has the
// scale's type: x - zero_point exactly (in int32, int64 for int32 x), converted to the scale's
// compute type (float32 for float16/bfloat16), multiplied by the scale there and rounded once
// to the scale's type.
Tensor dequantize(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                  const std::string& name = "dequantize");

}  // namespace kiln::te::ops
