#include "kiln/ir/dtype.h"

#include <cstdlib>

#include "kiln/support/error.h"

namespace kiln::ir {

std::string DataType::str() const {
  std::string s;
  switch (code) {
    case TypeCode::Int: s = "int" + std::to_string(bits); break;
    case TypeCode::UInt: s = "uint" + std::to_string(bits); break;
    case TypeCode::Float: s = "float" + std::to_string(bits); break;
    case TypeCode::BFloat: s = "bfloat" + std::to_string(bits); break;
    case TypeCode::Bool: s = "bool"; break;
    case TypeCode::Handle: return "handle";
  }
  if (lanes > 1) s += "x" + std::to_string(lanes);
  return s;
}

DataType DataType::parse(const std::string& name) {
  std::string base = name;
  int lanes = 1;
  if (auto x = name.find('x'); x != std::string::npos) {
    base = name.substr(0, x);
    lanes = std::atoi(name.c_str() + x + 1);
    KILN_USER_CHECK(lanes >= 1) << "bad vector lanes in data type '" << name << "'";
  }
  if (base == "handle" && lanes == 1) return handle();
  if (base == "bool") return boolean(lanes);
  struct Prefix { const char* text; TypeCode code; };
  for (Prefix p : {Prefix{"uint", TypeCode::UInt}, Prefix{"int", TypeCode::Int},
                   Prefix{"float", TypeCode::Float}, Prefix{"bfloat", TypeCode::BFloat}}) {
    std::string pre = p.text;
    if (base.rfind(pre, 0) == 0 && base.size() > pre.size()) {
      int bits = std::atoi(base.c_str() + pre.size());
      bool ok = (p.code == TypeCode::Float) ? (bits == 16 || bits == 32 || bits == 64)
              : (p.code == TypeCode::BFloat) ? bits == 16
                                               : (bits == 8 || bits == 16 || bits == 32 || bits == 64);
      KILN_USER_CHECK(ok) << "unsupported bit width in data type '" << name << "'";
      return DataType(p.code, bits, lanes);
    }
  }
  KILN_THROW() << "unknown data type '" << name << "'";
  return {};
}

}  // namespace kiln::ir
