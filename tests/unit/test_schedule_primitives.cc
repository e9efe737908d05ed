// Every schedule primitive, checked on the loop nest it lowers to (printed IR). The programs
// (a matmul, an elementwise chain, a padded conv2d) are in test_schedule_fixtures.h; the same
// schedules are checked numerically in test_lower_numeric.cc.
#include <catch2/catch.hpp>

#include "test_schedule_fixtures.h"

using namespace kiln;
using namespace kiln::testing;

TEST_CASE("matmul lowers to an init store and an update loop per output element", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  CHECK(lowered_body(s, m.args()) ==
        "for (i, 0, 64) {\n"
        "  for (j, 0, 48) {\n"
        "    C[i, j] = 0f\n"
        "    for (k, 0, 32) {\n"
        "      C[i, j] = C[i, j] + A[i, k]*B[k, j]\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("split: root index = outer * factor + inner", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  auto [io, ii] = s[m.C].split(s[m.C].op_axis(0), 16);
  CHECK(io->var.name() == "i.outer");
  CHECK(ii->var.name() == "i.inner");
  CHECK(lowered_body(s, m.args()) ==
        "for (i.outer, 0, 4) {\n"
        "  for (i.inner, 0, 16) {\n"
        "    for (j, 0, 48) {\n"
        "      C[i.outer*16 + i.inner, j] = 0f\n"
        "      for (k, 0, 32) {\n"
        "        C[i.outer*16 + i.inner, j] = C[i.outer*16 + i.inner, j] + A[i.outer*16 + i.inner, k]*B[k, j]\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("split by a factor that does not divide the extent guards the body", "[schedule]") {
  Chain c;
  auto s = schedule::create({c.D});
  s[c.B].compute_inline();
  s[c.C].compute_inline();
  s[c.D].split(s[c.D].op_axis(0), 8);
  CHECK(lowered_body(s, c.args()) ==
        "for (i.outer, 0, 3) {\n"
        "  for (i.inner, 0, 8) {\n"
        "    for (j, 0, 16) {\n"
        "      if (i.outer*8 + i.inner < 20) {\n"
        "        D[i.outer*8 + i.inner, j] = (A[i.outer*8 + i.inner, j]*2f + 1f)*(A[i.outer*8 + i.inner, j]*2f + 1f)\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("split_nparts: the factor is derived from the extent, guards included", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  s[m.C].split_nparts(s[m.C].op_axis(1), 5);
  CHECK(lowered_body(s, m.args()) ==
        "for (i, 0, 64) {\n"
        "  for (j.outer, 0, 5) {\n"
        "    for (j.inner, 0, 10) {\n"
        "      if (j.outer*10 + j.inner < 48) {\n"
        "        C[i, j.outer*10 + j.inner] = 0f\n"
        "      }\n"
        "      for (k, 0, 32) {\n"
        "        if (j.outer*10 + j.inner < 48) {\n"
        "          C[i, j.outer*10 + j.inner] = C[i, j.outer*10 + j.inner] + A[i, k]*B[k, j.outer*10 + j.inner]\n"
        "        }\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("tile: two splits and the order xo, yo, xi, yi", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  auto t = s[m.C].tile(s[m.C].op_axis(0), s[m.C].op_axis(1), 8, 16);
  REQUIRE(t.size() == 4);
  CHECK(s[m.C].leaf_axes().size() == 5);
  CHECK(s[m.C].leaf_axes()[1].same_as(t[1]));
  CHECK(lowered_body(s, m.args()) ==
        "for (i.outer, 0, 8) {\n"
        "  for (j.outer, 0, 3) {\n"
        "    for (i.inner, 0, 8) {\n"
        "      for (j.inner, 0, 16) {\n"
        "        C[i.outer*8 + i.inner, j.outer*16 + j.inner] = 0f\n"
        "        for (k, 0, 32) {\n"
        "          C[i.outer*8 + i.inner, j.outer*16 + j.inner] = C[i.outer*8 + i.inner, j.outer*16 + j.inner] + A[i.outer*8 + i.inner, k]*B[k, j.outer*16 + j.inner]\n"
        "        }\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("fuse: one loop, root indices by floordiv and floormod", "[schedule]") {
  Chain c;
  auto s = schedule::create({c.D});
  s[c.B].compute_inline();
  s[c.C].compute_inline();
  auto f = s[c.D].fuse(s[c.D].op_axis(0), s[c.D].op_axis(1));
  CHECK(f->var.name() == "i.j.fused");
  CHECK(lowered_body(s, c.args()) ==
        "for (i.j.fused, 0, 320) {\n"
        "  D[floordiv(i.j.fused, 16), floormod(i.j.fused, 16)] = (A[floordiv(i.j.fused, 16), floormod(i.j.fused, 16)]*2f + 1f)*(A[floordiv(i.j.fused, 16), floormod(i.j.fused, 16)]*2f + 1f)\n"
        "}\n");
}

TEST_CASE("reorder: a reduce loop outside a data-parallel one moves the init out, with its own loop", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  s[m.C].reorder({s[m.C].op_axis(0), m.k, s[m.C].op_axis(1)});
  CHECK(lowered_body(s, m.args()) ==
        "for (i, 0, 64) {\n"
        "  for (j.init, 0, 48) {\n"
        "    C[i, j.init] = 0f\n"
        "  }\n"
        "  for (k, 0, 32) {\n"
        "    for (j, 0, 48) {\n"
        "      C[i, j] = C[i, j] + A[i, k]*B[k, j]\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("vectorize and parallel set the loop kinds", "[schedule]") {
  Chain c;
  auto s = schedule::create({c.D});
  s[c.B].compute_inline();
  s[c.C].compute_inline();
  auto [jo, ji] = s[c.D].split(s[c.D].op_axis(1), 8);
  s[c.D].vectorize(ji);
  s[c.D].parallel(s[c.D].op_axis(0));
  CHECK(lowered_body(s, c.args()) ==
        "parallel for (i, 0, 20) {\n"
        "  for (j.outer, 0, 2) {\n"
        "    vectorized for (j.inner, 0, 8) {\n"
        "      D[i, j.outer*8 + j.inner] = (A[i, j.outer*8 + j.inner]*2f + 1f)*(A[i, j.outer*8 + j.inner]*2f + 1f)\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("unroll marks a reduce loop unrolled", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  auto [ko, ki] = s[m.C].split(m.k, 4);
  s[m.C].unroll(ki);
  CHECK(lowered_body(s, m.args()) ==
        "for (i, 0, 64) {\n"
        "  for (j, 0, 48) {\n"
        "    C[i, j] = 0f\n"
        "    for (k.outer, 0, 8) {\n"
        "      unrolled for (k.inner, 0, 4) {\n"
        "        C[i, j] = C[i, j] + A[i, k.outer*4 + k.inner]*B[k.outer*4 + k.inner, j]\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("bind lowers to thread-binding loops with their tags", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  s[m.C].bind(s[m.C].op_axis(0), "blockIdx.x");
  s[m.C].bind(s[m.C].op_axis(1), "threadIdx.x");
  CHECK(lowered_body(s, m.args()) ==
        "thread_binding(\"blockIdx.x\") for (i, 0, 64) {\n"
        "  thread_binding(\"threadIdx.x\") for (j, 0, 48) {\n"
        "    C[i, j] = 0f\n"
        "    for (k, 0, 32) {\n"
        "      C[i, j] = C[i, j] + A[i, k]*B[k, j]\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("pragma wraps the loop in an AttrStmt pragma_<key>", "[schedule]") {
  Chain c;
  auto s = schedule::create({c.D});
  s[c.B].compute_inline();
  s[c.C].compute_inline();
  s[c.D].pragma(s[c.D].op_axis(0), "auto_unroll_max_step", 16);
  CHECK(lowered_body(s, c.args()) ==
        "// attr [i] pragma_auto_unroll_max_step = 16\n"
        "for (i, 0, 20) {\n"
        "  for (j, 0, 16) {\n"
        "    D[i, j] = (A[i, j]*2f + 1f)*(A[i, j]*2f + 1f)\n"
        "  }\n"
        "}\n");
}

TEST_CASE("intermediate stages are allocated at the root by default", "[schedule]") {
  Chain c;
  auto s = schedule::create({c.D});
  CHECK(lowered_body(s, c.args()) ==
        "allocate B: float32[20, 16], global\n"
        "for (bi, 0, 20) {\n"
        "  for (bj, 0, 16) {\n"
        "    B[bi, bj] = A[bi, bj]*2f\n"
        "  }\n"
        "}\n"
        "allocate C: float32[20, 16], global\n"
        "for (ci, 0, 20) {\n"
        "  for (cj, 0, 16) {\n"
        "    C[ci, cj] = B[ci, cj] + 1f\n"
        "  }\n"
        "}\n"
        "for (i, 0, 20) {\n"
        "  for (j, 0, 16) {\n"
        "    D[i, j] = C[i, j]*C[i, j]\n"
        "  }\n"
        "}\n");
}

TEST_CASE("compute_at computes just the region one iteration needs, at the top of that loop", "[schedule]") {
  Chain c;
  auto s = schedule::create({c.D});
  auto [io, ii] = s[c.D].split(s[c.D].op_axis(0), 4);
  s[c.B].compute_at(s[c.D], io);
  s[c.C].compute_at(s[c.D], ii);
  CHECK(lowered_body(s, c.args()) ==
        "for (i.outer, 0, 5) {\n"
        "  allocate B: float32[4, 16], global\n"
        "  for (bi, 0, 4) {\n"
        "    for (bj, 0, 16) {\n"
        "      B[bi, bj] = A[i.outer*4 + bi, bj]*2f\n"
        "    }\n"
        "  }\n"
        "  for (i.inner, 0, 4) {\n"
        "    allocate C: float32[1, 16], global\n"
        "    for (cj, 0, 16) {\n"
        "      C[0, cj] = B[i.inner, cj] + 1f\n"
        "    }\n"
        "    for (j, 0, 16) {\n"
        "      D[i.outer*4 + i.inner, j] = C[0, j]*C[0, j]\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("compute_root undoes compute_at", "[schedule]") {
  Chain c;
  auto s = schedule::create({c.D});
  auto [io, ii] = s[c.D].split(s[c.D].op_axis(0), 4);
  s[c.C].compute_at(s[c.D], io);
  s[c.C].compute_root();
  CHECK(lowered_body(s, c.args()) ==
        "allocate B: float32[20, 16], global\n"
        "for (bi, 0, 20) {\n"
        "  for (bj, 0, 16) {\n"
        "    B[bi, bj] = A[bi, bj]*2f\n"
        "  }\n"
        "}\n"
        "allocate C: float32[20, 16], global\n"
        "for (ci, 0, 20) {\n"
        "  for (cj, 0, 16) {\n"
        "    C[ci, cj] = B[ci, cj] + 1f\n"
        "  }\n"
        "}\n"
        "for (i.outer, 0, 5) {\n"
        "  for (i.inner, 0, 4) {\n"
        "    for (j, 0, 16) {\n"
        "      D[i.outer*4 + i.inner, j] = C[i.outer*4 + i.inner, j]*C[i.outer*4 + i.inner, j]\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("cache_read copies the row a reader needs into local storage", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  auto AL = s.cache_read(m.A, "local", {m.C});
  CHECK(AL.name() == "A.local");
  s[AL].compute_at(s[m.C], s[m.C].op_axis(0));
  CHECK(lowered_body(s, m.args()) ==
        "for (i, 0, 64) {\n"
        "  allocate A.local: float32[1, 32], local\n"
        "  for (ax1, 0, 32) {\n"
        "    A.local[0, ax1] = A[i, ax1]\n"
        "  }\n"
        "  for (j, 0, 48) {\n"
        "    C[i, j] = 0f\n"
        "    for (k, 0, 32) {\n"
        "      C[i, j] = C[i, j] + A.local[0, k]*B[k, j]\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("cache_write moves the reduction into a local tile, the output copies it", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  auto CL = s.cache_write(m.C, "local");
  CHECK(s[m.C].reduce_axis().empty());
  CHECK(s[CL].reduce_axis().size() == 1);
  auto t = s[m.C].tile(s[m.C].op_axis(0), s[m.C].op_axis(1), 8, 16);
  s[CL].compute_at(s[m.C], t[1]);
  CHECK(lowered_body(s, m.args()) ==
        "for (i.outer, 0, 8) {\n"
        "  for (j.outer, 0, 3) {\n"
        "    allocate C.local: float32[8, 16], local\n"
        "    for (i.c, 0, 8) {\n"
        "      for (j.c, 0, 16) {\n"
        "        C.local[i.c, j.c] = 0f\n"
        "        for (k, 0, 32) {\n"
        "          C.local[i.c, j.c] = C.local[i.c, j.c] + A[i.outer*8 + i.c, k]*B[k, j.outer*16 + j.c]\n"
        "        }\n"
        "      }\n"
        "    }\n"
        "    for (i.inner, 0, 8) {\n"
        "      for (j.inner, 0, 16) {\n"
        "        C[i.outer*8 + i.inner, j.outer*16 + j.inner] = C.local[i.inner, j.inner]\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("compute_inline substitutes the padding into the convolution", "[schedule]") {
  Conv c;
  auto s = schedule::create({c.Y});
  s[c.P].compute_inline();
  CHECK(lowered_body(s, c.args()) ==
        "for (f, 0, 4) {\n"
        "  for (y, 0, 8) {\n"
        "    for (x, 0, 8) {\n"
        "      Y[0, f, y, x] = 0f\n"
        "      for (rc, 0, 3) {\n"
        "        for (ry, 0, 3) {\n"
        "          for (rx, 0, 3) {\n"
        "            Y[0, f, y, x] = Y[0, f, y, x] + select(1 <= ry + y && ry + y < 9 && 1 <= rx + x && rx + x < 9, X[0, rc, ry + y - 1, rx + x - 1], 0f)*W[f, rc, ry, rx]\n"
        "          }\n"
        "        }\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("compute_at of the padding into a row tile of the convolution computes the rows with their halo", "[schedule]") {
  Conv c;
  auto s = schedule::create({c.Y});
  auto [yo, yi] = s[c.Y].split(s[c.Y].op_axis(2), 4);
  s[c.P].compute_at(s[c.Y], yo);
  CHECK(lowered_body(s, c.args()) ==
        "for (f, 0, 4) {\n"
        "  for (y.outer, 0, 2) {\n"
        "    allocate P: float32[1, 3, 6, 10], global\n"
        "    for (pc, 0, 3) {\n"
        "      for (py, 0, 6) {\n"
        "        for (px, 0, 10) {\n"
        "          P[0, pc, py, px] = select(1 <= y.outer*4 + py && y.outer*4 + py < 9 && 1 <= px && px < 9, X[0, pc, y.outer*4 + py - 1, px - 1], 0f)\n"
        "        }\n"
        "      }\n"
        "    }\n"
        "    for (y.inner, 0, 4) {\n"
        "      for (x, 0, 8) {\n"
        "        Y[0, f, y.outer*4 + y.inner, x] = 0f\n"
        "        for (rc, 0, 3) {\n"
        "          for (ry, 0, 3) {\n"
        "            for (rx, 0, 3) {\n"
        "              Y[0, f, y.outer*4 + y.inner, x] = Y[0, f, y.outer*4 + y.inner, x] + P[0, rc, ry + y.inner, rx + x]*W[f, rc, ry, rx]\n"
        "            }\n"
        "          }\n"
        "        }\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n");
}


TEST_CASE("partial_sums: each iteration sums into a fresh accumulator, added to the output after", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  auto st = s[m.C];
  auto [ko, ki] = st.split(st.reduce_axis()[0], 8);
  st.reorder({st.op_axis(0), ko, st.op_axis(1), ki});
  st.partial_sums(ko);
  CHECK(lowered_body(s, m.args()) ==
        "for (i, 0, 64) {\n"
        "  for (j.init, 0, 48) {\n"
        "    C[i, j.init] = 0f\n"
        "  }\n"
        "  for (k.outer, 0, 4) {\n"
        "    allocate C.part: float32[48], local\n"
        "    for (j.zero, 0, 48) {\n"
        "      C.part[j.zero] = 0f\n"
        "    }\n"
        "    for (j, 0, 48) {\n"
        "      for (k.inner, 0, 8) {\n"
        "        C.part[j] = C.part[j] + A[i, k.outer*8 + k.inner]*B[k.outer*8 + k.inner, j]\n"
        "      }\n"
        "    }\n"
        "    for (j.sum, 0, 48) {\n"
        "      C[i, j.sum] = C[i, j.sum] + C.part[j.sum]\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("partial_sums: only inside the outermost reduce loop of a reduction", "[schedule]") {
  Matmul m;
  auto s = schedule::create({m.C});
  auto st = s[m.C];
  st.partial_sums(st.op_axis(0));  // outside k: rejected when lowered
  CHECK_THROWS_WITH(lowered_body(s, m.args()), Catch::Contains("must be inside the outermost reduce loop"));
}
