// placeholder and compute: building operations and validating what users wrote in them.
#include <limits>
#include <unordered_set>

#include "ir/arith.h"
#include "kiln/ir/functor.h"
#include "kiln/support/error.h"
#include "kiln/te/operation.h"

namespace kiln::te {
namespace {

void check_extents(const std::string& what, const std::string& name, const std::vector<int64_t>& shape) {
  KILN_USER_CHECK(!shape.empty()) << what << " '" << name
                                  << "': the shape must have at least one dimension (use {1} for a scalar)";
  for (size_t d = 0; d < shape.size(); ++d) {
    KILN_USER_CHECK(shape[d] > 0) << what << " '" << name << "': extent of dimension " << d << " is " << shape[d]
                                  << "; extents must be positive";
    // Index arithmetic is int32 (loop variables are int32).
    KILN_USER_CHECK(shape[d] <= std::numeric_limits<int32_t>::max())
        << what << " '" << name << "': extent of dimension " << d << " (" << shape[d] << ") does not fit int32";
  }
}

// Every variable must be bound: a compute index, the axis of an enclosing reduction, or a let.
// Reductions may only be whole bodies (the lowering turns them into init + update loops).
class ScopeChecker : public ir::ExprVisitor {
 public:
  ScopeChecker(const std::string& op_name, const std::vector<ir::IterVar>& axis) : op_name_(op_name) {
    for (const ir::IterVar& iv : axis) bound_.insert(iv->var.get());
  }

  void check_body(const ir::Expr& body) {
    if (auto* r = body.as<ir::ReduceNode>()) {
      for (const ir::IterVar& iv : r->axis) bound_.insert(iv->var.get());
      for (const ir::Expr& s : r->source) visit(s);
      visit(r->condition);
      for (const ir::IterVar& iv : r->axis) bound_.erase(iv->var.get());
    } else {
      visit(body);
    }
  }

 protected:
  void visit_var(const ir::VarNode* v) override {
    KILN_USER_CHECK(bound_.count(v))
        << "compute '" << op_name_ << "': variable '" << v->name << "' is used outside a reduction over it "
        << "(a reduce_axis may appear only inside the te::sum/max/min/prod/comm_reduce that lists it; "
        << "other variables must be the compute's own indices)";
  }
  void visit_let(const ir::LetNode* op) override {
    visit(op->value);
    bool fresh = bound_.insert(op->var.get()).second;
    visit(op->body);
    if (fresh) bound_.erase(op->var.get());
  }
  void visit_reduce(const ir::ReduceNode*) override {
    KILN_THROW() << "compute '" << op_name_ << "': a reduction must be the whole body of the compute, "
                 << "not part of a larger expression (compute the reduction in its own stage)";
  }

 private:
  const std::string& op_name_;
  std::unordered_set<const ir::VarNode*> bound_;
};

// Loads inside a reduction that provably leave their tensor: the usual symptom of a reduce axis
// whose extent does not match the dimension it indexes. Branches of a select are skipped:
// they may legitimately name out-of-range points (padding) that the condition excludes.
class ReductionBoundsChecker : public ir::ExprVisitor {
 public:
  ReductionBoundsChecker(const std::string& op_name, const ir::arith::Analyzer& ana) : op_name_(op_name), ana_(ana) {}

 protected:
  void visit_select(const ir::SelectNode* op) override { visit(op->condition); }
  void visit_producer_load(const ir::ProducerLoadNode* op) override {
    std::vector<int64_t> shape = op->producer->shape();
    for (size_t d = 0; d < op->indices.size(); ++d) {
      ir::arith::IntBound b = ana_.const_int_bound(ana_.simplify(op->indices[d]));
      bool below = b.min_value != ir::arith::IntBound::kNegInf && b.min_value < 0;
      bool above = b.max_value != ir::arith::IntBound::kPosInf && b.max_value >= shape[d];
      KILN_USER_CHECK(!below && !above)
          << "compute '" << op_name_ << "': the reduction reads '" << op->producer->name() << "' at index " << d
          << " over [" << b.min_value << ", " << b.max_value << "], outside its extent " << shape[d]
          << " (shape mismatch: does a reduce axis have the wrong extent?)";
    }
    ExprVisitor::visit_producer_load(op);
  }

 private:
  const std::string& op_name_;
  const ir::arith::Analyzer& ana_;
};

void check_reductions(const std::string& name, const std::vector<ir::IterVar>& axis,
                      const std::vector<ir::Expr>& body) {
  auto* first = body[0].as<ir::ReduceNode>();
  for (size_t i = 0; i < body.size(); ++i) {
    auto* r = body[i].as<ir::ReduceNode>();
    KILN_USER_CHECK((r != nullptr) == (first != nullptr))
        << "compute '" << name << "': all bodies must be reductions with identical axes, or none "
        << "(body " << i << (r ? " is" : " is not") << " a reduction, body 0" << (first ? " is" : " is not") << ")";
    if (!r) continue;
    bool same_axes = r->axis.size() == first->axis.size();
    for (size_t a = 0; same_axes && a < r->axis.size(); ++a) same_axes = r->axis[a].same_as(first->axis[a]);
    bool same_sources = r->source.size() == first->source.size();
    for (size_t s = 0; same_sources && s < r->source.size(); ++s) same_sources = r->source[s].same_as(first->source[s]);
    bool same_condition = r->condition.same_as(first->condition) ||
                          (ir::is_const_int(r->condition, 1) && ir::is_const_int(first->condition, 1));
    KILN_USER_CHECK(same_axes && r->combiner == first->combiner && same_sources && same_condition)
        << "compute '" << name << "': all bodies must be reductions with identical axes, or none (body " << i
        << " reduces differently from body 0; build multi-output reductions with one te::comm_reduce call)";
    KILN_USER_CHECK(r->value_index == static_cast<int>(i))
        << "compute '" << name << "': body " << i << " is slot " << r->value_index
        << " of the reduction; bodies must list the slots in order";
  }
  if (!first) return;
  KILN_USER_CHECK(body.size() == first->source.size())
      << "compute '" << name << "': the reduction has " << first->source.size() << " slots but the compute has "
      << body.size() << " bodies (shape mismatch between the reducer and the outputs)";
  std::unordered_set<const ir::IterVarNode*> seen;
  for (const ir::IterVar& iv : first->axis) {
    KILN_USER_CHECK(seen.insert(iv.get()).second)
        << "compute '" << name << "': reduce axis '" << iv->var.name() << "' is listed twice";
  }
  ir::arith::Analyzer ana;
  for (const ir::IterVar& iv : axis) ana.bind(iv->var, iv->dom);
  for (const ir::IterVar& iv : first->axis) ana.bind(iv->var, iv->dom);
  ReductionBoundsChecker bounds(name, ana);
  for (const ir::Expr& s : first->source) bounds.visit(s);
}

}  // namespace

namespace detail {
void check_arity(const std::string& name, int arity, size_t ndim) {
  KILN_USER_CHECK(static_cast<size_t>(arity) == ndim)
      << "compute '" << name << "': the function takes " << arity << " index variables but the shape has " << ndim
      << " dimensions";
}
}  // namespace detail

Tensor placeholder(std::vector<int64_t> shape, ir::DataType dtype, std::string name) {
  check_extents("placeholder", name, shape);
  KILN_USER_CHECK(dtype.is_scalar() && !dtype.is_handle())
      << "placeholder '" << name << "': element type " << dtype.str() << " is not a scalar number or bool";
  return Operation(std::make_shared<PlaceholderOpNode>(std::move(name), std::move(shape), dtype)).output(0);
}

Operation make_compute(std::vector<int64_t> shape, const FComputeMulti& f, std::string name,
                       std::vector<std::string> axis_names) {
  check_extents("compute", name, shape);
  KILN_USER_CHECK(axis_names.empty() || axis_names.size() == shape.size())
      << "compute '" << name << "': " << axis_names.size() << " axis names for " << shape.size() << " dimensions";
  std::vector<ir::IterVar> axis;
  std::vector<ir::Var> vars;
  for (size_t d = 0; d < shape.size(); ++d) {
    ir::Var v(axis_names.empty() ? "i" + std::to_string(d) : axis_names[d]);
    vars.push_back(v);
    axis.push_back(ir::IterVar::make(v, ir::Range(0, static_cast<int>(shape[d])), ir::IterKind::DataPar));
  }
  std::vector<ir::Expr> body = f(vars);
  KILN_USER_CHECK(!body.empty()) << "compute '" << name << "': the function returned no expression";
  std::vector<ir::DataType> dtypes;
  for (size_t i = 0; i < body.size(); ++i) {
    KILN_USER_CHECK(body[i].defined()) << "compute '" << name << "': body " << i << " is undefined";
    ir::DataType t = body[i].dtype();
    KILN_USER_CHECK(t.is_scalar() && !t.is_handle())
        << "compute '" << name << "': body " << i << " has type " << t.str()
        << "; a tensor element must be a scalar number or bool";
    dtypes.push_back(t);
  }
  ScopeChecker scope(name, axis);
  for (const ir::Expr& b : body) scope.check_body(b);
  check_reductions(name, axis, body);
  std::vector<ir::IterVar> reduce_axis;
  if (auto* r = body[0].as<ir::ReduceNode>()) reduce_axis = r->axis;
  return Operation(std::make_shared<ComputeOpNode>(std::move(name), std::move(shape), std::move(dtypes),
                                                   std::move(axis), std::move(reduce_axis), std::move(body)));
}

}  // namespace kiln::te
