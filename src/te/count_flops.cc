#include "kiln/te/count_flops.h"

#include <optional>
#include <set>

#include "kiln/ir/functor.h"
#include "kiln/te/operation.h"

namespace kiln::te {
namespace {

// Whether a stage computes anything in floating point: copies, padding selects and layout
// changes (index arithmetic only) are data movement, not FLOPs.
bool has_float_arithmetic(const std::vector<ir::Expr>& body) {
  bool found = false;
  for (const ir::Expr& e : body)
    ir::post_order_visit(e, [&](const ir::Expr& x) {
      const bool op = ir::is_arith(x.kind()) || x.kind() == ir::ExprKind::Call;
      found = found || (op && x.dtype().is_floating());
    });
  return found;
}

}  // namespace

double count_flops(const std::vector<Tensor>& outputs) {
  double flops = 0;
  std::set<const OperationNode*> seen;
  std::vector<Operation> todo;
  for (const Tensor& t : outputs) todo.push_back(t.op());
  while (!todo.empty()) {
    Operation op = todo.back();
    todo.pop_back();
    if (!seen.insert(op.get()).second) continue;
    for (const Tensor& t : op.input_tensors()) todo.push_back(t.op());
    const auto* c = op.as<ComputeOpNode>();
    if (!c) continue;
    double elems = 1;
    for (int64_t d : c->shape) elems *= static_cast<double>(d);
    double terms = 1;
    for (const ir::IterVar& r : c->reduce_axis) {
      // A symbolic extent counts once: graph values have static shapes, so it does not occur there.
      std::optional<int64_t> ext = ir::as_const_int(r->dom.extent);
      terms *= ext ? static_cast<double>(*ext) : 1.0;
    }
    if (c->is_reduction())
      flops += 2 * elems * terms;
    else if (has_float_arithmetic(c->body))
      flops += elems;
  }
  return flops;
}

}  // namespace kiln::te
