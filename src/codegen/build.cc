// The build driver of the CPU backend: codegen::build and codegen::Module (see build.h).
// Argument checking lives here, away from LLVM.
#include "kiln/codegen/build.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "kiln/ir/printer.h"
#include "kiln/runtime/ndarray.h"
#include "kiln/support/error.h"
#include "llvm/llvm_backend.h"

namespace kiln::codegen {

struct Module::Impl {
  Target target;
  std::vector<ir::PrimFunc> funcs;  // as compiled; their params (logical shapes) define run()'s checks
  std::unique_ptr<llvm_backend::CompiledModule> compiled;
  std::mutex mutex;
  std::unordered_map<std::string, kiln_kernel_fn> kernels;

  const ir::PrimFunc* find(const std::string& name) const {
    for (const ir::PrimFunc& f : funcs)
      if (f.name == name) return &f;
    return nullptr;
  }
};

namespace {

const Module::Impl& checked(const std::shared_ptr<Module::Impl>& impl) {
  KILN_USER_CHECK(impl != nullptr) << "use of an empty codegen::Module (not built)";
  return *impl;
}

// The DLPack type a parameter of element type t must have (bool: {kDLUInt, 1}, see ndarray.h).
DLDataType to_dl_dtype(ir::DataType t) {
  switch (t.code) {
    case ir::TypeCode::Int: return runtime::make_dtype(kDLInt, t.bits, t.lanes);
    case ir::TypeCode::UInt: return runtime::make_dtype(kDLUInt, t.bits, t.lanes);
    case ir::TypeCode::Float: return runtime::make_dtype(kDLFloat, t.bits, t.lanes);
    case ir::TypeCode::BFloat: return runtime::make_dtype(kDLBfloat, t.bits, t.lanes);
    case ir::TypeCode::Bool: return runtime::make_dtype(kDLUInt, 1, t.lanes);
    case ir::TypeCode::Handle: break;
  }
  KILN_THROW() << "a buffer of handles cannot be a kernel parameter";
  return {};
}

}  // namespace

Module build(const std::vector<ir::PrimFunc>& funcs, const Target& target, const BuildOptions& options) {
  Module m;
  m.impl_ = std::make_shared<Module::Impl>();
  m.impl_->target = target;
  m.impl_->funcs = funcs;
  m.impl_->compiled = llvm_backend::compile(funcs, target, options);
  return m;
}

kiln_kernel_fn Module::get_function(const std::string& name) const {
  checked(impl_);
  KILN_USER_CHECK(impl_->find(name) != nullptr) << "module has no function '" << name << "'";
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto it = impl_->kernels.find(name);
  if (it != impl_->kernels.end()) return it->second;
  auto fn = reinterpret_cast<kiln_kernel_fn>(impl_->compiled->lookup(name));
  impl_->kernels[name] = fn;
  return fn;
}

void Module::run(const std::string& name, const std::vector<DLTensor*>& args) const {
  const ir::PrimFunc* f = checked(impl_).find(name);
  KILN_USER_CHECK(f != nullptr) << "module has no function '" << name << "'";
  KILN_USER_CHECK(args.size() == f->params.size()) << "kernel '" << name << "' takes " << f->params.size()
                                                   << " arguments, got " << args.size();
  std::vector<void*> ptrs(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::Buffer& p = f->params[i];
    std::ostringstream where;
    where << "kernel '" << name << "': parameter '" << p->name << "' (argument " << i << ")";
    const DLTensor* t = args[i];
    KILN_USER_CHECK(t != nullptr) << where.str() << " is null";
    KILN_USER_CHECK(t->device.device_type == kDLCPU || t->device.device_type == kDLCUDAHost)
        << where.str() << " is not in CPU memory (device type " << t->device.device_type << ")";
    DLDataType want = to_dl_dtype(p->dtype);
    KILN_USER_CHECK(runtime::operator==(t->dtype, want)) << where.str() << ": expected dtype " << runtime::dtype_str(want)
                                                         << ", got " << runtime::dtype_str(t->dtype);
    std::vector<int64_t> shape;
    for (const ir::Expr& e : p->shape) shape.push_back(ir::as_const_int(e).value_or(-1));
    bool same = t->ndim == static_cast<int>(shape.size());
    for (int d = 0; same && d < t->ndim; ++d) same = t->shape[d] == shape[d];
    KILN_USER_CHECK(same) << where.str() << ": expected shape "
                          << runtime::shape_str(shape.data(), static_cast<int>(shape.size())) << ", got "
                          << runtime::shape_str(t->shape, t->ndim);
    if (t->strides != nullptr) {
      int64_t expect = 1;
      for (int d = t->ndim - 1; d >= 0; --d) {
        KILN_USER_CHECK(t->shape[d] == 1 || t->strides[d] == expect)
            << where.str() << " is not compact row-major (stride " << t->strides[d] << " in dimension " << d << ")";
        expect *= t->shape[d];
      }
    }
    char* data = static_cast<char*>(t->data) + t->byte_offset;
    KILN_USER_CHECK(reinterpret_cast<uintptr_t>(data) % runtime::kAllocAlignment == 0)
        << where.str() << ": data is not " << runtime::kAllocAlignment << "-byte aligned";
    ptrs[i] = data;
  }
  kiln_kernel_fn fn = get_function(name);
  int32_t rc = fn(ptrs.data(), static_cast<int32_t>(ptrs.size()));
  KILN_USER_CHECK(rc == 0) << "kernel '" << name << "' failed with code " << rc
                           << (rc == -1 ? " (a heap allocation failed)" : "");
}

std::vector<std::string> Module::function_names() const {
  std::vector<std::string> names;
  for (const ir::PrimFunc& f : checked(impl_).funcs) names.push_back(f.name);
  return names;
}

const ir::PrimFunc& Module::lowered_function(const std::string& name) const {
  const Impl& impl = checked(impl_);
  const ir::PrimFunc* f = impl.find(name);
  KILN_USER_CHECK(f != nullptr) << "module has no function '" << name << "'";
  return *f;
}

const Target& Module::target() const { return checked(impl_).target; }

std::string Module::llvm_ir() const { return checked(impl_).compiled->llvm_ir(); }

std::string Module::assembly() const {
  checked(impl_);
  return impl_->compiled->assembly();
}

const std::string& Module::object_code() const { return checked(impl_).compiled->object_code(); }

void Module::save_object(const std::string& path) const {
  const std::string& obj = object_code();
  std::ofstream out(path, std::ios::binary);
  KILN_USER_CHECK(out.good()) << "save_object: cannot open '" << path << "' for writing";
  out.write(obj.data(), static_cast<std::streamsize>(obj.size()));
  out.close();
  KILN_USER_CHECK(out.good()) << "save_object: cannot write '" << path << "'";
}

}  // namespace kiln::codegen
