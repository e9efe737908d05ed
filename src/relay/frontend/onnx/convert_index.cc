// Indexed writes, one-hot encoding, running sums and top-k.
#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

Converter scatter_elements(bool has_reduction) {
  return [has_reduction](NodeContext& c) -> std::vector<Expr> {
    const TensorTypeNode& x = c.input_type(0, "data");
    Attrs a;
    a.set_int("axis", normalize_axis_for(c.attr_int("axis", 0), x.rank(), c));
    a.set_str("reduction", has_reduction ? c.attr_str("reduction", "none") : "none");
    return {c.call("scatter_elements", {c.input(0), c.input(1, "indices"), c.input(2, "updates")}, a)};
  };
}

std::vector<Expr> scatter_nd(NodeContext& c) {
  Attrs a = Attrs().set_str("reduction", c.attr_str("reduction", "none"));
  return {c.call("scatter_nd", {c.input(0, "data"), c.input(1, "indices"), c.input(2, "updates")}, a)};
}

std::vector<Expr> one_hot(NodeContext& c) {
  const TensorTypeNode& idx = c.input_type(0, "indices");
  HostTensor depth = c.require_const(1, "depth");
  KILN_USER_CHECK(depth.numel() == 1) << "depth must be a scalar, got " << depth.str(4);
  int64_t axis = normalize_axis_for(c.attr_int("axis", -1), idx.rank() + 1, c);
  Attrs a = Attrs().set_int("depth", static_cast<int64_t>(depth.double_at(0))).set_int("axis", axis);
  return {c.call("one_hot", {c.input(0), c.input(2, "values")}, a)};
}

// CumSum and CumProd: the running sum or product along an axis (a scalar constant input).
Converter cumulative(const std::string& op) {
  return [op](NodeContext& c) -> std::vector<Expr> {
    const TensorTypeNode& x = c.input_type(0);
    HostTensor axis = c.require_const(1, "axis");
    KILN_USER_CHECK(axis.numel() == 1) << "axis must be a scalar, got " << axis.str(4);
    Attrs a;
    a.set_int("axis", normalize_axis_for(axis.int64_at(0), x.rank(), c));
    a.set_int("exclusive", c.attr_int("exclusive", 0)).set_int("reverse", c.attr_int("reverse", 0));
    return {c.call(op, {c.input(0)}, a)};
  };
}

std::vector<Expr> topk(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  int64_t k = c.opset() >= 10 ? c.const_ints(1, "K").at(0) : c.attr_int("k");
  Attrs a;
  a.set_int("k", k).set_int("axis", normalize_axis_for(c.attr_int("axis", -1), x.rank(), c));
  a.set_int("largest", c.attr_int("largest", 1)).set_int("sorted", c.attr_int("sorted", 1));
  Expr both = c.call("topk", {c.input(0)}, a);
  return {make_tuple_get_item(both, 0), make_tuple_get_item(both, 1)};
}

}  // namespace

void register_index_converters(ConverterTable& t) {
  t["Scatter"] = scatter_elements(false);  // opsets 9-10, renamed ScatterElements in 11
  t["ScatterElements"] = scatter_elements(true);
  t["ScatterND"] = scatter_nd;
  t["OneHot"] = one_hot;
  t["CumSum"] = cumulative("cumsum");
  t["CumProd"] = cumulative("cumprod");
  t["TopK"] = topk;
}

}  // namespace kiln::relay::onnx_frontend
