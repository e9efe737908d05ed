// CodeGenLLVM: calls. Pure math intrinsics, extern (C ABI) calls, address_of, reinterpret.
//
// Math lowering:
//  - log sqrt fabs floor ceil trunc sin cos pow fma map to the LLVM intrinsics of the same
//    name; the backend inlines what the ISA has (sqrt, fabs, floor/ceil/trunc, fma with FMA)
//    and calls libm per lane for the rest (log, sin, cos, pow).
//  - pow with a constant exponent of 1, 2, 3 or 4 (GELU's x^3, a variance's x^2) is that many
//    multiplications: libm's powf per lane cost gpt2_mini's GELU tails 1.1 ms each for 262144
//    elements on Zen 4 (ONNX Runtime's FastGelu: 0.09 ms).
//  - exp in float (and bf16/f16, computed in float) is inline: Cody-Waite range reduction to
//    [-ln2/2, ln2/2] and Cephes's expf polynomial, within 2 ulps, vectorized (softmax, sigmoid;
//    libm's expf per lane cost a 128 x 8 x 128 softmax 0.42 ms on Zen 4, ONNX Runtime 0.03).
//    float64 calls libm's exp per lane.
//  - round is round-half-to-even (llvm.roundeven, like numpy and ONNX Round), not C's round.
//  - rsqrt is 1 / sqrt(x), correctly rounded parts (no approximate rsqrt unless fast_math
//    lets LLVM contract it).
//  - sigmoid is 1 / (1 + exp(-x)).
//  - tanh and erf in float (and bf16/f16, computed in float) are inline rational polynomial
//    approximations (Eigen's, fitted for float): they vectorize, and measured against the
//    double-precision libm their relative error is below 4e-7 over the whole float line.
//    float64 calls libm's tanh/erf per lane.
#include <llvm/IR/Intrinsics.h>

#include <optional>

#include "codegen_llvm.h"
#include "kiln/support/error.h"

namespace kiln::codegen::llvm_backend {

using ir::DataType;

llvm::Value* CodeGenLLVM::emit_call(const ir::CallNode* op) {
  if (op->call_kind == ir::CallKind::Extern) return emit_extern_call(op);
  if (op->name == "address_of") return emit_address_of(op);
  if (op->name == "likely" && op->args.size() == 1) return emit(op->args[0]);  // a hint only
  if (op->name == "int8_dot") return emit_int8_dot(op);
  if (op->name == "reinterpret" && op->args.size() == 1) {
    // The same bits as another type of one width (ONNX BitCast), through the storage forms:
    // bool is a byte there and bfloat16 16 bits, as in memory.
    DataType from = op->args[0].dtype();
    llvm::Value* bits = to_storage(emit(op->args[0]), from);
    return from_storage(builder_.CreateBitCast(bits, storage_type(op->dtype)), op->dtype);
  }
  return emit_intrinsic(op);
}

llvm::Value* CodeGenLLVM::fconst(llvm::Type* ty, double v) { return llvm::ConstantFP::get(ty, v); }

llvm::Value* CodeGenLLVM::call_llvm_intrinsic(unsigned id, llvm::Value* x) {
  return builder_.CreateUnaryIntrinsic(static_cast<llvm::Intrinsic::ID>(id), x);
}

llvm::Value* CodeGenLLVM::call_llvm_intrinsic(unsigned id, llvm::Value* x, llvm::Value* y) {
  return builder_.CreateBinaryIntrinsic(static_cast<llvm::Intrinsic::ID>(id), x, y);
}

llvm::Value* CodeGenLLVM::call_libm_per_lane(const std::string& fname, llvm::Value* x) {
  llvm::Type* ety = x->getType()->getScalarType();
  llvm::FunctionType* fty = llvm::FunctionType::get(ety, {ety}, false);
  llvm::FunctionCallee fn = module_->getOrInsertFunction(fname, fty);
  if (auto* f = llvm::dyn_cast<llvm::Function>(fn.getCallee())) {
    f->setDoesNotThrow();
    f->setDoesNotAccessMemory();  // errno is never inspected
  }
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(x->getType());
  if (!vt) return builder_.CreateCall(fn, {x});
  llvm::Value* r = llvm::PoisonValue::get(vt);
  for (unsigned i = 0; i < vt->getNumElements(); ++i)
    r = builder_.CreateInsertElement(r, builder_.CreateCall(fn, {builder_.CreateExtractElement(x, i)}), i);
  return r;
}

namespace {
// Horner evaluation with fmul+fadd; the `contract` flag lets the backend fuse them into FMAs
// where the target has them (llvm.fma would become a libm call where it has not).
llvm::Value* horner(llvm::IRBuilder<>& b, llvm::Value* x2, std::initializer_list<double> coeffs_high_to_low) {
  llvm::Type* ty = x2->getType();
  llvm::Value* acc = nullptr;
  for (double c : coeffs_high_to_low) {
    llvm::Value* k = llvm::ConstantFP::get(ty, c);
    acc = acc ? b.CreateFAdd(b.CreateFMul(acc, x2), k) : k;
  }
  return acc;
}

// copysign(1, x) where |x| >= limit (the function has rounded to +-1 in float), else r. NaN
// fails the comparison and keeps r (NaN).
llvm::Value* saturate(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* r, double limit) {
  llvm::Type* ty = x->getType();
  llvm::Value* one = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, llvm::ConstantFP::get(ty, 1.0), x);
  llvm::Value* big = b.CreateFCmpOGE(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x), llvm::ConstantFP::get(ty, limit));
  return b.CreateSelect(big, one, r);
}

// Clamps x to [-c, c]; NaN passes through (both comparisons are false).
llvm::Value* clamp_sym(llvm::IRBuilder<>& b, llvm::Value* x, double c) {
  llvm::Value* hi = llvm::ConstantFP::get(x->getType(), c);
  llvm::Value* lo = llvm::ConstantFP::get(x->getType(), -c);
  llvm::Value* y = b.CreateSelect(b.CreateFCmpOLT(x, lo), lo, x);
  return b.CreateSelect(b.CreateFCmpOGT(y, hi), hi, y);
}
}  // namespace

llvm::Value* CodeGenLLVM::tanh_f32(llvm::Value* x) {
  // tanh(x) = x * P(x^2) / Q(x^2) on [-7.9, 7.9], where tanh rounds to +-1 in float beyond.
  llvm::Value* xc = clamp_sym(builder_, x, 7.90531110763549805);
  llvm::Value* x2 = builder_.CreateFMul(xc, xc);
  llvm::Value* p = horner(builder_, x2,
                          {-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
                           1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03});
  llvm::Value* q = horner(builder_, x2, {1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
                                         4.89352518554385e-03});
  llvm::Value* r = builder_.CreateFDiv(builder_.CreateFMul(xc, p), q);
  // Below 4e-4, tanh(x) == x in float; returning x keeps tiny values (and -0) exact.
  llvm::Value* tiny = builder_.CreateFCmpOLT(call_llvm_intrinsic(llvm::Intrinsic::fabs, x), fconst(x->getType(), 0.0004));
  // From 9 on, tanh is 1 in float; the clamped polynomial is only within an ulp of it.
  return saturate(builder_, x, builder_.CreateSelect(tiny, x, r), 9.0);
}

llvm::Value* CodeGenLLVM::exp_f32(llvm::Value* x) {
  llvm::Type* ty = x->getType();
  // Below -104 exp rounds to 0 in float, above 88.73 to inf; NaN passes the clamps.
  llvm::Value* xc = builder_.CreateSelect(builder_.CreateFCmpOLT(x, fconst(ty, -104.0)), fconst(ty, -104.0), x);
  xc = builder_.CreateSelect(builder_.CreateFCmpOGT(xc, fconst(ty, 88.73)), fconst(ty, 88.73), xc);
  // x = m ln2 + r, |r| <= ln2/2; ln2 in two parts, the first with few bits so m * C1 is exact.
  llvm::Value* m = call_llvm_intrinsic(llvm::Intrinsic::roundeven, builder_.CreateFMul(xc, fconst(ty, 1.44269504088896341)));
  llvm::Value* r = builder_.CreateFSub(xc, builder_.CreateFMul(m, fconst(ty, 0.693359375)));
  r = builder_.CreateFSub(r, builder_.CreateFMul(m, fconst(ty, -2.12194440e-4)));
  // exp(r) = 1 + r + r^2 P(r) (Cephes expf).
  llvm::Value* p = horner(builder_, r, {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                                         1.6666665459e-1, 5.0000001201e-1});
  llvm::Value* y = builder_.CreateFAdd(builder_.CreateFAdd(builder_.CreateFMul(p, builder_.CreateFMul(r, r)), r), fconst(ty, 1.0));
  // 2^m for m in [-150, 128] as two normal powers 2^m1 * 2^m2 (m1 = floor(m/2)): the products
  // round into the subnormals and overflow to inf as exp does.
  llvm::Type* ity = ty->isVectorTy() ? llvm::VectorType::get(builder_.getInt32Ty(), llvm::cast<llvm::VectorType>(ty)->getElementCount())
                                     : static_cast<llvm::Type*>(builder_.getInt32Ty());
  llvm::Value* mi = builder_.CreateFreeze(builder_.CreateFPToSI(m, ity));  // NaN lanes: any value, selected away
  llvm::Value* m1 = builder_.CreateAShr(mi, llvm::ConstantInt::get(ity, 1));
  llvm::Value* m2 = builder_.CreateSub(mi, m1);
  auto pow2 = [&](llvm::Value* e) {
    llvm::Value* bits = builder_.CreateShl(builder_.CreateAdd(e, llvm::ConstantInt::get(ity, 127)), llvm::ConstantInt::get(ity, 23));
    return builder_.CreateBitCast(bits, ty);
  };
  llvm::Value* res = builder_.CreateFMul(builder_.CreateFMul(y, pow2(m1)), pow2(m2));
  return builder_.CreateSelect(builder_.CreateFCmpUNO(x, x), x, res);
}

llvm::Value* CodeGenLLVM::erf_f32(llvm::Value* x) {
  // erf(x) = x * P(x^2) / Q(x^2) on [-4, 4], where erf rounds to +-1 in float beyond.
  llvm::Value* xc = clamp_sym(builder_, x, 4.0);
  llvm::Value* x2 = builder_.CreateFMul(xc, xc);
  llvm::Value* p = horner(builder_, x2,
                          {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
                           -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02});
  llvm::Value* q = horner(builder_, x2, {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                                         -7.37332916720468e-03, -1.42647390514189e-02});
  // From 4 on, erf is 1 in float; the clamped polynomial is only within an ulp of it.
  return saturate(builder_, x, builder_.CreateFDiv(builder_.CreateFMul(xc, p), q), 4.0);
}

llvm::Value* CodeGenLLVM::emit_intrinsic(const ir::CallNode* op) {
  const std::string& n = op->name;
  size_t want = n == "fma" ? 3 : n == "pow" ? 2 : 1;
  KILN_USER_CHECK(op->args.size() == want) << "kernel '" << kernel_name_ << "': intrinsic '" << n << "' takes "
                                           << want << " argument(s), got " << op->args.size();
  DataType t = op->args[0].dtype();
  llvm::Value* x = emit(op->args[0]);
  namespace I = llvm::Intrinsic;

  if (n == "isnan") {
    if (t.is_floating()) return builder_.CreateFCmpUNO(x, x);
    return make_constant(DataType::boolean(t.lanes), 0, 0, false);
  }
  if (!t.is_floating()) {
    KILN_USER_CHECK(t.is_integer()) << "kernel '" << kernel_name_ << "': intrinsic '" << n << "' on " << t.str();
    if (n == "fabs") return t.is_int() ? builder_.CreateBinaryIntrinsic(I::abs, x, builder_.getFalse()) : x;
    if (n == "floor" || n == "ceil" || n == "round" || n == "trunc") return x;
    KILN_THROW() << "kernel '" << kernel_name_ << "': intrinsic '" << n << "' needs a floating-point argument, got "
                 << t.str();
  }

  llvm::Type* ty = x->getType();
  if (n == "exp" && t.bits != 64) {
    llvm::Value* xf = builder_.CreateFPCast(x, llvm_type(DataType::f32(t.lanes)));
    return builder_.CreateFPCast(exp_f32(xf), ty);
  }
  if (n == "exp") return call_llvm_intrinsic(I::exp, x);
  if (n == "log") return call_llvm_intrinsic(I::log, x);
  if (n == "sqrt") return call_llvm_intrinsic(I::sqrt, x);
  if (n == "rsqrt") return builder_.CreateFDiv(fconst(ty, 1.0), call_llvm_intrinsic(I::sqrt, x));
  if (n == "fabs") return call_llvm_intrinsic(I::fabs, x);
  if (n == "floor") return call_llvm_intrinsic(I::floor, x);
  if (n == "ceil") return call_llvm_intrinsic(I::ceil, x);
  if (n == "round") return call_llvm_intrinsic(I::roundeven, x);
  if (n == "trunc") return call_llvm_intrinsic(I::trunc, x);
  if (n == "sin") return call_llvm_intrinsic(I::sin, x);
  if (n == "cos") return call_llvm_intrinsic(I::cos, x);
  if (n == "sigmoid") {
    llvm::Value* e = t.bits == 64 ? call_llvm_intrinsic(I::exp, builder_.CreateFNeg(x))
                                  : builder_.CreateFPCast(exp_f32(builder_.CreateFPCast(builder_.CreateFNeg(x), llvm_type(DataType::f32(t.lanes)))), ty);
    return builder_.CreateFDiv(fconst(ty, 1.0), builder_.CreateFAdd(fconst(ty, 1.0), e));
  }
  if (n == "pow") {
    KILN_USER_CHECK(op->args[1].dtype() == t) << "kernel '" << kernel_name_ << "': pow of " << t.str() << " and "
                                              << op->args[1].dtype().str();
    std::optional<double> e = ir::as_const_float(op->args[1]);
    if (e && (*e == 1 || *e == 2 || *e == 3 || *e == 4)) {
      llvm::Value* x2 = *e >= 2 ? builder_.CreateFMul(x, x) : x;
      return *e == 4 ? builder_.CreateFMul(x2, x2) : *e == 3 ? builder_.CreateFMul(x2, x) : x2;
    }
    return call_llvm_intrinsic(I::pow, x, emit(op->args[1]));
  }
  if (n == "fma") {
    KILN_USER_CHECK(op->args[1].dtype() == t && op->args[2].dtype() == t)
        << "kernel '" << kernel_name_ << "': fma arguments of different types";
    return builder_.CreateIntrinsic(I::fma, {ty}, {x, emit(op->args[1]), emit(op->args[2])});
  }
  if (n == "tanh" || n == "erf") {
    if (t.bits == 64) return call_libm_per_lane(n, x);
    llvm::Type* f32 = llvm_type(DataType::f32(t.lanes));
    llvm::Value* xf = builder_.CreateFPCast(x, f32);  // no-op for float and bf16 (carried as float)
    llvm::Value* r = n == "tanh" ? tanh_f32(xf) : erf_f32(xf);
    return builder_.CreateFPCast(r, ty);
  }
  KILN_THROW() << "kernel '" << kernel_name_ << "': unknown intrinsic '" << n << "'";
  return nullptr;
}

llvm::Value* CodeGenLLVM::emit_extern_call(const ir::CallNode* op) {
  std::vector<llvm::Value*> args;
  std::vector<llvm::Type*> types;
  for (size_t i = 0; i < op->args.size(); ++i) {
    DataType at = op->args[i].dtype();
    KILN_USER_CHECK(at.is_scalar()) << "kernel '" << kernel_name_ << "': extern call '" << op->name << "': argument "
                                    << i << " has vector type " << at.str() << " (pass a pointer instead)";
    args.push_back(emit(op->args[i]));
    types.push_back(args.back()->getType());
  }
  DataType rt = op->dtype;
  KILN_USER_CHECK(rt.is_scalar()) << "kernel '" << kernel_name_ << "': extern call '" << op->name
                                  << "' returns vector type " << rt.str();
  llvm::FunctionType* fty = llvm::FunctionType::get(llvm_type(rt), types, false);
  llvm::Function* callee = module_->getFunction(op->name);
  if (!callee) callee = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, op->name, module_);
  // With opaque pointers a call may use its own function type, so two call sites with
  // different argument types (int32 vs int64 extents) share one declaration.
  llvm::CallInst* call = builder_.CreateCall(fty, callee, args);
  // C ABI: small integers are extended by the caller (clang's signext/zeroext).
  auto ext_attr = [](DataType t) {
    if (t.is_bool() || (t.is_uint() && t.bits < 32)) return llvm::Attribute::ZExt;
    if (t.is_int() && t.bits < 32) return llvm::Attribute::SExt;
    return llvm::Attribute::None;
  };
  for (size_t i = 0; i < op->args.size(); ++i)
    if (auto a = ext_attr(op->args[i].dtype()); a != llvm::Attribute::None) call->addParamAttr(static_cast<unsigned>(i), a);
  if (auto a = ext_attr(rt); a != llvm::Attribute::None) call->addRetAttr(a);
  return call;
}

llvm::Value* CodeGenLLVM::emit_address_of(const ir::CallNode* op) {
  const ir::BufferLoadNode* load = op->args.size() == 1 ? op->args[0].as<ir::BufferLoadNode>() : nullptr;
  KILN_USER_CHECK(load != nullptr) << "kernel '" << kernel_name_ << "': address_of takes one BufferLoad argument";
  KILN_USER_CHECK(load->indices.size() == 1) << "kernel '" << kernel_name_ << "': address_of '" << load->buffer->name
                                             << "' has " << load->indices.size() << " indices; run flatten_storage first";
  ir::Expr idx = load->indices[0];
  // A vector access's address is the address of its first element.
  if (const auto* r = idx.as<ir::RampNode>()) idx = r->base;
  if (const auto* b = idx.as<ir::BroadcastNode>()) idx = b->value;
  KILN_USER_CHECK(idx.dtype().is_scalar()) << "kernel '" << kernel_name_ << "': address_of '" << load->buffer->name
                                           << "' with a gather index";
  return element_address(load->buffer, emit_index(idx), DataType::i64());
}

}  // namespace kiln::codegen::llvm_backend
