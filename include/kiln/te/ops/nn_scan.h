// Order-dependent opaque ops of the op library, written as plain te reductions (quadratic in
// the scanned axis: they serve small tensors such as position ids and top-k of logits, not
// hot loops).
//
//   cumsum            out[i] = sum of x[k] for k <= i (k < i exclusive; k >= i / k > i reverse)
//   cumprod           the same with products (an empty exclusive product is 1)
//   topk              rank of each element (how many beat it; ties go to the lower index), then
//                     the element of each rank: values and int64 indices, sorted
//   scatter_elements  ONNX ScatterElements: data with updates written (or combined) where
//                     indices point along `axis`; with reduction none the last update wins
//   scatter_nd        ONNX ScatterND: updates of index tuples over the leading dims of data
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/te/operation.h"

namespace kiln::te::ops {

Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive, bool reverse, const std::string& name = "cumsum");
Tensor cumprod(const Tensor& x, int64_t axis, bool exclusive, bool reverse, const std::string& name = "cumprod");

// {values, indices (int64)}.
std::vector<Tensor> topk(const Tensor& x, int64_t k, int64_t axis, bool largest, const std::string& name = "topk");

// reduction: "none", "add", "mul", "max", "min".
Tensor scatter_elements(const Tensor& data, const Tensor& indices, const Tensor& updates, int64_t axis,
                        const std::string& reduction, const std::string& name = "scatter_elements");
Tensor scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates, const std::string& reduction,
                  const std::string& name = "scatter_nd");

}  // namespace kiln::te::ops
