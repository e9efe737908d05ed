#include "kiln/relay/host_tensor.h"

#include <cmath>
#include <fmt/format.h>

#include "kiln/support/error.h"

namespace kiln::relay {

// ---- float16 / bfloat16 -----------------------------------------------------------------------

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      exp = 127 - 15 + 1;
      while (!(mant & 0x400u)) { mant <<= 1; --exp; }
      bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;  // may carry into the exponent: correct
  return static_cast<uint16_t>(half);
}

float bfloat16_to_float(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

// ---- element access -------------------------------------------------------------------------

namespace {

template <typename T>
T load(const uint8_t* p, int64_t i) {
  T v;
  std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}
template <typename T>
void store(uint8_t* p, int64_t i, T v) {
  std::memcpy(p + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

double read_double(DataType t, const uint8_t* p, int64_t i) {
  switch (t.code) {
    case ir::TypeCode::Float:
      if (t.bits == 16) return half_to_float(load<uint16_t>(p, i));
      if (t.bits == 32) return load<float>(p, i);
      return load<double>(p, i);
    case ir::TypeCode::BFloat: return bfloat16_to_float(load<uint16_t>(p, i));
    case ir::TypeCode::Bool: return p[i] != 0;
    case ir::TypeCode::Int:
      if (t.bits == 8) return load<int8_t>(p, i);
      if (t.bits == 16) return load<int16_t>(p, i);
      if (t.bits == 32) return load<int32_t>(p, i);
      return static_cast<double>(load<int64_t>(p, i));
    case ir::TypeCode::UInt:
      if (t.bits == 8) return load<uint8_t>(p, i);
      if (t.bits == 16) return load<uint16_t>(p, i);
      if (t.bits == 32) return load<uint32_t>(p, i);
      return static_cast<double>(load<uint64_t>(p, i));
    default: break;
  }
  KILN_CHECK(false) << "no host element access for " << t.str();
  return 0;
}

int64_t read_int64(DataType t, const uint8_t* p, int64_t i) {
  switch (t.code) {
    case ir::TypeCode::Int:
      if (t.bits == 8) return load<int8_t>(p, i);
      if (t.bits == 16) return load<int16_t>(p, i);
      if (t.bits == 32) return load<int32_t>(p, i);
      return load<int64_t>(p, i);
    case ir::TypeCode::UInt:
      if (t.bits == 8) return load<uint8_t>(p, i);
      if (t.bits == 16) return load<uint16_t>(p, i);
      if (t.bits == 32) return load<uint32_t>(p, i);
      return static_cast<int64_t>(load<uint64_t>(p, i));
    case ir::TypeCode::Bool: return p[i] != 0;
    default: {
      double d = read_double(t, p, i);
      if (std::isnan(d)) return 0;
      if (d >= 9.2e18) return INT64_MAX;
      if (d <= -9.2e18) return INT64_MIN;
      return static_cast<int64_t>(d);
    }
  }
}

void write_int64(DataType t, uint8_t* p, int64_t i, int64_t v) {
  switch (t.code) {
    case ir::TypeCode::Int:
      if (t.bits == 8) return store<int8_t>(p, i, static_cast<int8_t>(v));
      if (t.bits == 16) return store<int16_t>(p, i, static_cast<int16_t>(v));
      if (t.bits == 32) return store<int32_t>(p, i, static_cast<int32_t>(v));
      return store<int64_t>(p, i, v);
    case ir::TypeCode::UInt:
      if (t.bits == 8) return store<uint8_t>(p, i, static_cast<uint8_t>(v));
      if (t.bits == 16) return store<uint16_t>(p, i, static_cast<uint16_t>(v));
      if (t.bits == 32) return store<uint32_t>(p, i, static_cast<uint32_t>(v));
      return store<uint64_t>(p, i, static_cast<uint64_t>(v));
    case ir::TypeCode::Bool: p[i] = v != 0; return;
    case ir::TypeCode::Float:
      if (t.bits == 16) return store<uint16_t>(p, i, float_to_half(static_cast<float>(v)));
      if (t.bits == 32) return store<float>(p, i, static_cast<float>(v));
      return store<double>(p, i, static_cast<double>(v));
    case ir::TypeCode::BFloat: return store<uint16_t>(p, i, float_to_bfloat16(static_cast<float>(v)));
    default: break;
  }
  KILN_CHECK(false) << "no host element access for " << t.str();
}

void write_double(DataType t, uint8_t* p, int64_t i, double v) {
  switch (t.code) {
    case ir::TypeCode::Float:
      if (t.bits == 16) return store<uint16_t>(p, i, float_to_half(static_cast<float>(v)));
      if (t.bits == 32) return store<float>(p, i, static_cast<float>(v));
      return store<double>(p, i, v);
    case ir::TypeCode::BFloat: return store<uint16_t>(p, i, float_to_bfloat16(static_cast<float>(v)));
    case ir::TypeCode::Bool: p[i] = v != 0; return;
    default: {
      // Float to integer truncates toward zero; out-of-range values saturate instead of being UB.
      int64_t iv = std::isnan(v) ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(v);
      if (t.is_uint() && t.bits == 64 && v >= 9.2e18) iv = static_cast<int64_t>(static_cast<uint64_t>(v));
      return write_int64(t, p, i, iv);
    }
  }
}

void check_storable(DataType t) {
  bool ok = t.is_scalar() &&
            ((t.is_float() && (t.bits == 16 || t.bits == 32 || t.bits == 64)) || (t.is_bfloat() && t.bits == 16) ||
             t.is_bool() || (t.is_integer() && (t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64)));
  KILN_USER_CHECK(ok) << "data type " << t.str() << " cannot be held in a host tensor";
}

}  // namespace

// ---- HostTensor -----------------------------------------------------------------------------

HostTensor::HostTensor(DataType dtype, Shape shape, std::vector<uint8_t> bytes) : dtype_(dtype), shape_(std::move(shape)) {
  check_storable(dtype);
  int64_t want = checked_tensor_bytes(dtype, shape_);
  KILN_USER_CHECK(static_cast<int64_t>(bytes.size()) == want)
      << "tensor " << dtype.str() << shape_str(shape_) << " needs " << want << " bytes, got " << bytes.size();
  bytes_ = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
}

namespace {
// The bytes the pointer constructor copies (zeros for null), sized only after the shape passed
// the limit: a hostile shape must be an error, not an overflowing size or a huge allocation.
std::vector<uint8_t> copy_bytes(DataType dtype, const Shape& shape, const void* data) {
  auto n = static_cast<size_t>(checked_tensor_bytes(dtype, shape));
  if (!data) return std::vector<uint8_t>(n);
  const auto* p = static_cast<const uint8_t*>(data);
  return std::vector<uint8_t>(p, p + n);
}
}  // namespace

HostTensor::HostTensor(DataType dtype, Shape shape, const void* data)
    : HostTensor(dtype, shape, copy_bytes(dtype, shape, data)) {}

HostTensor HostTensor::zeros(DataType dtype, Shape shape) { return HostTensor(dtype, std::move(shape), nullptr); }

HostTensor HostTensor::from_doubles(DataType dtype, Shape shape, const std::vector<double>& values) {
  check_storable(dtype);
  KILN_CHECK(static_cast<int64_t>(values.size()) == num_elements(shape)) << "value count does not match shape";
  std::vector<uint8_t> bytes(values.size() * dtype.bytes());
  for (size_t i = 0; i < values.size(); ++i) write_double(dtype, bytes.data(), static_cast<int64_t>(i), values[i]);
  return HostTensor(dtype, std::move(shape), std::move(bytes));
}

HostTensor HostTensor::from_int64s(DataType dtype, Shape shape, const std::vector<int64_t>& values) {
  check_storable(dtype);
  KILN_CHECK(static_cast<int64_t>(values.size()) == num_elements(shape)) << "value count does not match shape";
  std::vector<uint8_t> bytes(values.size() * dtype.bytes());
  for (size_t i = 0; i < values.size(); ++i) write_int64(dtype, bytes.data(), static_cast<int64_t>(i), values[i]);
  return HostTensor(dtype, std::move(shape), std::move(bytes));
}

int64_t HostTensor::numel() const { return num_elements(shape_); }

int64_t HostTensor::int64_at(int64_t i) const {
  KILN_CHECK(i >= 0 && i < numel()) << "element " << i << " out of range";
  return read_int64(dtype_, data(), i);
}

double HostTensor::double_at(int64_t i) const {
  KILN_CHECK(i >= 0 && i < numel()) << "element " << i << " out of range";
  return read_double(dtype_, data(), i);
}

std::vector<int64_t> HostTensor::to_int64s() const {
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) out[i] = read_int64(dtype_, data(), i);
  return out;
}

std::vector<double> HostTensor::to_doubles() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) out[i] = read_double(dtype_, data(), i);
  return out;
}

HostTensor HostTensor::reshaped(Shape shape) const {
  KILN_CHECK(num_elements(shape) == numel()) << "reshape of " << shape_str(shape_) << " to " << shape_str(shape);
  HostTensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

bool HostTensor::bitwise_equal(const HostTensor& o) const {
  if (dtype_ != o.dtype_ || shape_ != o.shape_) return false;
  if (bytes_ == o.bytes_) return true;
  return nbytes() == o.nbytes() && (nbytes() == 0 || std::memcmp(data(), o.data(), nbytes()) == 0);
}

size_t HostTensor::hash() const {
  // FNV-1a over type, shape and bytes: deterministic, good enough for CSE buckets.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(static_cast<uint64_t>(dtype_.code) << 8 | dtype_.bits);
  for (int64_t d : shape_) mix(static_cast<uint64_t>(d));
  for (size_t i = 0; i < nbytes(); ++i) mix(data()[i]);
  return static_cast<size_t>(h);
}

std::string HostTensor::str(int64_t max_values) const {
  std::string s = dtype_.str() + shape_str(shape_);
  if (!defined() || numel() > max_values) return s;
  s += "{";
  for (int64_t i = 0; i < numel(); ++i) {
    if (i) s += ", ";
    if (dtype_.is_floating()) {
      double x = double_at(i);
      s += dtype_ == DataType::f64() ? fmt::format("{}", x) : fmt::format("{}", static_cast<float>(x));
    } else if (dtype_.is_bool()) {
      s += int64_at(i) ? "true" : "false";
    } else if (dtype_.is_uint() && dtype_.bits == 64) {
      s += std::to_string(static_cast<uint64_t>(int64_at(i)));
    } else {
      s += std::to_string(int64_at(i));
    }
  }
  return s + "}";
}

}  // namespace kiln::relay
