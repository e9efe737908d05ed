// LLVM backend: elementwise kernels (scalar and vector forms), control flow, select/min/max,
// lets, gathers and scatters, bool buffers, leftover loop kinds. Exact comparisons: each
// kernel computes the same IEEE operations as its C++ reference.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "test_codegen_util.h"

using namespace kiln;
using namespace kiln::ir;
using kiln::runtime::NDArray;
using kiln::test::array_for;
using kiln::test::flat_buffer;
using kiln::test::prim_func;

namespace {
std::vector<float> iota_floats(int n, float scale, float offset) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = offset + scale * static_cast<float>(i);
  return v;
}
}  // namespace

TEST_CASE("elementwise add, scalar loop", "[codegen]") {
  const int n = 1000;
  Buffer a = flat_buffer("A", DataType::f32(), n), b = flat_buffer("B", DataType::f32(), n),
         c = flat_buffer("C", DataType::f32(), n);
  Var i("i");
  Stmt body = for_loop(i, 0, n, ForKind::Serial,
                       buffer_store(c, buffer_load(a, {i}) + buffer_load(b, {i}), {i}));
  auto m = test::build({prim_func("add", {a, b, c}, body)});
  auto av = iota_floats(n, 0.25f, -3.f), bv = iota_floats(n, -0.5f, 7.f);
  NDArray A = array_for(a, av), B = array_for(b, bv), C = NDArray::zeros({n}, runtime::dtype_f32());
  test::run(m, "add", {A, B, C});
  for (int k = 0; k < n; ++k) REQUIRE(C.data<float>()[k] == av[k] + bv[k]);
  REQUIRE(m.function_names() == std::vector<std::string>{"add"});
}

TEST_CASE("elementwise add, vector Ramp form", "[codegen]") {
  const int n = 1024, lanes = 16;
  Buffer a = flat_buffer("A", DataType::f32(), n), b = flat_buffer("B", DataType::f32(), n),
         c = flat_buffer("C", DataType::f32(), n);
  Var io("io");
  Expr idx = ramp(io * lanes, 1, lanes);
  Stmt body = for_loop(io, 0, n / lanes, ForKind::Serial,
                       buffer_store(c, buffer_load(a, {idx}) + buffer_load(b, {idx}), {idx}));
  auto av = iota_floats(n, 1.5f, -100.f), bv = iota_floats(n, -0.125f, 3.f);
  for (const Target& target : test::inspected_targets()) {
    INFO(target.cpu);
    auto m = test::build({prim_func("vadd", {a, b, c}, body)}, target);
    // The vector IR reaches LLVM as vector operations, whatever the target's vector width.
    REQUIRE(test::contains(m.llvm_ir(), "<16 x float>"));
    if (!test::runs_here(target)) continue;
    NDArray A = array_for(a, av), B = array_for(b, bv), C = NDArray::zeros({n}, runtime::dtype_f32());
    test::run(m, "vadd", {A, B, C});
    for (int k = 0; k < n; ++k) REQUIRE(C.data<float>()[k] == av[k] + bv[k]);
  }
}

TEST_CASE("leftover Vectorized and Unrolled loops become hinted serial loops", "[codegen]") {
  const int n = 64;
  Buffer a = flat_buffer("A", DataType::i32(), n), c = flat_buffer("C", DataType::i32(), n);
  Var i("i"), j("j");
  Stmt body = seq({for_loop(i, 0, n, ForKind::Vectorized, buffer_store(c, buffer_load(a, {i}) * 3, {i})),
                   for_loop(j, 0, 4, ForKind::Unrolled, buffer_store(c, buffer_load(c, {j}) + 1, {j}))});
  std::vector<int32_t> av(n);
  for (int k = 0; k < n; ++k) av[k] = k - 20;
  for (const Target& target : test::inspected_targets()) {
    for (int opt : {0, 3}) {
      INFO(target.cpu << " -O" << opt);
      codegen::BuildOptions o;
      o.opt_level = opt;
      auto m = test::build({prim_func("hinted", {a, c}, body)}, target, o);
      if (opt == 0) {
        // Unoptimized, the hints are still visible as loop metadata.
        REQUIRE(test::contains(m.llvm_ir(), "llvm.loop.vectorize.enable"));
        REQUIRE(test::contains(m.llvm_ir(), "llvm.loop.unroll.full"));
      }
      if (!test::runs_here(target)) continue;
      NDArray A = array_for(a, av), C = NDArray::zeros({n}, runtime::dtype_i32());
      test::run(m, "hinted", {A, C});
      for (int k = 0; k < n; ++k) REQUIRE(C.data<int32_t>()[k] == av[k] * 3 + (k < 4 ? 1 : 0));
    }
  }
}

TEST_CASE("pragma_unroll attribute becomes loop metadata", "[codegen]") {
  const int n = 32;
  Buffer c = flat_buffer("C", DataType::i32(), n);
  Var i("i");
  Stmt body = attr_stmt("pragma_unroll", i, 4, for_loop(i, 0, n, ForKind::Serial, buffer_store(c, i * i, {i})));
  // Value 1: the loop stays a loop (LLVM's own unrolling disabled), at full optimization too.
  // The 3-step recurrence c[i + 1] = 3 c[i] + i cannot be vectorized, so without the pragma
  // LLVM unrolls it fully (no loop left) on every target; with it, the loop and its metadata stay.
  auto recurrence = for_loop(i, 0, 3, ForKind::Serial, buffer_store(c, buffer_load(c, {i}) * 3 + i, {i + 1}));
  for (const Target& target : test::inspected_targets()) {
    INFO(target.cpu);
    codegen::BuildOptions o;
    o.opt_level = 0;
    auto m = test::build({prim_func("pragma", {c}, body)}, target, o);
    REQUIRE(test::contains(m.llvm_ir(), "llvm.loop.unroll.count"));
    auto r = test::build({prim_func("rolled", {c}, attr_stmt("pragma_unroll", i, 1, recurrence))}, target);
    CHECK(test::contains(r.llvm_ir(), "llvm.loop.unroll.disable"));
    CHECK_FALSE(test::contains(r.llvm_ir(), "llvm.loop.unroll.full"));
    auto plain = test::build({prim_func("unrolled", {c}, recurrence)}, target);
    CHECK_FALSE(test::contains(plain.llvm_ir(), "!llvm.loop"));
    if (!test::runs_here(target)) continue;
    NDArray C = NDArray::zeros({n}, runtime::dtype_i32());
    test::run(m, "pragma", {C});
    for (int k = 0; k < n; ++k) REQUIRE(C.data<int32_t>()[k] == k * k);
    std::vector<int32_t> want(n, 1), start(n, 1);
    for (int k = 0; k < 3; ++k) want[k + 1] = want[k] * 3 + k;
    NDArray R = NDArray::from_vector<int32_t>({n}, runtime::dtype_i32(), start);
    test::run(r, "rolled", {R});
    for (int k = 0; k < n; ++k) REQUIRE(R.data<int32_t>()[k] == want[k]);
  }
}

TEST_CASE("if/else and nested if without else", "[codegen]") {
  const int n = 100;
  Buffer a = flat_buffer("A", DataType::f32(), n), c = flat_buffer("C", DataType::f32(), n);
  Var i("i");
  Expr x = buffer_load(a, {i});
  Expr neg_x = -x;
  Stmt body = for_loop(
      i, 0, n, ForKind::Serial,
      if_then_else(eq(truncmod(i, 3), 0), buffer_store(c, x, {i}),
                   seq({buffer_store(c, neg_x, {i}), if_then_else(i > 90, buffer_store(c, x * 10.f, {i}))})));
  auto m = test::build({prim_func("branchy", {a, c}, body)});
  auto av = iota_floats(n, 0.5f, -7.f);
  NDArray A = array_for(a, av), C = NDArray::zeros({n}, runtime::dtype_f32());
  test::run(m, "branchy", {A, C});
  for (int k = 0; k < n; ++k) {
    float want = k % 3 == 0 ? av[k] : (k > 90 ? av[k] * 10.f : -av[k]);
    REQUIRE(C.data<float>()[k] == want);
  }
}

TEST_CASE("select, min and max on floats and ints, scalar and vector", "[codegen]") {
  const int n = 64, lanes = 8;
  Buffer a = flat_buffer("A", DataType::f32(), n), b = flat_buffer("B", DataType::f32(), n);
  Buffer ia = flat_buffer("IA", DataType::i32(), n), ib = flat_buffer("IB", DataType::i32(), n);
  Buffer out = flat_buffer("OUT", DataType::f32(), 3 * n), iout = flat_buffer("IOUT", DataType::i32(), 3 * n);
  Var i("i"), v("v");
  Expr x = buffer_load(a, {i}), y = buffer_load(b, {i}), p = buffer_load(ia, {i}), q = buffer_load(ib, {i});
  Stmt scalar = for_loop(i, 0, n / 2, ForKind::Serial,
                         seq({buffer_store(out, select(x > y, x - y, y * 2.f), {i}),
                              buffer_store(out, min(x, y), {i + n}), buffer_store(out, max(x, y), {i + 2 * n}),
                              buffer_store(iout, select(p < q, p, q * -1), {i}),
                              buffer_store(iout, min(p, q), {i + n}), buffer_store(iout, max(p, q), {i + 2 * n})}));
  // The second half of the elements in vector form.
  Expr r = ramp(v * lanes + n / 2, 1, lanes);
  Expr vx = buffer_load(a, {r}), vy = buffer_load(b, {r}), vp = buffer_load(ia, {r}), vq = buffer_load(ib, {r});
  Stmt vector = for_loop(
      v, 0, n / 2 / lanes, ForKind::Serial,
      seq({buffer_store(out, select(vx > vy, vx - vy, vy * 2.f), {r}), buffer_store(out, min(vx, vy), {r + n}),
           buffer_store(out, max(vx, vy), {r + 2 * n}), buffer_store(iout, select(vp < vq, vp, vq * -1), {r}),
           buffer_store(iout, min(vp, vq), {r + n}), buffer_store(iout, max(vp, vq), {r + 2 * n})}));
  auto m = test::build({prim_func("selminmax", {a, b, ia, ib, out, iout}, seq({scalar, vector}))});
  std::vector<float> av(n), bv(n);
  std::vector<int32_t> iav(n), ibv(n);
  for (int k = 0; k < n; ++k) {
    av[k] = std::sin(k * 1.3f) * 5;
    bv[k] = std::cos(k * 0.7f) * 5;
    iav[k] = (k * 37) % 23 - 11;
    ibv[k] = (k * 11) % 17 - 8;
  }
  NDArray O = NDArray::zeros({3 * n}, runtime::dtype_f32()), IO = NDArray::zeros({3 * n}, runtime::dtype_i32());
  test::run(m, "selminmax", {array_for(a, av), array_for(b, bv), array_for(ia, iav), array_for(ib, ibv), O, IO});
  for (int k = 0; k < n; ++k) {
    CAPTURE(k);
    REQUIRE(O.data<float>()[k] == (av[k] > bv[k] ? av[k] - bv[k] : bv[k] * 2.f));
    REQUIRE(O.data<float>()[k + n] == std::min(av[k], bv[k]));
    REQUIRE(O.data<float>()[k + 2 * n] == std::max(av[k], bv[k]));
    REQUIRE(IO.data<int32_t>()[k] == (iav[k] < ibv[k] ? iav[k] : -ibv[k]));
    REQUIRE(IO.data<int32_t>()[k + n] == std::min(iav[k], ibv[k]));
    REQUIRE(IO.data<int32_t>()[k + 2 * n] == std::max(iav[k], ibv[k]));
  }
}

TEST_CASE("Let and LetStmt bind values", "[codegen]") {
  const int n = 16;
  Buffer a = flat_buffer("A", DataType::i32(), n), c = flat_buffer("C", DataType::i32(), n);
  Var i("i"), t("t"), u("u");
  Stmt body = for_loop(i, 0, n, ForKind::Serial,
                       let_stmt(t, buffer_load(a, {i}) * 2, buffer_store(c, let(u, t + 1, u * u) - t, {i})));
  auto m = test::build({prim_func("lets", {a, c}, body)});
  std::vector<int32_t> av(n);
  for (int k = 0; k < n; ++k) av[k] = k * 3 - 20;
  NDArray C = NDArray::zeros({n}, runtime::dtype_i32());
  test::run(m, "lets", {array_for(a, av), C});
  for (int k = 0; k < n; ++k) {
    int t2 = av[k] * 2;
    REQUIRE(C.data<int32_t>()[k] == (t2 + 1) * (t2 + 1) - t2);
  }
}

TEST_CASE("strided and general vector indices gather and scatter", "[codegen]") {
  const int n = 64, lanes = 8;
  Buffer a = flat_buffer("A", DataType::f32(), n), idx = flat_buffer("IDX", DataType::i32(), lanes);
  Buffer c = flat_buffer("C", DataType::f32(), 4 * lanes), s = flat_buffer("S", DataType::f32(), n);
  Expr strided = buffer_load(a, {ramp(1, 3, lanes)});                 // A[1], A[4], ...
  Expr general = buffer_load(a, {buffer_load(idx, {ramp(0, 1, lanes)})});  // A[IDX[l]]
  Expr bcast = buffer_load(a, {broadcast(Expr(5), lanes)});          // A[5] in every lane
  Stmt body = seq({buffer_store(c, strided, {ramp(0, 1, lanes)}), buffer_store(c, general, {ramp(lanes, 1, lanes)}),
                   buffer_store(c, bcast, {ramp(2 * lanes, 1, lanes)}),
                   // Scatter with stride 2 into S.
                   buffer_store(s, buffer_load(a, {ramp(0, 1, lanes)}) + 1.f, {ramp(3, 2, lanes)})});
  auto m = test::build({prim_func("gathers", {a, idx, c, s}, body)});
  auto av = iota_floats(n, 1.f, 100.f);
  std::vector<int32_t> iv = {7, 0, 63, 12, 12, 30, 2, 41};
  NDArray C = NDArray::zeros({4 * lanes}, runtime::dtype_f32()), S = NDArray::zeros({n}, runtime::dtype_f32());
  test::run(m, "gathers", {array_for(a, av), array_for(idx, iv), C, S});
  for (int l = 0; l < lanes; ++l) {
    REQUIRE(C.data<float>()[l] == av[1 + 3 * l]);
    REQUIRE(C.data<float>()[lanes + l] == av[iv[l]]);
    REQUIRE(C.data<float>()[2 * lanes + l] == av[5]);
  }
  for (int k = 0; k < n; ++k) {
    bool written = k >= 3 && (k - 3) % 2 == 0 && (k - 3) / 2 < lanes;
    REQUIRE(S.data<float>()[k] == (written ? av[(k - 3) / 2] + 1.f : 0.f));
  }
}

TEST_CASE("bool buffers store one byte per element", "[codegen]") {
  const int n = 32, lanes = 16;
  Buffer a = flat_buffer("A", DataType::f32(), n), m = flat_buffer("M", DataType::boolean(), n);
  Buffer c = flat_buffer("C", DataType::f32(), n);
  Var i("i"), v("v");
  Expr r = ramp(v * lanes, 1, lanes);
  // M = A > 0 (vector), then C = M ? A : -1 (scalar, reading the bools back), plus isnan.
  Stmt body = seq({for_loop(v, 0, n / lanes, ForKind::Serial, buffer_store(m, buffer_load(a, {r}) > 0.f, {r})),
                   for_loop(i, 0, n, ForKind::Serial,
                            buffer_store(c, select(buffer_load(m, {i}) || make_intrinsic("isnan", {buffer_load(a, {i})}),
                                                   buffer_load(a, {i}), Expr(-1.f)),
                                         {i}))});
  auto mod = test::build({prim_func("bools", {a, m, c}, body)});
  auto av = iota_floats(n, 1.f, -10.5f);
  av[3] = std::numeric_limits<float>::quiet_NaN();
  NDArray M = NDArray::zeros({n}, runtime::dtype_bool()), C = NDArray::zeros({n}, runtime::dtype_f32());
  test::run(mod, "bools", {array_for(a, av), M, C});
  for (int k = 0; k < n; ++k) {
    CAPTURE(k);
    REQUIRE(M.data<uint8_t>()[k] == (av[k] > 0 ? 1 : 0));
    if (k == 3) REQUIRE(std::isnan(C.data<float>()[k]));
    else REQUIRE(C.data<float>()[k] == (av[k] > 0 ? av[k] : -1.f));
  }
}

TEST_CASE("loads of small constant strides (shuffled wide loads) read what a gather reads", "[codegen]") {
  // Strides 2..4 take the contiguous-load-and-shuffle path, 5 the gather; each ramp ends on the
  // buffer's last element, where a load of lanes*stride elements would run past it.
  const int lanes = 16;
  for (int stride : {2, 3, 4, 5}) {
    const int n = (lanes - 1) * stride + 1 + 3;
    Buffer a = flat_buffer("A", DataType::f32(), n), c = flat_buffer("C", DataType::f32(), lanes);
    Stmt body = buffer_store(c, buffer_load(a, {ramp(3, stride, lanes)}) * 2.f, {ramp(0, 1, lanes)});
    auto m = test::build({prim_func("strided", {a, c}, body)});
    auto av = iota_floats(n, 1.f, 100.f);
    NDArray C = NDArray::zeros({lanes}, runtime::dtype_f32());
    test::run(m, "strided", {array_for(a, av), C});
    for (int l = 0; l < lanes; ++l) REQUIRE(C.data<float>()[l] == av[3 + stride * l] * 2.f);
  }
}

TEST_CASE("a vector store of select(c, v, the stored location) is a masked store", "[codegen]") {
  // The ramp runs 4 lanes past B's end; only lanes under the mask may be written, and their
  // values come from A under the same mask (A is as short as B).
  const int n = 20, lanes = 16;
  Buffer a = flat_buffer("A", DataType::f32(), n), b = flat_buffer("B", DataType::f32(), n);
  Expr idx = ramp(8, 1, lanes);
  Expr lane_ok = ramp(8, 1, lanes) < broadcast(Expr(n), lanes) && eq(ramp(0, 1, lanes) % broadcast(Expr(2), lanes), broadcast(Expr(0), lanes));
  Stmt body = buffer_store(b, select(lane_ok, buffer_load(a, {idx}) * 2.f, buffer_load(b, {idx})), {idx});
  for (const Target& target : test::inspected_targets()) {
    INFO(target.cpu);
    auto built = test::build({prim_func("masked_store", {a, b}, body)}, target);
    // The store keeps its mask on every target. A's load is masked too (its lanes 12..15 lie
    // past A's end); where the mask is a constant, LLVM may split it into the lanes it reads
    // (SSE, NEON), but never into one whole-vector load.
    CHECK(test::contains(built.llvm_ir(), "llvm.masked.store"));
    CHECK_FALSE(test::contains(built.llvm_ir(), "load <16 x float>"));
    if (target.facts.vector_bits >= 256) CHECK(test::contains(built.llvm_ir(), "llvm.masked.load"));
  }
  auto m = test::build({prim_func("masked_store", {a, b}, body)});
  auto av = iota_floats(n, 1.f, 100.f);
  std::vector<float> bv(n, -1.f);
  NDArray B = array_for(b, bv);
  test::run(m, "masked_store", {array_for(a, av), B});
  for (int k = 0; k < n; ++k) {
    bool written = k >= 8 && (k - 8) % 2 == 0;
    REQUIRE(B.data<float>()[k] == (written ? av[k] * 2.f : -1.f));
  }
}
