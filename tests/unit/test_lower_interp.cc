// A tiny reference interpreter for lowered PrimFuncs (multi-dimensional or flattened loads and
// stores, scalar code only), so scheduled programs can be checked numerically before the LLVM
// backend exists. It runs every loop serially, rounds each stored value to its buffer's type,
// fills fresh allocations with NaN (reading before writing shows up in the results) and throws
// on any out-of-bounds access. Extern calls (tensorize) go to C++ functions the test provides.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "kiln/ir/printer.h"
#include "test_lower_interp.h"

namespace kiln::testing {
namespace {

using namespace kiln::ir;

struct Value {
  double f = 0;                           // floating types
  int64_t i = 0;                          // integers, bools, and a handle's element offset
  std::vector<double>* mem = nullptr;     // a handle's buffer
};

double round_to(DataType t, double v) {
  if (t.is_float() && t.bits == 32) return static_cast<double>(static_cast<float>(v));
  return v;
}

int64_t wrap_int(DataType t, int64_t v) {
  if (t.is_bool()) return v != 0;
  if (t.bits == 32) return static_cast<int32_t>(v);
  return v;
}

class Interp {
 public:
  explicit Interp(const std::map<std::string, ExternFn>& externs) : externs_(externs) {}
  std::unordered_map<const VarNode*, std::vector<double>*> mem;  // by data var: flattened views share it

  void exec(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case StmtKind::LetStmt: {
        auto* n = s.as<LetStmtNode>();
        env_[n->var.get()] = eval(n->value);
        return exec(n->body);
      }
      case StmtKind::AttrStmt: return exec(s.as<AttrStmtNode>()->body);
      case StmtKind::BufferStore: {
        auto* n = s.as<BufferStoreNode>();
        Value v = eval(n->value);
        double x = n->buffer->dtype.is_floating() ? round_to(n->buffer->dtype, v.f) : double(wrap_int(n->buffer->dtype, v.i));
        (*mem.at(n->buffer->data.get()))[offset(n->buffer, n->indices)] = x;
        return;
      }
      case StmtKind::Allocate: {
        auto* n = s.as<AllocateNode>();
        std::vector<double> storage(n->buffer.num_elements(), std::nan(""));
        mem[n->buffer->data.get()] = &storage;
        exec(n->body);
        mem.erase(n->buffer->data.get());
        return;
      }
      case StmtKind::For: {
        auto* n = s.as<ForNode>();
        int64_t lo = eval(n->min).i, ext = eval(n->extent).i;
        for (int64_t i = lo; i < lo + ext; ++i) {
          env_[n->loop_var.get()].i = i;
          exec(n->body);
        }
        return;
      }
      case StmtKind::IfThenElse: {
        auto* n = s.as<IfThenElseNode>();
        return exec(eval(n->condition).i ? n->then_case : n->else_case);
      }
      case StmtKind::Seq:
        for (const Stmt& c : s.as<SeqStmtNode>()->seq) exec(c);
        return;
      case StmtKind::Evaluate: eval(s.as<EvaluateNode>()->value); return;
    }
  }

 private:
  int64_t offset(const Buffer& b, const std::vector<Expr>& indices) {
    if (indices.size() != b->shape.size() && indices.size() != 1) {
      throw std::runtime_error("interp: buffer '" + b->name + "' indexed with the wrong number of indices");
    }
    int64_t flat = 0;
    if (indices.size() == 1 && b->shape.size() != 1) {
      flat = eval(indices[0]).i;  // a flattened access
    } else {
      for (size_t d = 0; d < indices.size(); ++d) {
        int64_t i = eval(indices[d]).i, ext = *as_const_int(b->shape[d]);
        if (i < 0 || i >= ext) {
          throw std::runtime_error("interp: index " + std::to_string(i) + " out of bounds [0, " + std::to_string(ext) +
                                   ") in dimension " + std::to_string(d) + " of buffer '" + b->name + "'");
        }
        flat = flat * ext + i;
      }
    }
    if (flat < 0 || flat >= b.num_elements()) {
      throw std::runtime_error("interp: flat index " + std::to_string(flat) + " out of bounds of '" + b->name + "'");
    }
    return flat;
  }

  Value eval(const Expr& e) {
    DataType t = e.dtype();
    if (t.is_vector()) throw std::runtime_error("interp: vector code is not supported: " + to_string(e));
    Value v;
    switch (e.kind()) {
      case ExprKind::IntImm: v.i = e.as<IntImmNode>()->value; return v;
      case ExprKind::FloatImm: v.f = e.as<FloatImmNode>()->value; return v;
      case ExprKind::Var: {
        auto it = env_.find(e.as<VarNode>());
        if (it == env_.end()) throw std::runtime_error("interp: unbound variable " + to_string(e));
        return it->second;
      }
      case ExprKind::Not: v.i = !eval(e.as<NotNode>()->a).i; return v;
      case ExprKind::Select: {  // only the chosen side: padding selects guard out-of-range reads
        auto* n = e.as<SelectNode>();
        return eval(n->condition).i ? eval(n->true_value) : eval(n->false_value);
      }
      case ExprKind::Cast: {
        auto* n = e.as<CastNode>();
        Value a = eval(n->value);
        bool from_float = n->value.dtype().is_floating();
        if (t.is_floating()) v.f = round_to(t, from_float ? a.f : double(a.i));
        else v.i = wrap_int(t, from_float ? static_cast<int64_t>(a.f) : a.i);
        return v;
      }
      case ExprKind::Let: {
        auto* n = e.as<LetNode>();
        env_[n->var.get()] = eval(n->value);
        return eval(n->body);
      }
      case ExprKind::BufferLoad: {
        auto* n = e.as<BufferLoadNode>();
        double x = (*mem.at(n->buffer->data.get()))[offset(n->buffer, n->indices)];
        if (t.is_floating()) v.f = x; else v.i = static_cast<int64_t>(x);
        return v;
      }
      case ExprKind::Call: return call(e.as<CallNode>());
      default: break;
    }
    auto* b = e.as<BinaryNode>();
    if (!b) throw std::runtime_error("interp: cannot evaluate " + to_string(e));
    return binary(b);
  }

  Value call(const CallNode* n) {
    Value v;
    if (n->name == "address_of") {
      auto* load = n->args[0].as<BufferLoadNode>();
      v.mem = mem.at(load->buffer->data.get());
      v.i = offset(load->buffer, load->indices);
      return v;
    }
    if (n->call_kind == CallKind::Extern) {
      auto it = externs_.find(n->name);
      if (it == externs_.end()) throw std::runtime_error("interp: no extern function '" + n->name + "'");
      std::vector<Pointer> ptrs;
      std::vector<int64_t> ints;
      for (const Expr& a : n->args) {
        Value x = eval(a);
        if (a.dtype().is_handle()) ptrs.push_back({x.mem, x.i});
        else ints.push_back(x.i);
      }
      it->second(ptrs, ints);
      return v;
    }
    double a = eval(n->args[0]).f;
    if (n->name == "exp") v.f = std::exp(a);
    else if (n->name == "sqrt") v.f = std::sqrt(a);
    else if (n->name == "fabs") v.f = std::fabs(a);
    else if (n->name == "tanh") v.f = std::tanh(a);
    else throw std::runtime_error("interp: unknown intrinsic " + n->name);
    v.f = round_to(n->dtype, v.f);
    return v;
  }

  static int64_t floordiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

  Value binary(const BinaryNode* n) {
    Value a = eval(n->a), b = eval(n->b), v;
    DataType t = n->a.dtype();
    if (t.is_floating()) {
      double x = a.f, y = b.f, r = 0;
      switch (n->kind) {
        case ExprKind::Add: r = x + y; break;
        case ExprKind::Sub: r = x - y; break;
        case ExprKind::Mul: r = x * y; break;
        case ExprKind::Div: r = x / y; break;
        case ExprKind::Min: r = std::min(x, y); break;
        case ExprKind::Max: r = std::max(x, y); break;
        case ExprKind::EQ: v.i = x == y; return v;
        case ExprKind::NE: v.i = x != y; return v;
        case ExprKind::LT: v.i = x < y; return v;
        case ExprKind::LE: v.i = x <= y; return v;
        case ExprKind::GT: v.i = x > y; return v;
        case ExprKind::GE: v.i = x >= y; return v;
        default: throw std::runtime_error("interp: bad float op");
      }
      v.f = round_to(t, r);
      return v;
    }
    int64_t x = a.i, y = b.i, r = 0;
    switch (n->kind) {
      case ExprKind::Add: r = x + y; break;
      case ExprKind::Sub: r = x - y; break;
      case ExprKind::Mul: r = x * y; break;
      case ExprKind::Div: r = x / y; break;
      case ExprKind::Mod: r = x % y; break;
      case ExprKind::FloorDiv: r = floordiv(x, y); break;
      case ExprKind::FloorMod: r = x - floordiv(x, y) * y; break;
      case ExprKind::Min: r = std::min(x, y); break;
      case ExprKind::Max: r = std::max(x, y); break;
      case ExprKind::EQ: r = x == y; break;
      case ExprKind::NE: r = x != y; break;
      case ExprKind::LT: r = x < y; break;
      case ExprKind::LE: r = x <= y; break;
      case ExprKind::GT: r = x > y; break;
      case ExprKind::GE: r = x >= y; break;
      case ExprKind::And: r = x && y; break;
      case ExprKind::Or: r = x || y; break;
      default: throw std::runtime_error("interp: bad integer op");
    }
    v.i = wrap_int(n->dtype, r);
    return v;
  }

  const std::map<std::string, ExternFn>& externs_;
  std::unordered_map<const VarNode*, Value> env_;
};

}  // namespace

void interpret(const ir::PrimFunc& f, std::vector<std::vector<double>>& args,
               const std::map<std::string, ExternFn>& externs) {
  if (args.size() != f.params.size()) throw std::runtime_error("interp: wrong number of arguments");
  Interp in(externs);
  for (size_t p = 0; p < args.size(); ++p) {
    if (static_cast<int64_t>(args[p].size()) != f.params[p].num_elements()) {
      throw std::runtime_error("interp: argument " + std::to_string(p) + " has the wrong size");
    }
    in.mem[f.params[p]->data.get()] = &args[p];
  }
  in.exec(f.body);
}

}  // namespace kiln::testing

// ---------------------------------------------------------------------------------------------
// The interpreter's own checks, on hand-written IR.

using namespace kiln::ir;

TEST_CASE("interpreter runs loops, rounds to float32 and reports out-of-bounds accesses", "[lower]") {
  Buffer a = Buffer::make("A", DataType::f32(), {4}), c = Buffer::make("C", DataType::f32(), {1});
  Var i("i");
  Stmt body = seq({buffer_store(c, make_float(DataType::f32(), 0), {0}),
                   for_loop(i, 0, 4, ForKind::Serial,
                            buffer_store(c, buffer_load(c, {0}) + buffer_load(a, {i}) * make_float(DataType::f32(), 0.1), {0}))});
  PrimFunc f{"acc", {a, c}, body};
  std::vector<std::vector<double>> args{{1, 2, 3, 4}, {0}};
  kiln::testing::interpret(f, args);
  float ref = 0;
  for (float x : {1.f, 2.f, 3.f, 4.f}) ref = ref + x * 0.1f;
  CHECK(args[1][0] == double(ref));  // float32 arithmetic, bit for bit

  PrimFunc bad{"oob", {a, c}, for_loop(i, 0, 5, ForKind::Serial, buffer_store(c, buffer_load(a, {i}), {0}))};
  REQUIRE_THROWS_WITH(kiln::testing::interpret(bad, args), Catch::Matchers::Contains("index 4 out of bounds [0, 4)"));
}
