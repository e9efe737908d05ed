// Helpers shared by the codegen tests: hand-built PrimFuncs over 1-D buffers and running them.
#pragma once

#include <string>
#include <vector>

#include "kiln/codegen/build.h"
#include "kiln/ir/expr.h"
#include "kiln/ir/stmt.h"
#include "kiln/runtime/ndarray.h"

namespace kiln::test {

// A flat (already flattened) buffer of n elements.
inline ir::Buffer flat_buffer(const std::string& name, ir::DataType t, int64_t n, const std::string& scope = "global") {
  return ir::Buffer::make(name, t, {ir::Expr(static_cast<int>(n))}, scope);
}

inline ir::PrimFunc prim_func(const std::string& name, std::vector<ir::Buffer> params, ir::Stmt body) {
  ir::PrimFunc f;
  f.name = name;
  f.params = std::move(params);
  f.body = std::move(body);
  return f;
}

// codegen::build without the IR passes: these tests hand the LLVM code generator exactly the
// IR they build (hand-written vector IR, leftover loop kinds).
inline codegen::Module build(const std::vector<ir::PrimFunc>& funcs, const Target& target = Target::host(),
                             codegen::BuildOptions options = codegen::BuildOptions()) {
  return codegen::build(funcs, target, options);
}

inline DLDataType dl_type(ir::DataType t) {
  switch (t.code) {
    case ir::TypeCode::Int: return runtime::make_dtype(kDLInt, t.bits);
    case ir::TypeCode::UInt: return runtime::make_dtype(kDLUInt, t.bits);
    case ir::TypeCode::Float: return runtime::make_dtype(kDLFloat, t.bits);
    case ir::TypeCode::BFloat: return runtime::make_dtype(kDLBfloat, t.bits);
    case ir::TypeCode::Bool: return runtime::dtype_bool();
    default: return runtime::make_dtype(kDLOpaqueHandle, 64);
  }
}

// An NDArray shaped like buffer b, filled from values (converted to the element type T).
template <typename T>
runtime::NDArray array_for(const ir::Buffer& b, const std::vector<T>& values) {
  std::vector<int64_t> shape;
  for (const ir::Expr& e : b->shape) shape.push_back(*ir::as_const_int(e));
  return runtime::NDArray::from_vector<T>(shape, dl_type(b->dtype), values);
}

inline void run(const codegen::Module& m, const std::string& name, std::vector<runtime::NDArray> args) {
  std::vector<DLTensor*> ts;
  for (auto& a : args) ts.push_back(a.dltensor());
  m.run(name, ts);
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace kiln::test
