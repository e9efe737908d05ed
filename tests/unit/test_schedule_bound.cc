// Bound inference: realized regions (shape and offset of each intermediate buffer) and axis
// ranges, checked directly and on the printed nests; the trickier ones also numerically.
#include <catch2/catch.hpp>

#include <cmath>

#include "schedule/bound.h"
#include "test_lower_interp.h"
#include "test_schedule_fixtures.h"

using namespace kiln;
using namespace kiln::testing;
using ir::Var;

namespace {

// "[min, +extent]" per dimension of a stage's realized region.
std::string region(const schedule::Bounds& b, const schedule::Stage& s) {
  std::string out;
  for (const ir::Range& r : b.regions.at(s.get())) {
    out += "[" + ir::to_string(r.min) + ", +" + ir::to_string(r.extent) + "]";
  }
  return out;
}

}  // namespace

TEST_CASE("bound: a producer attached in a consumer tile realizes the tile's region", "[schedule]") {
  Chain c;
  auto s = schedule::create({c.D});
  auto t = s[c.D].tile(s[c.D].op_axis(0), s[c.D].op_axis(1), 4, 8);
  s[c.B].compute_at(s[c.D], t[1]);
  s[c.C].compute_at(s[c.D], t[2]);
  schedule::Bounds b = schedule::infer_bound(s);
  CHECK(region(b, s[c.D]) == "[0, +20][0, +16]");
  CHECK(region(b, s[c.B]) == "[i.outer*4, +4][j.outer*8, +8]");  // one 4x8 tile
  CHECK(region(b, s[c.C]) == "[i.outer*4 + i.inner, +1][j.outer*8, +8]");  // one row of it
  CHECK(ir::to_string(b.ranges.at(t[0].get()).extent) == "5");
  CHECK(ir::to_string(b.ranges.at(t[3].get()).extent) == "8");
  CHECK(lowered_body(s, c.args()) ==
        "for (i.outer, 0, 5) {\n"
        "  for (j.outer, 0, 2) {\n"
        "    allocate B: float32[4, 8], global\n"
        "    for (bi, 0, 4) {\n"
        "      for (bj, 0, 8) {\n"
        "        B[bi, bj] = A[i.outer*4 + bi, j.outer*8 + bj]*2f\n"
        "      }\n"
        "    }\n"
        "    for (i.inner, 0, 4) {\n"
        "      allocate C: float32[1, 8], global\n"
        "      for (cj, 0, 8) {\n"
        "        C[0, cj] = B[i.inner, cj] + 1f\n"
        "      }\n"
        "      for (j.inner, 0, 8) {\n"
        "        D[i.outer*4 + i.inner, j.outer*8 + j.inner] = C[0, j.inner]*C[0, j.inner]\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("bound: cache_write into local storage inside a tile", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  auto CL = s.cache_write(m.C, "local");
  auto t = s[m.C].tile(s[m.C].op_axis(0), s[m.C].op_axis(1), 8, 16);
  s[CL].compute_at(s[m.C], t[1]);
  schedule::Bounds b = schedule::infer_bound(s);
  CHECK(region(b, s[CL]) == "[i.outer*8, +8][j.outer*16, +16]");
  CHECK(ir::to_string(b.ranges.at(s[CL].reduce_axis(0).get()).extent) == "32");
  std::string text = ir::to_string(schedule::loop_nest(s, m.args(), "f"));
  CHECK_THAT(text, Catch::Matchers::Contains("allocate C.local: float32[8, 16], local"));
  CHECK_THAT(text, Catch::Matchers::Contains("C[i.outer*8 + i.inner, j.outer*16 + j.inner] = C.local[i.inner, j.inner]"));
}

TEST_CASE("bound: a stencil's halo, guards at the edge, and an offset root region", "[schedule]") {
  auto A = te::placeholder({10}, kF32, "A");
  auto B = te::compute({10}, [&](Var i) { return A(i) * 2.0f; }, "B", {"b"});
  auto D = te::compute({9}, [&](Var i) { return B(i) + B(i + 1); }, "D", {"i"});
  auto s = schedule::create({D});
  auto [io, ii] = s[D].split(s[D].op_axis(0), 4);
  s[B].compute_at(s[D], io);
  CHECK(region(schedule::infer_bound(s), s[B]) == "[i.outer*4, +5]");
  CHECK(lowered_body(s, {A, D}) ==
        "for (i.outer, 0, 3) {\n"
        "  allocate B: float32[5], global\n"
        "  for (b, 0, 5) {\n"
        "    if (i.outer*4 + b < 10) {\n"
        "      B[b] = A[i.outer*4 + b]*2f\n"
        "    }\n"
        "  }\n"
        "  for (i.inner, 0, 4) {\n"
        "    if (i.outer*4 + i.inner < 9) {\n"
        "      D[i.outer*4 + i.inner] = B[i.inner] + B[i.inner + 1]\n"
        "    }\n"
        "  }\n"
        "}\n");
  std::vector<std::vector<double>> data{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, std::vector<double>(9, std::nan(""))};
  interpret(schedule::loop_nest(s, {A, D}, "f"), data);
  for (int i = 0; i < 9; ++i) CHECK(data[1][i] == 2.0 * i + 2.0 * (i + 1));

  // Only B(i + 1) is read: B is realized from index 1, and stored relative to it.
  auto E = te::compute({9}, [&](Var i) { return B(i + 1); }, "E", {"i"});
  auto s2 = schedule::create({E});
  CHECK(region(schedule::infer_bound(s2), s2[B]) == "[1, +9]");
  CHECK(lowered_body(s2, {A, E}) ==
        "allocate B: float32[9], global\n"
        "for (b, 0, 9) {\n"
        "  B[b] = A[b + 1]*2f\n"
        "}\n"
        "for (i, 0, 9) {\n"
        "  E[i] = B[i]\n"
        "}\n");
}

TEST_CASE("bound: thread-bound loops outside the attach point are relaxed for shared storage only",
          "[schedule]") {
  for (const char* scope : {"shared", "local"}) {
    Matmul m;
    auto s = schedule::create({m.C});
    auto [bx, tx] = s[m.C].split(s[m.C].op_axis(0), 8);
    s[m.C].reorder({bx, tx, m.k, s[m.C].op_axis(1)});
    s[m.C].bind(bx, "blockIdx.x");
    s[m.C].bind(tx, "threadIdx.x");
    auto AS = s.cache_read(m.A, scope, {m.C});
    s[AS].compute_at(s[m.C], m.k);
    std::string r = region(schedule::infer_bound(s), s[AS]);
    // Shared memory serves the whole block: the 8 rows of all its threads.
    CHECK(r == (std::string(scope) == "shared" ? "[i.outer*8, +8][k, +1]" : "[i.outer*8 + i.inner, +1][k, +1]"));
  }
}

TEST_CASE("bound: attached under a split of a fused loop, the region is one contiguous block", "[schedule]") {
  Chain c;
  auto s = schedule::create({c.D});
  auto f = s[c.D].fuse(s[c.D].op_axis(0), s[c.D].op_axis(1));
  auto [fo, fi] = s[c.D].split(f, 8);
  s[c.C].compute_at(s[c.D], fo);
  s[c.B].compute_inline();
  CHECK(region(schedule::infer_bound(s), s[c.C]) == "[floordiv(i.j.fused.outer, 2), +1][floormod(i.j.fused.outer, 2)*8, +8]");
  std::vector<std::vector<double>> data{std::vector<double>(320), std::vector<double>(320, std::nan(""))};
  for (int i = 0; i < 320; ++i) data[0][i] = i % 7 - 3;
  interpret(schedule::loop_nest(s, c.args(), "f"), data);
  for (int i = 0; i < 320; ++i) CHECK(data[1][i] == (data[0][i] * 2 + 1) * (data[0][i] * 2 + 1));
}

TEST_CASE("bound: a split overhanging its axis holds whole tiles of a larger producer only", "[schedule]") {
  // D [7] reads P [8] (zero-padded past A's end, as a product padded to whole tensor-core tiles)
  // and Q [7]; one split of D by 8 runs past its end. P, larger, is realized over the whole tile
  // (its tiles stay whole: an mma tile of 8 columns); Q only where it exists.
  te::Tensor a = te::placeholder({7}, ir::DataType::f32(), "A");
  te::Tensor p = te::compute({8}, [&](Var i) {
    return ir::select(i < 7, a(ir::min(i, ir::Expr(6))), ir::make_zero(ir::DataType::f32()));
  }, "P", {"pi"});
  te::Tensor q = te::compute({7}, [&](Var i) { return a(i) * 2.f; }, "Q", {"qi"});
  te::Tensor d = te::compute({7}, [&](Var i) { return p(i) + q(i); }, "D", {"i"});
  auto s = schedule::create({d});
  auto [o, in] = s[d].split(s[d].op_axis(0), 8);
  s[p].compute_at(s[d], o);
  s[q].compute_at(s[d], o);
  schedule::Bounds b = schedule::infer_bound(s);
  CHECK(region(b, s[p]) == "[0, +8]");
  CHECK(region(b, s[q]) == "[0, +7]");
  CHECK(region(b, s[d]) == "[0, +7]");
  std::vector<std::vector<double>> data{{1, 2, 3, 4, 5, 6, 7}, std::vector<double>(7, std::nan(""))};
  interpret(schedule::loop_nest(s, {a, d}, "f"), data);
  for (int i = 0; i < 7; ++i) CHECK(data[1][i] == 3 * data[0][i]);
}
