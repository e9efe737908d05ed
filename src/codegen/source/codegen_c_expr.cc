// The expression half of the GPU kernel printer (kernel_printer.h): expressions, fully
// parenthesized, with floor division, modulo and float min/max as preamble helpers; and vector IR
// printed lane by lane through scalar IR, vector loads read into registers before their statement
// (codegen_c.cc says why and when).
#include "kernel_printer.h"

namespace kiln::codegen::source::detail {

std::string KernelPrinter::literal_int(DataType t, int64_t v) {
  if (t.is_bool()) return v ? "true" : "false";
  if (t.bits == 64) {
    if (v == INT64_MIN) return fmt::format("({}(-9223372036854775807{} - 1))", cast_prefix(t), d_.int64_suffix());
    return fmt::format("(({}){}{}{})", type(t), v, t.is_uint() ? "U" : "", d_.int64_suffix());
  }
  if (t.is_int() && t.bits == 32) return v == INT32_MIN ? "(-2147483647 - 1)" : std::to_string(v);
  return fmt::format("(({}){}{})", type(t), v, t.is_uint() ? "U" : "");
}

std::string KernelPrinter::literal_float(DataType t, double v) {
  if (std::isinf(v)) return v > 0 ? d_.infinity(t) : "(-" + d_.infinity(t) + ")";
  if (std::isnan(v)) return d_.nan(t);
  if (t.bits == 64) return fmt::format("{:.17g}", v).find_first_of(".en") == std::string::npos
                               ? fmt::format("{:.17g}.0", v)
                               : fmt::format("{:.17g}", v);
  std::string s = fmt::format("{:.9g}", static_cast<float>(v));
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return "(" + s + "f)";
}

std::string KernelPrinter::helper(const std::string& op, DataType t) {
  std::string key = op + "_" + t.str();
  helpers_.insert(key);
  return "kiln_" + key;
}

std::string KernelPrinter::expr(const ir::Expr& e) {
  KILN_CHECK(e.dtype().is_scalar()) << "kernel '" << f_.name << "': vector " << ir::kind_name(e.kind())
                                    << " outside a vector store or let";
  std::string s = expr_unrounded(e);
  if (!bits16(e.dtype())) return s;
  const ExprKind k = e.kind();
  const bool computed = ir::is_arith(k) && k != ExprKind::Min && k != ExprKind::Max;
  return computed || k == ExprKind::Cast || k == ExprKind::Call || k == ExprKind::FloatImm ? round16(e.dtype(), s) : s;
}

std::string KernelPrinter::expr_unrounded(const ir::Expr& e) {
  switch (e.kind()) {
    case ExprKind::IntImm: return literal_int(e.dtype(), e.as<ir::IntImmNode>()->value);
    case ExprKind::FloatImm: return literal_float(e.dtype(), e.as<ir::FloatImmNode>()->value);
    case ExprKind::Var: return name_of(ir::Var(std::static_pointer_cast<const ir::VarNode>(e.node())));
    case ExprKind::Not: return "(!" + expr(e.as<ir::NotNode>()->a) + ")";
    case ExprKind::Select: {
      const auto* s = e.as<ir::SelectNode>();
      return "(" + expr(s->condition) + " ? " + expr(s->true_value) + " : " + expr(s->false_value) + ")";
    }
    case ExprKind::Cast: {
      const auto* c = e.as<ir::CastNode>();
      if (e.dtype().is_bool()) return "(" + expr(c->value) + " != 0)";
      return "((" + type(e.dtype()) + ")" + expr(c->value) + ")";
    }
    case ExprKind::Let: {
      const auto* l = e.as<ir::LetNode>();
      pending_.push_back(fmt::format("const {} {} = {};", type(l->var.dtype()), name_of(l->var), expr(l->value)));
      return expr(l->body);
    }
    case ExprKind::Call: return call(e.as<ir::CallNode>());
    case ExprKind::BufferLoad: {
      const auto* l = e.as<ir::BufferLoadNode>();
      KILN_CHECK(l->indices.size() == 1) << "kernel '" << f_.name << "': load of '" << l->buffer->name
                                         << "' is not flattened";
      std::string access;
      if (auto regs = registers_.find(l->buffer->data.get()); regs != registers_.end()) {
        access = register_lane(regs->second, l);
      } else {
        const std::string buf = name_of(l->buffer->data), index = expr(l->indices[0]);
        const Shadow* sh = shadow(l->buffer);
        access = sh ? helper("rcload", l->buffer->dtype) + "(" + buf + ", " + race_args(*sh, index) + ")"
                    : buf + "[" + index + "]";
      }
      if (bits16(l->buffer->dtype)) return from_bits16(l->buffer->dtype, access);
      return l->buffer->dtype.is_bool() ? "(" + access + " != 0)" : access;
    }
    default: break;
  }
  if (const auto* b = e.as<ir::BinaryNode>()) return binary(b);
  KILN_THROW() << "kernel '" << f_.name << "': " << ir::kind_name(e.kind()) << " reached GPU code generation";
  return "";
}

std::string KernelPrinter::binary(const ir::BinaryNode* b) {
  DataType t = b->a.dtype();
  std::string a = expr(b->a), c = expr(b->b);
  auto infix = [&](const char* op) { return "(" + a + " " + op + " " + c + ")"; };
  switch (b->kind) {
    case ExprKind::Add: return infix("+");
    case ExprKind::Sub: return infix("-");
    case ExprKind::Mul: return infix("*");
    case ExprKind::Div: return infix("/");
    case ExprKind::Mod:
      if (t.is_floating()) return d_.math_function("fmod", t) + "(" + a + ", " + c + ")";
      return infix("%");
    case ExprKind::FloorDiv:
    case ExprKind::FloorMod: {
      const bool div = b->kind == ExprKind::FloorDiv;
      if (t.is_uint()) return infix(div ? "/" : "%");
      return helper(div ? "floordiv" : "floormod", t) + "(" + a + ", " + c + ")";
    }
    case ExprKind::Min:
    case ExprKind::Max: {
      const bool mn = b->kind == ExprKind::Min;
      if (t.is_bool()) return infix(mn ? "&&" : "||");
      return helper(mn ? "min" : "max", t) + "(" + a + ", " + c + ")";
    }
    case ExprKind::EQ: return infix("==");
    case ExprKind::NE: return infix("!=");
    case ExprKind::LT: return infix("<");
    case ExprKind::LE: return infix("<=");
    case ExprKind::GT: return infix(">");
    case ExprKind::GE: return infix(">=");
    case ExprKind::And: return infix("&&");
    case ExprKind::Or: return infix("||");
    default: break;
  }
  KILN_CHECK(false) << "unhandled binary kind " << ir::kind_name(b->kind);
  return "";
}

std::string KernelPrinter::call(const ir::CallNode* c) {
  KILN_USER_CHECK(c->call_kind != ir::CallKind::Extern)
      << "kernel '" << f_.name << "': extern call '" << c->name << "' cannot run on a GPU";
  const std::string& n = c->name;
  if (n == "likely" && c->args.size() == 1) return expr(c->args[0]);
  if (n == "kiln_shuffle_down") return shuffle_down(c);
  if (n == "reinterpret" && c->args.size() == 1) return reinterpret(c);
  size_t want = n == "fma" ? 3 : n == "pow" ? 2 : 1;
  KILN_USER_CHECK(c->args.size() == want) << "kernel '" << f_.name << "': intrinsic '" << n << "' takes " << want
                                          << " argument(s), got " << c->args.size();
  DataType t = c->args[0].dtype();
  std::vector<std::string> a;
  for (const ir::Expr& x : c->args) a.push_back(expr(x));
  if (t.is_integer()) {
    if (n == "fabs") return helper("abs", t) + "(" + a[0] + ")";
    if (n == "floor" || n == "ceil" || n == "round" || n == "trunc") return a[0];
  }
  if (n == "isnan") return t.is_integer() ? "false" : "isnan(" + a[0] + ")";
  KILN_USER_CHECK(t.is_floating()) << "kernel '" << f_.name << "': intrinsic '" << n << "' on " << t.str();
  const std::string one = literal_float(t, 1.0);
  if (n == "sigmoid") return "(" + one + " / (" + one + " + " + d_.math_function("exp", t) + "(-" + a[0] + ")))";
  // rsqrt: exact 1/sqrt, as on CPUs (CUDA's rsqrtf is approximate).
  if (n == "rsqrt") return "(" + one + " / " + d_.math_function("sqrt", t) + "(" + a[0] + "))";
  if (n == "round") return d_.math_function("rint", t) + "(" + a[0] + ")";  // half to even
  if (n == "pow") {
    // Small constant integer exponents as products (GELU's x^3, a variance's x^2).
    if (auto e = c->args[1].as<ir::FloatImmNode>(); e && (e->value == 2.0 || e->value == 3.0)) {
      std::string x = "kiln_pow_base_" + std::to_string(pow_count_++);
      pending_.push_back(fmt::format("const {} {} = {};", type(t), x, a[0]));
      return e->value == 2.0 ? "(" + x + " * " + x + ")" : "(" + x + " * " + x + " * " + x + ")";
    }
    return d_.math_function("pow", t) + "(" + a[0] + ", " + a[1] + ")";
  }
  if (n == "fma") return d_.math_function("fma", t) + "(" + a[0] + ", " + a[1] + ", " + a[2] + ")";
  static const std::set<std::string> kUnary = {"exp", "log", "sqrt", "fabs", "floor", "ceil",
                                               "trunc", "sin", "cos", "tanh", "erf"};
  KILN_USER_CHECK(kUnary.count(n)) << "kernel '" << f_.name << "': intrinsic '" << n
                                   << "' has no GPU lowering";
  return d_.math_function(n, t) + "(" + a[0] + ")";
}

std::string KernelPrinter::reinterpret(const ir::CallNode* c) {
  DataType from = c->args[0].dtype(), to = c->dtype;
  check_type(to, "a value");
  std::string x = expr(c->args[0]);
  if (bits16(from)) x = to_bits16(from, x);  // now an unsigned short of the same bits
  const bool cuda = d_.language() == Language::kCUDA;
  const bool float_from = from.is_floating() && !bits16(from), float_to = to.is_floating() && !bits16(to);
  if (float_from) {  // to the same-width integer's bits (a float64 goes to long long / long)
    const DataType u = from.bits == 64 ? DataType::i64() : DataType::i32();
    x = cuda ? (from.bits == 64 ? "__double_as_longlong(" : "__float_as_int(") + x + ")"
             : (from.bits == 64 ? "as_long(" : "as_int(") + x + ")";
    from = u;
  }
  if (float_to) {
    const std::string i = "(" + d_.type_name(to.bits == 64 ? DataType::i64() : DataType::i32()) + ")(" + x + ")";
    return cuda ? (to.bits == 64 ? "__longlong_as_double(" : "__int_as_float(") + i + ")"
                : (to.bits == 64 ? "as_double(" : "as_float(") + i + ")";
  }
  if (bits16(to)) return from_bits16(to, "(" + d_.type_name(DataType::u16()) + ")(" + x + ")");
  if (to.is_bool()) return "(" + x + " != 0)";
  return "((" + type(to) + ")(" + x + "))";
}

std::string KernelPrinter::shuffle_down(const ir::CallNode* c) {
  KILN_CHECK(c->args.size() == 2) << "kernel '" << f_.name << "': kiln_shuffle_down takes (value, delta)";
  const DataType t = c->dtype;
  const std::string v = expr(c->args[0]), delta = expr(c->args[1]);
  if (!t.is_bool() && !(t.is_integer() && t.bits < 32)) return d_.warp_shuffle_down(v, delta);
  return "((" + type(t) + ")" + d_.warp_shuffle_down("(int)" + v, delta) + ")";
}

std::string KernelPrinter::stored(DataType t, const ir::Expr& value) {
  if (t.is_bool()) return "(" + d_.type_name(t) + ")(" + use(value) + ")";
  return bits16(t) ? to_bits16(t, flush_pending(expr_unrounded(value))) : use(value);
}

ir::Expr KernelPrinter::lift_vector_lets(const ir::Expr& value) {
  std::vector<std::pair<ir::Var, ir::Expr>> lets;
  ir::Expr out = lift_lets(value, lets);
  for (const auto& [v, x] : lets) let_lanes(v, x);
  return out;
}

void KernelPrinter::let_lanes(const ir::Var& v, const ir::Expr& value) {
  if (v.dtype().is_scalar()) {
    std::string x = use(value);
    line(fmt::format("const {} {} = {};", type(v.dtype()), name_of(v), x));
    return;
  }
  read_vector_loads(value);
  std::vector<ir::Var>& lanes = lanes_.vars[v.get()];
  for (int i = 0; i < v.dtype().lanes; ++i) {
    lanes.push_back(ir::Var(v.name(), v.dtype().element_of()));
    std::string x = use(lane_of(value, i, lanes_));
    line(fmt::format("const {} {} = {};", type(lanes.back().dtype()), name_of(lanes.back()), x));
  }
}

std::string KernelPrinter::address(const ir::Buffer& b, const ir::Expr& base, int offset) {
  return name_of(b->data) + " + " + use(offset ? ir::add(base, ir::make_int(base.dtype(), offset)) : base);
}

void KernelPrinter::read_vector_loads(const ir::Expr& e) {
  struct Find : ir::ExprVisitor {
    std::vector<const ir::BufferLoadNode*> out;
    void visit_select(const ir::SelectNode* op) override { visit(op->condition); }
    void visit_binary(const ir::BinaryNode* op) override {
      visit(op->a);
      if (op->kind != ExprKind::And && op->kind != ExprKind::Or) visit(op->b);
    }
    void visit_buffer_load(const ir::BufferLoadNode* op) override {
      if (op->dtype.is_vector()) out.push_back(op);
      ir::ExprVisitor::visit_buffer_load(op);
    }
  } find;
  find.visit(e);
  for (const ir::BufferLoadNode* l : find.out) {
    const DataType t = l->buffer->dtype;
    const int lanes = l->dtype.lanes, w = vector_access_lanes(t, lanes);
    if (lanes_.loads.count(l) || !params_.count(l->buffer->data.get()) || w == 1) continue;
    if (const ir::Buffer* same = read_before(l)) {  // x[i] + x[i]: one read
      lanes_.loads[l] = *same;
      continue;
    }
    const ir::Expr base = aligned_ramp_base(l->indices[0], w, analyzer_);
    if (!base.defined()) continue;
    ir::Buffer regs = ir::Buffer::make(l->buffer->name + "_v", t, {ir::make_int(DataType::i32(), lanes)}, "local");
    std::vector<std::string>& chunks = registers_[regs->data.get()];
    for (int c = 0; c < lanes; c += w) {
      const std::string at = address(l->buffer, base, c);
      chunks.push_back(fresh_name(l->buffer->name + "_v"));
      line(fmt::format("const {} {} = {};", d_.vector_type(t, w), chunks.back(), d_.vector_load(t, w, at)));
    }
    lanes_.loads[l] = regs;
  }
}

const ir::Buffer* KernelPrinter::read_before(const ir::BufferLoadNode* l) const {
  for (const auto& [other, regs] : lanes_.loads)
    if (other->buffer.same_as(l->buffer) && ir::structural_equal(other->indices[0], l->indices[0])) return &regs;
  return nullptr;
}

std::string KernelPrinter::register_lane(const std::vector<std::string>& chunks, const ir::BufferLoadNode* l) {
  static const char* const kLane[] = {".x", ".y", ".z", ".w"};
  const int64_t i = *ir::as_const_int(l->indices[0]);
  const int64_t w = l->buffer.num_elements() / static_cast<int64_t>(chunks.size());
  return chunks[i / w] + kLane[i % w];
}

void KernelPrinter::vector_store(const ir::BufferStoreNode* st) {
  const ir::Buffer& b = st->buffer;
  const ir::Expr& index = st->indices[0];
  const int lanes = index.dtype().lanes;
  const ir::Expr value = lift_vector_lets(st->value);
  const auto* masked = value.as<ir::SelectNode>();
  const auto* old = masked ? masked->false_value.as<ir::BufferLoadNode>() : nullptr;
  if (old && old->buffer->data.same_as(b->data) && ir::structural_equal(old->indices[0], index)) {
    for (int i = 0; i < lanes; ++i) {
      ir::Stmt lane = ir::buffer_store(b, lane_of(masked->true_value, i, lanes_), {lane_of(index, i, lanes_)});
      stmt(ir::if_then_else(lane_of(masked->condition, i, lanes_), lane));
    }
    return;
  }
  read_vector_loads(value);
  const int w = vector_access_lanes(b->dtype, lanes);
  const ir::Expr base = w > 1 && params_.count(b->data.get()) ? aligned_ramp_base(index, w, analyzer_) : ir::Expr();
  if (!base.defined()) {
    for (int i = 0; i < lanes; ++i) stmt(ir::buffer_store(b, lane_of(value, i, lanes_), {lane_of(index, i, lanes_)}));
    return;
  }
  std::vector<std::string> v;
  for (int i = 0; i < lanes; ++i) v.push_back(stored(b->dtype, lane_of(value, i, lanes_)));
  for (int c = 0; c < lanes; c += w) {
    const std::string at = address(b, base, c);
    line(d_.vector_store(b->dtype, w, at, d_.vector_value(b->dtype, {v.begin() + c, v.begin() + c + w})));
  }
}

void KernelPrinter::end_vector_statement() {
  lanes_.loads.clear();
  registers_.clear();
}

std::string KernelPrinter::flush_pending(std::string text) {
  for (const std::string& p : pending_) line(p);
  pending_.clear();
  return text;
}

}  // namespace kiln::codegen::source::detail
