// The Analyzer: what is known about variables, and the entry points that answer under it.
#include "arith_internal.h"
#include "kiln/ir/structural.h"

namespace kiln::ir::arith {

struct Analyzer::Impl : AnalyzerState {};

Analyzer::Analyzer() : impl_(std::make_unique<Impl>()) {}
Analyzer::~Analyzer() = default;
Analyzer::Analyzer(const Analyzer& o) : impl_(std::make_unique<Impl>(*o.impl_)) {}
Analyzer& Analyzer::operator=(const Analyzer& o) {
  if (this != &o) *impl_ = *o.impl_;
  return *this;
}

namespace {

IntBound range_bound(const AnalyzerState& st, const Range& r) {
  IntBound lo = compute_bound(st, nullptr, r.min);
  Expr last = rewrite_simplify(st, sub(add(r.min, r.extent), make_int(r.min.dtype(), 1)));
  IntBound hi = compute_bound(st, nullptr, last);
  IntBound b;
  b.min_value = lo.min_value;
  b.max_value = hi.max_value;
  return b;
}

}  // namespace

void Analyzer::bind(const Var& v, const Range& r) {
  KILN_USER_CHECK(v.defined()) << "Analyzer::bind: undefined variable";
  KILN_USER_CHECK(r.min.defined() && r.extent.defined())
      << "Analyzer::bind: the range of '" << v.name() << "' has an undefined min or extent";
  KILN_USER_CHECK(r.min.dtype().is_integer() && r.extent.dtype().is_integer())
      << "Analyzer::bind: the range of '" << v.name() << "' is not integer";
  Range sr(simplify(r.min), simplify(r.extent));
  // Computed before the entry changes: the new range may mention v's old binding.
  IntBound b = intersect(type_bound(v.dtype()), range_bound(*impl_, sr));
  VarInfo& info = impl_->vars[v.get()];
  info.var = v;
  info.range = sr;
  if (info.value.defined()) b = intersect(b, compute_bound(*impl_, nullptr, info.value));
  info.bound = b;
}

void Analyzer::bind_value(const Var& v, const Expr& value) {
  KILN_USER_CHECK(v.defined() && value.defined()) << "Analyzer::bind_value: undefined variable or value";
  KILN_USER_CHECK(v.dtype() == value.dtype())
      << "Analyzer::bind_value: '" << v.name() << "' has type " << v.dtype().str()
      << " but its value has type " << value.dtype().str();
  Expr sv = simplify(value);
  IntBound b = intersect(type_bound(v.dtype()), compute_bound(*impl_, nullptr, sv));
  VarInfo& info = impl_->vars[v.get()];
  info.var = v;
  info.value = sv;
  if (info.range) b = intersect(b, range_bound(*impl_, *info.range));
  info.bound = b;
}

IntBound Analyzer::const_int_bound(const Expr& e) const {
  KILN_USER_CHECK(e.defined()) << "const_int_bound of an undefined expression";
  // The simplified form cancels what the raw form cannot see (x - x); both bounds hold, so
  // their intersection does too.
  IntBound raw = compute_bound(*impl_, nullptr, e);
  if (!e.dtype().is_int()) return raw;
  return intersect(raw, compute_bound(*impl_, nullptr, simplify(e)));
}

bool Analyzer::can_prove(const Expr& cond) const {
  KILN_USER_CHECK(cond.defined()) << "can_prove of an undefined condition";
  KILN_USER_CHECK(cond.dtype().is_bool())
      << "can_prove expects a bool condition, got " << cond.dtype().str();
  Expr s = simplify(cond);
  if (auto v = as_const_int(s)) return *v != 0;
  if (const auto* op = s.as<BinaryNode>()) {
    if (op->kind == ExprKind::And) return can_prove(op->a) && can_prove(op->b);
    if (op->kind == ExprKind::Or) return can_prove(op->a) || can_prove(op->b);
  }
  return false;
}

Expr Analyzer::simplify(const Expr& e) const { return rewrite_simplify(*impl_, e); }

IntervalSet Analyzer::eval_interval(const Expr& e, const VarMap<IntervalSet>& dom) const {
  KILN_USER_CHECK(e.defined()) << "eval_interval of an undefined expression";
  return eval_interval_impl(*impl_, e, dom);
}

Expr simplify(const Expr& e) { return Analyzer().simplify(e); }

IntervalSet IntervalSet::from_range(const Range& r) {
  KILN_USER_CHECK(r.min.defined() && r.extent.defined()) << "IntervalSet::from_range: undefined range";
  Expr lo = simplify(r.min);
  Expr hi = simplify(sub(add(r.min, r.extent), make_int(r.min.dtype(), 1)));
  if (structural_equal(lo, hi)) return single_point(lo);
  return {lo, hi};
}

Range IntervalSet::to_range() const {
  KILN_USER_CHECK(is_bounded()) << "IntervalSet::to_range: the interval is unbounded on the "
                                << (min.defined() ? "max" : "min") << " side";
  return Range(min, simplify(add(sub(max, min), make_int(max.dtype(), 1))));
}

}  // namespace kiln::ir::arith
