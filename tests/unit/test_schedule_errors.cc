// Misuses of schedule primitives and of lower: each throws kiln::Error naming the stage and axis.
#include <catch2/catch.hpp>

#include "kiln/support/error.h"
#include "test_schedule_fixtures.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Matchers::Contains;

TEST_CASE("loop primitives reject axes that are not leaves of the stage", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  auto [jo, ji] = s[m.C].split(s[m.C].op_axis(1), 16);
  s[m.C].split(ji, 4);
  REQUIRE_THROWS_WITH(s[m.C].split(ji, 2), Contains("split: axis 'j.inner' is not a leaf axis of stage 'C'"));
  REQUIRE_THROWS_WITH(s[m.C].split(s[m.C].op_axis(1), 2), Contains("split: axis 'j' is not a leaf axis of stage 'C'"));
  REQUIRE_THROWS_WITH(s[m.C].fuse(jo, ji), Contains("fuse: axis 'j.inner' is not a leaf axis of stage 'C'"));
  REQUIRE_THROWS_WITH(s[m.C].reorder({ji, jo}), Contains("reorder: axis 'j.inner' is not a leaf axis"));
  REQUIRE_THROWS_WITH(s[m.C].vectorize(ji), Contains("vectorize: axis 'j.inner' is not a leaf axis"));
  REQUIRE_THROWS_WITH(s[m.C].pragma(ji, "x", 1), Contains("pragma: axis 'j.inner' is not a leaf axis"));
  Chain c;
  auto s2 = schedule::create({c.D});
  REQUIRE_THROWS_WITH(s2[c.D].split(s2[c.C].op_axis(0), 2), Contains("split: axis 'ci' is not a leaf axis of stage 'D'"));
  REQUIRE_THROWS_WITH(s2[c.A].split(s2[c.D].op_axis(0), 2), Contains("split: stage 'A' is a placeholder"));
}

TEST_CASE("split and tile factors must be positive", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  REQUIRE_THROWS_WITH(s[m.C].split(s[m.C].op_axis(0), 0), Contains("split: factor must be positive, got 0 (stage 'C')"));
  REQUIRE_THROWS_WITH(s[m.C].split_nparts(s[m.C].op_axis(0), -2), Contains("split_nparts: nparts must be positive, got -2"));
  REQUIRE_THROWS_WITH(s[m.C].tile(s[m.C].op_axis(0), s[m.C].op_axis(1), 8, 0), Contains("tile: factors must be positive"));
  REQUIRE_THROWS_WITH(s[m.C].tile(s[m.C].op_axis(0), s[m.C].op_axis(0), 8, 8), Contains("tile: needs two distinct axes"));
}

TEST_CASE("reorder rejects repeated axes, fuse non-adjacent or mixed ones", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  auto i = s[m.C].op_axis(0), j = s[m.C].op_axis(1);
  REQUIRE_THROWS_WITH(s[m.C].reorder({j, i, j}), Contains("reorder: axis 'j' appears more than once (stage 'C')"));
  REQUIRE_THROWS_WITH(s[m.C].fuse(i, m.k), Contains("fuse: axes 'i' and 'k' are not adjacent in stage 'C'"));
  REQUIRE_THROWS_WITH(s[m.C].fuse(j, i), Contains("fuse: axes 'j' and 'i' are not adjacent"));
  REQUIRE_THROWS_WITH(s[m.C].fuse(j, m.k), Contains("cannot fuse axes 'j' and 'k' of stage 'C': one is a reduction axis"));
  // Nothing was changed by the failed calls.
  CHECK(s[m.C].leaf_axes().size() == 3);
}

TEST_CASE("loop annotations reject reduction axes where illegal and unknown thread tags", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  REQUIRE_THROWS_WITH(s[m.C].vectorize(m.k),
                      Contains("vectorize: axis 'k' of stage 'C' is a reduction axis; only data-parallel loops can be vectorized"));
  REQUIRE_THROWS_WITH(s[m.C].parallel(m.k), Contains("parallel: axis 'k' of stage 'C' is a reduction axis"));
  REQUIRE_THROWS_WITH(s[m.C].bind(m.k, "threadIdx.x"), Contains("bind: axis 'k' of stage 'C' is a reduction axis"));
  REQUIRE_THROWS_WITH(s[m.C].bind(s[m.C].op_axis(0), "threadIdx.w"), Contains("bind: unknown thread tag 'threadIdx.w'"));
  s[m.C].unroll(m.k);  // unrolling a reduction is fine
}

TEST_CASE("compute_at checks the consumer, the axis and what is attached", "[schedule]") {
  Chain c;
  auto s = schedule::create({c.D});
  auto i = s[c.D].op_axis(0);
  REQUIRE_THROWS_WITH(s[c.C].compute_at(s[c.B], s[c.B].op_axis(0)),
                      Contains("compute_at: stage 'B' does not consume stage 'C'"));
  REQUIRE_THROWS_WITH(s[c.D].compute_at(s[c.C], s[c.C].op_axis(0)),
                      Contains("compute_at: stage 'D' is an output of the schedule"));
  REQUIRE_THROWS_WITH(s[c.B].compute_at(s[c.D], s[c.C].op_axis(0)),
                      Contains("compute_at: axis 'ci' is not a leaf axis of stage 'D'"));
  REQUIRE_THROWS_WITH(s[c.B].compute_at(s[c.B], s[c.B].op_axis(0)), Contains("cannot be attached to itself"));
  s[c.C].compute_inline();
  REQUIRE_THROWS_WITH(s[c.B].compute_at(s[c.C], s[c.C].op_axis(0)),
                      Contains("compute_at: stage 'C' is inlined, so it has no loops to attach 'B' to"));
  s[c.B].compute_at(s[c.D], i);  // through the inlined C: fine
  CHECK(schedule::loop_nest(s, c.args(), "f").body.defined());
}

TEST_CASE("attachments that became invalid are reported when lowering", "[schedule]") {
  SECTION("the parent was inlined afterwards") {
    Chain c;
    auto s = schedule::create({c.D});
    s[c.B].compute_at(s[c.C], s[c.C].op_axis(0));
    s[c.C].compute_inline();
    REQUIRE_THROWS_WITH(schedule::loop_nest(s, c.args(), "f"),
                        Contains("compute_at: stage 'B' is attached at stage 'C', which is inlined"));
  }
  SECTION("the attach axis was split afterwards") {
    Chain c;
    auto s = schedule::create({c.D});
    s[c.C].compute_at(s[c.D], s[c.D].op_axis(0));
    s[c.D].split(s[c.D].op_axis(0), 4);
    REQUIRE_THROWS_WITH(schedule::loop_nest(s, c.args(), "f"),
                        Contains("stage 'C' is attached at axis 'i', which is no longer a leaf axis of stage 'D'"));
  }
  SECTION("a reader runs outside the attach loop") {
    Chain c;
    auto s = schedule::create({c.D});
    auto [io, ii] = s[c.D].split(s[c.D].op_axis(0), 4);
    s[c.C].compute_at(s[c.D], io);
    s[c.B].compute_at(s[c.D], ii);
    REQUIRE_THROWS_WITH(schedule::loop_nest(s, c.args(), "f"),
                        Contains("stage 'B' is computed inside loop 'i.inner' of stage 'D', but stage 'C' reads it "
                                 "outside that loop"));
  }
}

TEST_CASE("compute_inline rejects outputs, reductions, multi-output ops and placeholders", "[schedule]") {
  Matmul m;
  auto E = te::compute({64, 48}, [&](ir::Var i, ir::Var j) { return m.C(i, j) + 1.0f; }, "E");
  auto s = schedule::create({E});
  REQUIRE_THROWS_WITH(s[E].compute_inline(), Contains("compute_inline: stage 'E' is an output of the schedule"));
  REQUIRE_THROWS_WITH(s[m.C].compute_inline(), Contains("compute_inline: stage 'C' is a reduction and cannot be inlined"));
  REQUIRE_THROWS_WITH(s[m.A].compute_inline(), Contains("compute_inline: stage 'A' is a placeholder"));
  auto X = te::placeholder({4}, kF32, "X");
  auto two = te::compute_multi({4}, [&](ir::Var i) { return std::vector<ir::Expr>{X(i) + 1.0f, X(i) * 2.0f}; }, "two");
  auto Y = te::compute({4}, [&](ir::Var i) { return two[0](i) + two[1](i); }, "Y");
  auto s2 = schedule::create({Y});
  REQUIRE_THROWS_WITH(s2[two[0]].compute_inline(), Contains("compute_inline: stage 'two' has several outputs"));
}

TEST_CASE("cache_read and cache_write check their tensors", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  REQUIRE_THROWS_WITH(s.cache_read(m.A, "local", {m.B}), Contains("cache_read: reader 'B' is a placeholder"));
  REQUIRE_THROWS_WITH(s.cache_read(m.A, "register", {m.C}), Contains("cache_read: unknown scope 'register'"));
  Chain c;
  auto s2 = schedule::create({c.D});
  REQUIRE_THROWS_WITH(s2.cache_read(c.A, "local", {c.D}), Contains("cache_read: 'D' does not read 'A'"));
  schedule::Schedule::Layout half{
      {16, 48}, [](const std::vector<ir::Var>& v) { return std::vector<ir::Expr>(v.begin(), v.end()); },
      [](const std::vector<ir::Expr>& i) { return i; }};
  REQUIRE_THROWS_WITH(s.cache_read(m.B, "global", {m.C}, half),
                      Contains("cache_read: a layout of 768 elements cannot hold 'B' (1536)"));
  s[m.C].split(s[m.C].op_axis(0), 8);
  REQUIRE_THROWS_WITH(s.cache_write(m.C, "local"),
                      Contains("cache_write: stage 'C' must be cached before it is split, fused or reordered"));
  auto other = te::placeholder({4}, kF32, "other");
  REQUIRE_THROWS_WITH(s[other], Contains("schedule: tensor 'other' is not part of this schedule"));
}

TEST_CASE("lower checks its argument list", "[lower]") {
  Matmul m;
  auto s = schedule::create({m.C});
  REQUIRE_THROWS_WITH(schedule::loop_nest(s, {m.A, m.B}, "f"), Contains("lower: output 'C' is not in the argument list"));
  REQUIRE_THROWS_WITH(schedule::loop_nest(s, {m.A, m.C}, "f"),
                      Contains("lower: input 'B' is read by stage 'C' but is not in the argument list"));
  REQUIRE_THROWS_WITH(schedule::loop_nest(s, {m.A, m.B, m.C, m.A}, "f"), Contains("lower: argument 'A' is given twice"));
  Chain c;
  auto s2 = schedule::create({c.D});
  REQUIRE_THROWS_WITH(schedule::loop_nest(s2, {c.A, c.B, c.D}, "f"),
                      Contains("lower: argument 'B' is neither an input placeholder nor an output of the schedule"));
  // A placeholder nothing reads is a parameter nothing loads (a kernel signature fixed by a plan).
  auto other = te::placeholder({4}, kF32, "other");
  ir::PrimFunc f = schedule::loop_nest(s2, {c.A, other, c.D}, "f");
  REQUIRE(f.params.size() == 3);
  CHECK(f.params[1]->name == "other");
}
