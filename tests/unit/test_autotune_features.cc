// Features of lowered loop programs: exact raw values per statement on hand-built programs
// (scalar, vectorized and unrolled by the real passes), and the aggregated log-scaled vector.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "kiln/autotune/features.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"

using namespace kiln::ir;
using namespace kiln::autotune;

namespace {

double lg(double x) { return std::log2(1.0 + x); }
float feat(const std::vector<float>& v, const char* name) { return v[feature_index(name)]; }

// C[32x64] = A[32x128] * B[128x64], already flat, i parallel.
PrimFunc scalar_matmul() {
  Buffer a = Buffer::make("A", DataType::f32(), {32 * 128});
  Buffer b = Buffer::make("B", DataType::f32(), {128 * 64});
  Buffer c = Buffer::make("C", DataType::f32(), {32 * 64});
  Var i("i"), j("j"), k("k");
  Expr ci = i * 64 + j;
  Stmt update = buffer_store(c, buffer_load(c, {ci}) + buffer_load(a, {i * 128 + k}) * buffer_load(b, {k * 64 + j}), {ci});
  Stmt body = for_loop(i, 0, 32, ForKind::Parallel,
                       for_loop(j, 0, 64, ForKind::Serial,
                                seq({buffer_store(c, 0.0f, {ci}), for_loop(k, 0, 128, ForKind::Serial, update)})));
  return PrimFunc{"matmul", {a, b, c}, body};
}

// The same matmul written with 2-D buffers and a vectorized inner j loop, lowered by the real
// flatten_storage and vectorize_loops passes.
PrimFunc vectorized_matmul() {
  Buffer a = Buffer::make("A", DataType::f32(), {32, 128});
  Buffer b = Buffer::make("B", DataType::f32(), {128, 64});
  Buffer c = Buffer::make("C", DataType::f32(), {32, 64});
  Var i("i"), jo("jo"), k("k"), ji("ji");
  Expr j = jo * 16 + ji;
  Stmt update = buffer_store(c, buffer_load(c, {i, j}) + buffer_load(a, {i, k}) * buffer_load(b, {k, j}), {i, j});
  Stmt body = for_loop(i, 0, 32, ForKind::Parallel,
                       for_loop(jo, 0, 4, ForKind::Serial,
                                for_loop(k, 0, 128, ForKind::Serial, for_loop(ji, 0, 16, ForKind::Vectorized, update))));
  return vectorize_loops(flatten_storage(PrimFunc{"matmul_vec", {a, b, c}, body}));
}

}  // namespace

TEST_CASE("features: scalar matmul statement features are exact", "[autotune][features]") {
  auto stmts = extract_stmt_features(scalar_matmul());
  REQUIRE(stmts.size() == 2);
  const StmtFeatures& init = stmts[0];
  CHECK(init.count == 32 * 64);
  CHECK(init.loops == 2);
  CHECK(init.float_fma == 0);
  CHECK(init.loads.empty());
  CHECK(init.store.bytes_inner[0] == 64 * 4);  // the j loop writes a row of C

  const StmtFeatures& s = stmts[1];
  CHECK(s.buffer == "C");
  CHECK(s.count == 32.0 * 64 * 128);
  CHECK(s.loops == 3);
  CHECK(s.serial == 2);
  CHECK(s.parallel == 1);
  CHECK(s.vectorized == 0);
  CHECK(s.prod_serial == 64 * 128);
  CHECK(s.prod_parallel == 32);
  CHECK(s.innermost_extent == 128);
  CHECK(s.lanes == 1);
  CHECK(s.block_size == 1);
  // c + a * b is one fma; the indices i*64+j (twice), i*128+k and k*64+j are 2 int ops each.
  CHECK(s.float_fma == 1);
  CHECK(s.float_addsub == 0);
  CHECK(s.float_mul == 0);
  CHECK(s.flops == 2);
  CHECK(s.int_arith == 8);
  CHECK(s.load_bytes == 12);
  CHECK(s.store_bytes == 4);

  // C: invariant in k (reused 128 times); a row over j; the whole matrix over i, j, k.
  CHECK(s.store.stride_kind == StrideKind::Broadcast);
  CHECK(s.store.bytes_inner[0] == 4);
  CHECK(s.store.bytes_inner[1] == 64 * 4);
  CHECK(s.store.bytes_inner[2] == 32 * 64 * 4);
  CHECK(s.store.reuse == 128);

  REQUIRE(s.loads.size() == 3);
  // A and B both touch 512 bytes over k (ties go by name); C's load comes last.
  const AccessFeatures& A = s.loads[0];
  const AccessFeatures& B = s.loads[1];
  CHECK(A.buffer == "A");
  CHECK(B.buffer == "B");
  CHECK(s.loads[2].buffer == "C");
  CHECK(A.stride_kind == StrideKind::Contiguous);
  CHECK(A.stride == 1);
  CHECK(A.bytes_inner[0] == 128 * 4);
  CHECK(A.bytes_inner[1] == 128 * 4);  // j does not move A
  CHECK(A.bytes_inner[2] == 32 * 128 * 4);
  CHECK(A.reuse == 64);
  CHECK(B.stride_kind == StrideKind::Strided);
  CHECK(B.stride == 64);
  CHECK(B.bytes_inner[0] == 128 * 4);
  CHECK(B.bytes_inner[1] == 128 * 64 * 4);
  CHECK(B.bytes_inner[2] == 128 * 64 * 4);
  CHECK(B.reuse == 32);
}

TEST_CASE("features: vectorized matmul after flatten_storage and vectorize_loops", "[autotune][features]") {
  PrimFunc f = vectorized_matmul();
  INFO(to_string(f));
  auto stmts = extract_stmt_features(f);
  REQUIRE(stmts.size() == 1);
  const StmtFeatures& s = stmts[0];
  CHECK(s.lanes == 16);
  CHECK(s.count == 32 * 4 * 128);  // the vectorized loop became lanes
  CHECK(s.loops == 3);
  CHECK(s.innermost_extent == 128);
  CHECK(s.float_fma == 1);
  CHECK(s.flops == 32);
  CHECK(s.load_bytes == (16 + 1 + 16) * 4);
  CHECK(s.store_bytes == 16 * 4);
  CHECK(s.store.stride_kind == StrideKind::Contiguous);
  CHECK(s.store.bytes_inner[0] == 16 * 4);  // 16 lanes, invariant in k
  CHECK(s.store.reuse == 128);
  REQUIRE(s.loads.size() == 3);
  CHECK(s.loads[0].buffer == "B");
  CHECK(s.loads[0].stride_kind == StrideKind::Contiguous);
  CHECK(s.loads[0].bytes_inner[0] == 16 * 128 * 4);
  CHECK(s.loads[0].reuse == 32);
  CHECK(s.loads[1].buffer == "A");
  CHECK(s.loads[1].stride_kind == StrideKind::Broadcast);  // one A element splat over the lanes
  CHECK(s.loads[1].bytes_inner[0] == 128 * 4);
  CHECK(s.loads[1].reuse == 16 * 4);  // the lanes and jo
}

TEST_CASE("features: unrolled copies, non-affine and let-bound indices", "[autotune][features]") {
  Buffer a = Buffer::make("A", DataType::f32(), {256});
  Buffer b = Buffer::make("B", DataType::f32(), {256});
  Var i("i"), u("u"), t("t");
  // for i: unrolled for u in 0..4: B[i*4 + u] = A[i*4 + u] * 2
  Stmt s = for_loop(i, 0, 64, ForKind::Serial,
                    for_loop(u, 0, 4, ForKind::Unrolled, buffer_store(b, buffer_load(a, {i * 4 + u}) * 2.0f, {i * 4 + u})));
  auto unrolled = extract_stmt_features(unroll_loops(PrimFunc{"u", {a, b}, s}));
  REQUIRE(unrolled.size() == 4);
  for (const StmtFeatures& f : unrolled) {
    CHECK(f.block_size == 4);
    CHECK(f.count == 64);
    CHECK(f.float_mul == 1);
    CHECK(f.store.stride == 4);  // along i, the remaining innermost loop
  }
  // Before unrolling the loop is still there, with its kind.
  auto rolled = extract_stmt_features(PrimFunc{"r", {a, b}, s});
  REQUIRE(rolled.size() == 1);
  CHECK(rolled[0].unrolled == 1);
  CHECK(rolled[0].prod_unrolled == 4);
  CHECK(rolled[0].store.stride == 1);

  // A gather through floordiv is strided with unknown stride; a let-bound index is seen through.
  Stmt g = for_loop(i, 0, 256, ForKind::Serial,
                    let_stmt(t, i * 2, buffer_store(b, buffer_load(a, {floordiv(i, 3)}) + buffer_load(a, {t / 2}), {i})));
  auto gf = extract_stmt_features(PrimFunc{"g", {a, b}, g});
  REQUIRE(gf.size() == 1);
  REQUIRE(gf[0].loads.size() == 1);  // both loads of A merge, keeping the worst stride
  CHECK(gf[0].loads[0].stride_kind == StrideKind::Strided);
  CHECK(gf[0].loads[0].stride == -1);
  // floordiv(i, 3) and t / 2 count; the let value i * 2 belongs to the LetStmt, not the store.
  CHECK(gf[0].int_divmod == 2);
  CHECK(gf[0].int_arith == 0);
  Stmt l = for_loop(i, 0, 128, ForKind::Serial, let_stmt(t, i * 2, buffer_store(b, buffer_load(a, {t}), {i})));
  auto lf = extract_stmt_features(PrimFunc{"l", {a, b}, l});
  REQUIRE(lf[0].loads.size() == 1);
  CHECK(lf[0].loads[0].stride_kind == StrideKind::Strided);
  CHECK(lf[0].loads[0].stride == 2);
  CHECK(lf[0].loads[0].bytes_inner[0] == 128 * 4);
}

TEST_CASE("features: the aggregated vector is fixed-length, weighted and log-scaled", "[autotune][features]") {
  const auto& names = feature_names();
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
  CHECK_THROWS_AS(feature_index("no_such_feature"), kiln::Error);

  std::vector<float> v = extract_features(scalar_matmul());
  REQUIRE(v.size() == names.size());
  const double n_update = 32.0 * 64 * 128, n_init = 32.0 * 64, total = n_update + n_init;
  CHECK(feat(v, "executions") == Approx(lg(total)).epsilon(1e-6));
  CHECK(feat(v, "flops") == Approx(lg(2 * n_update)).epsilon(1e-6));
  CHECK(feat(v, "float_fma") == Approx(lg(n_update)).epsilon(1e-6));
  CHECK(feat(v, "loops_parallel") == Approx(1.0).epsilon(1e-6));  // every store runs in one
  CHECK(feat(v, "loops") == Approx(lg((3 * n_update + 2 * n_init) / total)).epsilon(1e-6));
  CHECK(feat(v, "store.reuse") == Approx(lg((128 * n_update + 1 * n_init) / total)).epsilon(1e-6));
  CHECK(feat(v, "load0.contiguous") == Approx(lg(n_update / total)).epsilon(1e-6));  // init has no loads
  CHECK(feat(v, "load1.stride") == Approx(lg(64 * n_update / total)).epsilon(1e-6));
  CHECK(feat(v, "num_stores") == Approx(lg(2)).epsilon(1e-6));
  CHECK(feat(v, "bytes_loaded") == Approx(lg(12 * n_update)).epsilon(1e-6));

  // Vectorizing shows in the lanes and strides, not in any knob value.
  std::vector<float> w = extract_features(vectorized_matmul());
  CHECK(feat(w, "lanes") == Approx(lg(16)).epsilon(1e-6));
  CHECK(feat(w, "flops") == Approx(lg(32.0 * 16384)).epsilon(1e-6));
  CHECK(feat(w, "load1.broadcast") == Approx(1.0).epsilon(1e-6));
  for (float x : w) CHECK(std::isfinite(x));

  // A local allocation counts with its bytes.
  Buffer acc = Buffer::make("acc", DataType::f32(), {16}, "local");
  Var i("i");
  Stmt s = allocate(acc, for_loop(i, 0, 16, ForKind::Serial, buffer_store(acc, 0.0f, {i})));
  std::vector<float> x = extract_features(PrimFunc{"alloc", {}, s});
  CHECK(feat(x, "num_allocs") == Approx(1.0).epsilon(1e-6));
  CHECK(feat(x, "alloc_bytes") == Approx(lg(64)).epsilon(1e-6));
}

TEST_CASE("features: GPU launch, shared and local bytes, and coalescing", "[autotune][features]") {
  // A grid of 64 blocks of 128 threads: Y[b*128+t] = X[b*128+t] (a warp reads and writes 128
  // contiguous bytes: 4 sectors each) and Z[t*64+b] = X[b*128+t] (a warp's stores 256 bytes
  // apart: 32 sectors), inside shared and local allocations that the statements do not use.
  Buffer x = Buffer::make("X", DataType::f32(), {64 * 128});
  Buffer y = Buffer::make("Y", DataType::f32(), {64 * 128});
  Buffer z = Buffer::make("Z", DataType::f32(), {64 * 128});
  Buffer sh = Buffer::make("S", DataType::f32(), {256}, "shared");
  Buffer loc = Buffer::make("L", DataType::f32(), {16}, "local");
  Var b("b"), t("t");
  Expr flat = b * 128 + t;
  Stmt stores = seq({buffer_store(y, buffer_load(x, {flat}), {flat}), buffer_store(z, buffer_load(x, {flat}), {t * 64 + b})});
  Stmt body = for_loop(b, 0, 64, ForKind::ThreadBinding,
                       for_loop(t, 0, 128, ForKind::ThreadBinding, allocate(sh, allocate(loc, stores)), "threadIdx.x"),
                       "blockIdx.x");
  PrimFunc f{"gpu_copy", {x, y, z}, body};
  auto stmts = extract_stmt_features(f);
  REQUIRE(stmts.size() == 2);
  CHECK(stmts[0].store.warp_sectors == 4);
  CHECK(stmts[0].loads.at(0).warp_sectors == 4);
  CHECK(stmts[1].store.warp_sectors == 32);
  CHECK(stmts[1].warp_sectors == 36);
  std::vector<float> v = extract_features(f);
  CHECK(feat(v, "gpu_threads") == Approx(lg(128)));
  CHECK(feat(v, "gpu_blocks") == Approx(lg(64)));
  CHECK(feat(v, "gpu_shared_bytes") == Approx(lg(256 * 4)));
  CHECK(feat(v, "gpu_local_bytes") == Approx(lg(16 * 4)));
  // 256 warps run each statement: (4 + 4) + (4 + 32) sectors a warp.
  CHECK(feat(v, "gpu_sectors") == Approx(lg(256.0 * (8 + 36))));
  // ptxas's report where the tuner has one (CUDA), else zeros.
  CHECK(feat(v, "gpu_registers") == 0);
  PtxasReport ptxas{40, 8};
  std::vector<float> with = extract_features(f, &ptxas);
  CHECK(feat(with, "gpu_registers") == Approx(lg(40)));
  CHECK(feat(with, "gpu_spill_bytes") == Approx(lg(8)));
  CHECK(feat(with, "gpu_threads") == feat(v, "gpu_threads"));
  // A CPU function has none of them.
  std::vector<float> cpu = extract_features(scalar_matmul());
  for (const char* name : {"gpu_threads", "gpu_blocks", "gpu_shared_bytes", "gpu_local_bytes", "gpu_sectors",
                           "gpu_registers", "gpu_spill_bytes", "gpu_double_buffer_bytes", "gpu_mma_flops",
                           "gpu_wgmma_in_flight_flops", "gpu_swizzled_shared_bytes"})
    CHECK(feat(cpu, name) == 0);
  CHECK(feat(v, "gpu_double_buffer_bytes") == 0);
  // A double-buffered tile (Stage::double_buffer's marker on its producer) counts both halves,
  // the second also in the shared bytes: inject_double_buffer allocates it after lowering.
  Stmt fill = attr_stmt(kDoubleBufferScope, sh->data, Expr(1), buffer_store(sh, buffer_load(x, {t}), {t}));
  Stmt doubled = for_loop(b, 0, 64, ForKind::ThreadBinding,
                          for_loop(t, 0, 128, ForKind::ThreadBinding, allocate(sh, seq({fill, stores})), "threadIdx.x"),
                          "blockIdx.x");
  std::vector<float> db = extract_features(PrimFunc{"gpu_copy", {x, y, z}, doubled});
  CHECK(feat(db, "gpu_double_buffer_bytes") == Approx(lg(2 * 256 * 4)));
  CHECK(feat(db, "gpu_shared_bytes") == Approx(lg(2 * 256 * 4)));
  CHECK(feat(v, "gpu_mma_flops") == 0);
  // Tensor-core products: each lane's share of a warp's mma (ir::kMmaSync), 4 warps x 3 steps.
  Var lane("lane"), w("w"), k("k");
  Stmt mma = attr_stmt(kMmaSync, sh->data, Expr(0), evaluate(Expr(0)));
  Stmt warps = for_loop(w, 0, 4, ForKind::Serial,
                        for_loop(k, 0, 3, ForKind::Serial, for_loop(lane, 0, 32, ForKind::ThreadBinding, mma, "threadIdx.x")));
  std::vector<float> tc = extract_features(PrimFunc{"gpu_mma", {x, y, z}, warps});
  CHECK(feat(tc, "gpu_mma_flops") == Approx(lg(4 * 3 * 2 * 16 * 8 * 16)));
  // A warp's share of a warpgroup's wgmma (ir::kWgmma) of 16 x 128 x 16: its call holds the
  // lane's 64 accumulators and the kWgmmaOperands more.
  std::vector<Expr> args(64 + kWgmmaOperands, Expr(0));
  Stmt wg = attr_stmt(kWgmma, sh->data, make_intrinsic(DataType::i32(), kWgmmaCall, args), evaluate(Expr(0)));
  Stmt wg_warps = for_loop(w, 0, 4, ForKind::Serial,
                           for_loop(k, 0, 3, ForKind::Serial, for_loop(lane, 0, 32, ForKind::ThreadBinding, wg, "threadIdx.x")));
  std::vector<float> wgf = extract_features(PrimFunc{"gpu_wgmma", {x, y, z}, wg_warps});
  CHECK(feat(wgf, "gpu_mma_flops") == Approx(lg(4 * 3 * 2 * 16 * 128 * 16)));
  CHECK(feat(wgf, "gpu_wgmma_in_flight_flops") == 0);
  // The same wgmma left in flight into the next K slice (the call's last operand): those flops
  // count in gpu_wgmma_in_flight_flops too; mma.sync never does.
  args.back() = Expr(1);
  Stmt wg_in_flight = attr_stmt(kWgmma, sh->data, make_intrinsic(DataType::i32(), kWgmmaCall, args), evaluate(Expr(0)));
  std::vector<float> wgi = extract_features(PrimFunc{
      "gpu_wgmma", {x, y, z},
      for_loop(w, 0, 4, ForKind::Serial,
               for_loop(k, 0, 3, ForKind::Serial, for_loop(lane, 0, 32, ForKind::ThreadBinding, wg_in_flight, "threadIdx.x")))});
  CHECK(feat(wgi, "gpu_wgmma_in_flight_flops") == Approx(lg(4 * 3 * 2 * 16 * 128 * 16)));
  CHECK(feat(wgi, "gpu_mma_flops") == feat(wgf, "gpu_mma_flops"));
  CHECK(feat(tc, "gpu_wgmma_in_flight_flops") == 0);
  // A shared tile in the 128-byte swizzle, double-buffered: both buffers' bytes.
  CHECK(feat(db, "gpu_swizzled_shared_bytes") == 0);
  auto node = std::make_shared<BufferNode>(*Buffer::make("W", DataType::f16(), {8, 64}, "shared").get());
  node->layout = TileLayout::kSwizzle128B;
  const Buffer sw(std::move(node));
  Stmt fill_sw = attr_stmt(kDoubleBufferScope, sw->data, Expr(3), buffer_store(sw, make_zero(DataType::f16()), {0, t}));
  std::vector<float> swf = extract_features(PrimFunc{
      "gpu_swizzled", {x, y, z},
      for_loop(t, 0, 64, ForKind::ThreadBinding, allocate(sw, seq({fill_sw, stores})), "threadIdx.x")});
  CHECK(feat(swf, "gpu_swizzled_shared_bytes") == Approx(lg(3 * 8 * 64 * 2)));
}
