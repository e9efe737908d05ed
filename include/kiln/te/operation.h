// Operations of te: placeholders (inputs) and computes (tensors defined elementwise by an
// expression over their index variables, possibly a reduction).
//
//   auto A = te::placeholder({M, K}, f32, "A");
//   auto k = te::reduce_axis(K, "k");
//   auto C = te::compute({M, N}, [&](Var i, Var j) { return te::sum(A(i, k) * B(k, j), {k}); }, "C");
//
// C++ cannot see a lambda's parameter names, so compute axes are named "i0", "i1", ... unless
// `axis_names` gives names (e.g. {"i", "j"}); printed IR and schedule errors use these names.
#pragma once

#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/te/reduce.h"
#include "kiln/te/tensor.h"

namespace kiln::te {

struct PlaceholderOpNode : OperationNode {
  PlaceholderOpNode(std::string n, std::vector<int64_t> s, ir::DataType t)
      : OperationNode(OpKind::Placeholder, std::move(n), std::move(s), {t}) {}
  static bool matches(OpKind k) { return k == OpKind::Placeholder; }
};

// out_v(axis) = body[v]. Either every body is an ir::Reduce (all over the same reduce_axis,
// same combiner, sources and condition: one multi-slot reduction) or none is.
struct ComputeOpNode : OperationNode {
  std::vector<ir::IterVar> axis;         // data-parallel, one per output dimension, dom [0, extent)
  std::vector<ir::IterVar> reduce_axis;  // the reduction's axes (empty if not a reduction)
  std::vector<ir::Expr> body;            // one per output
  ComputeOpNode(std::string n, std::vector<int64_t> s, std::vector<ir::DataType> t, std::vector<ir::IterVar> ax,
                std::vector<ir::IterVar> rax, std::vector<ir::Expr> b)
      : OperationNode(OpKind::Compute, std::move(n), std::move(s), std::move(t)), axis(std::move(ax)),
        reduce_axis(std::move(rax)), body(std::move(b)) {}
  static bool matches(OpKind k) { return k == OpKind::Compute; }
  bool is_reduction() const { return !reduce_axis.empty(); }
};

// An input tensor. Extents must be positive.
Tensor placeholder(std::vector<int64_t> shape, ir::DataType dtype, std::string name = "placeholder");

using FComputeMulti = std::function<std::vector<ir::Expr>(const std::vector<ir::Var>& indices)>;

// The checking core behind compute / compute_multi: builds the op and validates its bodies
// (positive extents, reduce axes only inside reductions over them, consistent multi-output
// reductions, scalar non-handle bodies, loads provably inside their tensors).
Operation make_compute(std::vector<int64_t> shape, const FComputeMulti& f, std::string name,
                       std::vector<std::string> axis_names);

namespace detail {
template <typename F, size_t... I>
constexpr bool invocable_with_vars(std::index_sequence<I...>) {
  return std::is_invocable_v<F&, decltype((void)I, std::declval<ir::Var>())...>;
}
template <typename F, size_t... I>
decltype(auto) call_with_vars(F& f, const std::vector<ir::Var>& v, std::index_sequence<I...>) {
  return f(v[I]...);
}
// Number of Var parameters f takes (1..6), or -1 for the vector<Var> form.
template <typename F>
constexpr int var_arity() {
  if constexpr (std::is_invocable_v<F&, const std::vector<ir::Var>&>) return -1;
  else if constexpr (invocable_with_vars<F>(std::make_index_sequence<1>())) return 1;
  else if constexpr (invocable_with_vars<F>(std::make_index_sequence<2>())) return 2;
  else if constexpr (invocable_with_vars<F>(std::make_index_sequence<3>())) return 3;
  else if constexpr (invocable_with_vars<F>(std::make_index_sequence<4>())) return 4;
  else if constexpr (invocable_with_vars<F>(std::make_index_sequence<5>())) return 5;
  else if constexpr (invocable_with_vars<F>(std::make_index_sequence<6>())) return 6;
  else return 0;
}
void check_arity(const std::string& name, int arity, size_t ndim);

// Calls f with the index vars in whichever form it takes.
template <typename F>
decltype(auto) invoke_indexed(F& f, const std::vector<ir::Var>& v) {
  constexpr int n = var_arity<F>();
  static_assert(n != 0, "te::compute: the function must take 1 to 6 ir::Var or one std::vector<ir::Var>");
  if constexpr (n == -1) return f(v);
  else return call_with_vars(f, v, std::make_index_sequence<n>());
}
}  // namespace detail

// A tensor of `shape` whose element at (i0, i1, ...) is f(i0, i1, ...). f takes 1..6 ir::Var
// (as many as the shape has dimensions) or one const std::vector<ir::Var>&.
template <typename F>
Tensor compute(std::vector<int64_t> shape, F f, std::string name = "compute",
               std::vector<std::string> axis_names = {}) {
  constexpr int n = detail::var_arity<F>();
  if constexpr (n > 0) detail::check_arity(name, n, shape.size());
  FComputeMulti body = [&f](const std::vector<ir::Var>& v) {
    return std::vector<ir::Expr>{detail::invoke_indexed(f, v)};
  };
  return make_compute(std::move(shape), body, std::move(name), std::move(axis_names)).output(0);
}

// Several tensors computed by one operation over the same index space: f returns one Expr per
// output (e.g. argmax as a 2-slot reduction over (index, value)).
template <typename F>
std::vector<Tensor> compute_multi(std::vector<int64_t> shape, F f, std::string name = "compute",
                                  std::vector<std::string> axis_names = {}) {
  constexpr int n = detail::var_arity<F>();
  if constexpr (n > 0) detail::check_arity(name, n, shape.size());
  FComputeMulti body = [&f](const std::vector<ir::Var>& v) {
    return std::vector<ir::Expr>(detail::invoke_indexed(f, v));
  };
  Operation op = make_compute(std::move(shape), body, std::move(name), std::move(axis_names));
  std::vector<Tensor> out;
  for (int i = 0; i < op.num_outputs(); ++i) out.push_back(op.output(i));
  return out;
}

}  // namespace kiln::te
