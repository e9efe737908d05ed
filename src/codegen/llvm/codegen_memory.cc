// CodeGenLLVM: buffer accesses. Addresses, loads and stores, scalar and vector.
//
//  - A vector access with a Ramp index of stride 1 is one vector load/store at the ramp's
//    base; a Broadcast index is a scalar load splatted; any other vector index (a strided
//    Ramp, a computed index vector) is a gather/scatter (llvm.masked.gather/scatter:
//    AVX-512 and AVX2 have them, elsewhere LLVM scalarizes). Except an unmasked load of a
//    Ramp of small constant stride s (2..4: pooling windows, strided convs): one contiguous
//    load of lanes*s elements, masked to the (lanes-1)*s+1 the ramp spans so it never reads
//    past them, then a shuffle picking every s-th. A gather issues one load per lane (16
//    for a zmm); this is s vector loads and s-1 permutes.
//  - Inside the masked side of a vector Select (fs_.lane_mask), vector loads are masked and
//    scalar loads only happen if some lane chooses that side.
//  - A vector store of select(c, v, B[same index]) into B (what vectorize_loops makes of a
//    lane-guarded store) is a masked store of v under c: lanes where c is false are not
//    touched, so they may lie past the buffer or belong to another thread.
//  - Every masked intrinsic goes through masked_access, which emits it in pieces no wider than
//    a vector register (see there why).
//  - Without mask registers (AVX2 and older), loads of bytes and int16 under a run-time mask
//    test it first and load plainly when every lane is on (unless_masked), and strided ones read
//    their span with two overlapping plain loads (span_load): LLVM would make either a branch
//    and a scalar load per lane.
//  - Memory representation: bool is a byte, bf16 the upper half of a float (to_storage /
//    from_storage in codegen_expr.cc).
#include <llvm/Analysis/VectorUtils.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "codegen_llvm.h"
#include "kiln/ir/structural.h"
#include "kiln/support/error.h"

namespace kiln::codegen::llvm_backend {

using ir::DataType;
using ir::ExprKind;

llvm::Value* CodeGenLLVM::buffer_ptr(const ir::Buffer& b) { return lookup_var(b->data.get()); }

llvm::Value* CodeGenLLVM::to_i64_index(llvm::Value* index, DataType index_type) {
  // GEP sign-extends narrower indices, which is right for signed ones only.
  if (index_type.is_uint() && index_type.bits < 64)
    return builder_.CreateZExt(index, llvm_type(DataType::i64(index_type.lanes)));
  return index;
}

llvm::Value* CodeGenLLVM::emit_index(const ir::Expr& e) {
  // Signed 32-bit index arithmetic is nsw, so it may as well be done in 64 bits: sext(a + b)
  // == sext(a) + sext(b). Doing so here, instead of sign-extending the final i32 sum, gives
  // addresses LLVM folds into base + constant offset + scaled IV (one broadcast per row of a
  // GEMM micro-kernel instead of a sext/shift pair).
  DataType t = e.dtype();
  if (!(t.is_int() && t.bits == 32 && t.is_scalar())) return to_i64_index(emit(e), t);
  llvm::Type* i64 = builder_.getInt64Ty();
  if (const auto* imm = e.as<ir::IntImmNode>()) return llvm::ConstantInt::get(i64, static_cast<uint64_t>(imm->value), true);
  if (const auto* b = e.as<ir::BinaryNode>()) {
    if (b->kind == ExprKind::Add) return builder_.CreateAdd(emit_index(b->a), emit_index(b->b), "", false, true);
    if (b->kind == ExprKind::Sub) return builder_.CreateSub(emit_index(b->a), emit_index(b->b), "", false, true);
    if (b->kind == ExprKind::Mul) return builder_.CreateMul(emit_index(b->a), emit_index(b->b), "", false, true);
  }
  return builder_.CreateSExt(emit(e), i64);
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
    llvm::Value* addr = element_address(buf, emit_index(sidx), DataType::i64());
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
  llvm::Value* v = nullptr;
  const auto* ramp = idx.as<ir::RampNode>();
  if (ramp && ir::is_const_int(ramp->stride, 1)) {
    llvm::Value* addr = element_address(buf, emit_index(ramp->base), DataType::i64());
    if (mask) v = masked_access(MaskedOp::Load, vty, addr, nullptr, align, mask, buf->name);
    else v = builder_.CreateAlignedLoad(vty, addr, align, buf->name);
  } else if (auto s = ramp ? ir::as_const_int(ramp->stride) : std::nullopt;
             s && *s >= 2 && *s <= 4 && t.lanes * *s <= 64) {
    const int64_t stride = *s, span = (t.lanes - 1) * stride + 1;
    llvm::Type* elem_ty = llvm::cast<llvm::VectorType>(vty)->getElementType();
    auto* wide = llvm::FixedVectorType::get(elem_ty, static_cast<unsigned>(t.lanes * stride));
    llvm::Value* addr = element_address(buf, emit_index(ramp->base), DataType::i64());
    // One wide load masked to the span (or to the lanes of `mask`), every stride-th picked.
    auto wide_masked = [&]() {
      llvm::Value* wide_mask;
      if (mask) {
        // Lane l's element sits at l*stride of the wide vector; the elements between are skipped.
        std::vector<int> spread;
        for (int64_t i = 0; i < t.lanes * stride; ++i) spread.push_back(i % stride == 0 ? static_cast<int>(i / stride) : t.lanes);
        wide_mask = builder_.CreateShuffleVector(mask, llvm::Constant::getNullValue(mask->getType()), spread);
      } else {
        std::vector<llvm::Constant*> on;
        for (int64_t i = 0; i < t.lanes * stride; ++i) on.push_back(builder_.getInt1(i < span));
        wide_mask = llvm::ConstantVector::get(on);
      }
      llvm::Value* all = masked_access(MaskedOp::Load, wide, addr, nullptr, align, wide_mask, buf->name);
      std::vector<int> pick;
      for (int i = 0; i < t.lanes; ++i) pick.push_back(static_cast<int>(i * stride));
      return builder_.CreateShuffleVector(all, pick);
    };
    // Without mask registers, AVX2 masks only 32- and 64-bit lanes: a masked load of bytes is a
    // branch and a scalar load per element, so narrower elements read the span plainly.
    const bool narrow = !options_.mask_registers && elem.bits < 32;
    auto exact = [&]() { return span_load(elem_ty, addr, t.lanes, stride, align, buf->name); };
    if (!narrow) v = wide_masked();
    else if (!mask) v = exact();
    else v = unless_masked(mask, "load", exact, wide_masked);
  } else {
    // Strided or general vector index: a gather (AVX-512/AVX2 have one; elsewhere LLVM
    // scalarizes it).
    llvm::Value* ptrs = element_address(buf, emit(idx), idx.dtype());
    if (!mask) mask = llvm::Constant::getAllOnesValue(llvm_type(DataType::boolean(t.lanes)));
    v = masked_access(MaskedOp::Gather, vty, ptrs, nullptr, align, mask, buf->name);
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
  llvm::Align align(static_cast<uint64_t>(buf->dtype.bytes()));
  if (t.is_scalar()) {
    llvm::Value* value = to_storage(emit(op->value), t);
    KILN_USER_CHECK(idx.dtype().is_scalar()) << "kernel '" << kernel_name_ << "': scalar store to '" << buf->name
                                             << "' with a vector index";
    builder_.CreateAlignedStore(value, element_address(buf, emit_index(idx), DataType::i64()), align);
    return;
  }
  const auto* ramp = idx.as<ir::RampNode>();
  if (const auto* sel = op->value.as<ir::SelectNode>(); sel && sel->condition.dtype().lanes == t.lanes && idx.dtype().lanes == t.lanes) {
    const auto* old = sel->false_value.as<ir::BufferLoadNode>();
    if (old && old->buffer->data.same_as(buf->data) && old->indices.size() == 1 && ir::structural_equal(old->indices[0], idx)) {
      llvm::Value* c = emit(sel->condition);
      llvm::Value* outer = fs_.lane_mask;
      fs_.lane_mask = outer ? builder_.CreateAnd(outer, c) : c;
      llvm::Value* v = to_storage(emit(sel->true_value), t);
      llvm::Value* m = fs_.lane_mask;
      fs_.lane_mask = outer;
      if (ramp && ir::is_const_int(ramp->stride, 1)) {
        masked_access(MaskedOp::Store, v->getType(), element_address(buf, emit_index(ramp->base), DataType::i64()), v,
                      align, m);
      } else {
        llvm::Value* vidx = emit(idx);
        masked_access(MaskedOp::Scatter, v->getType(), element_address(buf, vidx, idx.dtype()), v, align, m);
      }
      return;
    }
  }
  llvm::Value* value = to_storage(emit(op->value), t);
  if (ramp && ir::is_const_int(ramp->stride, 1)) {
    builder_.CreateAlignedStore(value, element_address(buf, emit_index(ramp->base), DataType::i64()), align);
    return;
  }
  llvm::Value* vidx = emit(idx);
  if (idx.dtype().is_scalar()) vidx = builder_.CreateVectorSplat(t.lanes, vidx);
  llvm::Value* ptrs = element_address(buf, vidx, idx.dtype().with_lanes(t.lanes));
  masked_access(MaskedOp::Scatter, value->getType(), ptrs, value, align,
                llvm::Constant::getAllOnesValue(llvm_type(DataType::boolean(t.lanes))));
}

// Why pieces: LLVM 16's x86 backend splits a 16-lane masked load into two 8-lane halves for
// AVX/AVX2 and emits a half whose mask is all false once a splat is AND-ed with a constant (a
// padded row whose column loop LLVM unrolled) as a plain, unmasked vmovups: those lanes get
// memory instead of zeros, and the load can fault when it runs past the buffer into an unmapped
// page (../shared/llvm16-masked-load-avx2.ll). Pieces of a register's width are legal types that
// the backend never splits. Checked with llc-16 -mcpu=x86-64-v3 (-O0, -O2, and after opt -O3)
// on that reproducer's pattern as two 8-lane pieces, each with its slice of the splat-AND-constant
// mask: one vmaskmovps for the lower piece (masked by the splat), a zeroed register and no load
// for the upper one. A piece whose mask is a constant when emitted is settled at once: all
// false, nothing is accessed (a load piece is zero); all true, a plain load/store (a
// gather/scatter stays one).
llvm::Value* CodeGenLLVM::masked_access(MaskedOp op, llvm::Type* ty, llvm::Value* where, llvm::Value* value,
                                        llvm::Align align, llvm::Value* mask, const std::string& name) {
  auto* vty = llvm::cast<llvm::FixedVectorType>(ty);
  llvm::Type* elem = vty->getElementType();
  const unsigned lanes = vty->getNumElements();
  const uint64_t elem_bits = module_->getDataLayout().getTypeSizeInBits(elem);
  const unsigned piece = std::max<unsigned>(1, static_cast<unsigned>(options_.native_vector_bits / elem_bits));
  const bool loads = op == MaskedOp::Load || op == MaskedOp::Gather;
  std::vector<llvm::Value*> parts;
  for (unsigned b = 0; b < lanes; b += piece) {
    const unsigned n = std::min(piece, lanes - b);
    auto* pty = llvm::FixedVectorType::get(elem, n);
    llvm::Constant* zero = llvm::Constant::getNullValue(pty);
    llvm::Value* m = lanes_of(mask, b, n);
    if (llvm::maskIsAllZeroOrUndef(m)) {
      if (loads) parts.push_back(zero);
      continue;
    }
    const bool all = llvm::maskIsAllOneOrUndef(m);
    llvm::Value* v = loads ? nullptr : lanes_of(value, b, n);
    // Not inbounds: under a run-time mask, a whole piece may lie past the buffer.
    llvm::Value* at = op == MaskedOp::Load || op == MaskedOp::Store ? builder_.CreateConstGEP1_64(elem, where, b)
                                                                     : lanes_of(where, b, n);
    switch (op) {
      case MaskedOp::Load: {
        auto masked = [&]() -> llvm::Value* { return builder_.CreateMaskedLoad(pty, at, align, m, zero, name); };
        auto plain = [&]() -> llvm::Value* { return builder_.CreateAlignedLoad(pty, at, align, name); };
        // AVX2 masks loads of 32- and 64-bit lanes only: a masked load of bytes or int16 is a
        // branch and a scalar load per lane. A row's masked loads are nearly all whole (only its
        // borders are partial), so test for that once and load plainly.
        if (all) parts.push_back(plain());
        else if (options_.mask_registers || elem_bits >= 32 || llvm::isa<llvm::Constant>(m)) parts.push_back(masked());
        else parts.push_back(unless_masked(m, "load", plain, masked));
        break;
      }
      case MaskedOp::Store:
        if (all) builder_.CreateAlignedStore(v, at, align);
        else if (options_.mask_registers || llvm::isa<llvm::Constant>(m)) builder_.CreateMaskedStore(v, at, align, m);
        else store_unless_masked(v, at, align, m);
        break;
      case MaskedOp::Gather: parts.push_back(builder_.CreateMaskedGather(pty, at, align, m, zero, name)); break;
      case MaskedOp::Scatter: builder_.CreateMaskedScatter(v, at, align, m); break;
    }
  }
  if (!loads) return nullptr;
  return parts.size() == 1 ? parts[0] : llvm::concatenateVectors(builder_, parts);
}

// Only a row's last tile is partial, so the branch is predictable and nearly always takes the
// plain store. Measured (1 thread, Zen 4, x86-64-v3 code): squeezenet1_1, whose convs' column
// tiles overhang their rows (vectorized write-outs under a column mask), 8.75 -> 8.42 ms.
void CodeGenLLVM::store_unless_masked(llvm::Value* v, llvm::Value* at, llvm::Align align, llvm::Value* mask) {
  unless_masked(
      mask, "store",
      [&]() -> llvm::Value* {
        builder_.CreateAlignedStore(v, at, align);
        return nullptr;
      },
      [&]() -> llvm::Value* {
        builder_.CreateMaskedStore(v, at, align, mask);
        return nullptr;
      });
}

// For loads, those AVX2 cannot mask (bytes, int16) of an int8 conv's padded plane: measured (2
// threads, AMD EPYC Zen 3, x86-64-v3 code) on mobilenet_v2_int8's NCHW depthwise 3x3 32@112
// (kiln bench --profile), 0.44 -> 0.29 ms; with span_load for its stride-2 96@112, 1.27 -> 0.85.
llvm::Value* CodeGenLLVM::unless_masked(llvm::Value* mask, const std::string& what,
                                        const std::function<llvm::Value*()>& whole,
                                        const std::function<llvm::Value*()>& partial) {
  llvm::Function* fn = builder_.GetInsertBlock()->getParent();
  const unsigned n = llvm::cast<llvm::FixedVectorType>(mask->getType())->getNumElements();
  llvm::Value* bits = builder_.CreateBitCast(mask, builder_.getIntNTy(n));
  llvm::Value* full = builder_.CreateICmpEQ(bits, llvm::Constant::getAllOnesValue(bits->getType()));
  auto* whole_bb = llvm::BasicBlock::Create(ctx_, what + ".full", fn);
  auto* partial_bb = llvm::BasicBlock::Create(ctx_, what + ".masked", fn);
  auto* done = llvm::BasicBlock::Create(ctx_, what + ".done", fn);
  builder_.CreateCondBr(full, whole_bb, partial_bb);
  builder_.SetInsertPoint(whole_bb);
  llvm::Value* a = whole();
  llvm::BasicBlock* a_end = builder_.GetInsertBlock();
  builder_.CreateBr(done);
  builder_.SetInsertPoint(partial_bb);
  llvm::Value* b = partial();
  llvm::BasicBlock* b_end = builder_.GetInsertBlock();
  builder_.CreateBr(done);
  builder_.SetInsertPoint(done);
  if (!a) return nullptr;
  llvm::PHINode* v = builder_.CreatePHI(a->getType(), 2);
  v->addIncoming(a, a_end);
  v->addIncoming(b, b_end);
  return v;
}

// Elements 0, s, 2s, ... (lanes of them) from `addr`: two plain loads of h = lanes*s/2
// elements, [0, h) and [span - h, span), which cover the span (2h >= lanes*s - 1 >= span)
// without reading past it, and one shuffle.
llvm::Value* CodeGenLLVM::span_load(llvm::Type* elem, llvm::Value* addr, int64_t lanes, int64_t stride,
                                    llvm::Align align, const std::string& name) {
  const int64_t span = (lanes - 1) * stride + 1, h = lanes * stride / 2;
  auto* half = llvm::FixedVectorType::get(elem, static_cast<unsigned>(h));
  llvm::Value* lo = builder_.CreateAlignedLoad(half, addr, align, name);
  llvm::Value* hi = builder_.CreateAlignedLoad(half, builder_.CreateConstGEP1_64(elem, addr, span - h), align, name);
  std::vector<int> pick;
  for (int64_t l = 0; l < lanes; ++l) {
    const int64_t e = l * stride;
    pick.push_back(static_cast<int>(e < h ? e : h + e - (span - h)));
  }
  return builder_.CreateShuffleVector(lo, hi, pick);
}

llvm::Value* CodeGenLLVM::lanes_of(llvm::Value* v, unsigned begin, unsigned count) {
  if (begin == 0 && count == llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements()) return v;
  std::vector<int> pick(count);
  std::iota(pick.begin(), pick.end(), static_cast<int>(begin));
  return builder_.CreateShuffleVector(v, pick);  // folded to a constant when v is one
}

}  // namespace kiln::codegen::llvm_backend
