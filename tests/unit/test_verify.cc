// verify: a well-formed function passes (also after each pass); each rule has a failing case.
#include <catch2/catch.hpp>

#include "kiln/ir/functor.h"
#include "kiln/ir/transforms.h"
#include "kiln/ir/verify.h"
#include "kiln/support/error.h"

using namespace kiln::ir;
using Catch::Matchers::Contains;

namespace {

// verify must throw kiln::InternalError whose message contains `what`.
void check_rejects(const PrimFunc& f, const std::string& what) {
  REQUIRE_THROWS_AS(verify(f), kiln::InternalError);
  REQUIRE_THROWS_WITH(verify(f), Contains(what));
}

}  // namespace

TEST_CASE("verify: well-formed functions pass, before and after every pass", "[verify]") {
  Buffer a = Buffer::make("A", DataType::f32(), {8, 16});
  Buffer b = Buffer::make("B", DataType::f32(), {8, 16});
  Buffer t = Buffer::make("T", DataType::f32(), {16}, "local");
  Var i("i"), j("j"), k("k"), x("x", DataType::f32()), y("y", DataType::f32());
  Stmt fill = for_loop(j, 0, 16, ForKind::Vectorized,
                       let_stmt(x, buffer_load(a, {i, j}), buffer_store(t, let(y, x * x, y + x), {j})));
  Stmt back = for_loop(k, 0, 2, ForKind::Unrolled, buffer_store(b, buffer_load(t, {k}), {i, k}));
  PrimFunc f{"ok", {a, b}, for_loop(i, 0, 8, ForKind::Unrolled, allocate(t, seq({fill, back})))};
  CHECK_NOTHROW(verify(f));
  PrimFunc flat = flatten_storage(f);
  CHECK_NOTHROW(verify(flat));
  PrimFunc vec = vectorize_loops(flat);
  CHECK_NOTHROW(verify(vec));
  // Unrolling copies loops, lets and allocations eight times: each copy must define its own.
  CHECK_NOTHROW(verify(unroll_loops(vec)));
}

TEST_CASE("verify: a variable used but never defined", "[verify]") {
  Buffer b = Buffer::make("B", DataType::i32(), {4});
  Var i("i");
  check_rejects(PrimFunc{"f", {b}, buffer_store(b, 0, {i})}, "in 'f': variable 'i' is used but never defined");
}

TEST_CASE("verify: a variable used outside the scope of its definition", "[verify]") {
  Buffer b = Buffer::make("B", DataType::i32(), {4});
  Var i("i");
  Stmt s = seq({for_loop(i, 0, 4, ForKind::Serial, buffer_store(b, i, {i})), buffer_store(b, 0, {i})});
  check_rejects(PrimFunc{"f", {b}, s}, "variable 'i' is used outside the scope of its definition");
  Var x("x");
  Expr escaped = let(x, Expr(1), x + 1) + x;
  check_rejects(PrimFunc{"g", {b}, buffer_store(b, escaped, {0})}, "variable 'x' is used outside the scope");
}

TEST_CASE("verify: a buffer that is neither a parameter nor allocated", "[verify]") {
  Buffer b = Buffer::make("B", DataType::f32(), {4});
  Buffer t = Buffer::make("T", DataType::f32(), {4}, "local");
  check_rejects(PrimFunc{"f", {b}, buffer_store(b, buffer_load(t, {0}), {0})}, "buffer 'T' is used but never defined");
  // Allocated, but used after the allocation's scope ends.
  Stmt s = seq({allocate(t, buffer_store(t, 1.0f, {0})), buffer_store(t, 2.0f, {1})});
  check_rejects(PrimFunc{"g", {b}, s}, "buffer 'T' is used outside the scope of its definition");
}

TEST_CASE("verify: a variable defined twice", "[verify]") {
  Buffer b = Buffer::make("B", DataType::i32(), {8});
  Var i("i"), x("x");
  SECTION("two loops sharing one loop var (a naive unroll would do this)") {
    Stmt loop = for_loop(i, 0, 4, ForKind::Serial, buffer_store(b, i, {i}));
    check_rejects(PrimFunc{"f", {b}, seq({loop, loop})}, "variable 'i' is defined more than once (again by loop 'i')");
  }
  SECTION("a let rebinding its var") {
    Stmt s = let_stmt(x, Expr(1), let_stmt(x, Expr(2), buffer_store(b, x, {0})));
    check_rejects(PrimFunc{"f", {b}, s}, "variable 'x' is defined more than once (again by a let)");
  }
  SECTION("an allocation of a parameter") {
    check_rejects(PrimFunc{"f", {b}, allocate(b, buffer_store(b, 0, {0}))},
                  "variable 'B' is defined more than once (again by an allocation of 'B')");
  }
  SECTION("two parameters with one data var") {
    check_rejects(PrimFunc{"f", {b, b}, buffer_store(b, 0, {0})}, "(again by parameter 'B')");
  }
}

TEST_CASE("verify: index count must match the buffer's rank", "[verify]") {
  Buffer b = Buffer::make("B", DataType::f32(), {4, 4});
  Buffer c = Buffer::make("C", DataType::f32(), {16});
  check_rejects(PrimFunc{"f", {b, c}, buffer_store(c, buffer_load(b, {3}), {0})},
                "load from 'B' has 1 indices but the buffer has 2 dimensions");
  check_rejects(PrimFunc{"f", {b, c}, buffer_store(c, 0.0f, {1, 2})},
                "store to 'C' has 2 indices but the buffer has 1 dimensions");
}

TEST_CASE("verify: a store's value must have the buffer's dtype with the index lanes", "[verify]") {
  Buffer b = Buffer::make("B", DataType::f32(), {16});
  // The checking maker refuses these; a buggy pass building nodes directly would not.
  Stmt wrong_type(std::make_shared<BufferStoreNode>(b, Expr(1), std::vector<Expr>{0}));
  check_rejects(PrimFunc{"f", {b}, wrong_type}, "store to 'B' of a int32 value, expected float32");
  Stmt wrong_lanes(std::make_shared<BufferStoreNode>(b, Expr(1.0f), std::vector<Expr>{ramp(0, 1, 4)}));
  check_rejects(PrimFunc{"f", {b}, wrong_lanes}, "store to 'B' of a float32 value, expected float32x4");
  Expr load(std::make_shared<BufferLoadNode>(DataType::f32(), b, std::vector<Expr>{ramp(0, 1, 4)}));
  check_rejects(PrimFunc{"f", {b}, evaluate(load)}, "load from 'B' has type float32, expected float32x4");
}

TEST_CASE("verify: loop min and extent must be integers", "[verify]") {
  Buffer b = Buffer::make("B", DataType::f32(), {4});
  Var i("i");
  Stmt body = buffer_store(b, 0.0f, {0});
  Stmt float_extent(std::make_shared<ForNode>(i, Expr(0), Expr(4.0f), ForKind::Serial, "", body));
  check_rejects(PrimFunc{"f", {b}, float_extent}, "loop 'i' has a non-integer extent (float32)");
  Stmt vector_min(std::make_shared<ForNode>(i, broadcast(0, 4), Expr(4), ForKind::Serial, "", body));
  check_rejects(PrimFunc{"f", {b}, vector_min}, "loop 'i' has a non-integer min (int32x4)");
}
