// Matrix products of the op library: dense (Gemm's weight layout), numpy matmul, einsum.
//
// dense computes through a column-blocked core, like conv_nd (nn_conv.h), so that a CPU
// schedule keeps a block of output columns in vector registers and reads the weight as
// contiguous panels:
//
//   <name>.wpack    w [N, K] repacked [N/nr, K, nr] (zero-padded to whole panels); it reads
//                   only the weight, so a graph compiler may precompute it for a constant
//   <name>.blocked  [M, N/nr, nr] = x . panel (the reduction)
//   <name>          [M, N]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/te/operation.h"

namespace kiln::te::ops {

// The panel width for n output columns: the power of two >= n up to `lanes` (one vector).
int64_t dense_panel_width(int64_t n, int64_t lanes);

// x [M, K], w [N, K] -> [M, N] through panels of `panel` columns (dense_panel_width).
Tensor dense(const Tensor& x, const Tensor& w, int64_t panel, const std::string& name = "dense");

// dense with its weight already packed ([N/nr, K, nr], lower/weight_packing.h): no
// "<name>.wpack" stage; `n` is the number of output columns.
Tensor dense_packed(const Tensor& x, const Tensor& w_packed, int64_t n, const std::string& name = "dense");

// numpy matmul: a [..., M, K] x b [..., K, N] -> [broadcast(...), M, N]; a 1-D a is a row
// vector and a 1-D b a column vector, and their dims are dropped from the result. One stage.
Tensor batch_matmul(const Tensor& a, const Tensor& b, const std::string& name = "matmul");

// Einstein summation over letters (no spaces), "..." broadcasting, implicit output (labels
// seen once, sorted, after the ellipsis dims); a label repeated inside one input term reads its
// diagonal ("ii->i", "ii->"). A label repeated in the output is not supported (kiln::Error naming
// the equation). One stage: the product of the inputs summed over the labels missing from the
// output.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& inputs, const std::string& name = "einsum");

}  // namespace kiln::te::ops
