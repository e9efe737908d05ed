// Matrix products of the op library: dense (Gemm's weight layout), numpy matmul, einsum.
//
// dense computes through a column-blocked core, like conv_nd (nn_conv.h), so that a CPU
// schedule keeps a block of output columns in vector registers and reads the weight as
// contiguous panels:
//
//   <name>.wpack    w [N, K] repacked [N/nr, K, nr] (zero-padded to whole panels); it reads
//                   only the weight, so a graph compiler may precompute it for a constant
//   <name>.blocked  [..., Mp, N/nr, nr] = x . panel (the reduction; Mp: M padded to whole
//                   register tiles, rows past M read x's last row and are never stored)
//   <name>          [..., M, N]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/te/operation.h"

namespace kiln::te::ops {

// The panel width for n output columns: the power of two >= n up to `lanes` (one vector).
int64_t dense_panel_width(int64_t n, int64_t lanes);

// How dense lays out its weight and pads its result (the CPU strategy picks these from the
// target: schedule/templates/gemm_blocking.h).
struct DenseBlocks {
  int64_t panel = 1;        // nr: columns per weight panel (dense_panel_width)
  int64_t panel_group = 1;  // the panel count is padded with zero panels to a multiple of this
  int64_t rows = 1;         // the blocked result's rows are padded to a multiple of this
  bool weight_kn = false;   // the weight is [K, N] (matmul's B), not [N, K]
};

// x [..., M, K], w [N, K] (or [K, N]) -> [..., M, N] through panels of `blocks.panel` columns.
Tensor dense(const Tensor& x, const Tensor& w, const DenseBlocks& blocks, const std::string& name = "dense");

// Multiples a tensor-core schedule tiles a product by (schedule/mma_intrin.h: 16, 8, 16): M, N
// and K rounded up to them, each operand read through a stage "<name>.pad_<operand>" that is zero
// past the operand's end (a tensor core multiplies whole tiles; zeros keep the padding out of
// the sums), the float32 sum "<name>.acc" over the padded shape and its cast "<name>" over the
// real one. Padding reads an operand under a select (only where it exists): for GPU schedules,
// whose C selects evaluate one side.
struct ProductPad {
  int64_t m = 1, n = 1, k = 1;
};

// dense as one plain reduction, out[..., i, j] = sum_k x[..., i, k] * w[j, k] (or w[k, j]
// when weight_kn): what GPU schedules tile themselves, in shared memory rather than panels.
Tensor dense_plain(const Tensor& x, const Tensor& w, bool weight_kn = false, const std::string& name = "dense",
                   const ProductPad& pad = {});
// dense with its weight already packed ([NB, K, nr] with NB * nr >= n, lower/weight_packing.h):
// no "<name>.wpack" stage; `n` is the number of output columns, `rows` as DenseBlocks::rows.
Tensor dense_packed(const Tensor& x, const Tensor& w_packed, int64_t n, int64_t rows = 1,
                    const std::string& name = "dense");

// numpy matmul: a [..., M, K] x b [..., K, N] -> [broadcast(...), M, N]; a 1-D a is a row
// vector and a 1-D b a column vector, and their dims are dropped from the result. One stage,
// or two: "<name>.acc" (in float32 for float16 operands; with M padded to a multiple of `rows`,
// the extra rows reading a's last row) and its cast or slice "<name>".
// With `pad` (operands of rank >= 2 only; rows 1), padded as dense_plain is.
Tensor batch_matmul(const Tensor& a, const Tensor& b, int64_t rows = 1, const std::string& name = "matmul",
                    const ProductPad& pad = {});

// Einstein summation over letters (no spaces), "..." broadcasting, implicit output (labels
// seen once, sorted, after the ellipsis dims); a label repeated inside one input term reads its
// diagonal ("ii->i", "ii->"). A label repeated in the output is not supported (kiln::Error naming
// the equation). One stage: the product of the inputs summed over the labels missing from the
// output.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& inputs, const std::string& name = "einsum");

}  // namespace kiln::te::ops
