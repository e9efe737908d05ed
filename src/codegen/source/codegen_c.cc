// The C-source printer shared by the CUDA and OpenCL dialects (codegen_c.h).
//
// Expressions print fully parenthesized. Expression lets become statements before the
// statement that uses them (their values are pure). Integer floor division and modulo, and
// float min/max (a < b ? a : b, as the LLVM backend: NaN picks the second operand), are helper
// functions of the preamble so no operand is evaluated twice.
//
// Vector IR prints lane by lane through scalar IR (lane_of), so lanes reuse every scalar rule
// (16-bit floats, bools, helpers, race checks); the one vector form printed is the aligned
// contiguous access of a parameter (codegen_c.h). A vector load runs once into registers before
// the statement, unless it sits where C evaluates conditionally (a select's branch, the right
// side of && and ||: a padding guard): those lanes load one by one under their condition. A
// masked store (vectorize_loops' form of a lane-dependent if) stores lane by lane under each
// lane's condition, never a whole vector.
//
// An asynchronous copy (ir::kAsyncCopy) prints as the dialect's (cp.async in CUDA) or, in a
// dialect without them, as its plain store; so the OpenCL text of a kernel with asynchronous
// copies vouches for their indexing.
//
// The race-checking build (print_module's race_check, GpuBuildOptions::race_check) checks and
// updates the buffer's shadow state (kRaceCheckFunctions) at every access of a shared buffer: a
// load through a helper, so that it stays an expression, a store before it; barriers advance a
// per-work-item epoch.
#include "codegen_c.h"
#include "codegen_c_support.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "kiln/codegen/ldmatrix.h"
#include "kiln/ir/arith.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/shared_storage.h"
#include "kiln/ir/structural.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"

namespace kiln::codegen::source {
namespace {

using ir::DataType;
using ir::ExprKind;

// The buffers a kernel stores to: the others are read-only parameters.
std::unordered_set<const ir::VarNode*> written_buffers(const ir::Stmt& body) {
  struct Scan : ir::StmtVisitor {
    std::unordered_set<const ir::VarNode*> out;
    void visit_buffer_store(const ir::BufferStoreNode* op) override {
      out.insert(op->buffer->data.get());
      ir::StmtVisitor::visit_buffer_store(op);
    }
  } scan;
  scan.visit_stmt(body);
  return scan.out;
}

// Whether a kernel has a warpgroup mma (ir::kWgmma).
bool has_wgmma(const ir::Stmt& body) {
  struct Scan : ir::StmtVisitor {
    bool found = false;
    void visit_attr(const ir::AttrStmtNode* op) override {
      found = found || op->key == ir::kWgmma;
      ir::StmtVisitor::visit_attr(op);
    }
  } scan;
  scan.visit_stmt(body);
  return scan.found;
}

class KernelPrinter {
 public:
  // race_check: print the race-checking build; `checked` numbers its shadowed buffers across
  // the module (a buffer's id is its position + 1).
  KernelPrinter(const Dialect& d, const ir::PrimFunc& f, const ir::KernelLaunch& launch, bool race_check,
                std::vector<std::string>& checked)
      : d_(d), f_(f), launch_(launch), race_check_(race_check), checked_(checked) {}

  std::string print() {
    std::unordered_set<const ir::VarNode*> written = written_buffers(f_.body);
    wgmma_ = d_.warpgroup_mma() && has_wgmma(f_.body);
    if (wgmma_) helpers_.insert("wgmmadesc_uint64");
    std::string params;
    for (const ir::Buffer& b : f_.params) {
      check_type(b->dtype, "parameter '" + b->name + "'");
      params_.insert(b->data.get());
      params += (params.empty() ? "" : ", ") +
                d_.global_param(d_.type_name(b->dtype), name_of(b->data), !written.count(b->data.get()));
    }
    // Every kernel of a race-checked module takes the record, shared memory or not, so the
    // caller appends it to every launch.
    if (race_check_) params += (params.empty() ? "" : ", ") + d_.global_param("int", "kiln_races", false);
    out_ << d_.kernel_prefix(launch_) << " " << f_.name << "(" << params << ") {\n";
    indent_ = 1;
    // Buffers that share bytes (ir::plan_shared_storage), or dynamic shared memory, are carved
    // out of one byte array; the others are declared each on its own.
    const ir::SharedStorage shared = ir::plan_shared_storage(f_.body);
    const bool dynamic = launch_.dynamic_shared_bytes > 0;
    KILN_CHECK(!dynamic || launch_.dynamic_shared_bytes == shared.bytes)
        << "kernel '" << f_.name << "': launched with " << launch_.dynamic_shared_bytes
        << " bytes of dynamic shared memory, but its buffers take " << shared.bytes;
    // A buffer aligned past 16 bytes is carved out of the pool too, which takes its alignment.
    const bool pooled = dynamic || shared.aliased || shared.alignment > 16;
    if (pooled) line(d_.shared_pool("kiln_shared", dynamic ? 0 : shared.bytes, shared.alignment));
    for (const auto& [b, offset] : shared.buffers) {
      check_type(b->dtype, "shared buffer '" + b->name + "'");
      const std::string type = d_.type_name(b->dtype);
      if (pooled)
        line(d_.shared_view(type, name_of(b->data), "kiln_shared", offset));
      else
        line(fmt::format("{} {} {}[{}];", d_.shared_qualifier(), type, name_of(b->data), b.num_elements()));
      if (!race_check_) continue;
      checked_.push_back(f_.name + "." + name_of(b->data));
      shadows_.push_back({b->data.get(), static_cast<int>(checked_.size()), b.num_elements(), "kiln_rcs_" + name_of(b->data)});
      line(fmt::format("{} int {}[{}];", d_.shared_qualifier(), shadows_.back().name, 4 * shadows_.back().n));
    }
    if (!shadows_.empty()) race_check_prologue();
    stmt(f_.body);
    out_ << "}\n";
    return out_.str();
  }

 private:
  // ---- names and types ----
  std::string name_of(const ir::Var& v) {
    auto it = names_.find(v.get());
    if (it != names_.end()) return it->second;
    return names_[v.get()] = fresh_name(v.name());
  }

  // A C name from `name` that no other variable of the kernel takes.
  std::string fresh_name(const std::string& name) {
    std::string base;
    for (char c : name) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0])) || reserved_name(base)) base = "v_" + base;
    std::string n = base;
    for (int i = 1; used_.count(n); ++i) n = base + "_" + std::to_string(i);
    used_.insert(n);
    return n;
  }

  void check_type(DataType t, const std::string& what) {
    KILN_USER_CHECK(t.is_scalar()) << "kernel '" << f_.name << "': " << what << " has vector type " << t.str()
                                   << " (GPU kernels are printed from scalar IR)";
    if (t.is_floating() && t.bits == 16) uses_float16_ = true;
  }

  // The C type of a value: 16-bit floats are computed in float (stored as bits, bits16()).
  std::string type(DataType t) {
    check_type(t, "a value");
    if (t.is_floating() && t.bits == 16) return "float";
    return t.is_bool() ? "bool" : d_.type_name(t);
  }

  static bool bits16(DataType t) { return t.is_floating() && t.bits == 16; }
  // A float holding a 16-bit float's value, rounded to it (after arithmetic in float).
  static std::string round16(DataType t, const std::string& v) {
    return (t.is_bfloat() ? "kiln_round_bf16(" : "kiln_round_f16(") + v + ")";
  }
  static std::string from_bits16(DataType t, const std::string& v) {
    return (t.is_bfloat() ? "kiln_bf16_to_f32(" : "kiln_f16_to_f32(") + v + ")";
  }
  static std::string to_bits16(DataType t, const std::string& v) {
    return (t.is_bfloat() ? "kiln_f32_to_bf16(" : "kiln_f32_to_f16(") + v + ")";
  }

  void line(const std::string& s) {
    for (int i = 0; i < indent_; ++i) out_ << "  ";
    out_ << s << "\n";
  }

  // ---- race checking ----
  struct Shadow {
    const ir::VarNode* buffer;  // the shared buffer's data
    int id;                     // in the race record and the module's checked buffers
    int64_t n;                  // elements of the shared buffer
    std::string name;           // its shadow array, 4 n ints (kRaceCheckFunctions)
  };

  const Shadow* shadow(const ir::Buffer& b) const {
    for (const Shadow& sh : shadows_)
      if (sh.buffer == b->data.get()) return &sh;
    return nullptr;
  }

  // The arguments a shadowed access passes after the buffer: its shadow, the element, who and
  // when, and where to report.
  std::string race_args(const Shadow& sh, const std::string& index) const {
    return fmt::format("{}, {}, {}, kiln_rc_tid, kiln_rc_epoch, kiln_races, {}", sh.name, sh.n, index, sh.id);
  }

  // The work-item's flat local id and epoch; the group sets every shadow epoch to -1 (no
  // access yet), each work-item a strided slice, and a barrier publishes that before the body.
  // That barrier is not counted: the body starts in epoch 0.
  void race_check_prologue() {
    const auto& b = launch_.block;
    line(fmt::format("const int kiln_rc_tid = (int){} + {} * ((int){} + {} * (int){});", d_.thread_index("threadIdx.x"),
                     b[0], d_.thread_index("threadIdx.y"), b[1], d_.thread_index("threadIdx.z")));
    line("int kiln_rc_epoch = 0;");
    for (const Shadow& sh : shadows_)
      line(fmt::format("for (int kiln_rc_k = kiln_rc_tid; kiln_rc_k < {}; kiln_rc_k += {}) {{ {}[{} + kiln_rc_k] = -1; "
                       "{}[{} + kiln_rc_k] = -1; }}",
                       sh.n, b[0] * b[1] * b[2], sh.name, sh.n, sh.name, 3 * sh.n));
    line(d_.barrier());
  }

  // ---- expressions ----
  std::string literal_int(DataType t, int64_t v) {
    if (t.is_bool()) return v ? "true" : "false";
    if (t.bits == 64) {
      if (v == INT64_MIN) return fmt::format("({}(-9223372036854775807{} - 1))", cast_prefix(t), d_.int64_suffix());
      return fmt::format("(({}){}{}{})", type(t), v, t.is_uint() ? "U" : "", d_.int64_suffix());
    }
    if (t.is_int() && t.bits == 32) return v == INT32_MIN ? "(-2147483647 - 1)" : std::to_string(v);
    return fmt::format("(({}){}{})", type(t), v, t.is_uint() ? "U" : "");
  }
  std::string cast_prefix(DataType t) { return "(" + type(t) + ")"; }

  std::string literal_float(DataType t, double v) {
    if (std::isinf(v)) return v > 0 ? d_.infinity(t) : "(-" + d_.infinity(t) + ")";
    if (std::isnan(v)) return d_.nan(t);
    if (t.bits == 64) return fmt::format("{:.17g}", v).find_first_of(".en") == std::string::npos
                                 ? fmt::format("{:.17g}.0", v)
                                 : fmt::format("{:.17g}", v);
    std::string s = fmt::format("{:.9g}", static_cast<float>(v));
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return "(" + s + "f)";
  }

  std::string helper(const std::string& op, DataType t) {
    std::string key = op + "_" + t.str();
    helpers_.insert(key);
    return "kiln_" + key;
  }

  // An expression's C text; a 16-bit float result of arithmetic, a conversion or a call is
  // rounded to its type (computed in float: IEEE float16 arithmetic rounds each operation).
  std::string expr(const ir::Expr& e) {
    KILN_CHECK(e.dtype().is_scalar()) << "kernel '" << f_.name << "': vector " << ir::kind_name(e.kind())
                                      << " outside a vector store or let";
    std::string s = expr_unrounded(e);
    if (!bits16(e.dtype())) return s;
    const ExprKind k = e.kind();
    const bool computed = ir::is_arith(k) && k != ExprKind::Min && k != ExprKind::Max;
    return computed || k == ExprKind::Cast || k == ExprKind::Call || k == ExprKind::FloatImm ? round16(e.dtype(), s) : s;
  }

  std::string expr_unrounded(const ir::Expr& e) {
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

  std::string binary(const ir::BinaryNode* b) {
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

  std::string call(const ir::CallNode* c) {
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

  // The same bits as another type of one width (ONNX BitCast). Integers and bools convert
  // bit for bit in C; a 16-bit float goes through its stored bits; 32- and 64-bit floats
  // through the dialect's bit casts (CUDA __float_as_int ..., OpenCL as_int ...).
  std::string reinterpret(const ir::CallNode* c) {
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

  // Shuffles move 32- and 64-bit values; a narrower one (bool, 8- and 16-bit integers) goes
  // through int. A 16-bit float is a float here (type()).
  std::string shuffle_down(const ir::CallNode* c) {
    KILN_CHECK(c->args.size() == 2) << "kernel '" << f_.name << "': kiln_shuffle_down takes (value, delta)";
    const DataType t = c->dtype;
    const std::string v = expr(c->args[0]), delta = expr(c->args[1]);
    if (!t.is_bool() && !(t.is_integer() && t.bits < 32)) return d_.warp_shuffle_down(v, delta);
    return "((" + type(t) + ")" + d_.warp_shuffle_down("(int)" + v, delta) + ")";
  }

  // `value` as a buffer of type t stores it. A 16-bit float is converted to its bits once: its
  // outermost operation is printed unrounded (expr()), as the conversion rounds alike.
  std::string stored(DataType t, const ir::Expr& value) {
    if (t.is_bool()) return "(" + d_.type_name(t) + ")(" + use(value) + ")";
    return bits16(t) ? to_bits16(t, flush_pending(expr_unrounded(value))) : use(value);
  }

  // ---- vector IR: lanes and vector accesses ----

  // The lets of a vector statement's value, printed first; returns the value without them.
  ir::Expr lift_vector_lets(const ir::Expr& value) {
    std::vector<std::pair<ir::Var, ir::Expr>> lets;
    ir::Expr out = lift_lets(value, lets);
    for (const auto& [v, x] : lets) let_lanes(v, x);
    return out;
  }

  // A let's binding without let expressions in `value`: one const, or one per lane of a vector.
  void let_lanes(const ir::Var& v, const ir::Expr& value) {
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

  // The address of element base + offset of parameter b.
  std::string address(const ir::Buffer& b, const ir::Expr& base, int offset) {
    return name_of(b->data) + " + " + use(offset ? ir::add(base, ir::make_int(base.dtype(), offset)) : base);
  }

  // Reads every load in `e` that is an aligned contiguous access of a parameter and runs
  // unconditionally into registers, one vector access per vector_access_lanes(); lane_of then
  // reads those registers.
  void read_vector_loads(const ir::Expr& e) {
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

  // The registers of a load of the same vector this statement has read, or null.
  const ir::Buffer* read_before(const ir::BufferLoadNode* l) const {
    for (const auto& [other, regs] : lanes_.loads)
      if (other->buffer.same_as(l->buffer) && ir::structural_equal(other->indices[0], l->indices[0])) return &regs;
    return nullptr;
  }

  // Lane l->indices[0] (a constant) of the registers read_vector_loads read for l->buffer.
  static std::string register_lane(const std::vector<std::string>& chunks, const ir::BufferLoadNode* l) {
    static const char* const kLane[] = {".x", ".y", ".z", ".w"};
    const int64_t i = *ir::as_const_int(l->indices[0]);
    const int64_t w = l->buffer.num_elements() / static_cast<int64_t>(chunks.size());
    return chunks[i / w] + kLane[i % w];
  }

  // A store at a vector index (codegen_c.h; the file's comment on masked stores).
  void vector_store(const ir::BufferStoreNode* st) {
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

  // Registers read for one statement serve that statement only (their loads are its nodes).
  void end_vector_statement() {
    lanes_.loads.clear();
    registers_.clear();
  }

  // An expression for use in the statement printed next (pending lets go first).
  std::string use(const ir::Expr& e) { return flush_pending(expr(e)); }
  // Prints the lines an expression's text needs before it; returns the text.
  std::string flush_pending(std::string text) {
    for (const std::string& p : pending_) line(p);
    pending_.clear();
    return text;
  }

  // ---- statements ----
  void stmt(const ir::Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case ir::StmtKind::Seq: {
        const std::vector<ir::Stmt>& seq = s.as<ir::SeqStmtNode>()->seq;
        for (size_t i = 0; i < seq.size();) {
          size_t end = i;
          while (end < seq.size() && wgmma_ && lane_attr(seq[end], ir::kWgmma)) ++end;
          if (end > i) {
            wgmma_run({seq.begin() + i, seq.begin() + end});
            i = end;
            continue;
          }
          while (end < seq.size() && d_.warp_mma() && lane_mma(seq[end])) ++end;
          if (end - i >= 2) {
            warp_mma_run({seq.begin() + i, seq.begin() + end});
            i = end;
          } else {
            stmt(seq[i++]);
          }
        }
        return;
      }
      case ir::StmtKind::LetStmt: {
        const auto* l = s.as<ir::LetStmtNode>();
        if (l->var.dtype().is_vector()) {
          let_lanes(l->var, lift_vector_lets(l->value));
          end_vector_statement();
        } else {
          std::string v = use(l->value);
          line(fmt::format("const {} {} = {};", type(l->var.dtype()), name_of(l->var), v));
          if (l->var.dtype().is_integer()) analyzer_.bind_value(l->var, l->value);  // for aligned_ramp_base
        }
        stmt(l->body);
        return;
      }
      case ir::StmtKind::AttrStmt: {
        const auto* a = s.as<ir::AttrStmtNode>();
        if (a->key == ir::kAsyncCopy && d_.async_copies()) async_copy(a);
        else if (a->key == ir::kMmaSync && d_.warp_mma()) warp_mma(a);
        else if (a->key == ir::kWgmma && wgmma_) warp_wgmma(a);
        else stmt(a->body);
        return;
      }
      case ir::StmtKind::BufferStore: {
        const auto* st = s.as<ir::BufferStoreNode>();
        KILN_CHECK(st->indices.size() == 1) << "kernel '" << f_.name << "': store to '" << st->buffer->name
                                            << "' is not flattened";
        if (st->indices[0].dtype().is_vector()) {
          vector_store(st);
          end_vector_statement();
          return;
        }
        std::string idx = use(st->indices[0]);
        std::string v = stored(st->buffer->dtype, st->value);
        const std::string buf = name_of(st->buffer->data);
        // Checked, then stored in the kernel itself: PoCL 3.1 miscomputed a helper that did both
        // with a private array's element as the value (the tensor-core GEMM's accumulator
        // store, every output wrong; the same statements inline gave the right ones).
        if (const Shadow* sh = shadow(st->buffer))
          line(fmt::format("{{ const int kiln_rc_i = {}; kiln_rc_write({}, kiln_rc_i, kiln_rc_tid, kiln_rc_epoch, "
                           "kiln_races, {}); {}[kiln_rc_i] = {}; }}",
                           idx, sh->name + ", " + std::to_string(sh->n), sh->id, buf, v));
        else
          line(buf + "[" + idx + "] = " + v + ";");
        return;
      }
      case ir::StmtKind::Allocate: {
        const auto* a = s.as<ir::AllocateNode>();
        const ir::Buffer& b = a->buffer;
        if (b->scope != "shared") {
          check_type(b->dtype, "buffer '" + b->name + "'");
          line(fmt::format("{} {}[{}];", d_.type_name(b->dtype), name_of(b->data), b.num_elements()));
        }
        stmt(a->body);
        return;
      }
      case ir::StmtKind::For: for_loop(s.as<ir::ForNode>()); return;
      case ir::StmtKind::IfThenElse: {
        const auto* i = s.as<ir::IfThenElseNode>();
        line("if (" + use(i->condition) + ") {");
        block(i->then_case);
        if (i->else_case.defined()) {
          line("} else {");
          block(i->else_case);
        }
        line("}");
        return;
      }
      case ir::StmtKind::Evaluate: {
        const ir::Expr& v = s.as<ir::EvaluateNode>()->value;
        if (const auto* c = v.as<ir::CallNode>(); c && c->name == "kiln_barrier") {
          // Shared memory filled by this thread and read by wgmma after the barrier.
          if (wgmma_) line(d_.async_proxy_fence());
          line(d_.barrier());
          if (!shadows_.empty()) line("++kiln_rc_epoch;");  // every work-item passes every barrier
          return;
        }
        // A dialect without async copies stored them plainly: nothing to commit or wait for.
        if (const auto* c = v.as<ir::CallNode>(); c && c->name == ir::kAsyncCommit) {
          if (d_.async_copies()) line(d_.async_copy_commit());
          return;
        }
        if (const auto* c = v.as<ir::CallNode>(); c && c->name == ir::kWgmmaDrain) {
          if (wgmma_)
            for (const std::string& l : d_.wgmma_drain(in_flight_acc_)) line(l);
          return;
        }
        if (const auto* c = v.as<ir::CallNode>(); c && c->name == ir::kAsyncWait) {
          KILN_CHECK(c->args.size() == 1 && ir::as_const_int(c->args[0]))
              << "kernel '" << f_.name << "': " << ir::kAsyncWait << " takes one constant";
          if (d_.async_copies()) line(d_.async_copy_wait(*ir::as_const_int(c->args[0])));
          return;
        }
        if (v.as<ir::IntImmNode>()) return;
        line(use(v) + ";");
        return;
      }
    }
  }

  // An ir::kAsyncCopy store (its form: transforms.h) as the dialect's asynchronous copy: the
  // addresses of the first lanes; where a select zero-fills, the source index clamped to 0 (an
  // element that exists: the index where the condition fails may lie outside the buffer, a
  // padding row) and the source bytes the condition's.
  void async_copy(const ir::AttrStmtNode* a) {
    const auto* st = a->body.as<ir::BufferStoreNode>();
    KILN_CHECK(st && st->indices.size() == 1) << "kernel '" << f_.name << "': an async copy is not one flat store";
    ir::Expr value = st->value, condition;
    if (const auto* sel = value.as<ir::SelectNode>()) {
      const auto* b = sel->condition.as<ir::BroadcastNode>();
      condition = b ? b->value : sel->condition;
      value = sel->true_value;
    }
    const auto* load = value.as<ir::BufferLoadNode>();
    KILN_CHECK(load && load->indices.size() == 1) << "kernel '" << f_.name << "': an async copy does not copy a load";
    auto first = [](const ir::Expr& index) {
      const auto* r = index.as<ir::RampNode>();
      return r ? r->base : index;
    };
    const int bytes = static_cast<int>(*ir::as_const_int(a->value));
    const std::string dst = name_of(st->buffer->data) + " + " + use(first(st->indices[0]));
    if (!condition.defined()) {
      line(d_.async_copy(bytes, dst, name_of(load->buffer->data) + " + " + use(first(load->indices[0])), ""));
      return;
    }
    const std::string ok = fresh_name("copy_ok");
    line(fmt::format("const bool {} = {};", ok, use(condition)));
    const std::string src = fmt::format("{} + ({} ? {} : 0)", name_of(load->buffer->data), ok, use(first(load->indices[0])));
    line(d_.async_copy(bytes, dst, src, fmt::format("({} ? {} : 0)", ok, bytes)));
  }

  // A warp's mma over one tile (mma_intrin.h): the lanes' loop around an ir::kMmaSync region
  // (or another intrinsic's, `key`).
  static const ir::AttrStmtNode* lane_attr(const ir::Stmt& s, const char* key) {
    const auto* loop = s.as<ir::ForNode>();
    if (!loop || loop->for_kind != ir::ForKind::ThreadBinding || loop->thread_tag != "threadIdx.x") return nullptr;
    ir::Stmt body = loop->body;
    while (const auto* a = body.as<ir::AttrStmtNode>()) {
      if (a->key == key) return a;
      if (a->key != ir::kWarpFragment) return nullptr;
      body = a->body;
    }
    return nullptr;
  }
  static const ir::AttrStmtNode* lane_mma(const ir::Stmt& s) { return lane_attr(s, ir::kMmaSync); }

  // Consecutive wgmma of a warpgroup (one K slice's, mma_intrin.h) as the dialect's fenced,
  // committed and waited run: each in its lanes' loop (warp_wgmma), the run's accumulators held
  // after the wait.
  // A run left in flight (its calls' in_flight operand) waits for the run before it instead, and
  // its accumulators join those kWgmmaDrain waits for after the loop.
  void wgmma_run(const std::vector<ir::Stmt>& run) {
    line(d_.wgmma_begin());
    wgmma_acc_.emplace();
    wgmma_run_in_flight_ = false;
    for (const ir::Stmt& s : run) stmt(s);
    for (const std::string& l : d_.wgmma_end(*wgmma_acc_, wgmma_run_in_flight_ ? 1 : 0)) line(l);
    if (wgmma_run_in_flight_) add_once(*wgmma_acc_, in_flight_acc_);
    wgmma_acc_.reset();
  }

  // An ir::kWgmma region as the dialect's wgmma, inside a run (wgmma_run): the call's
  // accumulators as lvalues, its operands as shared-memory descriptors.
  void warp_wgmma(const ir::AttrStmtNode* a) {
    const auto* c = a->value.as<ir::CallNode>();
    KILN_CHECK(wgmma_acc_ && c && c->name == ir::kWgmmaCall && c->args.size() > ir::kWgmmaOperands)
        << "kernel '" << f_.name << "': " << ir::kWgmma << " without its call, or outside a run";
    const size_t d = c->args.size() - ir::kWgmmaOperands;
    std::vector<std::string> acc;
    for (size_t i = 0; i < d; ++i) acc.push_back(mma_element(c->args[i]));
    auto desc = [&](const ir::Expr& base, const ir::Expr& lbo, const ir::Expr& sbo) {
      const auto* l = base.as<ir::BufferLoadNode>();
      KILN_CHECK(l && l->indices.size() == 1 && l->buffer->scope == "shared")
          << "kernel '" << f_.name << "': a wgmma operand not in shared memory";
      // The descriptor's layout type: 1, the 128-byte swizzle, or 0, none (core matrices).
      return fmt::format("kiln_wgmmadesc_uint64({} + {}, {}, {}, {})", name_of(l->buffer->data), use(l->indices[0]),
                         use(lbo), use(sbo), l->buffer->layout == ir::TileLayout::kSwizzle128B ? 1 : 0);
    };
    const ir::DataType in = c->args[d].dtype();
    wgmma_run_in_flight_ = wgmma_run_in_flight_ || !ir::is_zero(c->args[d + 7]);
    line(d_.wgmma(in.is_bfloat() ? "bf16" : "f16", static_cast<int64_t>(2 * d), acc,
                  desc(c->args[d], c->args[d + 2], c->args[d + 3]), desc(c->args[d + 1], c->args[d + 4], c->args[d + 5]),
                  !ir::is_zero(c->args[d + 6])));
    add_once(acc, *wgmma_acc_);
  }

  // Appends to `to` each of `names` it does not hold yet.
  static void add_once(const std::vector<std::string>& names, std::vector<std::string>& to) {
    for (const std::string& x : names)
      if (std::find(to.begin(), to.end(), x) == to.end()) to.push_back(x);
  }

  // Consecutive mma of a warp's tiles, printed as one lanes' loop whose ldmatrix loads are
  // shared: the tiles of a row of the warp's tile read the same fragment of A, those of a
  // column the same of B (mma_fragments_ caches them for the run; nothing in it writes memory).
  void warp_mma_run(const std::vector<ir::Stmt>& run) {
    const auto* first = run[0].as<ir::ForNode>();
    std::vector<ir::Stmt> bodies;
    for (const ir::Stmt& s : run) {
      const auto* loop = s.as<ir::ForNode>();
      bodies.push_back(ir::substitute(loop->body, ir::VarMap<ir::Expr>{{loop->loop_var.get(), first->loop_var}}));
    }
    mma_fragments_.emplace();
    stmt(ir::for_loop(first->loop_var, first->min, first->extent, first->for_kind, ir::seq(bodies), first->thread_tag));
    mma_fragments_.reset();
  }

  // The registers of an mma operand: `count` 16-bit elements (args[first...]) two to a 32-bit
  // register, the lower element in the low half. One ldmatrix where the elements are rows of
  // shared memory in its layout (ldmatrix.h), else loads, with a comment saying why.
  std::vector<std::string> mma_operand(const std::vector<ir::Expr>& args, size_t first, size_t count,
                                       const char* operand) {
    std::vector<ir::Expr> indices;
    const ir::BufferLoadNode* l0 = args[first].as<ir::BufferLoadNode>();
    std::string why;
    for (size_t i = first; i < first + count; ++i) {
      const auto* l = args[i].as<ir::BufferLoadNode>();
      if (!l || !l0 || !l->buffer->data.same_as(l0->buffer->data) || l->indices.size() != 1) {
        why = "its elements are not loads of one buffer";
        break;
      }
      indices.push_back(l->indices[0]);
    }
    if (why.empty() && l0->buffer->scope != "shared") why = "'" + l0->buffer->name + "' is not in shared memory";
    KILN_CHECK(!lane_vars_.empty()) << "kernel '" << f_.name << "': an mma outside its lanes' loop";
    std::optional<LdmatrixLoad> ld;
    if (why.empty()) ld = ldmatrix_load(indices, lane_vars_.back(), analyzer_, &why);
    if (!ld) {
      line(fmt::format("// {}: loads, not ldmatrix: {}", operand, why));
      std::vector<std::string> regs;
      for (size_t r = 0; r < count / 2; ++r) regs.push_back(pack(args, first + 2 * r));
      return regs;
    }
    const std::string address = name_of(l0->buffer->data) + " + " + use(ld->row);
    const std::string key = fmt::format("{}{} {}", ld->tiles, ld->trans ? "t" : "", address);
    if (mma_fragments_) {
      auto it = mma_fragments_->find(key);
      if (it != mma_fragments_->end()) return it->second;
    }
    std::vector<std::string> regs;
    for (int t = 0; t < ld->tiles; ++t) regs.push_back(fresh_name(std::string("frag_") + operand));
    line(fmt::format("unsigned {};", fmt::join(regs, ", ")));
    line(d_.ldmatrix(ld->tiles, ld->trans, regs, address));
    if (mma_fragments_) (*mma_fragments_)[key] = regs;
    return regs;
  }

  // Register `lo / 2` of an operand by loads: neighbours in memory, the first 4-byte aligned,
  // as one 32-bit load (little-endian: the lower element in the low half), else two.
  std::string pack(const std::vector<ir::Expr>& args, size_t lo) {
    const auto* x = args[lo].as<ir::BufferLoadNode>();
    const auto* y = args[lo + 1].as<ir::BufferLoadNode>();
    if (x && y && x->buffer->data.same_as(y->buffer->data) && x->indices.size() == 1 && y->indices.size() == 1) {
      const ir::Expr& i = x->indices[0];
      const ir::Expr two = ir::make_int(i.dtype(), 2);
      if (analyzer_.can_prove(ir::eq(y->indices[0] - i, ir::make_int(i.dtype(), 1))) &&
          analyzer_.can_prove(ir::eq(ir::floormod(i, two), ir::make_zero(i.dtype()))))
        return "(*(const unsigned*)(" + name_of(x->buffer->data) + " + " + use(i) + "))";
    }
    return "((unsigned)" + mma_element(args[lo]) + " | ((unsigned)" + mma_element(args[lo + 1]) + " << 16))";
  }

  // An mma operand's element: a flat load, as an lvalue.
  std::string mma_element(const ir::Expr& e) {
    const auto* l = e.as<ir::BufferLoadNode>();
    KILN_CHECK(l && l->indices.size() == 1) << "kernel '" << f_.name << "': an mma operand is not a flat load";
    return name_of(l->buffer->data) + "[" + use(l->indices[0]) + "]";
  }

  // An ir::kMmaSync region as the dialect's mma: the call's 4 accumulators as lvalues, its 8
  // elements of A and 4 of B as their bits (16-bit floats are stored as bits) in registers
  // (mma_operand). Buffers are at least 16-byte aligned (shared: the dialect's qualifier).
  void warp_mma(const ir::AttrStmtNode* a) {
    const auto* c = a->value.as<ir::CallNode>();
    KILN_CHECK(c && c->name == ir::kMmaSyncCall && c->args.size() == 16)
        << "kernel '" << f_.name << "': " << ir::kMmaSync << " without its call of 16 operands";
    const ir::DataType in = c->args[4].dtype();
    KILN_CHECK(in == ir::DataType::f16() || in == ir::DataType::bf16())
        << "kernel '" << f_.name << "': mma inputs of type " << in.str();
    std::vector<std::string> acc;
    for (int i = 0; i < 4; ++i) acc.push_back(mma_element(c->args[i]));
    const std::vector<std::string> regs_a = mma_operand(c->args, 4, 8, "A"), regs_b = mma_operand(c->args, 12, 4, "B");
    line(d_.warp_mma(in.is_bfloat() ? "bf16" : "f16", acc, regs_a, regs_b));
  }

  void block(const ir::Stmt& s) {
    ++indent_;
    stmt(s);
    --indent_;
  }

  void for_loop(const ir::ForNode* op) {
    KILN_USER_CHECK(op->for_kind != ir::ForKind::Parallel)
        << "kernel '" << f_.name << "': loop '" << op->loop_var.name()
        << "' is parallel (CPU threads); bind it to blockIdx/threadIdx on a GPU";
    const std::string v = name_of(op->loop_var);
    const std::string t = type(op->loop_var.dtype());
    if (op->for_kind == ir::ForKind::ThreadBinding) {
      const std::string& tag = op->thread_tag;
      const int axis = tag.back() - 'x';
      const bool block_axis = tag.rfind("blockIdx.", 0) == 0;
      const int64_t launched = block_axis ? launch_.grid[axis] : launch_.block[axis];
      const int64_t ext = ir::as_const_int(op->extent).value_or(-1);
      KILN_CHECK(ir::is_zero(op->min)) << "kernel '" << f_.name << "': thread loop '" << op->loop_var.name()
                                       << "' does not start at 0";
      line("{");
      ++indent_;
      line(fmt::format("const {} {} = ({}){};", t, v, t, d_.thread_index(tag)));
      // The lanes of a warp, for ldmatrix (mma_operand).
      const bool lanes = tag == "threadIdx.x";
      if (lanes) lane_vars_.push_back(op->loop_var);
      if (ext < launched) {
        line(fmt::format("if ({} < {}) {{", v, ext));
        block(op->body);
        line("}");
      } else {
        stmt(op->body);
      }
      if (lanes) lane_vars_.pop_back();
      --indent_;
      line("}");
      return;
    }
    std::string mn = use(op->min), ext = use(op->extent);
    std::string end = ir::is_zero(op->min) ? ext : "(" + mn + " + " + ext + ")";
    line(fmt::format("for ({} {} = {}; {} < {}; ++{}) {{", t, v, mn, v, end, v));
    block(op->body);
    line("}");
  }

 public:
  std::set<std::string> helpers_;
  bool uses_float16_ = false;  // the module needs float16_helpers()

 private:
  const Dialect& d_;
  const ir::PrimFunc& f_;
  const ir::KernelLaunch& launch_;
  const bool race_check_;
  std::vector<std::string>& checked_;
  std::vector<Shadow> shadows_;  // in declaration order
  std::ostringstream out_;
  int indent_ = 0;
  int pow_count_ = 0;
  std::unordered_map<const ir::VarNode*, std::string> names_;
  std::unordered_set<const ir::VarNode*> params_;  // their data: what vector accesses may read and write
  ir::arith::Analyzer analyzer_;                   // knows the lets printed so far
  LaneMap lanes_;
  // Registers read_vector_loads filled, by their buffer's data: a vector variable per access.
  std::unordered_map<const ir::VarNode*, std::vector<std::string>> registers_;
  std::unordered_set<std::string> used_;
  std::vector<ir::Var> lane_vars_;  // the threadIdx.x loops around, innermost last
  // Only in a run of mma (warp_mma_run): the registers each ldmatrix filled, by instruction and
  // address.
  std::optional<std::map<std::string, std::vector<std::string>>> mma_fragments_;
  bool wgmma_ = false;  // the kernel has wgmma (ir::kWgmma) the dialect prints
  bool wgmma_run_in_flight_ = false;         // the run being printed stays in flight
  std::vector<std::string> in_flight_acc_;  // the accumulators of the runs left in flight
  // Only in a run of wgmma (wgmma_run): its accumulators, each once.
  std::optional<std::vector<std::string>> wgmma_acc_;
  std::vector<std::string> pending_;
};


}  // namespace

const Dialect& dialect(Language lang) { return lang == Language::kCUDA ? cuda_dialect() : opencl_dialect(); }

std::string print_module(const std::vector<ir::DeviceProgram>& programs, const Dialect& d, bool race_check,
                         std::vector<std::string>* checked_buffers) {
  KILN_CHECK(!race_check || d.language() == Language::kOpenCL) << "race checking prints OpenCL C only";
  std::string kernels;
  std::set<std::string> helpers;
  std::vector<std::string> checked;
  bool float16 = false;
  for (const ir::DeviceProgram& p : programs)
    for (size_t k = 0; k < p.kernels.size(); ++k) {
      KernelPrinter printer(d, p.kernels[k], p.launches[k], race_check, checked);
      kernels += printer.print() + "\n";
      helpers.insert(printer.helpers_.begin(), printer.helpers_.end());
      float16 = float16 || printer.uses_float16_;
    }
  if (checked_buffers) *checked_buffers = checked;
  return d.preamble() + (float16 ? float16_helpers(d) : "") + (checked.empty() ? "" : kRaceCheckFunctions) +
         print_helpers(helpers, d) + "\n" + kernels;
}

}  // namespace kiln::codegen::source
