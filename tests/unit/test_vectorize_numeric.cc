// Numerical equivalence of flatten_storage -> vectorize_loops -> unroll_loops: a small reference
// interpreter of the loop-level IR (vectors included) runs a kernel before and after the passes
// on the same random inputs. The passes never reorder arithmetic within a lane, so the outputs
// must match exactly (0 ulp); the interpreter also throws on any out-of-bounds access, which
// catches an unsafe if -> select conversion.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "kiln/ir/printer.h"
#include "kiln/ir/transforms.h"
#include "kiln/ir/verify.h"

using namespace kiln::ir;

namespace {

using Lanes = std::vector<double>;

class Interpreter {
 public:
  // Buffers by data var: the params' storage, filled by the caller.
  std::unordered_map<const VarNode*, std::vector<double>> memory;

  void run(const Stmt& s) {
    if (!s.defined()) return;
    if (const auto* n = s.as<LetStmtNode>()) {
      env_[n->var.get()] = eval(n->value);
      run(n->body);
    } else if (const auto* n = s.as<AttrStmtNode>()) {
      run(n->body);
    } else if (const auto* n = s.as<BufferStoreNode>()) {
      Lanes v = eval(n->value);
      std::vector<int64_t> at = address(n->buffer, n->indices);
      for (size_t l = 0; l < at.size(); ++l) memory.at(n->buffer->data.get())[at[l]] = round(n->buffer->dtype, v.at(l));
    } else if (const auto* n = s.as<AllocateNode>()) {
      memory[n->buffer->data.get()] = std::vector<double>(n->buffer.num_elements(), 0.0);
      run(n->body);
      memory.erase(n->buffer->data.get());
    } else if (const auto* n = s.as<ForNode>()) {
      int64_t mn = scalar_int(n->min), ext = scalar_int(n->extent);
      for (int64_t i = mn; i < mn + ext; ++i) {
        env_[n->loop_var.get()] = {static_cast<double>(i)};
        run(n->body);
      }
    } else if (const auto* n = s.as<IfThenElseNode>()) {
      run(scalar_int(n->condition) ? n->then_case : n->else_case);
    } else if (const auto* n = s.as<SeqStmtNode>()) {
      for (const Stmt& c : n->seq) run(c);
    } else if (const auto* n = s.as<EvaluateNode>()) {
      eval(n->value);
    }
  }

 private:
  static double round(DataType t, double x) {
    if (t.is_float() && t.bits == 32) return static_cast<float>(x);
    if (t.is_integer() || t.is_bool()) return std::trunc(x);
    return x;
  }
  int64_t scalar_int(const Expr& e) {
    Lanes v = eval(e);
    if (v.size() != 1) throw std::runtime_error("vector where a scalar is needed: " + to_string(e));
    return static_cast<int64_t>(v[0]);
  }

  // Row-major element offsets of an access, one per lane; throws when out of bounds.
  std::vector<int64_t> address(const Buffer& b, const std::vector<Expr>& indices) {
    std::vector<Lanes> idx;
    size_t lanes = 1;
    for (const Expr& i : indices) {
      idx.push_back(eval(i));
      lanes = std::max(lanes, idx.back().size());
    }
    std::vector<int64_t> out(lanes, 0);
    for (size_t d = 0; d < indices.size(); ++d) {
      int64_t extent = *as_const_int(b->shape.at(d));
      for (size_t l = 0; l < lanes; ++l) {
        int64_t i = static_cast<int64_t>(idx[d].size() == 1 ? idx[d][0] : idx[d].at(l));
        if (i < 0 || i >= extent) throw std::runtime_error("out of bounds: " + b->name);
        out[l] = out[l] * extent + i;
      }
    }
    return out;
  }

  Lanes eval(const Expr& e) {
    if (auto c = as_const_int(e); c && !e.as<BroadcastNode>()) return {static_cast<double>(*c)};
    if (const auto* n = e.as<FloatImmNode>()) return {n->value};
    if (const auto* n = e.as<VarNode>()) return env_.at(n);
    if (const auto* n = e.as<RampNode>()) {
      double base = eval(n->base)[0], stride = eval(n->stride)[0];
      Lanes out;
      for (int l = 0; l < n->lanes; ++l) out.push_back(base + l * stride);
      return out;
    }
    if (const auto* n = e.as<BroadcastNode>()) return Lanes(n->lanes, eval(n->value)[0]);
    if (const auto* n = e.as<CastNode>()) return map(eval(n->value), [&](double x) { return round(n->dtype, x); });
    if (const auto* n = e.as<NotNode>()) return map(eval(n->a), [](double x) { return x == 0 ? 1.0 : 0.0; });
    if (const auto* n = e.as<LetNode>()) {
      env_[n->var.get()] = eval(n->value);
      return eval(n->body);
    }
    if (const auto* n = e.as<SelectNode>()) {
      Lanes c = eval(n->condition), t = eval(n->true_value), f = eval(n->false_value);
      Lanes out(t.size());
      for (size_t l = 0; l < t.size(); ++l) out[l] = c[c.size() == 1 ? 0 : l] ? t[l] : f[l];
      return out;
    }
    if (const auto* n = e.as<CallNode>()) {
      double (*fn)(double) = n->name == "exp" ? static_cast<double (*)(double)>(std::exp)
                             : n->name == "sqrt" ? static_cast<double (*)(double)>(std::sqrt)
                                                 : nullptr;
      if (!fn) throw std::runtime_error("interpreter: no intrinsic " + n->name);
      return map(eval(n->args.at(0)), [&](double x) { return round(n->dtype, fn(x)); });
    }
    if (const auto* n = e.as<BufferLoadNode>()) {
      Lanes out;
      for (int64_t a : address(n->buffer, n->indices)) out.push_back(memory.at(n->buffer->data.get()).at(a));
      return out;
    }
    const auto* b = e.as<BinaryNode>();
    if (!b) throw std::runtime_error("interpreter: cannot evaluate " + to_string(e));
    Lanes x = eval(b->a), y = eval(b->b), out(x.size());
    bool is_int = b->a.dtype().is_integer();
    for (size_t l = 0; l < x.size(); ++l) out[l] = round(b->dtype, binary(b->kind, x[l], y.at(l), is_int));
    return out;
  }

  static double binary(ExprKind k, double x, double y, bool is_int) {
    auto floordiv = [](double p, double q) { return std::floor(p / q); };
    switch (k) {
      case ExprKind::Add: return x + y;
      case ExprKind::Sub: return x - y;
      case ExprKind::Mul: return x * y;
      case ExprKind::Div: return is_int ? std::trunc(x / y) : x / y;
      case ExprKind::Mod: return std::fmod(x, y);
      case ExprKind::FloorDiv: return floordiv(x, y);
      case ExprKind::FloorMod: return x - floordiv(x, y) * y;
      case ExprKind::Min: return std::min(x, y);
      case ExprKind::Max: return std::max(x, y);
      case ExprKind::EQ: return x == y;
      case ExprKind::NE: return x != y;
      case ExprKind::LT: return x < y;
      case ExprKind::LE: return x <= y;
      case ExprKind::GT: return x > y;
      case ExprKind::GE: return x >= y;
      case ExprKind::And: return x && y;
      case ExprKind::Or: return x || y;
      default: throw std::runtime_error("interpreter: bad binary kind");
    }
  }

  template <typename F>
  static Lanes map(Lanes v, F f) {
    for (double& x : v) x = f(x);
    return v;
  }

  VarMap<Lanes> env_;
};

// Runs f on seeded random inputs (outputs start as zeros) and returns every param's contents.
std::vector<std::vector<double>> run_func(const PrimFunc& f, size_t num_outputs) {
  Interpreter interp;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (size_t p = 0; p < f.params.size(); ++p) {
    std::vector<double> data(f.params[p].num_elements(), 0.0);
    if (p + num_outputs < f.params.size())
      for (double& x : data) x = dist(rng);
    interp.memory[f.params[p]->data.get()] = data;
  }
  interp.run(f.body);
  std::vector<std::vector<double>> out;
  for (const Buffer& b : f.params) out.push_back(interp.memory.at(b->data.get()));
  return out;
}

PrimFunc lower(const PrimFunc& f, std::vector<std::string>* notes) {
  verify(f);
  PrimFunc out = unroll_loops(vectorize_loops(flatten_storage(f), notes));
  verify(out);
  return out;
}

}  // namespace

TEST_CASE("passes preserve a tiled matmul exactly", "[vectorize][unroll][flatten][numeric]") {
  const int M = 8, N = 32, K = 12;
  Buffer a = Buffer::make("A", DataType::f32(), {M, K});
  Buffer b = Buffer::make("B", DataType::f32(), {K, N});
  Buffer c = Buffer::make("C", DataType::f32(), {M, N});
  // Each loop defines its own var (verify checks it): the init and update loops get one each.
  Var i("i"), jo("jo"), ji_init("ji"), ji("ji"), ko("ko"), ki("ki");
  Expr j = jo * 16 + ji, k = ko * 4 + ki;
  Stmt init = for_loop(ji_init, 0, 16, ForKind::Vectorized, buffer_store(c, 0.0f, {i, jo * 16 + ji_init}));
  Stmt update = for_loop(ko, 0, K / 4, ForKind::Serial, for_loop(ki, 0, 4, ForKind::Unrolled,
      for_loop(ji, 0, 16, ForKind::Vectorized,
               buffer_store(c, buffer_load(c, {i, j}) + buffer_load(a, {i, k}) * buffer_load(b, {k, j}), {i, j}))));
  PrimFunc f{"matmul", {a, b, c},
             for_loop(i, 0, M, ForKind::Parallel, for_loop(jo, 0, N / 16, ForKind::Serial, seq({init, update})))};
  std::vector<std::string> notes;
  PrimFunc g = lower(f, &notes);
  CHECK(notes.empty());
  // The passes did what they say: the update is four vector statements, one per ki.
  std::string text = to_string(g);
  CHECK_THAT(text, Catch::Matchers::Contains(
                       "C[ramp(i*32 + jo*16, 1, 16)] = C[ramp(i*32 + jo*16, 1, 16)] + "
                       "broadcast(A[i*12 + (ko*4 + 3)], 16)*B[ramp((ko*4 + 3)*32 + jo*16, 1, 16)]"));
  auto before = run_func(f, 1), after = run_func(g, 1);
  // Plain C++ reference for C, in the same summation order.
  for (int ii = 0; ii < M; ++ii)
    for (int jj = 0; jj < N; ++jj) {
      float acc = 0.0f;
      for (int kk = 0; kk < K; ++kk)
        acc += static_cast<float>(before[0][ii * K + kk]) * static_cast<float>(before[1][kk * N + jj]);
      CHECK(before[2][ii * N + jj] == Approx(acc).margin(1e-5));
    }
  CHECK(before == after);  // bitwise: same operations per element
}

TEST_CASE("passes preserve a guarded tail, selects, casts, lets and intrinsics", "[vectorize][numeric]") {
  Buffer a = Buffer::make("A", DataType::f32(), {4, 16});
  Buffer b = Buffer::make("B", DataType::f32(), {4, 16});
  Var i("i"), j("j"), x("x", DataType::f32());
  // Only the first 60 of 64 elements are written: the select must leave the last 4 as they were.
  Expr flat = i * 16 + j;
  Stmt body = if_then_else(flat < 60,
      let_stmt(x, buffer_load(a, {i, j}),
               buffer_store(b, select(x > 0.0f, make_intrinsic("exp", {x}), x * cast(DataType::f32(), j)), {i, j})));
  PrimFunc f{"tail", {a, b}, for_loop(i, 0, 4, ForKind::Serial, for_loop(j, 0, 16, ForKind::Vectorized, body))};
  std::vector<std::string> notes;
  PrimFunc g = lower(f, &notes);
  CHECK(notes.empty());
  CHECK_THAT(to_string(g), Catch::Matchers::Contains("= select(ramp(i*16, 1, 16) < broadcast(60, 16), select("));
  auto before = run_func(f, 1), after = run_func(g, 1);
  CHECK(before == after);
  CHECK(before[1][63] == 0.0);
}

TEST_CASE("passes preserve a loop they keep serial", "[vectorize][numeric]") {
  Buffer a = Buffer::make("A", DataType::f32(), {8, 16});
  Buffer s = Buffer::make("S", DataType::f32(), {8});
  Var i("i"), j("j");
  Stmt body = for_loop(i, 0, 8, ForKind::Serial,
                       seq({buffer_store(s, 0.0f, {i}),
                            for_loop(j, 0, 16, ForKind::Vectorized,
                                     buffer_store(s, buffer_load(s, {i}) + buffer_load(a, {i, j}), {i}))}));
  PrimFunc f{"rowsum", {a, s}, body};
  std::vector<std::string> notes;
  PrimFunc g = lower(f, &notes);
  REQUIRE(notes.size() == 1);
  auto before = run_func(f, 1), after = run_func(g, 1);
  CHECK(before == after);
  float acc = 0.0f;
  for (int jj = 0; jj < 16; ++jj) acc += static_cast<float>(before[0][16 + jj]);
  CHECK(before[1][1] == Approx(acc).margin(1e-5));
}
