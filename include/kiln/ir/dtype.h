// DataType: the scalar or vector type of an IR value (float32, int8x16, bool, handle).
#pragma once

#include <cstdint>
#include <string>

namespace kiln::ir {

enum class TypeCode : uint8_t { Int, UInt, Float, BFloat, Bool, Handle };

struct DataType {
  TypeCode code = TypeCode::Int;
  uint8_t bits = 32;
  uint16_t lanes = 1;

  constexpr DataType() = default;
  constexpr DataType(TypeCode c, int b, int l = 1)
      : code(c), bits(static_cast<uint8_t>(b)), lanes(static_cast<uint16_t>(l)) {}

  static constexpr DataType i8(int lanes = 1) { return {TypeCode::Int, 8, lanes}; }
  static constexpr DataType i16(int lanes = 1) { return {TypeCode::Int, 16, lanes}; }
  static constexpr DataType i32(int lanes = 1) { return {TypeCode::Int, 32, lanes}; }
  static constexpr DataType i64(int lanes = 1) { return {TypeCode::Int, 64, lanes}; }
  static constexpr DataType u8(int lanes = 1) { return {TypeCode::UInt, 8, lanes}; }
  static constexpr DataType u16(int lanes = 1) { return {TypeCode::UInt, 16, lanes}; }
  static constexpr DataType u32(int lanes = 1) { return {TypeCode::UInt, 32, lanes}; }
  static constexpr DataType u64(int lanes = 1) { return {TypeCode::UInt, 64, lanes}; }
  static constexpr DataType f16(int lanes = 1) { return {TypeCode::Float, 16, lanes}; }
  static constexpr DataType f32(int lanes = 1) { return {TypeCode::Float, 32, lanes}; }
  static constexpr DataType f64(int lanes = 1) { return {TypeCode::Float, 64, lanes}; }
  static constexpr DataType bf16(int lanes = 1) { return {TypeCode::BFloat, 16, lanes}; }
  static constexpr DataType boolean(int lanes = 1) { return {TypeCode::Bool, 1, lanes}; }
  static constexpr DataType handle() { return {TypeCode::Handle, 64, 1}; }

  constexpr bool is_int() const { return code == TypeCode::Int; }
  constexpr bool is_uint() const { return code == TypeCode::UInt; }
  // Int or UInt (not bool): the types index arithmetic uses.
  constexpr bool is_integer() const { return is_int() || is_uint(); }
  constexpr bool is_float() const { return code == TypeCode::Float; }
  constexpr bool is_bfloat() const { return code == TypeCode::BFloat; }
  // Any floating-point type, bf16 included.
  constexpr bool is_floating() const { return is_float() || is_bfloat(); }
  constexpr bool is_bool() const { return code == TypeCode::Bool; }
  constexpr bool is_handle() const { return code == TypeCode::Handle; }
  constexpr bool is_scalar() const { return lanes == 1; }
  constexpr bool is_vector() const { return lanes > 1; }

  constexpr DataType element_of() const { return {code, bits, 1}; }
  constexpr DataType with_lanes(int l) const { return {code, bits, l}; }
  // Storage size of one element in bytes (bool is stored as one byte).
  constexpr int bytes() const { return bits == 1 ? 1 : bits / 8; }

  constexpr bool operator==(const DataType& o) const {
    return code == o.code && bits == o.bits && lanes == o.lanes;
  }
  constexpr bool operator!=(const DataType& o) const { return !(*this == o); }

  // "float32", "int8x16", "bool", "handle".
  std::string str() const;
  // Parses what str() prints; throws kiln::Error on an unknown name.
  static DataType parse(const std::string& name);
};

}  // namespace kiln::ir
