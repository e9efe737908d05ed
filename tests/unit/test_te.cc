// te: building placeholders and computes, and the errors users get for malformed ones.
#include <catch2/catch.hpp>

#include "kiln/ir/printer.h"
#include "kiln/support/error.h"
#include "kiln/te/operation.h"

using namespace kiln;
using Catch::Matchers::Contains;
using ir::Var;

namespace {
const auto f32 = ir::DataType::f32();
const auto i32 = ir::DataType::i32();

const te::ComputeOpNode& compute_of(const te::Tensor& t) { return *t.op().as<te::ComputeOpNode>(); }
}  // namespace

TEST_CASE("placeholders and computes carry shape, dtype, name and axes", "[te]") {
  auto A = te::placeholder({64, 32}, f32, "A");
  CHECK(A.shape() == std::vector<int64_t>{64, 32});
  CHECK(A.dtype() == f32);
  CHECK(A.name() == "A");
  CHECK(A.op().as<te::PlaceholderOpNode>() != nullptr);
  CHECK(A.op().input_tensors().empty());

  auto B = te::compute({64, 32}, [&](Var i, Var j) { return A(i, j) * 2.0f + 1.0f; }, "B");
  const auto& c = compute_of(B);
  REQUIRE(c.axis.size() == 2);
  CHECK(c.axis[0]->var.name() == "i0");  // C++ cannot see parameter names
  CHECK(c.axis[1]->var.name() == "i1");
  CHECK(ir::to_string(c.axis[1]->dom.extent) == "32");
  CHECK(ir::to_string(c.body[0]) == "A(i0, i1)*2f + 1f");
  CHECK(B.dtype() == f32);
  REQUIRE(B.op().input_tensors().size() == 1);
  CHECK(B.op().input_tensors()[0].same_as(A));
  CHECK(B.same_as(B.op().output(0)));
  CHECK_FALSE(B.same_as(A));

  // Named axes, the vector form, and reads with literal and IterVar-arithmetic indices.
  auto D = te::compute({4, 3}, [&](const std::vector<Var>& v) { return A(v[0] + 1, v[1] * 2); }, "D", {"y", "x"});
  CHECK(ir::to_string(compute_of(D).body[0]) == "A(y + 1, x*2)");
  CHECK(ir::to_string(A(int64_t{3}, Var("v", ir::DataType::i64()))) == "A(3, int32(v))");  // indices are int32
  auto r = te::reduce_axis({1, 3}, "r");
  CHECK(ir::to_string(r->dom.min) == "1");
  auto E = te::compute({4}, [&](Var p) { return te::max(A(p + r, 0), {r}); }, "E", {"p"});
  CHECK(ir::to_string(compute_of(E).body[0]) ==
        "reduce(x, y => max(x, y) init -inff | A(p + r, 0) | axis r(1, 3))");
  CHECK(compute_of(E).reduce_axis.size() == 1);
}

TEST_CASE("compute accepts one to six index variables", "[te]") {
  auto A = te::placeholder({2, 2, 2, 2, 2, 2}, f32, "A");
  auto T1 = te::compute({2}, [&](Var a) { return A(a, a, a, a, a, a); });
  auto T3 = te::compute({2, 2, 2}, [&](Var a, Var b, Var c) { return A(a, b, c, a, b, c); });
  auto T6 = te::compute({2, 2, 2, 2, 2, 2},
                        [&](Var a, Var b, Var c, Var d, Var e, Var f) { return A(a, b, c, d, e, f); });
  CHECK(ir::to_string(compute_of(T1).body[0]) == "A(i0, i0, i0, i0, i0, i0)");
  CHECK(ir::to_string(compute_of(T3).body[0]) == "A(i0, i1, i2, i0, i1, i2)");
  CHECK(ir::to_string(compute_of(T6).body[0]) == "A(i0, i1, i2, i3, i4, i5)");
  REQUIRE_THROWS_WITH(te::compute({2, 2}, [&](Var a) { return A(a, a, a, a, a, a); }, "T"),
                      Contains("compute 'T': the function takes 1 index variables but the shape has 2 dimensions"));
}

TEST_CASE("compute_multi builds a two-slot argmax reduction", "[te]") {
  auto X = te::placeholder({4, 10}, f32, "X");
  auto r = te::reduce_axis(10, "r");
  auto outs = te::compute_multi(
      {4}, [&](Var i) { return te::comm_reduce(te::argmax_reducer(i32, f32), {r.var(), X(i, r)}, {r}); }, "argmax");
  REQUIRE(outs.size() == 2);
  CHECK(outs[0].name() == "argmax.v0");
  CHECK(outs[1].name() == "argmax.v1");
  CHECK(outs[0].dtype() == i32);
  CHECK(outs[1].dtype() == f32);
  CHECK(outs[0].op().same_as(outs[1].op()));
  CHECK(compute_of(outs[0]).reduce_axis.size() == 1);
}

TEST_CASE("te errors name the culprit", "[te]") {
  auto A = te::placeholder({16, 8}, f32, "A");
  auto k = te::reduce_axis(8, "k");
  SECTION("wrong index count") {
    REQUIRE_THROWS_WITH(A(Var("i")), Contains("tensor 'A' has 2 dimensions but is indexed with 1 indices"));
    REQUIRE_THROWS_WITH(A({Var("i"), Var("j"), Var("k")}), Contains("tensor 'A' has 2 dimensions"));
  }
  SECTION("non-positive extents") {
    REQUIRE_THROWS_WITH(te::placeholder({4, 0}, f32, "Z"),
                        Contains("placeholder 'Z': extent of dimension 1 is 0; extents must be positive"));
    REQUIRE_THROWS_WITH(te::compute({-3}, [&](Var i) { return A(i, 0); }, "N"),
                        Contains("compute 'N': extent of dimension 0 is -3"));
    REQUIRE_THROWS_WITH(te::reduce_axis(0, "r"), Contains("reduce_axis 'r': extent 0 must be positive"));
    REQUIRE_THROWS_WITH(te::compute({}, [&](const std::vector<Var>&) { return A(0, 0); }, "S"),
                        Contains("at least one dimension"));
  }
  SECTION("reduce axis used outside a reduction") {
    REQUIRE_THROWS_WITH(te::compute({16}, [&](Var i) { return A(i, k); }, "C"),
                        Contains("compute 'C': variable 'k' is used outside a reduction over it"));
    auto k2 = te::reduce_axis(8, "k2");
    REQUIRE_THROWS_WITH(te::compute({16}, [&](Var i) { return te::sum(A(i, k) + A(i, k2), {k}); }, "C"),
                        Contains("variable 'k2' is used outside a reduction"));
    REQUIRE_THROWS_WITH(te::compute({16}, [&](Var i) { return te::sum(A(i, k), {k}) * 2.0f; }, "C"),
                        Contains("compute 'C': a reduction must be the whole body"));
  }
  SECTION("shape mismatch in reductions") {
    auto k12 = te::reduce_axis(12, "k");
    REQUIRE_THROWS_WITH(te::compute({16}, [&](Var i) { return te::sum(A(i, k12), {k12}); }, "C"),
                        Contains("compute 'C': the reduction reads 'A' at index 1 over [0, 11], outside its extent 8"));
    REQUIRE_THROWS_WITH(te::comm_reduce(te::argmax_reducer(i32, f32), {A(0, k)}, {k}),
                        Contains("te::comm_reduce: 1 sources for a reducer with 2 slots"));
    REQUIRE_THROWS_WITH(
        te::compute_multi({16}, [&](Var i) {
          auto two = te::comm_reduce(te::argmax_reducer(i32, f32), {k.var(), A(i, k)}, {k});
          return std::vector<ir::Expr>{two[0]};
        }, "am"),
        Contains("compute 'am': the reduction has 2 slots but the compute has 1 bodies"));
    REQUIRE_THROWS_WITH(
        te::compute_multi({16}, [&](Var i) { return std::vector<ir::Expr>{te::sum(A(i, k), {k}), A(i, 0)}; }, "m"),
        Contains("compute 'm': all bodies must be reductions with identical axes, or none"));
  }
  SECTION("body dtype mismatch") {
    REQUIRE_THROWS_WITH(te::comm_reduce(te::argmax_reducer(i32, f32), {A(0, k), A(0, k)}, {k}),
                        Contains("source 0 has type float32 but reducer slot 0 is int32 (body dtype mismatch)"));
    REQUIRE_THROWS_WITH(te::sum(A(0, k) > 0.0f, {k}), Contains("te::sum: source has type bool"));
    REQUIRE_THROWS_WITH(te::sum(A(0, k), {k}, ir::Expr(1)), Contains("te::sum: the condition has type int32, not bool"));
  }
  SECTION("reducing over a data-parallel axis") {
    ir::IterVar dp = ir::IterVar::make(Var("d"), ir::Range(0, 8), ir::IterKind::DataPar);
    REQUIRE_THROWS_WITH(te::sum(A(0, 0), {dp}), Contains("te::sum: axis 'd' is not a reduce axis"));
    REQUIRE_THROWS_WITH(te::sum(A(0, k), {k, k}), Contains("reduce axis 'k' is listed twice"));
  }
}
