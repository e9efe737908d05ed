// CodeGenLLVM: expressions.
//
// Representation choices:
//  - bool is i1 in registers and one byte (i8) in memory.
//  - bf16 values are carried in float registers; they are rounded to bf16 (round to nearest
//    even, by integer bit operations: LLVM 16's x86 backend cannot compute on `bfloat`) where
//    the IR says so: casts to bf16 and stores to bf16 buffers. Arithmetic between two bf16
//    values therefore keeps float precision until the next store or cast, as TVM's bf16
//    legalization does.
//  - Signed 32/64-bit integer arithmetic is `nsw` (index arithmetic never wraps by design, and
//    nsw lets LLVM widen and hoist index computations); 8/16-bit arithmetic wraps (quantized
//    code relies on it).
//  - Float Min/Max are compare+select, which maps to one vminps/vmaxps; with a NaN operand
//    the result is the second operand.
//  - Select evaluates both sides, except a side that may fault (a load, an integer division, an
//    extern call): with a scalar condition it becomes a branch; with a vector condition the
//    side is emitted under a lane mask, so its vector loads become masked loads/gathers and
//    its divisors are 1 in the lanes that do not choose it.
#include <llvm/IR/Intrinsics.h>

#include <cmath>
#include <cstring>

#include "codegen_llvm.h"
#include "kiln/ir/functor.h"
#include "kiln/support/error.h"

namespace kiln::codegen::llvm_backend {

using ir::DataType;
using ir::ExprKind;

namespace {

float round_to_bf16_host(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) {
    u = (u & 0xffff0000u) | 0x00400000u;
  } else {
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
  }
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

bool CodeGenLLVM::may_trap(const ir::Expr& e) {
  bool trap = false;
  ir::post_order_visit(e, [&](const ir::Expr& x) {
    if (x.as<ir::BufferLoadNode>()) trap = true;
    if (const auto* c = x.as<ir::CallNode>(); c && c->call_kind == ir::CallKind::Extern) trap = true;
    if (const auto* b = x.as<ir::BinaryNode>()) {
      bool int_div = b->kind == ExprKind::Div || b->kind == ExprKind::Mod || b->kind == ExprKind::FloorDiv ||
                     b->kind == ExprKind::FloorMod;
      if (int_div && b->dtype.is_integer() && !ir::as_const_int(b->b)) trap = true;
    }
  });
  return trap;
}

llvm::Value* CodeGenLLVM::make_constant(DataType t, double fvalue, int64_t ivalue, bool is_float) {
  DataType e = t.element_of();
  llvm::Type* ety = llvm_type(e);
  llvm::Constant* c = nullptr;
  if (e.is_floating()) {
    double v = is_float ? fvalue : static_cast<double>(ivalue);
    if (e.is_bfloat()) v = round_to_bf16_host(static_cast<float>(v));
    c = llvm::ConstantFP::get(ety, v);
  } else if (e.is_bool()) {
    c = builder_.getInt1(is_float ? fvalue != 0 : ivalue != 0);
  } else if (e.is_integer()) {
    int64_t v = is_float ? static_cast<int64_t>(fvalue) : ivalue;
    c = llvm::ConstantInt::get(ety, static_cast<uint64_t>(v), /*isSigned=*/true);
  } else {
    KILN_USER_CHECK(ivalue == 0) << "kernel '" << kernel_name_ << "': constant of type " << t.str();
    c = llvm::ConstantPointerNull::get(llvm::PointerType::get(ctx_, 0));
  }
  if (t.lanes == 1) return c;
  return llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(t.lanes), c);
}

llvm::Value* CodeGenLLVM::emit(const ir::Expr& e) {
  KILN_CHECK(e.defined()) << "undefined expression in kernel '" << kernel_name_ << "'";
  switch (e.kind()) {
    case ExprKind::IntImm: return make_constant(e.dtype(), 0, e.as<ir::IntImmNode>()->value, false);
    case ExprKind::FloatImm: return make_constant(e.dtype(), e.as<ir::FloatImmNode>()->value, 0, true);
    case ExprKind::StringImm: return builder_.CreateGlobalStringPtr(e.as<ir::StringImmNode>()->value);
    case ExprKind::Var: return lookup_var(e.as<ir::VarNode>());
    case ExprKind::Not: return builder_.CreateNot(emit(e.as<ir::NotNode>()->a));
    case ExprKind::Select: return emit_select(e.as<ir::SelectNode>());
    case ExprKind::Cast: {
      const auto* op = e.as<ir::CastNode>();
      return emit_cast(op->value.dtype(), op->dtype, emit(op->value));
    }
    case ExprKind::Ramp: return emit_ramp(e.as<ir::RampNode>());
    case ExprKind::Broadcast: {
      const auto* op = e.as<ir::BroadcastNode>();
      return builder_.CreateVectorSplat(static_cast<unsigned>(op->lanes), emit(op->value));
    }
    case ExprKind::Let: {
      const auto* op = e.as<ir::LetNode>();
      llvm::Value* v = emit(op->value);
      llvm::Value* prev = bind(op->var.get(), v);
      llvm::Value* r = emit(op->body);
      unbind(op->var.get(), prev);
      return r;
    }
    case ExprKind::Call: return emit_call(e.as<ir::CallNode>());
    case ExprKind::BufferLoad: return emit_load(e.as<ir::BufferLoadNode>());
    case ExprKind::ProducerLoad:
    case ExprKind::Reduce:
      KILN_CHECK(false) << ir::kind_name(e.kind()) << " reached code generation in kernel '" << kernel_name_
                        << "': lowering must have replaced it";
      return nullptr;
    default: return emit_binary(e.as<ir::BinaryNode>());
  }
}

// ---------------------------------------------------------------------------------------------
// Arithmetic, comparison, logic

llvm::Value* CodeGenLLVM::emit_binary(const ir::BinaryNode* op) {
  KILN_CHECK(op != nullptr) << "unknown expression kind in kernel '" << kernel_name_ << "'";
  DataType t = op->a.dtype();
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  ExprKind k = op->kind;
  if (ir::is_comparison(k)) return emit_compare(k, t, a, b);
  if (k == ExprKind::And) return builder_.CreateAnd(a, b);
  if (k == ExprKind::Or) return builder_.CreateOr(a, b);
  bool fp = t.is_floating();
  bool nsw = t.is_int() && t.bits >= 32;
  if (t.is_bool()) {
    // Bool arithmetic that makes sense: min is and, max is or.
    if (k == ExprKind::Min) return builder_.CreateAnd(a, b);
    if (k == ExprKind::Max) return builder_.CreateOr(a, b);
    KILN_THROW() << "kernel '" << kernel_name_ << "': " << ir::kind_name(k) << " on bool";
  }
  KILN_USER_CHECK(!t.is_handle()) << "kernel '" << kernel_name_ << "': " << ir::kind_name(k) << " on a handle";
  bool is_div = k == ExprKind::Div || k == ExprKind::Mod || k == ExprKind::FloorDiv || k == ExprKind::FloorMod;
  if (is_div && !fp && fs_.lane_mask && t.is_vector() && !ir::as_const_int(op->b)) {
    // Inside a masked Select side: lanes that are not chosen must not divide by zero.
    auto* mask_ty = llvm::cast<llvm::FixedVectorType>(fs_.lane_mask->getType());
    if (mask_ty->getNumElements() == t.lanes) b = builder_.CreateSelect(fs_.lane_mask, b, llvm::ConstantInt::get(b->getType(), 1));
  }
  switch (k) {
    case ExprKind::Add: return fp ? builder_.CreateFAdd(a, b) : builder_.CreateAdd(a, b, "", false, nsw);
    case ExprKind::Sub: return fp ? builder_.CreateFSub(a, b) : builder_.CreateSub(a, b, "", false, nsw);
    case ExprKind::Mul: return fp ? builder_.CreateFMul(a, b) : builder_.CreateMul(a, b, "", false, nsw);
    case ExprKind::Div:
      return fp ? builder_.CreateFDiv(a, b) : t.is_int() ? builder_.CreateSDiv(a, b) : builder_.CreateUDiv(a, b);
    case ExprKind::Mod:
      return fp ? builder_.CreateFRem(a, b) : t.is_int() ? builder_.CreateSRem(a, b) : builder_.CreateURem(a, b);
    case ExprKind::FloorDiv:
    case ExprKind::FloorMod: return emit_floordiv_mod(op, a, b);
    case ExprKind::Min:
      if (fp) return builder_.CreateSelect(builder_.CreateFCmpOLT(a, b), a, b);
      return builder_.CreateBinaryIntrinsic(t.is_int() ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, a, b);
    case ExprKind::Max:
      if (fp) return builder_.CreateSelect(builder_.CreateFCmpOGT(a, b), a, b);
      return builder_.CreateBinaryIntrinsic(t.is_int() ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, a, b);
    default: break;
  }
  KILN_CHECK(false) << "unhandled binary kind " << ir::kind_name(k);
  return nullptr;
}

llvm::Value* CodeGenLLVM::emit_floordiv_mod(const ir::BinaryNode* op, llvm::Value* a, llvm::Value* b) {
  DataType t = op->a.dtype();
  bool want_div = op->kind == ExprKind::FloorDiv;
  if (t.is_floating()) {
    llvm::Value* q = call_llvm_intrinsic(llvm::Intrinsic::floor, builder_.CreateFDiv(a, b));
    return want_div ? q : builder_.CreateFSub(a, builder_.CreateFMul(q, b));
  }
  if (t.is_uint()) return want_div ? builder_.CreateUDiv(a, b) : builder_.CreateURem(a, b);
  llvm::Type* ty = a->getType();
  auto c = ir::as_const_int(op->b);
  if (c && *c > 0) {
    // Positive constant divisor: floor and truncation differ only for a negative remainder.
    uint64_t d = static_cast<uint64_t>(*c);
    if ((d & (d - 1)) == 0) {
      int shift = 0;
      while ((uint64_t{1} << shift) != d) ++shift;
      return want_div ? builder_.CreateAShr(a, llvm::ConstantInt::get(ty, shift))
                      : builder_.CreateAnd(a, llvm::ConstantInt::get(ty, d - 1));
    }
    llvm::Value* r = builder_.CreateSRem(a, b);
    llvm::Value* neg = builder_.CreateICmpSLT(r, llvm::Constant::getNullValue(ty));
    if (want_div) return builder_.CreateSub(builder_.CreateSDiv(a, b), builder_.CreateZExt(neg, ty));
    return builder_.CreateSelect(neg, builder_.CreateAdd(r, b), r);
  }
  // General case: adjust the truncated quotient when the remainder is non-zero and its sign
  // differs from the divisor's.
  llvm::Value* q = builder_.CreateSDiv(a, b);
  llvm::Value* r = builder_.CreateSRem(a, b);
  llvm::Value* zero = llvm::Constant::getNullValue(ty);
  llvm::Value* adjust = builder_.CreateAnd(builder_.CreateICmpNE(r, zero),
                                           builder_.CreateICmpSLT(builder_.CreateXor(r, b), zero));
  if (want_div) return builder_.CreateSub(q, builder_.CreateZExt(adjust, ty));
  return builder_.CreateSelect(adjust, builder_.CreateAdd(r, b), r);
}

llvm::Value* CodeGenLLVM::emit_compare(ExprKind k, DataType t, llvm::Value* a, llvm::Value* b) {
  using P = llvm::CmpInst::Predicate;
  if (t.is_floating()) {
    // Ordered comparisons except !=, which is true when either side is NaN (as in C).
    P p = k == ExprKind::EQ   ? P::FCMP_OEQ
          : k == ExprKind::NE ? P::FCMP_UNE
          : k == ExprKind::LT ? P::FCMP_OLT
          : k == ExprKind::LE ? P::FCMP_OLE
          : k == ExprKind::GT ? P::FCMP_OGT
                              : P::FCMP_OGE;
    return builder_.CreateFCmp(p, a, b);
  }
  bool s = t.is_int();
  P p = k == ExprKind::EQ   ? P::ICMP_EQ
        : k == ExprKind::NE ? P::ICMP_NE
        : k == ExprKind::LT ? (s ? P::ICMP_SLT : P::ICMP_ULT)
        : k == ExprKind::LE ? (s ? P::ICMP_SLE : P::ICMP_ULE)
        : k == ExprKind::GT ? (s ? P::ICMP_SGT : P::ICMP_UGT)
                            : (s ? P::ICMP_SGE : P::ICMP_UGE);
  return builder_.CreateICmp(p, a, b);
}

llvm::Value* CodeGenLLVM::emit_select(const ir::SelectNode* op) {
  llvm::Value* cond = emit(op->condition);
  bool guarded = may_trap(op->true_value) || may_trap(op->false_value);
  if (!guarded) return builder_.CreateSelect(cond, emit(op->true_value), emit(op->false_value));
  if (op->condition.dtype().is_scalar()) {
    llvm::Function* f = fs_.function;
    auto* then_bb = llvm::BasicBlock::Create(ctx_, "sel.true", f);
    auto* else_bb = llvm::BasicBlock::Create(ctx_, "sel.false", f);
    auto* end_bb = llvm::BasicBlock::Create(ctx_, "sel.end", f);
    builder_.CreateCondBr(cond, then_bb, else_bb);
    builder_.SetInsertPoint(then_bb);
    llvm::Value* tv = emit(op->true_value);
    llvm::BasicBlock* then_end = builder_.GetInsertBlock();
    builder_.CreateBr(end_bb);
    builder_.SetInsertPoint(else_bb);
    llvm::Value* fv = emit(op->false_value);
    llvm::BasicBlock* else_end = builder_.GetInsertBlock();
    builder_.CreateBr(end_bb);
    builder_.SetInsertPoint(end_bb);
    llvm::PHINode* phi = builder_.CreatePHI(tv->getType(), 2);
    phi->addIncoming(tv, then_end);
    phi->addIncoming(fv, else_end);
    return phi;
  }
  llvm::Value* outer = fs_.lane_mask;
  llvm::Value* not_cond = builder_.CreateNot(cond);
  fs_.lane_mask = outer ? builder_.CreateAnd(outer, cond) : cond;
  llvm::Value* tv = emit(op->true_value);
  fs_.lane_mask = outer ? builder_.CreateAnd(outer, not_cond) : not_cond;
  llvm::Value* fv = emit(op->false_value);
  fs_.lane_mask = outer;
  return builder_.CreateSelect(cond, tv, fv);
}

// ---------------------------------------------------------------------------------------------
// Casts and representations

llvm::Value* CodeGenLLVM::round_to_bf16(llvm::Value* f) {
  llvm::Type* ity = builder_.getInt32Ty();
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(f->getType())) ity = llvm::FixedVectorType::get(ity, vt->getNumElements());
  auto c = [&](uint32_t v) { return llvm::ConstantInt::get(ity, v); };
  llvm::Value* u = builder_.CreateBitCast(f, ity);
  llvm::Value* lsb = builder_.CreateAnd(builder_.CreateLShr(u, c(16)), c(1));
  llvm::Value* rounded = builder_.CreateAnd(builder_.CreateAdd(u, builder_.CreateAdd(lsb, c(0x7fff))), c(0xffff0000u));
  llvm::Value* quiet_nan = builder_.CreateOr(builder_.CreateAnd(u, c(0xffff0000u)), c(0x00400000u));
  llvm::Value* is_nan = builder_.CreateFCmpUNO(f, f);
  return builder_.CreateBitCast(builder_.CreateSelect(is_nan, quiet_nan, rounded), f->getType());
}

llvm::Value* CodeGenLLVM::to_storage(llvm::Value* v, DataType t) {
  if (t.is_bool()) return builder_.CreateZExt(v, storage_type(t));
  if (t.is_bfloat()) {
    llvm::Value* bits = builder_.CreateBitCast(round_to_bf16(v), llvm_type(DataType::i32(t.lanes)));
    return builder_.CreateTrunc(builder_.CreateLShr(bits, llvm::ConstantInt::get(bits->getType(), 16)), storage_type(t));
  }
  return v;
}

llvm::Value* CodeGenLLVM::from_storage(llvm::Value* v, DataType t) {
  if (t.is_bool()) return builder_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  if (t.is_bfloat()) {
    llvm::Type* i32 = llvm_type(DataType::i32(t.lanes));
    llvm::Value* bits = builder_.CreateShl(builder_.CreateZExt(v, i32), llvm::ConstantInt::get(i32, 16));
    return builder_.CreateBitCast(bits, llvm_type(t));
  }
  return v;
}

llvm::Value* CodeGenLLVM::emit_cast(DataType from, DataType to, llvm::Value* v) {
  if (from == to) return v;
  KILN_USER_CHECK(from.lanes == to.lanes || from.lanes == 1)
      << "kernel '" << kernel_name_ << "': cast from " << from.str() << " to " << to.str() << " changes the lanes";
  if (from.lanes != to.lanes) {
    v = builder_.CreateVectorSplat(to.lanes, v);
    from = from.with_lanes(to.lanes);
  }
  llvm::Type* dst = llvm_type(to);
  if (to.is_handle() || from.is_handle()) {
    if (to.is_handle() && from.is_handle()) return v;
    if (to.is_handle() && from.is_integer()) return builder_.CreateIntToPtr(v, dst);
    if (from.is_handle() && to.is_integer()) return builder_.CreatePtrToInt(v, dst);
    if (from.is_handle() && to.is_bool()) return builder_.CreateIsNotNull(v);
    KILN_THROW() << "kernel '" << kernel_name_ << "': cannot cast " << from.str() << " to " << to.str();
  }
  if (to.is_bool()) {
    if (from.is_floating()) return builder_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
    return builder_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (from.is_bool()) {
    if (to.is_integer()) return builder_.CreateZExt(v, dst);
    return builder_.CreateUIToFP(v, dst);  // 0.0 or 1.0, exact in every float type
  }
  if (from.is_integer() && to.is_integer()) return builder_.CreateIntCast(v, dst, from.is_int());
  if (from.is_integer()) {
    llvm::Value* f = from.is_int() ? builder_.CreateSIToFP(v, dst) : builder_.CreateUIToFP(v, dst);
    return to.is_bfloat() ? round_to_bf16(f) : f;
  }
  if (to.is_integer()) return to.is_int() ? builder_.CreateFPToSI(v, dst) : builder_.CreateFPToUI(v, dst);
  // Float to float. bf16 travels as float: widen/narrow to float, then round if the target
  // is bf16 (from f64 that rounds twice; the error is below half a bf16 ulp in all but ties).
  llvm::Value* f = builder_.CreateFPCast(v, dst);
  return to.is_bfloat() ? round_to_bf16(f) : f;
}

// ---------------------------------------------------------------------------------------------
// Vectors, loads and stores

llvm::Value* CodeGenLLVM::emit_ramp(const ir::RampNode* op) {
  DataType et = op->base.dtype();
  KILN_USER_CHECK(et.is_integer()) << "kernel '" << kernel_name_ << "': Ramp of type " << et.str();
  llvm::Type* ety = llvm_type(et);
  unsigned lanes = static_cast<unsigned>(op->lanes);
  llvm::Value* base = builder_.CreateVectorSplat(lanes, emit(op->base));
  auto stride = ir::as_const_int(op->stride);
  std::vector<llvm::Constant*> steps;
  for (unsigned i = 0; i < lanes; ++i)
    steps.push_back(llvm::ConstantInt::get(ety, static_cast<uint64_t>(static_cast<int64_t>(i) * (stride ? *stride : 1)), true));
  llvm::Value* offsets = llvm::ConstantVector::get(steps);
  if (!stride) offsets = builder_.CreateMul(offsets, builder_.CreateVectorSplat(lanes, emit(op->stride)));
  bool nsw = et.is_int() && et.bits >= 32;
  return builder_.CreateAdd(base, offsets, "", false, nsw);
}

llvm::Value* CodeGenLLVM::buffer_ptr(const ir::Buffer& b) { return lookup_var(b->data.get()); }

llvm::Value* CodeGenLLVM::to_i64_index(llvm::Value* index, DataType index_type) {
  // GEP sign-extends narrower indices, which is right for signed ones only.
  if (index_type.is_uint() && index_type.bits < 64)
    return builder_.CreateZExt(index, llvm_type(DataType::i64(index_type.lanes)));
  return index;
}

llvm::Value* CodeGenLLVM::element_address(const ir::Buffer& b, llvm::Value* index, DataType index_type) {
  return builder_.CreateInBoundsGEP(storage_type(b->dtype), buffer_ptr(b), to_i64_index(index, index_type));
}

llvm::Value* CodeGenLLVM::emit_load(const ir::BufferLoadNode* op) {
  const ir::Buffer& buf = op->buffer;
  KILN_USER_CHECK(op->indices.size() == 1) << "kernel '" << kernel_name_ << "': load from '" << buf->name << "' has "
                                           << op->indices.size() << " indices; run flatten_storage first";
  const ir::Expr& idx = op->indices[0];
  DataType t = op->dtype;
  DataType elem = t.element_of();
  llvm::Align align(static_cast<uint64_t>(elem.bytes()));
  llvm::Value* mask = fs_.lane_mask;

  const auto* bc = idx.as<ir::BroadcastNode>();
  if (t.is_scalar() || bc) {
    const ir::Expr& sidx = bc ? bc->value : idx;
    llvm::Value* addr = element_address(buf, emit(sidx), sidx.dtype());
    llvm::Value* v = nullptr;
    if (mask) {
      // A scalar load inside a masked Select side: load only if some lane chooses that side.
      llvm::Function* f = fs_.function;
      llvm::BasicBlock* from = builder_.GetInsertBlock();
      auto* load_bb = llvm::BasicBlock::Create(ctx_, "load.guarded", f);
      auto* end_bb = llvm::BasicBlock::Create(ctx_, "load.end", f);
      builder_.CreateCondBr(builder_.CreateOrReduce(mask), load_bb, end_bb);
      builder_.SetInsertPoint(load_bb);
      llvm::Value* loaded = builder_.CreateAlignedLoad(storage_type(elem), addr, align, buf->name);
      builder_.CreateBr(end_bb);
      builder_.SetInsertPoint(end_bb);
      llvm::PHINode* phi = builder_.CreatePHI(loaded->getType(), 2);
      phi->addIncoming(loaded, load_bb);
      phi->addIncoming(llvm::Constant::getNullValue(loaded->getType()), from);
      v = phi;
    } else {
      v = builder_.CreateAlignedLoad(storage_type(elem), addr, align, buf->name);
    }
    v = from_storage(v, elem);
    return t.is_scalar() ? v : builder_.CreateVectorSplat(t.lanes, v);
  }

  KILN_CHECK(idx.dtype().lanes == t.lanes) << "load from '" << buf->name << "': index lanes " << idx.dtype().lanes
                                           << " != value lanes " << t.lanes;
  if (mask && llvm::cast<llvm::FixedVectorType>(mask->getType())->getNumElements() != static_cast<unsigned>(t.lanes))
    mask = nullptr;  // a mask of other lanes says nothing about this access
  llvm::Type* vty = storage_type(t);
  llvm::Value* zero = llvm::Constant::getNullValue(vty);
  llvm::Value* v = nullptr;
  const auto* ramp = idx.as<ir::RampNode>();
  if (ramp && ir::is_const_int(ramp->stride, 1)) {
    llvm::Value* addr = element_address(buf, emit(ramp->base), ramp->base.dtype());
    if (mask) v = builder_.CreateMaskedLoad(vty, addr, align, mask, zero, buf->name);
    else v = builder_.CreateAlignedLoad(vty, addr, align, buf->name);
  } else {
    // Strided or general vector index: a gather (AVX-512/AVX2 have one; elsewhere LLVM
    // scalarizes it).
    llvm::Value* ptrs = element_address(buf, emit(idx), idx.dtype());
    if (!mask) mask = llvm::Constant::getAllOnesValue(llvm_type(DataType::boolean(t.lanes)));
    v = builder_.CreateMaskedGather(vty, ptrs, align, mask, zero, buf->name);
  }
  return from_storage(v, t);
}

void CodeGenLLVM::emit_store(const ir::BufferStoreNode* op) {
  const ir::Buffer& buf = op->buffer;
  KILN_USER_CHECK(op->indices.size() == 1) << "kernel '" << kernel_name_ << "': store to '" << buf->name << "' has "
                                           << op->indices.size() << " indices; run flatten_storage first";
  const ir::Expr& idx = op->indices[0];
  DataType t = op->value.dtype();
  KILN_USER_CHECK(t.element_of() == buf->dtype) << "kernel '" << kernel_name_ << "': store of " << t.str()
                                                << " into '" << buf->name << "' of " << buf->dtype.str();
  llvm::Value* value = to_storage(emit(op->value), t);
  llvm::Align align(static_cast<uint64_t>(buf->dtype.bytes()));
  if (t.is_scalar()) {
    KILN_USER_CHECK(idx.dtype().is_scalar()) << "kernel '" << kernel_name_ << "': scalar store to '" << buf->name
                                             << "' with a vector index";
    builder_.CreateAlignedStore(value, element_address(buf, emit(idx), idx.dtype()), align);
    return;
  }
  const auto* ramp = idx.as<ir::RampNode>();
  if (ramp && ir::is_const_int(ramp->stride, 1)) {
    builder_.CreateAlignedStore(value, element_address(buf, emit(ramp->base), ramp->base.dtype()), align);
    return;
  }
  llvm::Value* vidx = emit(idx);
  if (idx.dtype().is_scalar()) vidx = builder_.CreateVectorSplat(t.lanes, vidx);
  llvm::Value* ptrs = element_address(buf, vidx, idx.dtype().with_lanes(t.lanes));
  builder_.CreateMaskedScatter(value, ptrs, align, llvm::Constant::getAllOnesValue(llvm_type(DataType::boolean(t.lanes))));
}

}  // namespace kiln::codegen::llvm_backend
