// Structural equality and hashing.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "kiln/ir/structural.h"

using namespace kiln::ir;

TEST_CASE("structural_equal on expressions", "[structural]") {
  Var x("x"), y("y"), x2("x");
  CHECK(structural_equal(x * 4 + y, x * 4 + y));
  CHECK_FALSE(structural_equal(x * 4 + y, x * 4 - y));            // kind
  CHECK_FALSE(structural_equal(x * 4 + y, x * 5 + y));            // constant
  CHECK_FALSE(structural_equal(x + y, y + x));                    // order matters
  CHECK_FALSE(structural_equal(Expr(1), make_int(DataType::i64(), 1)));  // type
  CHECK(structural_equal(make_float(DataType::f32(), 0.5), make_float(DataType::f32(), 0.5)));
  CHECK(structural_equal(make_float(DataType::f32(), NAN), make_float(DataType::f32(), NAN)));
  CHECK(structural_equal(ramp(x, 1, 4), ramp(x, 1, 4)));
  CHECK_FALSE(structural_equal(ramp(x, 1, 4), ramp(x, 1, 8)));
  CHECK_FALSE(structural_equal(broadcast(x, 4), broadcast(x, 8)));
  CHECK(structural_equal(make_intrinsic("exp", {cast(DataType::f32(), x)}),
                         make_intrinsic("exp", {cast(DataType::f32(), x)})));
  CHECK_FALSE(structural_equal(make_intrinsic("exp", {cast(DataType::f32(), x)}),
                               make_intrinsic("log", {cast(DataType::f32(), x)})));
  // Variables by identity: a second variable named x is a different variable.
  CHECK_FALSE(structural_equal(x + 1, x2 + 1));
}

TEST_CASE("structural_equal with map_free_vars: consistent renaming", "[structural]") {
  Var x("x"), y("y"), a("a"), b("b");
  CHECK(structural_equal(x * 4 + y, a * 4 + b, true));
  CHECK(structural_equal(x + y, y + x, true));  // x->y, y->x is a consistent renaming
  // Not a renaming: x would have to map to both a and b, or both x and y to a.
  CHECK_FALSE(structural_equal(x + x, a + b, true));
  CHECK_FALSE(structural_equal(x + y, a + a, true));
  // Types must still agree.
  Var f("f", DataType::i64());
  CHECK_FALSE(structural_equal(x + 1, f + make_int(DataType::i64(), 1), true));
  // Let variables rename too.
  Var t("t"), u("u");
  CHECK(structural_equal(let(t, x, t * 2), let(u, x, u * 2), true));
  CHECK_FALSE(structural_equal(let(t, x, t * 2), let(u, x, u * 2)));
  CHECK_FALSE(structural_equal(let(t, x, t * 2), let(u, x, x * 2), true));
}

TEST_CASE("structural_equal on statements: loop vars and buffers", "[structural]") {
  auto make = [](const std::string& bname, const std::string& iname) {
    Buffer A = Buffer::make(bname, DataType::f32(), {16});
    Buffer T = Buffer::make("T" + bname, DataType::f32(), {16}, "local");
    Var i(iname);
    Stmt body = seq({buffer_store(T, buffer_load(A, {i}) * 2.0f, {i}), buffer_store(A, buffer_load(T, {i}), {i})});
    return allocate(T, for_loop(i, 0, 16, ForKind::Serial, body));
  };
  Stmt s1 = make("A", "i"), s2 = make("B", "j");
  CHECK(structural_equal(s1, s2, true));
  CHECK_FALSE(structural_equal(s1, s2));
  CHECK(structural_equal(s1, s1));
  CHECK(structural_hash(s1) == structural_hash(s2));

  Buffer A = Buffer::make("A", DataType::f32(), {16});
  Buffer C = Buffer::make("C", DataType::f32(), {8});
  Var i("i"), j("j");
  // Buffers with a different shape are not a renaming of each other.
  CHECK_FALSE(structural_equal(buffer_store(A, 1.0f, {i}), buffer_store(C, 1.0f, {i}), true));
  // One buffer cannot stand for two.
  Buffer A2 = Buffer::make("A2", DataType::f32(), {16});
  Stmt two = seq({buffer_store(A, 1.0f, {i}), buffer_store(A2, 1.0f, {i})});
  Stmt one = seq({buffer_store(A, 1.0f, {i}), buffer_store(A, 1.0f, {i})});
  CHECK_FALSE(structural_equal(two, one, true));
  // For kinds, extents, if/else shapes.
  CHECK_FALSE(structural_equal(for_loop(i, 0, 4, ForKind::Serial, evaluate(i)),
                               for_loop(j, 0, 4, ForKind::Parallel, evaluate(j)), true));
  CHECK_FALSE(structural_equal(for_loop(i, 0, 4, ForKind::Serial, evaluate(i)),
                               for_loop(j, 0, 5, ForKind::Serial, evaluate(j)), true));
  CHECK_FALSE(structural_equal(if_then_else(i < 1, evaluate(i)),
                               if_then_else(i < 1, evaluate(i), evaluate(i))));
  CHECK(structural_equal(let_stmt(i, Expr(3), evaluate(i + 1)), let_stmt(j, Expr(3), evaluate(j + 1)), true));
}

TEST_CASE("structural_hash agrees with equality under renaming and separates differences", "[structural]") {
  Var x("x"), y("y"), a("a"), b("b");
  CHECK(structural_hash(x * 4 + y) == structural_hash(a * 4 + b));
  CHECK(structural_hash(x * 4 + y) == structural_hash(x * 4 + y));
  CHECK(structural_hash(x * 4 + y) != structural_hash(x * 4 - y));
  CHECK(structural_hash(x * 4 + y) != structural_hash(x * 5 + y));
  CHECK(structural_hash(x + x) != structural_hash(x + y));  // first-appearance numbering
  CHECK(structural_hash(Expr(1)) != structural_hash(make_int(DataType::i64(), 1)));
  CHECK(structural_hash(make_float(DataType::f32(), 0.0)) == structural_hash(make_float(DataType::f32(), -0.0)));
  CHECK(structural_hash(ramp(x, 1, 4)) != structural_hash(ramp(x, 1, 8)));
  // Many distinct small expressions: few collisions.
  std::set<size_t> hashes;
  int n = 0;
  for (int c = 0; c < 20; ++c) {
    for (int k = 0; k < 5; ++k) {
      Expr e = k == 0 ? x + c : k == 1 ? x * c : k == 2 ? floordiv(x, c + 1) : k == 3 ? min(x, c) : max(x, c);
      hashes.insert(structural_hash(e));
      ++n;
    }
  }
  CHECK(static_cast<int>(hashes.size()) == n);
}
