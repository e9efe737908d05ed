// The mma tensor intrinsics (schedule/mma_intrin.h) through Stage::tensorize: every intrinsic
// matches the loop nest it declares (lowered: per-lane code of 32 lanes, the mma inside
// ir::kMmaSync around its reference loops, the accumulators zeroed by the intrinsic's init), and
// each refuses, saying why, a nest of the wrong extents, types, layout or expression, or
// accumulators outside a warp buffer; ir::lower_warp_buffers before and after, and its refusals.
#include <catch2/catch.hpp>

#include <string>

#include "kiln/ir/printer.h"
#include "kiln/ir/transforms.h"
#include "kiln/schedule/loop_nest.h"
#include "kiln/schedule/mma_intrin.h"
#include "kiln/schedule/schedule.h"
#include "kiln/te/operation.h"
#include "kiln/te/reduce.h"
#include "test_codegen_util.h"
#include "test_gpu_util.h"

using namespace kiln;
using Catch::Matchers::Contains;

namespace {

// C[i, j] = sum_k float32(A[i, k]) * float32(B[j, k]) (B[k, j] when kn) over M x N x K, its sum
// in a warp buffer tensorized by `mma` in K slices of 16 (per 16 x 8 tile), stored into C by
// `store` (one 16 x 8 tile per (io, jo)).
struct Product {
  te::Tensor a, b, c, frag;
  schedule::Schedule s;
  Product(ir::DataType in, bool kn, int64_t m, int64_t n, int64_t k, const std::string& frag_scope = "warp") {
    a = te::placeholder({m, k}, in, "A");
    b = te::placeholder(kn ? std::vector<int64_t>{k, n} : std::vector<int64_t>{n, k}, in, "B");
    ir::IterVar rk = te::reduce_axis(k, "k");
    const ir::DataType f32 = ir::DataType::f32();
    c = te::compute({m, n}, [&](ir::Var i, ir::Var j) {
      return te::sum(ir::cast(f32, a(i, rk)) * ir::cast(f32, kn ? b(rk, j) : b(j, rk)), {rk});
    }, "C", {"i", "j"});
    s = schedule::create({c});
    frag = s.cache_write(c, frag_scope);
  }
  // Tiles of `ti` x `tj` for both stages, the sum's K split by `tk`; the intrinsics at the tile.
  void schedule(const schedule::TensorIntrin& mma, const schedule::TensorIntrin& store, int64_t ti = 16, int64_t tj = 8,
                int64_t tk = 16) {
    schedule::Stage sc = s[c];
    auto [io, ii] = sc.split(sc.op_axis()[0], ti);
    auto [jo, ji] = sc.split(sc.op_axis()[1], tj);
    sc.reorder({io, jo, ii, ji});
    sc.tensorize(ii, store);
    schedule::Stage sf = s[frag];
    sf.compute_at(sc, jo);
    auto [ko, ki] = sf.split(sf.reduce_axis(0), tk);
    sf.reorder({ko, sf.op_axis()[0], sf.op_axis()[1], ki});
    sf.tensorize(sf.op_axis()[0], mma);
  }
  std::string lowered() const { return ir::to_string(schedule::loop_nest(s, {a, b, c}, "product")); }
};

}  // namespace

TEST_CASE("mma intrinsics match the products they declare", "[schedule][mma]") {
  for (ir::DataType in : {ir::DataType::f16(), ir::DataType::bf16()}) {
    for (bool kn : {false, true}) {
      INFO(in.str() << (kn ? " B[k, n]" : " B[n, k]"));
      Product p(in, kn, 32, 16, 48);
      const schedule::TensorIntrin mma = schedule::mma_m16n8k16(in, kn);
      CHECK(mma.name == "mma_m16n8k16_" + in.str() + (kn ? "_nn" : "_nt"));
      p.schedule(mma, schedule::mma_store_m16n8());
      const std::string ir = p.lowered();
      // In the loops over the 2 x 2 tiles: the init, the mma in the loop over K slices, the
      // store; each per lane.
      CHECK(test::occurrences(ir, "thread_binding(\"threadIdx.x\") for (lane") == 3);
      CHECK(test::occurrences(ir, "mma_sync = kiln_mma_m16n8k16(") == 1);
      CHECK(test::occurrences(ir, "warp_fragment = 32") == 3);
      CHECK(test::occurrences(ir, "for (k.outer, 0, 3)") == 1);
      CHECK_THAT(ir, Contains("allocate C.warp: float32[16, 8], warp"));
    }
  }
}

TEST_CASE("mma intrinsics refuse nests that do not match, saying why", "[schedule][mma]") {
  const ir::DataType f16 = ir::DataType::f16(), bf16 = ir::DataType::bf16();
  const std::string nope = "does not match intrinsic '";
  SECTION("a tile of 8 rows for the mma's 16") {
    Product p(f16, false, 32, 16, 32);
    p.schedule(schedule::mma_m16n8k16(f16, false), schedule::mma_store_m16n8(), 8, 8);
    CHECK_THROWS_WITH(p.lowered(), Contains(nope + "mma_store_m16n8_float32': axis 'i' has extent 8 in the nest but "
                                                   "16 in the declaration"));
  }
  SECTION("a K slice of 32 for the mma's 16") {
    Product p(f16, false, 32, 16, 64);
    p.schedule(schedule::mma_m16n8k16(f16, false), schedule::mma_store_m16n8(), 16, 8, 32);
    CHECK_THROWS_WITH(p.lowered(), Contains(nope + "mma_m16n8k16_float16_nt': reduce axis 'k' has extent 32 in the "
                                                   "nest but 16 in the declaration"));
  }
  SECTION("bfloat16 operands for the float16 mma") {
    Product p(bf16, false, 32, 16, 32);
    p.schedule(schedule::mma_m16n8k16(f16, false), schedule::mma_store_m16n8());
    CHECK_THROWS_WITH(p.lowered(), Contains("'A' (bfloat16, 2 dims) cannot be input 'a' (float16, 2 dims)"));
  }
  SECTION("B as [K, N] for the mma that reads it as [N, K]") {
    Product p(f16, true, 32, 16, 32);
    p.schedule(schedule::mma_m16n8k16(f16, false), schedule::mma_store_m16n8());
    CHECK_THROWS_WITH(p.lowered(), Contains(nope + "mma_m16n8k16_float16_nt'"));
  }
  SECTION("B as [N, K] for the bfloat16 mma that reads it as [K, N]") {
    Product p(bf16, false, 32, 16, 32);
    p.schedule(schedule::mma_m16n8k16(bf16, true), schedule::mma_store_m16n8());
    CHECK_THROWS_WITH(p.lowered(), Contains(nope + "mma_m16n8k16_bfloat16_nn'"));
  }
  SECTION("a float16 tile for the store of float32 fragments") {
    te::Tensor f = te::placeholder({16, 8}, f16, "F");
    te::Tensor c = te::compute({16, 8}, [&](ir::Var i, ir::Var j) { return f(i, j); }, "C");
    schedule::Schedule s = schedule::create({c});
    s[c].tensorize(s[c].op_axis()[0], schedule::mma_store_m16n8());
    CHECK_THROWS_WITH(schedule::loop_nest(s, {f, c}, "f"), Contains("'F' (float16, 2 dims) cannot be input 'f' (float32, 2 dims)"));
  }
  SECTION("another expression: twice the product") {
    te::Tensor a = te::placeholder({16, 16}, f16, "A");
    te::Tensor b = te::placeholder({8, 16}, f16, "B");
    ir::IterVar rk = te::reduce_axis(16, "k");
    const ir::DataType f32 = ir::DataType::f32();
    te::Tensor c = te::compute({16, 8}, [&](ir::Var i, ir::Var j) {
      return te::sum(ir::cast(f32, a(i, rk)) * ir::cast(f32, b(j, rk)) * 2.0f, {rk});
    }, "C");
    schedule::Schedule s = schedule::create({c});
    s.cache_write(c, "warp");
    s[c].tensorize(s[c].op_axis()[0], schedule::mma_store_m16n8());
    schedule::Stage sf = s.stages()[s.stages().size() - 2];
    sf.tensorize(sf.op_axis()[0], schedule::mma_m16n8k16(f16, false));
    CHECK_THROWS_WITH(schedule::loop_nest(s, {a, b, c}, "f"),
                      Contains(nope + "mma_m16n8k16_float16_nt': the nest computes") && Contains("but the intrinsic declares"));
  }
  SECTION("another expression: the store of a cast") {
    Product p(f16, false, 16, 8, 16);
    te::Tensor h = te::compute({16, 8}, [&](ir::Var i, ir::Var j) { return ir::cast(f16, p.c(i, j)); }, "H");
    schedule::Schedule s = schedule::create({h});
    te::Tensor frag = s.cache_write(p.c, "warp");
    s[p.c].compute_inline();
    s[h].tensorize(s[h].op_axis()[0], schedule::mma_store_m16n8());
    CHECK_THROWS_WITH(schedule::loop_nest(s, {p.a, p.b, h}, "f"),
                      Contains(nope + "mma_store_m16n8_float32': the nest computes") && Contains("but the intrinsic declares"));
    (void)frag;
  }
  SECTION("accumulators in registers of each thread rather than a warp's") {
    Product p(f16, false, 32, 16, 32, "local");
    p.schedule(schedule::mma_m16n8k16(f16, false), schedule::mma_store_m16n8());
    CHECK_THROWS_WITH(p.lowered(), Contains("holds a warp's accumulators in a buffer of scope warp, but 'C.local' has "
                                            "scope local"));
  }
  SECTION("inputs other than float16 and bfloat16") {
    CHECK_THROWS_WITH(schedule::mma_m16n8k16(ir::DataType::f32(), false),
                      Contains("mma_m16n8k16: inputs must be float16 or bfloat16, not float32"));
  }
  SECTION("wgmma: operands not in shared memory's core matrices, and a width it has not") {
    Product p(f16, false, 16, 8, 16);
    p.schedule(schedule::wgmma_m64nNk16(f16, false, 8), schedule::mma_store_m16n8());
    CHECK_THROWS_WITH(p.lowered(), Contains("intrinsic 'wgmma_m64n8k16_float16_nt' reads its operands from shared "
                                            "memory in wgmma's layout") && Contains("but 'A' is global in rows"));
    CHECK_THROWS_WITH(schedule::wgmma_m64nNk16(f16, false, 12), Contains("wgmma_m64nNk16: N = 12, not a multiple of 8"));
  }
}

TEST_CASE("lower_warp_buffers: each lane's part of a warp buffer, and its refusals", "[ir][mma]") {
  using namespace ir;
  const DataType f32 = DataType::f32();
  Buffer w = test::flat_buffer("W", f32, 128, "warp"), out = test::flat_buffer("O", f32, 128);
  Var lane("lane"), e("e");
  // Each lane zeroes its 4 elements and stores them at its elements of O.
  Stmt zero = attr_stmt(kWarpFragment, w->data, Expr(32), for_loop(e, 0, 4, ForKind::Serial, buffer_store(w, 0.0f, {e})));
  Stmt store = attr_stmt(kWarpFragment, w->data, Expr(32),
                         for_loop(e, 0, 4, ForKind::Serial, buffer_store(out, buffer_load(w, {e}), {lane * 4 + e})));
  auto kernel = [&](Stmt body, int64_t lanes = 32) {
    return test::prim_func("k", {out}, for_loop(lane, 0, lanes, ForKind::ThreadBinding, allocate(w, body), "threadIdx.x"));
  };
  PrimFunc before = kernel(seq({zero, store}));
  CHECK(to_string(lower_warp_buffers(before)) == R"(func k(O: float32[128]) {
  thread_binding("threadIdx.x") for (lane, 0, 32) {
    allocate W: float32[4], local
    // attr [W] warp_fragment = 32
    for (e, 0, 4) {
      W[e] = 0f
    }
    // attr [W] warp_fragment = 32
    for (e, 0, 4) {
      O[lane*4 + e] = W[e]
    }
  }
}
)");
  // Read outside an intrinsic's per-lane code: the index would be the whole tile's.
  CHECK_THROWS_WITH(lower_warp_buffers(kernel(seq({zero, buffer_store(out, buffer_load(w, {lane}), {lane})}))),
                    Contains("warp buffer 'W' is accessed other than by a tensor intrinsic"));
  // A warp's lanes are threadIdx.x 0..31.
  CHECK_THROWS_WITH(lower_warp_buffers(kernel(seq({zero, store}), 64)),
                    Contains("64 threads bound to threadIdx.x, but a warp buffer's 32 lanes are threadIdx.x 0..31"));
  Buffer odd = test::flat_buffer("V", f32, 48, "warp");
  CHECK_THROWS_WITH(lower_warp_buffers(test::prim_func("k", {out}, allocate(odd, evaluate(Expr(0))))),
                    Contains("warp buffer 'V' has 48 elements, not a multiple of a warp's 32 lanes"));
}
