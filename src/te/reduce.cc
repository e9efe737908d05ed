// Reduce axes and reducers of te.
#include "kiln/te/reduce.h"

#include <limits>
#include <unordered_set>

#include "kiln/support/error.h"

namespace kiln::te {
namespace {

void check_reduction_args(const char* what, const std::vector<ir::Expr>& sources,
                          const std::vector<ir::IterVar>& axis, const ir::Expr& condition) {
  KILN_USER_CHECK(!axis.empty()) << what << ": no reduce axis given";
  std::unordered_set<const ir::IterVarNode*> seen;
  for (const ir::IterVar& iv : axis) {
    KILN_USER_CHECK(iv.defined()) << what << ": undefined reduce axis";
    KILN_USER_CHECK(iv->iter_kind == ir::IterKind::Reduce)
        << what << ": axis '" << iv->var.name() << "' is not a reduce axis (make it with te::reduce_axis)";
    KILN_USER_CHECK(seen.insert(iv.get()).second) << what << ": reduce axis '" << iv->var.name() << "' is listed twice";
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    KILN_USER_CHECK(sources[i].defined()) << what << ": source " << i << " is undefined";
    KILN_USER_CHECK(sources[i].dtype().is_scalar() && !sources[i].dtype().is_handle())
        << what << ": source " << i << " has type " << sources[i].dtype().str() << ", not a scalar number";
  }
  if (condition.defined()) {
    KILN_USER_CHECK(condition.dtype() == ir::DataType::boolean())
        << what << ": the condition has type " << condition.dtype().str() << ", not bool";
  }
}

ir::Expr one_slot(const char* what, ir::CommReducer (*make)(ir::DataType), ir::Expr source,
                  std::vector<ir::IterVar> axis, ir::Expr condition) {
  check_reduction_args(what, {source}, axis, condition);
  KILN_USER_CHECK(!source.dtype().is_bool())
      << what << ": source has type bool; cast it to a number first";
  ir::DataType t = source.dtype();
  return ir::make_reduce(make(t), {std::move(source)}, std::move(axis), std::move(condition), 0);
}

}  // namespace

IterVar reduce_axis(int64_t extent, std::string name) {
  KILN_USER_CHECK(extent > 0 && extent <= std::numeric_limits<int32_t>::max())
      << "reduce_axis '" << name << "': extent " << extent << " must be positive (and fit int32)";
  return reduce_axis(ir::Range(0, static_cast<int>(extent)), std::move(name));
}

IterVar reduce_axis(const ir::Range& range, std::string name) {
  auto mn = ir::as_const_int(range.min), ext = ir::as_const_int(range.extent);
  KILN_USER_CHECK(mn && ext) << "reduce_axis '" << name << "': the range must be constant";
  KILN_USER_CHECK(*ext > 0) << "reduce_axis '" << name << "': extent " << *ext << " must be positive";
  ir::Range r(ir::make_int(ir::DataType::i32(), *mn), ir::make_int(ir::DataType::i32(), *ext));
  return IterVar(ir::IterVar::make(ir::Var(std::move(name)), r, ir::IterKind::Reduce));
}

ir::Expr sum(ir::Expr source, std::vector<ir::IterVar> axis, ir::Expr condition) {
  return one_slot("te::sum", ir::sum_reducer, std::move(source), std::move(axis), std::move(condition));
}
ir::Expr max(ir::Expr source, std::vector<ir::IterVar> axis, ir::Expr condition) {
  return one_slot("te::max", ir::max_reducer, std::move(source), std::move(axis), std::move(condition));
}
ir::Expr min(ir::Expr source, std::vector<ir::IterVar> axis, ir::Expr condition) {
  return one_slot("te::min", ir::min_reducer, std::move(source), std::move(axis), std::move(condition));
}
ir::Expr prod(ir::Expr source, std::vector<ir::IterVar> axis, ir::Expr condition) {
  return one_slot("te::prod", ir::prod_reducer, std::move(source), std::move(axis), std::move(condition));
}

std::vector<ir::Expr> comm_reduce(const ir::CommReducer& reducer, std::vector<ir::Expr> sources,
                                  std::vector<ir::IterVar> axis, ir::Expr condition) {
  KILN_USER_CHECK(reducer != nullptr) << "te::comm_reduce: undefined reducer";
  check_reduction_args("te::comm_reduce", sources, axis, condition);
  KILN_USER_CHECK(sources.size() == reducer->lhs.size())
      << "te::comm_reduce: " << sources.size() << " sources for a reducer with " << reducer->lhs.size() << " slots";
  for (size_t i = 0; i < sources.size(); ++i) {
    KILN_USER_CHECK(sources[i].dtype() == reducer->lhs[i].dtype())
        << "te::comm_reduce: source " << i << " has type " << sources[i].dtype().str() << " but reducer slot " << i
        << " is " << reducer->lhs[i].dtype().str() << " (body dtype mismatch)";
  }
  // One condition object shared by every slot, so they read as one reduction.
  if (!condition.defined()) condition = ir::make_int(ir::DataType::boolean(), 1);
  std::vector<ir::Expr> out;
  for (size_t i = 0; i < sources.size(); ++i) {
    out.push_back(ir::make_reduce(reducer, sources, axis, condition, static_cast<int>(i)));
  }
  return out;
}

ir::CommReducer argmax_reducer(ir::DataType index_type, ir::DataType value_type) {
  ir::Var i0("i0", index_type), v0("v0", value_type), i1("i1", index_type), v1("v1", value_type);
  // Ties go to the smaller index, which keeps the combiner commutative and the result
  // independent of the reduction order.
  ir::Expr take_rhs = v1 > v0 || (ir::eq(v1, v0) && i1 < i0);
  ir::Expr lowest = value_type.is_floating()
                        ? ir::make_float(value_type, -std::numeric_limits<double>::infinity())
                        : ir::min_value(value_type);
  return ir::make_comm_reducer({i0, v0}, {i1, v1}, {ir::select(take_rhs, i1, i0), ir::select(take_rhs, v1, v0)},
                               {ir::make_int(index_type, -1), lowest});
}

}  // namespace kiln::te
