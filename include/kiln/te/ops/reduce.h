// Reduction compute definitions of the op library (part A): sum/mean/prod/max/min over a set of
// axes, and argmax/argmin along one axis.
//
// The reduction is one stage; mean divides in a second, elementwise stage, and float16/bfloat16
// inputs accumulate in float32 with a final cast stage (so the output may be an elementwise
// consumer of the reduction: reduction_cpu schedules both). Bool max/min reduce as uint8.
#pragma once

#include <string>
#include <vector>

#include "kiln/te/operation.h"

namespace kiln::te::ops {

enum class ReduceKind { Sum, Mean, Prod, Max, Min };

// Reduces x over `axes` (distinct, in range; empty: a copy of x). keepdims keeps each reduced
// axis as a dim of 1; reducing every axis without keepdims gives shape {1} (te has no rank 0).
// Integer mean truncates toward zero.
Tensor reduce(const Tensor& x, ReduceKind kind, const std::vector<int64_t>& axes, bool keepdims,
              const std::string& name = "reduce");

// The two-slot reducer (index, value) -> the index of the largest (smallest, with is_min) value;
// ties go to the first index, or the last with select_last. Its identity index is a sentinel that
// every real index beats on a tie, so an all -inf (or all lowest) input still yields a real index.
ir::CommReducer arg_reducer(ir::DataType index_type, ir::DataType value_type, bool is_min, bool select_last);

// Index (int64) of the max/min of x along `axis`; keepdims keeps it as a dim of 1.
Tensor arg_reduce(const Tensor& x, int64_t axis, bool keepdims, bool is_min, bool select_last,
                  const std::string& name = "arg_reduce");

}  // namespace kiln::te::ops
