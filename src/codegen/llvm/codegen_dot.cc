// CodeGenLLVM: the int8 dot product int8_dot(acc, a, b) = acc[j] + sum_{k<G} a[k] * b[G*j + k]
// (acc int32 x L, a the group of G channels: int8 or uint8 x 4, or int16 x 2; b int8 x G*L;
// ir/expr.h), the inner step of int8 kernels.
//
// Every form is exact in int32: a product of 8-bit values fits 16 bits, and four of them 18.
//  - AVX-512 VNNI (L = 16) and AVX-VNNI / AVX-512 VNNI+VL (L = 8), a uint8 x 4: one vpdpbusd, with
//    a's four bytes broadcast as one 32-bit value.
//  - AVX2 (L = 8), a int16 x 2: a's two 16-bit values broadcast as one 32-bit word (one
//    vpbroadcastd from memory), b's bytes sign-extended to 16 bits (one vpmovsxbw, shared by
//    every column of a tile; an int16 b is used as it is), one vpmaddwd summing each lane's two
//    products into its 32 bits.
//    vpmaddubsw, which reads bytes and would spare the widening, saturates its 16-bit pair
//    sums (255 * 127 * 2 overflows), so it is not used.
//  - NEON with the dot-product extension (L = 4), a int8 x 4: one sdot, a broadcast as above.
//  - Anything else: widen to 32 bits, multiply, add the G products of each lane.
#include <llvm/IR/IntrinsicsAArch64.h>
#include <llvm/IR/IntrinsicsX86.h>

#include "codegen_llvm.h"
#include "kiln/support/error.h"

namespace kiln::codegen::llvm_backend {

namespace {

// Lanes `first + step*j` of v, j < n.
llvm::Value* strided_lanes(llvm::IRBuilder<>& b, llvm::Value* v, unsigned first, unsigned step, unsigned n) {
  std::vector<int> mask;
  for (unsigned j = 0; j < n; ++j) mask.push_back(static_cast<int>(first + step * j));
  return b.CreateShuffleVector(v, mask);
}

// The `group` values of a repeated `times` times.
llvm::Value* repeat(llvm::IRBuilder<>& b, llvm::Value* a, unsigned group, unsigned times) {
  std::vector<int> mask;
  for (unsigned j = 0; j < group * times; ++j) mask.push_back(static_cast<int>(j % group));
  return b.CreateShuffleVector(a, mask);
}

// a's 32 bits (four bytes or two 16-bit values) as one value in every lane of an i32 x L vector.
llvm::Value* broadcast_word(llvm::IRBuilder<>& b, llvm::Value* a, unsigned lanes) {
  llvm::Value* word = b.CreateBitCast(a, b.getInt32Ty());
  return b.CreateVectorSplat(lanes, word);
}

}  // namespace

llvm::Value* CodeGenLLVM::emit_int8_dot(const ir::CallNode* op) {
  KILN_CHECK(op->args.size() == 3) << "int8_dot takes 3 arguments";
  const unsigned lanes = static_cast<unsigned>(op->dtype.lanes);
  const ir::DataType at = op->args[1].dtype();
  const unsigned group = static_cast<unsigned>(at.lanes);
  const bool a_bytes = at.bits == 8, a_unsigned = at.is_uint();
  llvm::Value* acc = emit(op->args[0]);
  llvm::Value* a = emit(op->args[1]);  // i8 x 4 or i16 x 2
  llvm::Value* b = emit(op->args[2]);  // i8 x G*L
  llvm::IRBuilder<>& B = builder_;
  llvm::Type* i32v = llvm::FixedVectorType::get(B.getInt32Ty(), lanes);
  namespace I = llvm::Intrinsic;

  const Int8Dot dot = options_.int8_dot;
  const bool x86 = dot == Int8Dot::kAvx2 || dot == Int8Dot::kAvxVnni || dot == Int8Dot::kAvx512Vnni;
  if (a_bytes && a_unsigned && ((lanes == 16 && dot == Int8Dot::kAvx512Vnni) ||
                                (lanes == 8 && (dot == Int8Dot::kAvxVnni || dot == Int8Dot::kAvx512Vnni)))) {
    auto id = lanes == 16 ? I::x86_avx512_vpdpbusd_512 : I::x86_avx512_vpdpbusd_256;
    return B.CreateIntrinsic(id, {}, {acc, broadcast_word(B, a, lanes), B.CreateBitCast(b, i32v)});
  }
  if (a_bytes && !a_unsigned && lanes == 4 && dot == Int8Dot::kNeonDot) {
    llvm::Type* i8x16 = llvm::FixedVectorType::get(B.getInt8Ty(), 16);
    llvm::Value* aw = B.CreateBitCast(broadcast_word(B, a, 4), i8x16);
    return B.CreateIntrinsic(I::aarch64_neon_sdot, {i32v, i8x16}, {acc, b, aw});
  }
  if (!a_bytes && lanes == 8 && x86) {
    llvm::Type* i16x16 = llvm::FixedVectorType::get(B.getInt16Ty(), 16);
    llvm::Value* aw = B.CreateBitCast(broadcast_word(B, a, 8), i16x16);
    llvm::Value* bw = op->args[2].dtype().bits == 16 ? b : B.CreateSExt(b, i16x16);
    llvm::Value* prod = B.CreateIntrinsic(I::x86_avx2_pmadd_wd, {}, {bw, aw});
    return B.CreateAdd(acc, prod);
  }
  llvm::Type* i32xgl = llvm::FixedVectorType::get(B.getInt32Ty(), group * lanes);
  llvm::Value* aw = repeat(B, a, group, lanes);
  aw = a_unsigned ? B.CreateZExt(aw, i32xgl) : B.CreateSExt(aw, i32xgl);
  llvm::Value* prod = B.CreateMul(aw, B.CreateSExt(b, i32xgl));
  llvm::Value* sum = acc;
  for (unsigned k = 0; k < group; ++k) sum = B.CreateAdd(sum, strided_lanes(B, prod, k, group, lanes));
  return sum;
}

}  // namespace kiln::codegen::llvm_backend
