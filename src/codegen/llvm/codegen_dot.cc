// CodeGenLLVM: the int8 dot product int8_dot4(acc, a, b) = acc[j] + sum_{k<4} a[k] * b[4j + k]
// (acc int32 x L, a int8 or uint8 x 4, b int8 x 4L; ir/expr.h), the inner step of int8 kernels.
//
// Every form is exact in int32: a product of 8-bit values fits 16 bits, and four of them 18.
//  - AVX-512 VNNI (L = 16) and AVX-VNNI / AVX-512 VNNI+VL (L = 8), a unsigned: one vpdpbusd, with
//    a's four bytes broadcast as one 32-bit value.
//  - AVX2 (L = 8), a unsigned: per pair of a's channels, b's bytes of that pair in every lane
//    and a's pair broadcast, both widened to 16 bits; vpmaddwd sums each lane's two products into
//    its 32 bits, and two adds finish the four. vpmaddubsw, one instruction shorter, saturates
//    its 16-bit pair sums (255 * 127 * 2 overflows), so it is not used.
//  - NEON with the dot-product extension (L = 4), a signed: one sdot, a broadcast as above.
//  - Anything else: widen to 32 bits, multiply, add the four products of each lane.
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

// The four values of a (x4) repeated `times` times.
llvm::Value* repeat4(llvm::IRBuilder<>& b, llvm::Value* a, unsigned times) {
  std::vector<int> mask;
  for (unsigned j = 0; j < 4 * times; ++j) mask.push_back(static_cast<int>(j % 4));
  return b.CreateShuffleVector(a, mask);
}

// a's four bytes as one 32-bit value in every lane of an i32 x L vector.
llvm::Value* broadcast_word(llvm::IRBuilder<>& b, llvm::Value* a, unsigned lanes) {
  llvm::Value* word = b.CreateBitCast(a, b.getInt32Ty());
  return b.CreateVectorSplat(lanes, word);
}

}  // namespace

llvm::Value* CodeGenLLVM::emit_int8_dot4(const ir::CallNode* op) {
  KILN_CHECK(op->args.size() == 3) << "int8_dot4 takes 3 arguments";
  const unsigned lanes = static_cast<unsigned>(op->dtype.lanes);
  const bool a_unsigned = op->args[1].dtype().is_uint();
  llvm::Value* acc = emit(op->args[0]);
  llvm::Value* a = emit(op->args[1]);  // i8 x 4
  llvm::Value* b = emit(op->args[2]);  // i8 x 4L
  llvm::IRBuilder<>& B = builder_;
  llvm::Type* i32v = llvm::FixedVectorType::get(B.getInt32Ty(), lanes);
  namespace I = llvm::Intrinsic;

  const Int8Dot dot = options_.int8_dot;
  if (a_unsigned && ((lanes == 16 && dot == Int8Dot::kAvx512Vnni) ||
                     (lanes == 8 && (dot == Int8Dot::kAvxVnni || dot == Int8Dot::kAvx512Vnni)))) {
    auto id = lanes == 16 ? I::x86_avx512_vpdpbusd_512 : I::x86_avx512_vpdpbusd_256;
    return B.CreateIntrinsic(id, {}, {acc, broadcast_word(B, a, lanes), B.CreateBitCast(b, i32v)});
  }
  if (!a_unsigned && lanes == 4 && dot == Int8Dot::kNeonDot) {
    llvm::Type* i8x16 = llvm::FixedVectorType::get(B.getInt8Ty(), 16);
    llvm::Value* aw = B.CreateBitCast(broadcast_word(B, a, 4), i8x16);
    return B.CreateIntrinsic(I::aarch64_neon_sdot, {i32v, i8x16}, {acc, b, aw});
  }
  if (a_unsigned && lanes == 8 && dot != Int8Dot::kNone && dot != Int8Dot::kNeonDot) {
    // Per pair of channels p (0: k = 0, 1; 1: k = 2, 3): b's bytes of that pair in every lane,
    // widened (a shuffle of the one weight block every column of the tile shares: LLVM computes
    // it once per block), times a's pair broadcast as one 32-bit word of two 16-bit values (once
    // per column): vpmaddwd leaves each lane's two products summed, in its own lane.
    // a's pair as bytes a[2p], 0, a[2p + 1], 0 in every 32-bit lane: one shuffle with zeros of
    // the broadcast word (vpshufb).
    llvm::Type* i16x16 = llvm::FixedVectorType::get(B.getInt16Ty(), 16);
    llvm::Value* a_bytes = B.CreateBitCast(broadcast_word(B, a, 8), llvm::FixedVectorType::get(B.getInt8Ty(), 32));
    llvm::Value* zeros = llvm::Constant::getNullValue(a_bytes->getType());
    llvm::Value* sum = acc;
    for (int p = 0; p < 2; ++p) {
      std::vector<int> b_pair, a_pair;
      for (int j = 0; j < 8; ++j) {
        b_pair.insert(b_pair.end(), {4 * j + 2 * p, 4 * j + 2 * p + 1});
        a_pair.insert(a_pair.end(), {2 * p, 32, 2 * p + 1, 32});  // 32: a byte of `zeros`
      }
      llvm::Value* bp = B.CreateSExt(B.CreateShuffleVector(b, b_pair), i16x16);
      llvm::Value* ap = B.CreateBitCast(B.CreateShuffleVector(a_bytes, zeros, a_pair), i16x16);
      sum = B.CreateAdd(sum, B.CreateIntrinsic(I::x86_avx2_pmadd_wd, {}, {bp, ap}));
    }
    return sum;
  }
  llvm::Type* i32x4l = llvm::FixedVectorType::get(B.getInt32Ty(), 4 * lanes);
  llvm::Value* aw = repeat4(B, a, lanes);
  aw = a_unsigned ? B.CreateZExt(aw, i32x4l) : B.CreateSExt(aw, i32x4l);
  llvm::Value* prod = B.CreateMul(aw, B.CreateSExt(b, i32x4l));
  llvm::Value* sum = acc;
  for (unsigned k = 0; k < 4; ++k) sum = B.CreateAdd(sum, strided_lanes(B, prod, k, 4, lanes));
  return sum;
}

}  // namespace kiln::codegen::llvm_backend
