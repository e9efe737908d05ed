// Exact float16 / bfloat16 test values for the tensor-core tests: inputs whose products and
// float32 sums are exact, so that a result is off only by the rounding of its 16-bit type.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kiln/ir/dtype.h"
#include "testing/reference.h"

namespace kiln::test {

// Exact 16-bit encodings of the test's values (multiples of 1/64 in [-2, 2]: 8 significant bits
// at most, exact in float16 and bfloat16).
inline uint16_t to_bits(float v, ir::DataType t) {
  uint32_t x;
  std::memcpy(&x, &v, 4);
  if (t.is_bfloat()) return static_cast<uint16_t>(x >> 16);
  if (v == 0) return static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, mant = x & 0x7fffff;
  return static_cast<uint16_t>(sign | ((exp - 112) << 10) | (mant >> 13));
}
inline float from_bits(uint16_t h, ir::DataType t) {
  uint32_t x;
  if (t.is_bfloat()) {
    x = uint32_t(h) << 16;
  } else {
    const uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    x = exp == 0 ? sign : sign | ((exp + 112) << 23) | (mant << 13);  // no subnormals here
  }
  float v;
  std::memcpy(&v, &x, 4);
  return v;
}
inline std::vector<uint16_t> to_bits(const std::vector<float>& v, ir::DataType t) {
  std::vector<uint16_t> out;
  for (float x : v) out.push_back(to_bits(x, t));
  return out;
}

// Multiples of 1/64 in [-2, 2]: a product is a multiple of 1/4096 below 4 in magnitude, so
// float32 sums of up to 1000 of them are exact.
inline std::vector<float> sixty_fourths(size_t n, uint64_t seed) {
  std::vector<float> v = ref::random_floats(n, seed, -2.f, 2.f);
  for (float& x : v) x = std::round(x * 64) / 64;
  return v;
}

// Half an ulp of `t` (float16 or bfloat16) relative to a value: the error of rounding to it once.
inline double half_ulp(ir::DataType t) { return t.is_bfloat() ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11); }

}  // namespace kiln::test
