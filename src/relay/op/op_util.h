// Helpers shared by the type relations of the op families (private to src/relay/op).
#pragma once

#include <string>
#include <vector>

#include "kiln/relay/op.h"
#include "kiln/relay/type.h"

namespace kiln::relay {

// Argument i as a tensor type; kiln::Error naming `role` when it is a tuple.
const TensorTypeNode& tensor_arg(const std::vector<Type>& args, size_t i, const char* role);
// Normalizes a possibly negative axis into [0, rank); kiln::Error when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank, const char* what = "axis");
// Checks that axes are in [0, rank) and distinct (relations take normalized axes).
void check_axes(const std::vector<int64_t>& axes, int64_t rank, const char* what = "axes");
// Numpy broadcasting of two shapes; kiln::Error naming both when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b);
void check_same_dtype(const TensorTypeNode& a, const TensorTypeNode& b, const char* what);
void check_floating(const TensorTypeNode& t, const char* role);
// The block of a layout attr: "NCHW" -> 0, "NCHW8c" -> 8; kiln::Error for anything else.
int64_t parse_layout(const std::string& s);
// Checks that `v` has exactly n entries.
void check_count(const std::vector<int64_t>& v, size_t n, const char* what);

}  // namespace kiln::relay
