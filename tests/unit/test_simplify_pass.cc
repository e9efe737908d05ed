// The Stmt simplify pass: before/after printed IR per behaviour, and numerical checks that
// running a loop nest before and after the pass (by a small reference interpreter) writes the
// same buffers.
#include <catch2/catch.hpp>

#include <map>
#include <stdexcept>

#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"
#include "kiln/ir/transforms.h"

using namespace kiln::ir;

namespace {

// Runs scalar integer loop nests: buffers are int64 arrays indexed row-major by their shape.
class StmtInterp {
 public:
  std::map<const BufferNode*, std::vector<int64_t>> mem;

  void alloc(const Buffer& b) { mem[b.get()].assign(b.num_elements(), 0); }

  void run(const Stmt& s) {
    switch (s.kind()) {
      case StmtKind::For: {
        const auto* f = s.as<ForNode>();
        int64_t lo = eval(f->min), n = eval(f->extent);
        for (int64_t i = lo; i < lo + n; ++i) {
          env_[f->loop_var.get()] = i;
          run(f->body);
        }
        env_.erase(f->loop_var.get());
        return;
      }
      case StmtKind::IfThenElse: {
        const auto* f = s.as<IfThenElseNode>();
        if (eval(f->condition)) run(f->then_case);
        else if (f->else_case.defined()) run(f->else_case);
        return;
      }
      case StmtKind::LetStmt: {
        const auto* l = s.as<LetStmtNode>();
        env_[l->var.get()] = eval(l->value);
        run(l->body);
        return;
      }
      case StmtKind::Seq:
        for (const Stmt& c : s.as<SeqStmtNode>()->seq) run(c);
        return;
      case StmtKind::BufferStore: {
        const auto* st = s.as<BufferStoreNode>();
        mem.at(st->buffer.get()).at(offset(st->buffer, st->indices)) = eval(st->value);
        return;
      }
      case StmtKind::Allocate: {
        const auto* a = s.as<AllocateNode>();
        alloc(a->buffer);
        run(a->body);
        return;
      }
      case StmtKind::AttrStmt: run(s.as<AttrStmtNode>()->body); return;
      case StmtKind::Evaluate: eval(s.as<EvaluateNode>()->value); return;
    }
  }

  int64_t eval(const Expr& e) {
    if (auto* c = e.as<IntImmNode>()) return c->value;
    if (auto* v = e.as<VarNode>()) return env_.at(v);
    if (auto* l = e.as<BufferLoadNode>()) return mem.at(l->buffer.get()).at(offset(l->buffer, l->indices));
    if (auto* s = e.as<SelectNode>()) return eval(s->condition) ? eval(s->true_value) : eval(s->false_value);
    auto* b = e.as<BinaryNode>();
    if (!b) throw std::logic_error(std::string("interp: ") + kind_name(e.kind()));
    int64_t x = eval(b->a), y = eval(b->b);
    auto fdiv = [](int64_t p, int64_t q) { return p / q - ((p % q != 0) && ((p < 0) != (q < 0))); };
    switch (b->kind) {
      case ExprKind::Add: return x + y;
      case ExprKind::Sub: return x - y;
      case ExprKind::Mul: return x * y;
      case ExprKind::FloorDiv: return fdiv(x, y);
      case ExprKind::FloorMod: return x - fdiv(x, y) * y;
      case ExprKind::Div: return x / y;
      case ExprKind::Mod: return x % y;
      case ExprKind::Min: return std::min(x, y);
      case ExprKind::Max: return std::max(x, y);
      case ExprKind::LT: return x < y;
      case ExprKind::LE: return x <= y;
      case ExprKind::GT: return x > y;
      case ExprKind::GE: return x >= y;
      case ExprKind::EQ: return x == y;
      case ExprKind::NE: return x != y;
      case ExprKind::And: return x && y;
      case ExprKind::Or: return x || y;
      default: throw std::logic_error(std::string("interp: ") + kind_name(b->kind));
    }
  }

 private:
  size_t offset(const Buffer& b, const std::vector<Expr>& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t i = eval(idx[d]), n = *as_const_int(b->shape[d]);
      if (i < 0 || i >= n) throw std::out_of_range(b->name + " index out of range");
      off = off * n + i;
    }
    return static_cast<size_t>(off);
  }
  VarMap<int64_t> env_;
};

// Runs s on fresh buffers (inputs filled with a pattern) and returns the output's contents.
std::vector<int64_t> run_on(const Stmt& s, const Buffer& in, const Buffer& out) {
  StmtInterp it;
  it.alloc(in);
  it.alloc(out);
  auto& v = it.mem[in.get()];
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i * 7 % 13) - 5;
  it.run(s);
  return it.mem[out.get()];
}

Stmt store1(const Buffer& b, const Expr& value, const Expr& index) { return buffer_store(b, value, {index}); }

}  // namespace

TEST_CASE("simplify pass: removes the guard of an exact split", "[simplify]") {
  Buffer A = Buffer::make("A", DataType::i32(), {64});
  Buffer B = Buffer::make("B", DataType::i32(), {64});
  Var io("io"), ii("ii");
  Expr idx = io * 8 + ii;
  Stmt body = if_then_else(idx < 64, store1(A, buffer_load(B, {idx}) + 1, idx));
  Stmt s = for_loop(io, 0, 8, ForKind::Serial, for_loop(ii, 0, 8, ForKind::Serial, body));
  Stmt r = simplify(s);
  CHECK(to_string(r) ==
        "for (io, 0, 8) {\n"
        "  for (ii, 0, 8) {\n"
        "    A[io*8 + ii] = B[io*8 + ii] + 1\n"
        "  }\n"
        "}\n");
  CHECK(run_on(r, B, A) == run_on(s, B, A));
}

TEST_CASE("simplify pass: keeps the guard of an inexact split", "[simplify]") {
  Buffer A = Buffer::make("A", DataType::i32(), {60});
  Buffer B = Buffer::make("B", DataType::i32(), {60});
  Var io("io"), ii("ii");
  Expr idx = io * 8 + ii;
  Stmt body = if_then_else(idx < 60, store1(A, buffer_load(B, {idx}) * 2, idx));
  Stmt s = for_loop(io, 0, 8, ForKind::Serial, for_loop(ii, 0, 8, ForKind::Serial, body));
  Stmt r = simplify(s);
  CHECK(to_string(r) ==
        "for (io, 0, 8) {\n"
        "  for (ii, 0, 8) {\n"
        "    if (io*8 + ii < 60) {\n"
        "      A[io*8 + ii] = B[io*8 + ii]*2\n"
        "    }\n"
        "  }\n"
        "}\n");
  CHECK(r.same_as(s));  // nothing changed: the very same statement comes back
  CHECK(run_on(r, B, A) == run_on(s, B, A));
}

TEST_CASE("simplify pass: loop ranges simplify indices (fused loop recovery)", "[simplify]") {
  Buffer A = Buffer::make("A", DataType::i32(), {4, 6});
  Buffer B = Buffer::make("B", DataType::i32(), {4, 6});
  Var f("f"), i("i"), j("j");
  // A fused loop over (i, j) split again by 6: the indices recover i and j.
  Expr fi = floordiv(i * 6 + j, 6), fj = floormod(i * 6 + j, 6);
  Stmt s = for_loop(i, 0, 4, ForKind::Serial,
                    for_loop(j, 0, 6, ForKind::Serial,
                             buffer_store(A, buffer_load(B, {fi, fj}) + fi * 6 + fj - (i * 6 + j), {fi, fj})));
  Stmt r = simplify(s);
  CHECK(to_string(r) ==
        "for (i, 0, 4) {\n"
        "  for (j, 0, 6) {\n"
        "    A[i, j] = B[i, j]\n"
        "  }\n"
        "}\n");
  CHECK(run_on(r, B, A) == run_on(s, B, A));
  // The fused form itself: floordiv(f, 6)*6 + floormod(f, 6) is f again.
  Stmt g = for_loop(f, 0, 24, ForKind::Serial,
                    buffer_store(A, buffer_load(B, {floordiv(f, 6), floormod(f, 6)}),
                                 {floordiv(floordiv(f, 6) * 6 + floormod(f, 6), 6), floormod(f, 6)}));
  CHECK(to_string(simplify(g)) ==
        "for (f, 0, 24) {\n"
        "  A[floordiv(f, 6), floormod(f, 6)] = B[floordiv(f, 6), floormod(f, 6)]\n"
        "}\n");
}

TEST_CASE("simplify pass: loops of extent 0 vanish, extent 1 become their body", "[simplify]") {
  Buffer A = Buffer::make("A", DataType::i32(), {16});
  Var i("i"), j("j"), n("n");
  SECTION("extent 0 inside a sequence") {
    Stmt s = seq({for_loop(i, 0, n - n, ForKind::Serial, store1(A, 1, i)), store1(A, 2, 0)});
    CHECK(to_string(simplify(s)) == "A[0] = 2\n");
  }
  SECTION("extent 1 substitutes the loop min") {
    Stmt s = for_loop(i, 3, 1, ForKind::Serial, store1(A, i * 2, i + 1));
    CHECK(to_string(simplify(s)) == "A[4] = 6\n");
  }
  SECTION("extent 1 of a vectorized or unrolled loop too") {
    Stmt s = for_loop(i, 0, 4, ForKind::Serial,
                      for_loop(j, i, 1, ForKind::Vectorized, store1(A, j, i * 4 + j - i)));
    CHECK(to_string(simplify(s)) == "for (i, 0, 4) {\n  A[i*4] = i\n}\n");
  }
  SECTION("a thread-bound loop of extent 1 stays (the launch needs it)") {
    Stmt s = for_loop(i, 0, 1, ForKind::ThreadBinding, store1(A, i, i), "threadIdx.x");
    CHECK(to_string(simplify(s)) == "thread_binding(\"threadIdx.x\") for (i, 0, 1) {\n  A[0] = 0\n}\n");
  }
  SECTION("everything gone leaves a no-op") {
    Stmt s = for_loop(i, 0, 0, ForKind::Serial, store1(A, 1, i));
    CHECK(to_string(simplify(s)) == "0\n");
  }
  SECTION("loop min and extent are simplified") {
    Stmt s = for_loop(i, n - n, n * 1 + 0, ForKind::Parallel, store1(A, i, i));
    CHECK(to_string(simplify(s)) == "parallel for (i, 0, n) {\n  A[i] = i\n}\n");
  }
}

TEST_CASE("simplify pass: if with a provable condition", "[simplify]") {
  Buffer A = Buffer::make("A", DataType::i32(), {16});
  Var i("i"), n("n");
  SECTION("false with else -> else") {
    Stmt s = for_loop(i, 0, 8, ForKind::Serial, if_then_else(i >= 8, store1(A, 1, i), store1(A, 2, i)));
    CHECK(to_string(simplify(s)) == "for (i, 0, 8) {\n  A[i] = 2\n}\n");
  }
  SECTION("false without else -> nothing, and the loop goes with it") {
    Stmt s = for_loop(i, 0, 8, ForKind::Serial, if_then_else(i > 10, store1(A, 1, i)));
    CHECK(to_string(simplify(s)) == "0\n");
  }
  SECTION("undecided: the condition is simplified, an empty then-branch flips it") {
    Stmt s = for_loop(i, 0, 8, ForKind::Serial,
                      if_then_else(i + 1 < n + 1, for_loop(n, 0, 0, ForKind::Serial, store1(A, 0, 0)),
                                   store1(A, 3, i)));
    CHECK(to_string(simplify(s)) == "for (i, 0, 8) {\n  if (n <= i) {\n    A[i] = 3\n  }\n}\n");
  }
}

TEST_CASE("simplify pass: let bindings", "[simplify]") {
  Buffer A = Buffer::make("A", DataType::i32(), {64});
  Buffer B = Buffer::make("B", DataType::i32(), {64});
  Var i("i"), t("t"), u("u");
  SECTION("trivial values are inlined") {
    Stmt s = for_loop(i, 0, 8, ForKind::Serial, let_stmt(t, i, store1(A, t + t, t)));
    CHECK(to_string(simplify(s)) == "for (i, 0, 8) {\n  A[i] = i*2\n}\n");
  }
  SECTION("a let's value bounds its variable: the guard goes, the let stays") {
    Stmt s = for_loop(i, 0, 8, ForKind::Serial,
                      let_stmt(t, buffer_load(B, {i}) * 0 + i * 8 + 7,
                               if_then_else(t < 64, store1(A, t, t))));
    Stmt r = simplify(s);
    CHECK(to_string(r) == "for (i, 0, 8) {\n  let t = i*8 + 7\n  A[t] = t\n}\n");
    CHECK(run_on(r, B, A) == run_on(s, B, A));
  }
  SECTION("a dead let goes away") {
    Stmt s = for_loop(i, 0, 8, ForKind::Serial, let_stmt(u, i * i, store1(A, 1, i)));
    CHECK(to_string(simplify(s)) == "for (i, 0, 8) {\n  A[i] = 1\n}\n");
  }
}

TEST_CASE("simplify pass: sequences are flattened, no-op evaluates dropped", "[simplify]") {
  Buffer A = Buffer::make("A", DataType::i32(), {8});
  Var i("i");
  // Built by hand: seq() would already flatten.
  Stmt inner = Stmt(std::make_shared<SeqStmtNode>(std::vector<Stmt>{store1(A, 1, 0), evaluate(0)}));
  Stmt outer = Stmt(std::make_shared<SeqStmtNode>(
      std::vector<Stmt>{inner, store1(A, 2, 1 + 0), evaluate(Expr(3) - 3)}));
  Stmt r = simplify(outer);
  REQUIRE(r.as<SeqStmtNode>());
  CHECK(r.as<SeqStmtNode>()->seq.size() == 2);
  CHECK(to_string(r) == "A[0] = 1\nA[1] = 2\n");
}

TEST_CASE("simplify pass: vector expressions keep their lanes", "[simplify]") {
  Buffer A = Buffer::make("A", DataType::i32(), {64});
  Buffer B = Buffer::make("B", DataType::i32(), {64});
  Var io("io");
  Expr idx = ramp(io * 8 + 0, 1, 8) + broadcast(Expr(0), 8);
  Stmt s = for_loop(io, 0, 8, ForKind::Serial,
                    buffer_store(A, buffer_load(B, {idx}) + broadcast(Expr(1) * 1, 8), {idx}));
  Stmt r = simplify(s);
  CHECK(to_string(r) == "for (io, 0, 8) {\n  A[ramp(io*8, 1, 8)] = B[ramp(io*8, 1, 8)] + broadcast(1, 8)\n}\n");
  const auto* st = r.as<ForNode>()->body.as<BufferStoreNode>();
  REQUIRE(st);
  CHECK(st->value.dtype() == DataType::i32(8));
  CHECK(st->indices[0].dtype() == DataType::i32(8));
}

TEST_CASE("simplify pass: PrimFunc overload and random split nests agree numerically", "[simplify]") {
  // Split a loop of extent n by factor f (guarded), fuse-style indices on a 2-d output; check
  // the simplified function computes the same values for many (n, f).
  for (int n : {1, 5, 12, 16, 30}) {
    for (int factor : {1, 2, 3, 4, 8}) {
      Buffer A = Buffer::make("A", DataType::i32(), {n, 2});
      Buffer B = Buffer::make("B", DataType::i32(), {n * 2});
      Var io("io"), ii("ii"), k("k");
      Expr x = io * factor + ii;
      Expr flat = x * 2 + k;
      Stmt body = if_then_else(x < n, buffer_store(A, buffer_load(B, {floordiv(flat, 2) * 2 + floormod(flat, 2)}) +
                                                          truncdiv(flat, 2) - min(x, n - 1),
                                                      {floordiv(flat, 2), floormod(flat, 2)}));
      Stmt s = for_loop(io, 0, (n + factor - 1) / factor, ForKind::Serial,
                        for_loop(ii, 0, factor, ForKind::Serial, for_loop(k, 0, 2, ForKind::Serial, body)));
      PrimFunc fn{"f", {A, B}, s};
      PrimFunc g = simplify(fn);
      CHECK(g.name == "f");
      CHECK(g.params.size() == 2);
      INFO("n=" << n << " factor=" << factor << "\n" << to_string(g));
      CHECK(run_on(g.body, B, A) == run_on(s, B, A));
      // Exact splits lose their guard and all div/mod.
      if (n % factor == 0) {
        std::string text = to_string(g.body);
        CHECK(text.find("if") == std::string::npos);
        CHECK(text.find("floor") == std::string::npos);
        CHECK(text.find("trunc") == std::string::npos);
      }
    }
  }
}

TEST_CASE("simplify pass: conditions of enclosing ifs are known inside them", "[simplify]") {
  Buffer A = Buffer::make("A", DataType::i32(), {64});
  Var io("io"), ii("ii"), n("n");
  Expr x = io * 8 + ii;
  SECTION("a repeated guard folds, also as part of a conjunction") {
    Stmt inner = seq({if_then_else(ii + io * 8 < 60, buffer_store(A, 1, {x})),
                      if_then_else(x < 60 && ii < n, buffer_store(A, 2, {x}))});
    Stmt s = for_loop(io, 0, 8, ForKind::Serial,
                      for_loop(ii, 0, 8, ForKind::Serial, if_then_else(x < 60, inner)));
    CHECK(to_string(simplify(s)) ==
          "for (io, 0, 8) {\n"
          "  for (ii, 0, 8) {\n"
          "    if (io*8 + ii < 60) {\n"
          "      A[io*8 + ii] = 1\n"
          "      if (ii < n) {\n"
          "        A[io*8 + ii] = 2\n"
          "      }\n"
          "    }\n"
          "  }\n"
          "}\n");
  }
  SECTION("the else branch knows the negation; facts end with their if") {
    Stmt s = for_loop(io, 0, 8, ForKind::Serial,
                      seq({if_then_else(io < n, buffer_store(A, 1, {io}),
                                        if_then_else(io >= n, buffer_store(A, 2, {io}))),
                           if_then_else(io < n, buffer_store(A, 3, {io}))}));
    CHECK(to_string(simplify(s)) ==
          "for (io, 0, 8) {\n"
          "  if (io < n) {\n"
          "    A[io] = 1\n"
          "  } else {\n"
          "    A[io] = 2\n"
          "  }\n"
          "  if (io < n) {\n"
          "    A[io] = 3\n"
          "  }\n"
          "}\n");
  }
}
