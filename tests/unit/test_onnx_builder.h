// Builds small ONNX models as serialized protobuf bytes, for importer tests, without linking
// protobuf into the tests: a few lines of the wire format (varints, length-delimited fields)
// and the field numbers of onnx.proto.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace onnx_builder {

// One protobuf message being written.
struct Pb {
  std::string s;
  Pb& varint(uint64_t v) {
    while (v >= 0x80) {
      s += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    s += static_cast<char>(v);
    return *this;
  }
  Pb& tag(int field, int wire) { return varint(static_cast<uint64_t>(field) << 3 | wire); }
  Pb& i(int field, int64_t v) { return tag(field, 0).varint(static_cast<uint64_t>(v)); }
  Pb& str(int field, const std::string& v) {
    tag(field, 2).varint(v.size());
    s += v;
    return *this;
  }
  Pb& msg(int field, const Pb& m) { return str(field, m.s); }
  Pb& f32(int field, float v) {
    tag(field, 5);
    char b[4];
    std::memcpy(b, &v, 4);
    s.append(b, 4);
    return *this;
  }
  Pb& packed_i(int field, const std::vector<int64_t>& vs) {
    Pb p;
    for (int64_t v : vs) p.varint(static_cast<uint64_t>(v));
    return str(field, p.s);
  }
  Pb& packed_f(int field, const std::vector<float>& vs) {
    std::string b(vs.size() * 4, '\0');
    if (!vs.empty()) std::memcpy(b.data(), vs.data(), b.size());
    return str(field, b);
  }
};

// TensorProto.DataType codes.
enum Elem { FLOAT = 1, UINT8 = 2, INT8 = 3, UINT16 = 4, INT16 = 5, INT32 = 6, INT64 = 7, STRING = 8, BOOL = 9,
            FLOAT16 = 10, DOUBLE = 11, UINT32 = 12, UINT64 = 13, BFLOAT16 = 16, FLOAT8E4M3FN = 17 };

// TensorProto with raw_data.
inline Pb tensor_raw(const std::string& name, int elem, const std::vector<int64_t>& dims, const std::string& raw) {
  Pb t;
  for (int64_t d : dims) t.i(1, d);
  t.i(2, elem).str(8, name).str(9, raw);
  return t;
}
inline Pb tensor_i64(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
  Pb t;
  for (int64_t d : dims) t.i(1, d);
  return t.i(2, INT64).packed_i(7, v).str(8, name);
}
inline Pb tensor_f32(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
  Pb t;
  for (int64_t d : dims) t.i(1, d);
  return t.i(2, FLOAT).packed_f(4, v).str(8, name);
}

// AttributeProto of each kind (type codes: FLOAT 1, INT 2, STRING 3, TENSOR 4, FLOATS 6, INTS 7).
inline Pb attr_i(const std::string& n, int64_t v) { return Pb().str(1, n).i(3, v).i(20, 2); }
inline Pb attr_f(const std::string& n, float v) { return Pb().str(1, n).f32(2, v).i(20, 1); }
inline Pb attr_s(const std::string& n, const std::string& v) { return Pb().str(1, n).str(4, v).i(20, 3); }
inline Pb attr_t(const std::string& n, const Pb& t) { return Pb().str(1, n).msg(5, t).i(20, 4); }
inline Pb attr_ints(const std::string& n, const std::vector<int64_t>& v) { return Pb().str(1, n).packed_i(8, v).i(20, 7); }
inline Pb attr_floats(const std::string& n, const std::vector<float>& v) { return Pb().str(1, n).packed_f(7, v).i(20, 6); }

inline Pb node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out,
               const std::string& name = "", const std::vector<Pb>& attrs = {}, const std::string& domain = "") {
  Pb n;
  for (const auto& x : in) n.str(1, x);
  for (const auto& x : out) n.str(2, x);
  if (!name.empty()) n.str(3, name);
  n.str(4, op);
  for (const auto& a : attrs) n.msg(5, a);
  if (!domain.empty()) n.str(7, domain);
  return n;
}

// ValueInfoProto of a tensor; a negative dim is symbolic ("N").
inline Pb value(const std::string& name, int elem, const std::vector<int64_t>& dims) {
  Pb shape;
  for (int64_t d : dims) shape.msg(1, d >= 0 ? Pb().i(1, d) : Pb().str(2, "N"));
  Pb tensor = Pb().i(1, elem).msg(2, shape);
  return Pb().str(1, name).msg(2, Pb().msg(1, tensor));
}

inline std::string model(int opset, const std::vector<Pb>& nodes, const std::vector<Pb>& inputs,
                         const std::vector<Pb>& outputs, const std::vector<Pb>& initializers = {}) {
  Pb g;
  for (const auto& n : nodes) g.msg(1, n);
  g.str(2, "test");
  for (const auto& t : initializers) g.msg(5, t);
  for (const auto& v : inputs) g.msg(11, v);
  for (const auto& v : outputs) g.msg(12, v);
  Pb m;
  m.i(1, 8).msg(8, Pb().str(1, "").i(2, opset)).msg(7, g);
  return m.s;
}

}  // namespace onnx_builder
