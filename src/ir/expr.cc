#include "kiln/ir/expr.h"

#include <cmath>
#include <limits>

#include "kiln/support/error.h"

namespace kiln::ir {

const char* kind_name(ExprKind k) {
  switch (k) {
    case ExprKind::IntImm: return "IntImm";
    case ExprKind::FloatImm: return "FloatImm";
    case ExprKind::StringImm: return "StringImm";
    case ExprKind::Var: return "Var";
    case ExprKind::Add: return "Add";
    case ExprKind::Sub: return "Sub";
    case ExprKind::Mul: return "Mul";
    case ExprKind::Div: return "Div";
    case ExprKind::Mod: return "Mod";
    case ExprKind::FloorDiv: return "FloorDiv";
    case ExprKind::FloorMod: return "FloorMod";
    case ExprKind::Min: return "Min";
    case ExprKind::Max: return "Max";
    case ExprKind::EQ: return "EQ";
    case ExprKind::NE: return "NE";
    case ExprKind::LT: return "LT";
    case ExprKind::LE: return "LE";
    case ExprKind::GT: return "GT";
    case ExprKind::GE: return "GE";
    case ExprKind::And: return "And";
    case ExprKind::Or: return "Or";
    case ExprKind::Not: return "Not";
    case ExprKind::Select: return "Select";
    case ExprKind::Cast: return "Cast";
    case ExprKind::Ramp: return "Ramp";
    case ExprKind::Broadcast: return "Broadcast";
    case ExprKind::Let: return "Let";
    case ExprKind::Call: return "Call";
    case ExprKind::BufferLoad: return "BufferLoad";
    case ExprKind::ProducerLoad: return "ProducerLoad";
    case ExprKind::Reduce: return "Reduce";
  }
  return "?";
}

Expr::Expr(int value) : Expr(make_int(DataType::i32(), value)) {}
Expr::Expr(int64_t value) : Expr(make_int(DataType::i64(), value)) {}
Expr::Expr(float value) : Expr(make_float(DataType::f32(), value)) {}
Expr::Expr(double value) : Expr(make_float(DataType::f64(), value)) {}

Var::Var(std::string name, DataType t) : Expr(std::make_shared<VarNode>(std::move(name), t)) {}

IterVar IterVar::make(Var v, Range dom, IterKind kind, std::string thread_tag) {
  KILN_CHECK(v.defined());
  auto n = std::make_shared<IterVarNode>();
  n->var = std::move(v);
  n->dom = std::move(dom);
  n->iter_kind = kind;
  n->thread_tag = std::move(thread_tag);
  return IterVar(std::move(n));
}

Buffer Buffer::make(std::string name, DataType dtype, std::vector<Expr> shape, std::string scope) {
  KILN_USER_CHECK(dtype.is_scalar()) << "buffer '" << name << "' must have a scalar element type, got "
                                     << dtype.str();
  for (const Expr& e : shape) {
    KILN_USER_CHECK(e.defined() && e.dtype().is_integer() && e.dtype().is_scalar())
        << "buffer '" << name << "' has a non-integer extent";
  }
  auto n = std::make_shared<BufferNode>();
  n->data = Var(name, DataType::handle());
  n->name = std::move(name);
  n->dtype = dtype;
  n->shape = std::move(shape);
  n->scope = std::move(scope);
  return Buffer(std::move(n));
}

int64_t Buffer::num_elements() const {
  int64_t n = 1;
  for (const Expr& e : get()->shape) {
    auto c = as_const_int(e);
    KILN_CHECK(c) << "buffer '" << get()->name << "' has a non-constant extent";
    n *= *c;
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Constants

Expr make_int(DataType t, int64_t v) {
  if (t.is_floating()) return make_float(t, static_cast<double>(v));
  KILN_CHECK(t.is_integer() || t.is_bool()) << "make_int of type " << t.str();
  if (t.is_bool()) v = v != 0;
  Expr s(std::make_shared<IntImmNode>(t.element_of(), v));
  return t.is_vector() ? broadcast(s, t.lanes) : s;
}

Expr make_float(DataType t, double v) {
  if (!t.is_floating()) return make_int(t, static_cast<int64_t>(v));
  Expr s(std::make_shared<FloatImmNode>(t.element_of(), v));
  return t.is_vector() ? broadcast(s, t.lanes) : s;
}

Expr make_const(DataType t, double v) {
  return t.is_floating() ? make_float(t, v) : make_int(t, static_cast<int64_t>(v));
}

Expr make_zero(DataType t) { return make_const(t, 0); }

Expr make_string(std::string s) { return Expr(std::make_shared<StringImmNode>(std::move(s))); }

Expr max_value(DataType t) {
  DataType e = t.element_of();
  if (e.is_bool()) return make_int(t, 1);
  if (e.is_int()) return make_int(t, e.bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (e.bits - 1)) - 1);
  if (e.is_uint()) return make_int(t, e.bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << e.bits) - 1);
  if (e.is_bfloat()) return make_float(t, 3.38953139e38);
  if (e.bits == 16) return make_float(t, 65504.0);
  if (e.bits == 32) return make_float(t, std::numeric_limits<float>::max());
  return make_float(t, std::numeric_limits<double>::max());
}

Expr min_value(DataType t) {
  DataType e = t.element_of();
  if (e.is_bool() || e.is_uint()) return make_int(t, 0);
  if (e.is_int()) return make_int(t, e.bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (e.bits - 1)));
  if (e.is_bfloat()) return make_float(t, -3.38953139e38);
  if (e.bits == 16) return make_float(t, -65504.0);
  if (e.bits == 32) return make_float(t, std::numeric_limits<float>::lowest());
  return make_float(t, std::numeric_limits<double>::lowest());
}

std::optional<int64_t> as_const_int(const Expr& e) {
  if (!e.defined()) return std::nullopt;
  if (auto* i = e.as<IntImmNode>()) return i->value;
  if (auto* b = e.as<BroadcastNode>()) return as_const_int(b->value);
  return std::nullopt;
}

std::optional<double> as_const_float(const Expr& e) {
  if (!e.defined()) return std::nullopt;
  if (auto* f = e.as<FloatImmNode>()) return f->value;
  if (auto* b = e.as<BroadcastNode>()) return as_const_float(b->value);
  return std::nullopt;
}

bool is_const_int(const Expr& e, int64_t value) {
  auto c = as_const_int(e);
  return c && *c == value;
}
bool is_zero(const Expr& e) { return is_const_int(e, 0) || as_const_float(e) == 0.0; }
bool is_one(const Expr& e) { return is_const_int(e, 1) || as_const_float(e) == 1.0; }

// ---------------------------------------------------------------------------------------------
// Binary operators

namespace {

bool is_literal(const Expr& e) { return as_const_int(e) || as_const_float(e); }

// Brings a and b to one type: a literal adopts the other side's type, a scalar next to a vector
// is broadcast. Anything else that differs is a type error.
void unify(ExprKind k, Expr& a, Expr& b) {
  KILN_USER_CHECK(a.defined() && b.defined()) << kind_name(k) << ": undefined operand";
  if (a.dtype() == b.dtype()) return;
  DataType ta = a.dtype(), tb = b.dtype();
  if (ta.element_of() != tb.element_of()) {
    if (is_literal(b) && !is_literal(a)) {
      b = as_const_int(b) ? make_const(ta.element_of(), static_cast<double>(*as_const_int(b)))
                          : make_const(ta.element_of(), *as_const_float(b));
    } else if (is_literal(a) && !is_literal(b)) {
      a = as_const_int(a) ? make_const(tb.element_of(), static_cast<double>(*as_const_int(a)))
                          : make_const(tb.element_of(), *as_const_float(a));
    } else if (is_literal(a) && is_literal(b)) {
      // Two literals: the wider / floating one wins.
      bool b_wins = (tb.is_floating() && !ta.is_floating()) || (tb.is_floating() == ta.is_floating() && tb.bits > ta.bits);
      if (b_wins) a = cast(tb.element_of(), a); else b = cast(ta.element_of(), b);
    }
  }
  ta = a.dtype(), tb = b.dtype();
  if (ta.lanes != tb.lanes) {
    if (ta.is_scalar()) a = broadcast(a, tb.lanes);
    else if (tb.is_scalar()) b = broadcast(b, ta.lanes);
  }
  KILN_USER_CHECK(a.dtype() == b.dtype())
      << kind_name(k) << ": operand types differ (" << a.dtype().str() << " vs " << b.dtype().str() << ")";
}

int64_t floordiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floormod_i(int64_t a, int64_t b) { return a - floordiv_i(a, b) * b; }

// Folds two scalar integer constants; returns an undefined Expr when it cannot.
Expr fold_int(ExprKind k, DataType t, int64_t x, int64_t y) {
  DataType bt = DataType::boolean();
  switch (k) {
    case ExprKind::Add: return make_int(t, x + y);
    case ExprKind::Sub: return make_int(t, x - y);
    case ExprKind::Mul: return make_int(t, x * y);
    case ExprKind::Div: return y == 0 ? Expr() : make_int(t, x / y);
    case ExprKind::Mod: return y == 0 ? Expr() : make_int(t, x % y);
    case ExprKind::FloorDiv: return y == 0 ? Expr() : make_int(t, floordiv_i(x, y));
    case ExprKind::FloorMod: return y == 0 ? Expr() : make_int(t, floormod_i(x, y));
    case ExprKind::Min: return make_int(t, std::min(x, y));
    case ExprKind::Max: return make_int(t, std::max(x, y));
    case ExprKind::EQ: return make_int(bt, x == y);
    case ExprKind::NE: return make_int(bt, x != y);
    case ExprKind::LT: return make_int(bt, x < y);
    case ExprKind::LE: return make_int(bt, x <= y);
    case ExprKind::GT: return make_int(bt, x > y);
    case ExprKind::GE: return make_int(bt, x >= y);
    case ExprKind::And: return make_int(bt, x && y);
    case ExprKind::Or: return make_int(bt, x || y);
    default: return Expr();
  }
}

}  // namespace

Expr make_binary(ExprKind k, Expr a, Expr b) {
  KILN_CHECK(is_binary(k)) << kind_name(k) << " is not a binary kind";
  unify(k, a, b);
  DataType t = a.dtype();
  if (k == ExprKind::And || k == ExprKind::Or) {
    KILN_USER_CHECK(t.element_of().is_bool()) << kind_name(k) << " needs bool operands, got " << t.str();
  } else {
    KILN_USER_CHECK((!t.is_handle() && !t.element_of().is_bool()) || is_comparison(k))
        << kind_name(k) << " is not defined on " << t.str();
  }
  if (k == ExprKind::FloorDiv || k == ExprKind::FloorMod || k == ExprKind::Mod) {
    KILN_USER_CHECK(t.element_of().is_integer()) << kind_name(k) << " needs integer operands, got " << t.str();
  }
  if (t.is_scalar()) {
    auto x = a.as<IntImmNode>(), y = b.as<IntImmNode>();
    if (x && y) {
      Expr folded = fold_int(k, t, x->value, y->value);
      if (folded.defined()) return folded;
    }
  }
  DataType rt = is_comparison(k) ? DataType::boolean(t.lanes) : t;
  return Expr(std::make_shared<BinaryNode>(k, rt, std::move(a), std::move(b)));
}

Expr add(Expr a, Expr b) { return make_binary(ExprKind::Add, std::move(a), std::move(b)); }
Expr sub(Expr a, Expr b) { return make_binary(ExprKind::Sub, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return make_binary(ExprKind::Mul, std::move(a), std::move(b)); }
Expr div(Expr a, Expr b) {
  unify(ExprKind::Div, a, b);
  return a.dtype().is_integer() ? floordiv(a, b) : make_binary(ExprKind::Div, a, b);
}
Expr truncdiv(Expr a, Expr b) { return make_binary(ExprKind::Div, std::move(a), std::move(b)); }
Expr truncmod(Expr a, Expr b) { return make_binary(ExprKind::Mod, std::move(a), std::move(b)); }
Expr floordiv(Expr a, Expr b) { return make_binary(ExprKind::FloorDiv, std::move(a), std::move(b)); }
Expr floormod(Expr a, Expr b) { return make_binary(ExprKind::FloorMod, std::move(a), std::move(b)); }
Expr min(Expr a, Expr b) { return make_binary(ExprKind::Min, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return make_binary(ExprKind::Max, std::move(a), std::move(b)); }
Expr eq(Expr a, Expr b) { return make_binary(ExprKind::EQ, std::move(a), std::move(b)); }
Expr ne(Expr a, Expr b) { return make_binary(ExprKind::NE, std::move(a), std::move(b)); }
Expr lt(Expr a, Expr b) { return make_binary(ExprKind::LT, std::move(a), std::move(b)); }
Expr le(Expr a, Expr b) { return make_binary(ExprKind::LE, std::move(a), std::move(b)); }
Expr gt(Expr a, Expr b) { return make_binary(ExprKind::GT, std::move(a), std::move(b)); }
Expr ge(Expr a, Expr b) { return make_binary(ExprKind::GE, std::move(a), std::move(b)); }
Expr logical_and(Expr a, Expr b) { return make_binary(ExprKind::And, std::move(a), std::move(b)); }
Expr logical_or(Expr a, Expr b) { return make_binary(ExprKind::Or, std::move(a), std::move(b)); }

Expr logical_not(Expr a) {
  KILN_USER_CHECK(a.defined() && a.dtype().element_of().is_bool()) << "Not needs a bool operand";
  if (auto c = a.as<IntImmNode>()) return make_int(DataType::boolean(), !c->value);
  return Expr(std::make_shared<NotNode>(a.dtype(), std::move(a)));
}

Expr select(Expr cond, Expr t, Expr f) {
  KILN_USER_CHECK(cond.defined() && cond.dtype().element_of().is_bool())
      << "Select condition must be bool, got " << (cond.defined() ? cond.dtype().str() : "undefined");
  unify(ExprKind::Select, t, f);
  if (cond.dtype().lanes != t.dtype().lanes) {
    KILN_USER_CHECK(cond.dtype().is_scalar()) << "Select condition lanes differ from its values";
  }
  DataType type = t.dtype();
  return Expr(std::make_shared<SelectNode>(type, std::move(cond), std::move(t), std::move(f)));
}

Expr cast(DataType t, Expr v) {
  KILN_USER_CHECK(v.defined()) << "Cast of an undefined expression";
  if (v.dtype() == t) return v;
  if (t.is_vector() && v.dtype().is_scalar()) return broadcast(cast(t.element_of(), v), t.lanes);
  KILN_USER_CHECK(v.dtype().lanes == t.lanes)
      << "Cast from " << v.dtype().str() << " to " << t.str() << " changes the lanes";
  if (t.is_scalar()) {
    if (auto i = v.as<IntImmNode>()) return make_const(t, static_cast<double>(i->value));
    if (auto f = v.as<FloatImmNode>(); f && t.is_floating()) return make_float(t, f->value);
  }
  return Expr(std::make_shared<CastNode>(t, std::move(v)));
}

Expr ramp(Expr base, Expr stride, int lanes) {
  KILN_USER_CHECK(lanes > 1) << "Ramp needs at least 2 lanes";
  unify(ExprKind::Ramp, base, stride);
  KILN_USER_CHECK(base.dtype().is_scalar() && base.dtype().is_integer()) << "Ramp base must be a scalar integer";
  DataType t = base.dtype().with_lanes(lanes);
  return Expr(std::make_shared<RampNode>(t, std::move(base), std::move(stride), lanes));
}

Expr broadcast(Expr value, int lanes) {
  KILN_USER_CHECK(value.defined() && value.dtype().is_scalar()) << "Broadcast of a non-scalar";
  if (lanes == 1) return value;
  DataType t = value.dtype().with_lanes(lanes);
  return Expr(std::make_shared<BroadcastNode>(t, std::move(value), lanes));
}

Expr let(Var v, Expr value, Expr body) {
  KILN_USER_CHECK(v.dtype() == value.dtype()) << "Let of '" << v.name() << "': variable is " << v.dtype().str()
                                              << " but value is " << value.dtype().str();
  DataType t = body.dtype();
  return Expr(std::make_shared<LetNode>(t, std::move(v), std::move(value), std::move(body)));
}

Expr make_intrinsic(const std::string& name, std::vector<Expr> args) {
  KILN_USER_CHECK(!args.empty()) << "intrinsic '" << name << "' needs arguments";
  DataType t = name == "isnan" ? DataType::boolean(args[0].dtype().lanes)
             : name == "address_of" ? DataType::handle()
                                    : args[0].dtype();
  return make_intrinsic(t, name, std::move(args));
}

Expr make_intrinsic(DataType t, const std::string& name, std::vector<Expr> args) {
  for (const Expr& a : args) KILN_USER_CHECK(a.defined()) << "intrinsic '" << name << "' has an undefined argument";
  return Expr(std::make_shared<CallNode>(t, name, std::move(args), CallKind::PureIntrinsic));
}

Expr int8_dot(Expr acc, Expr a, Expr b) {
  const int lanes = acc.dtype().lanes, group = a.dtype().lanes;
  KILN_USER_CHECK(acc.dtype() == DataType::i32(lanes)) << "int8_dot: the accumulator must be int32, got "
                                                       << acc.dtype().str();
  const bool bytes = a.dtype().bits == 8 && a.dtype().is_integer() && group == 4;
  KILN_USER_CHECK(bytes || a.dtype() == DataType::i16(2))
      << "int8_dot: a must be 4 lanes of int8 or uint8, or 2 of int16, got " << a.dtype().str();
  KILN_USER_CHECK(b.dtype() == DataType::i8(group * lanes) || (!bytes && b.dtype() == DataType::i16(group * lanes)))
      << "int8_dot: b must be " << group * lanes << " lanes of int8 (or int16 with an int16 a), got "
      << b.dtype().str();
  const DataType t = acc.dtype();
  return make_intrinsic(t, "int8_dot", {std::move(acc), std::move(a), std::move(b)});
}

Expr call_extern(DataType t, const std::string& name, std::vector<Expr> args) {
  return Expr(std::make_shared<CallNode>(t, name, std::move(args), CallKind::Extern));
}

Expr buffer_load(Buffer b, std::vector<Expr> indices) {
  KILN_USER_CHECK(b.defined()) << "load from an undefined buffer";
  KILN_USER_CHECK(!indices.empty()) << "load from buffer '" << b->name << "' without indices";
  int lanes = 1;
  for (const Expr& i : indices) {
    KILN_USER_CHECK(i.defined() && (i.dtype().is_integer())) << "buffer '" << b->name << "' indexed by a non-integer";
    lanes = std::max<int>(lanes, i.dtype().lanes);
  }
  DataType t = b->dtype.with_lanes(lanes);
  return Expr(std::make_shared<BufferLoadNode>(t, std::move(b), std::move(indices)));
}

Expr producer_load(Producer p, std::vector<Expr> indices) {
  KILN_USER_CHECK(p) << "load from an undefined tensor";
  KILN_USER_CHECK(indices.size() == p->shape().size())
      << "tensor '" << p->name() << "' has " << p->shape().size() << " dimensions but is indexed with "
      << indices.size();
  for (const Expr& i : indices) {
    KILN_USER_CHECK(i.defined() && i.dtype().is_integer() && i.dtype().is_scalar())
        << "tensor '" << p->name() << "' indexed by a non-integer expression";
  }
  DataType t = p->dtype();
  return Expr(std::make_shared<ProducerLoadNode>(t, std::move(p), std::move(indices)));
}

CommReducer make_comm_reducer(std::vector<Var> lhs, std::vector<Var> rhs, std::vector<Expr> result,
                              std::vector<Expr> identity) {
  KILN_USER_CHECK(lhs.size() == rhs.size() && lhs.size() == result.size() && lhs.size() == identity.size() &&
                  !lhs.empty())
      << "reducer needs one lhs, rhs, result and identity per slot";
  auto n = std::make_shared<CommReducerNode>();
  n->lhs = std::move(lhs);
  n->rhs = std::move(rhs);
  n->result = std::move(result);
  n->identity = std::move(identity);
  return n;
}

namespace {
CommReducer one_slot(DataType t, Expr (*combine)(Expr, Expr), Expr identity) {
  Var x("x", t), y("y", t);
  return make_comm_reducer({x}, {y}, {combine(x, y)}, {std::move(identity)});
}
}  // namespace

CommReducer sum_reducer(DataType t) { return one_slot(t, add, make_zero(t)); }
CommReducer prod_reducer(DataType t) { return one_slot(t, mul, make_const(t, 1)); }
CommReducer max_reducer(DataType t) {
  Expr lowest = t.is_floating() ? make_float(t, -std::numeric_limits<double>::infinity()) : min_value(t);
  return one_slot(t, max, lowest);
}
CommReducer min_reducer(DataType t) {
  Expr highest = t.is_floating() ? make_float(t, std::numeric_limits<double>::infinity()) : max_value(t);
  return one_slot(t, min, highest);
}

Expr make_reduce(CommReducer combiner, std::vector<Expr> source, std::vector<IterVar> axis, Expr condition,
                 int value_index) {
  KILN_USER_CHECK(combiner && source.size() == combiner->lhs.size())
      << "reduction has " << source.size() << " sources but its reducer has "
      << (combiner ? combiner->lhs.size() : 0) << " slots";
  KILN_USER_CHECK(value_index >= 0 && value_index < static_cast<int>(source.size())) << "bad reduction value index";
  for (size_t i = 0; i < source.size(); ++i) {
    KILN_USER_CHECK(source[i].dtype() == combiner->lhs[i].dtype())
        << "reduction source " << i << " is " << source[i].dtype().str() << " but the reducer expects "
        << combiner->lhs[i].dtype().str();
  }
  for (const IterVar& iv : axis) {
    KILN_USER_CHECK(iv.defined() && iv->iter_kind == IterKind::Reduce)
        << "reduction over '" << (iv.defined() ? iv->var.name() : "?") << "', which is not a reduce axis";
  }
  if (!condition.defined()) condition = make_int(DataType::boolean(), 1);
  DataType t = source[value_index].dtype();
  return Expr(std::make_shared<ReduceNode>(t, std::move(combiner), std::move(source), std::move(axis),
                                           std::move(condition), value_index));
}

// Operators
Expr operator+(Expr a, Expr b) { return add(std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return sub(std::move(a), std::move(b)); }
Expr operator-(Expr a) {
  if (auto i = a.as<IntImmNode>()) return make_int(a.dtype(), -i->value);
  if (auto f = a.as<FloatImmNode>()) return make_float(a.dtype(), -f->value);
  DataType t = a.dtype();  // read before `a` is moved from: argument order is unspecified
  return sub(make_zero(t), std::move(a));
}
Expr operator*(Expr a, Expr b) { return mul(std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return div(std::move(a), std::move(b)); }
Expr operator%(Expr a, Expr b) { return floormod(std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return lt(std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return le(std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b) { return gt(std::move(a), std::move(b)); }
Expr operator>=(Expr a, Expr b) { return ge(std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) { return logical_and(std::move(a), std::move(b)); }
Expr operator||(Expr a, Expr b) { return logical_or(std::move(a), std::move(b)); }
Expr operator!(Expr a) { return logical_not(std::move(a)); }

}  // namespace kiln::ir
