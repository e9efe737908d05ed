// Helpers shared by the codegen tests: hand-built PrimFuncs over 1-D buffers and running them.
#pragma once

#include <string>
#include <vector>

#include "kiln/codegen/build.h"
#include "kiln/ir/expr.h"
#include "kiln/ir/stmt.h"
#include "runtime/cpu_features.h"
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

// The CPU targets a test that inspects generated code (LLVM IR, assembly, loop metadata) checks,
// named so that what it checks does not depend on the machine the suite runs on: x86-64 at the
// SSE4.2 and AVX2 levels, an AVX-512 CPU (with VNNI and mask registers), and aarch64 NEON with
// the dot product. Code that must also run is run only where runs_here() says so: an AVX2
// machine inspects AVX-512 code, an AVX-512 machine AVX2 code, either aarch64 code.
inline const std::vector<std::string>& inspected_target_specs() {
  static const std::vector<std::string> specs = {"llvm -mcpu=x86-64-v2", "llvm -mcpu=x86-64-v3", "llvm -mcpu=znver4",
                                                 "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1"};
  return specs;
}
inline std::vector<Target> inspected_targets() {
  std::vector<Target> targets;
  for (const std::string& spec : inspected_target_specs()) targets.push_back(Target::parse(spec));
  return targets;
}

// Whether this machine runs code built for `t`: the module loader's own check (same
// architecture, every feature the target's CPU and -mattr imply present).
inline bool runs_here(const Target& t) {
  return runtime::target_incompatibility(t.str(), runtime::host_cpu_features()).empty();
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
