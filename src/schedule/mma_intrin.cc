// The mma.m16n8k16 tensor intrinsics (mma_intrin.h): their declarations, and their per-lane
// code in the fragment layouts of the PTX ISA.
#include "kiln/schedule/mma_intrin.h"

#include "ir/arith.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"
#include "kiln/te/operation.h"
#include "kiln/te/reduce.h"

namespace kiln::schedule {
namespace {

constexpr int kLanes = 32;

ir::Expr i32(int64_t v) { return ir::make_int(ir::DataType::i32(), v); }

std::vector<ir::Expr> simplified(std::vector<ir::Expr> v) {
  for (ir::Expr& e : v) e = ir::arith::simplify(e);
  return v;
}
ir::Expr group_id(const ir::Expr& lane) { return ir::floordiv(lane, i32(4)); }
ir::Expr thread_in_group(const ir::Expr& lane) { return ir::floormod(lane, i32(4)); }

// The index of `b` whose row-major flat offset is `p`: how a lane names its element p of a warp
// buffer (flatten_storage folds it back to p).
std::vector<ir::Expr> unflatten(const ir::Buffer& b, const ir::Expr& p) {
  std::vector<ir::Expr> idx(b->shape.size());
  int64_t inner = 1;
  for (size_t d = b->shape.size(); d-- > 0;) {
    const int64_t extent = *ir::as_const_int(b->shape[d]);
    idx[d] = ir::floormod(ir::floordiv(p, i32(inner)), i32(extent));
    inner *= extent;
  }
  return simplified(idx);
}

// The lane's index of the first of its 4 elements of the 16 x 8 tile that starts at `f`'s
// base: tiles in row-major order within each 2-d slice, 4 elements per tile and lane.
ir::Expr lane_offset(const TensorIntrinBuffer& f, const std::string& intrin) {
  const ir::Buffer& b = f.buffer;
  const size_t nd = b->shape.size();
  KILN_USER_CHECK(b->scope == "warp") << "tensorize: intrinsic '" << intrin << "' holds a warp's accumulators in a "
                                      << "buffer of scope warp, but '" << b->name << "' has scope " << b->scope;
  KILN_USER_CHECK(nd >= 2) << "tensorize: intrinsic '" << intrin << "': warp buffer '" << b->name << "' is not 2-d";
  const int64_t rows = *ir::as_const_int(b->shape[nd - 2]), cols = *ir::as_const_int(b->shape[nd - 1]);
  KILN_USER_CHECK(rows % 16 == 0 && cols % 8 == 0)
      << "tensorize: intrinsic '" << intrin << "': warp buffer '" << b->name << "' holds " << rows << " x " << cols
      << " elements a warp, not whole 16 x 8 tiles";
  ir::Expr slice = i32(0);
  for (size_t d = 0; d + 2 < nd; ++d) slice = slice * b->shape[d] + f.base[d];
  const ir::Expr tile = ir::floordiv(f.base[nd - 2], i32(16)) * i32(cols / 8) + ir::floordiv(f.base[nd - 1], i32(8));
  return ir::arith::simplify(slice * i32(rows * cols / kLanes) + tile * i32(4));
}

// Element `p` of the lane's part of warp buffer `f`.
ir::Expr fragment(const TensorIntrinBuffer& f, const ir::Expr& p) { return ir::buffer_load(f.buffer, unflatten(f.buffer, p)); }

// Element (row, col) of the tile of `t` that starts at its base (the last two dimensions).
std::vector<ir::Expr> at(const TensorIntrinBuffer& t, const ir::Expr& row, const ir::Expr& col) {
  std::vector<ir::Expr> idx = t.base;
  idx[idx.size() - 2] = idx[idx.size() - 2] + row;
  idx.back() = idx.back() + col;
  return simplified(idx);
}

// `per_lane` (which reads the lane's index) run by every lane of the warp, the warp buffer's
// accesses in it per lane.
ir::Stmt lanes(const ir::Var& lane, const ir::Buffer& warp_buffer, const ir::Stmt& per_lane) {
  return ir::for_loop(lane, 0, kLanes, ir::ForKind::ThreadBinding,
                      ir::attr_stmt(ir::kWarpFragment, warp_buffer->data, i32(kLanes), per_lane), "threadIdx.x");
}

// Zeroes the lane's `count` accumulators of the tile at `out`'s base, every lane of the warp.
ir::Stmt zero_accumulators(const TensorIntrinBuffer& out, const std::string& intrin, int64_t count) {
  ir::Var lane("lane"), e("e");
  const ir::Expr p = lane_offset(out, intrin) + e;
  ir::Stmt zero = ir::buffer_store(out.buffer, ir::make_zero(ir::DataType::f32()), unflatten(out.buffer, p));
  return lanes(lane, out.buffer, ir::for_loop(e, 0, count, ir::ForKind::Unrolled, zero));
}

}  // namespace

MmaElement mma_a_element(const ir::Expr& lane, const ir::Expr& i) {
  return {ir::arith::simplify(group_id(lane) + ir::floormod(ir::floordiv(i, i32(2)), i32(2)) * i32(8)),
          ir::arith::simplify(thread_in_group(lane) * i32(2) + ir::floormod(i, i32(2)) + ir::floordiv(i, i32(4)) * i32(8))};
}

MmaElement mma_b_element(const ir::Expr& lane, const ir::Expr& i) {
  return {ir::arith::simplify(thread_in_group(lane) * i32(2) + ir::floormod(i, i32(2)) + ir::floordiv(i, i32(2)) * i32(8)),
          ir::arith::simplify(group_id(lane))};
}

MmaElement mma_c_element(const ir::Expr& lane, const ir::Expr& i) {
  return {ir::arith::simplify(group_id(lane) + ir::floordiv(i, i32(2)) * i32(8)),
          ir::arith::simplify(thread_in_group(lane) * i32(2) + ir::floormod(i, i32(2)))};
}

TensorIntrin mma_m16n8k16(ir::DataType in, bool b_kn) {
  KILN_USER_CHECK(in == ir::DataType::f16() || in == ir::DataType::bf16())
      << "mma_m16n8k16: inputs must be float16 or bfloat16, not " << in.str();
  const std::string name = "mma_m16n8k16_" + in.str() + (b_kn ? "_nn" : "_nt");
  const ir::DataType f32 = ir::DataType::f32();
  te::Tensor a = te::placeholder({16, 16}, in, "a");
  te::Tensor b = te::placeholder(b_kn ? std::vector<int64_t>{16, 8} : std::vector<int64_t>{8, 16}, in, "b");
  ir::IterVar k = te::reduce_axis(16, "k");
  te::Tensor c = te::compute(
      {16, 8},
      [&](ir::Var i, ir::Var j) {
        return te::sum(ir::cast(f32, a(i, k)) * ir::cast(f32, b_kn ? b(k, j) : b(j, k)), {k});
      },
      name, {"i", "j"});
  // B's element (k, n) of the tile.
  auto b_at = [b_kn](const TensorIntrinBuffer& t, const ir::Expr& kk, const ir::Expr& n) {
    return b_kn ? at(t, kk, n) : at(t, n, kk);
  };
  auto init = [name](const std::vector<TensorIntrinBuffer>&, const std::vector<TensorIntrinBuffer>& out) {
    return zero_accumulators(out[0], name, 4);
  };
  auto update = [name, b_at](const std::vector<TensorIntrinBuffer>& ins, const std::vector<TensorIntrinBuffer>& out) {
    const TensorIntrinBuffer &ta = ins[0], &tb = ins[1], &tc = out[0];
    ir::Var lane("lane"), e("e"), kk("k");
    const ir::Expr p0 = lane_offset(tc, name);
    // What mma.sync takes from this lane: D = C (its 4 accumulators, read and written), then
    // its fragments of A and B.
    std::vector<ir::Expr> args;
    for (int i = 0; i < 4; ++i) args.push_back(fragment(tc, p0 + i32(i)));
    for (int i = 0; i < 8; ++i) {
      const MmaElement x = mma_a_element(lane, i);
      args.push_back(ir::buffer_load(ta.buffer, at(ta, x.row, x.col)));
    }
    for (int i = 0; i < 4; ++i) {
      const MmaElement x = mma_b_element(lane, i);
      args.push_back(ir::buffer_load(tb.buffer, b_at(tb, x.row, x.col)));
    }
    ir::Expr call = ir::make_intrinsic(ir::DataType::i32(), ir::kMmaSyncCall, args);
    // The same sums as plain loops: the lane's element e of C, at (row, col), from that row of
    // A and that column of B.
    const ir::DataType f32 = ir::DataType::f32();
    const MmaElement x = mma_c_element(lane, e);
    const std::vector<ir::Expr> acc = unflatten(tc.buffer, p0 + e);
    ir::Expr product = ir::cast(f32, ir::buffer_load(ta.buffer, at(ta, x.row, kk))) *
                       ir::cast(f32, ir::buffer_load(tb.buffer, b_at(tb, kk, x.col)));
    ir::Stmt sum = ir::buffer_store(tc.buffer, ir::buffer_load(tc.buffer, acc) + product, acc);
    ir::Stmt reference = ir::for_loop(e, 0, 4, ir::ForKind::Serial, ir::for_loop(kk, 0, 16, ir::ForKind::Serial, sum));
    return lanes(lane, tc.buffer, ir::attr_stmt(ir::kMmaSync, tc.buffer->data, call, reference));
  };
  auto body = [init, update](const std::vector<TensorIntrinBuffer>& ins, const std::vector<TensorIntrinBuffer>& out) {
    return ir::seq({init(ins, out), update(ins, out)});
  };
  return TensorIntrin{name, c, body, update, init};
}

TensorIntrin wgmma_m64nNk16(ir::DataType in, bool b_kn, int64_t n, bool in_flight) {
  KILN_USER_CHECK(in == ir::DataType::f16() || in == ir::DataType::bf16())
      << "wgmma_m64nNk16: inputs must be float16 or bfloat16, not " << in.str();
  KILN_USER_CHECK(n % 8 == 0 && n >= 8 && n <= 256) << "wgmma_m64nNk16: N = " << n << ", not a multiple of 8 up to 256";
  const std::string name = "wgmma_m64n" + std::to_string(n) + "k16_" + in.str() + (b_kn ? "_nn" : "_nt");
  const ir::DataType f32 = ir::DataType::f32();
  te::Tensor a = te::placeholder({16, 16}, in, "a");
  te::Tensor b = te::placeholder(b_kn ? std::vector<int64_t>{16, n} : std::vector<int64_t>{n, 16}, in, "b");
  ir::IterVar k = te::reduce_axis(16, "k");
  te::Tensor c = te::compute(
      {16, n},
      [&](ir::Var i, ir::Var j) {
        return te::sum(ir::cast(f32, a(i, k)) * ir::cast(f32, b_kn ? b(k, j) : b(j, k)), {k});
      },
      name, {"i", "j"});
  auto b_at = [b_kn](const TensorIntrinBuffer& t, const ir::Expr& kk, const ir::Expr& j) {
    return b_kn ? at(t, kk, j) : at(t, j, kk);
  };
  const int64_t per_lane = n / 2;
  auto init = [name, per_lane](const std::vector<TensorIntrinBuffer>&, const std::vector<TensorIntrinBuffer>& out) {
    return zero_accumulators(out[0], name, per_lane);
  };
  auto update = [name, b_kn, b_at, per_lane, in_flight](const std::vector<TensorIntrinBuffer>& ins,
                                             const std::vector<TensorIntrinBuffer>& out) {
    const TensorIntrinBuffer &ta = ins[0], &tb = ins[1], &tc = out[0];
    for (const TensorIntrinBuffer* t : {&ta, &tb})
      KILN_USER_CHECK(t->buffer->scope == "shared" && t->buffer->layout != ir::TileLayout::kRows)
          << "tensorize: intrinsic '" << name << "' reads its operands from shared memory in wgmma's layout "
          << "(Stage::core_matrix_layout or swizzle_128b_layout), but '" << t->buffer->name << "' is "
          << t->buffer->scope << (t->buffer->layout != ir::TileLayout::kRows ? " in wgmma's layout" : " in rows");
    ir::Var lane("lane"), e("e"), kk("k");
    const ir::Expr p0 = lane_offset(tc, name);
    std::vector<ir::Expr> args;
    for (int64_t i = 0; i < per_lane; ++i) args.push_back(fragment(tc, p0 + i32(i)));
    // The warpgroup's A: its first warp's rows, 64-row aligned in the tile.
    const size_t nd = ta.base.size();
    args.push_back(ir::buffer_load(ta.buffer, at(ta, i32(0) - ir::floormod(ta.base[nd - 2], i32(64)), i32(0))));
    args.push_back(ir::buffer_load(tb.buffer, b_at(tb, i32(0), i32(0))));
    // Byte strides between neighbouring core matrices (128 bytes each, of 8 x 8 16-bit
    // elements), the descriptor's leading and stride dimension offsets. Core matrices run along
    // a buffer's rows first: the next along its columns is 128 bytes on, the next down C / 8 x
    // 128. K-major A and N x K B: leading along K (the columns), stride down the rows. An
    // N-major K x N B: leading along K too (down its rows), stride along N (the columns); the
    // other way round faulted on an H200 (2026-11-27, run 7). Swizzled, K-major (one 128-byte
    // panel wide): the leading offset unused (PTX: "assumed 1", 16 bytes), the stride 8 rows
    // (1024 bytes). Swizzled, N-major (panels of 64 columns, each R rows of 128 bytes): leading
    // from one panel to the next along N (R x 128 bytes), stride 8 rows down K (1024).
    auto cols = [](const TensorIntrinBuffer& t) { return *ir::as_const_int(t.buffer->shape.back()); };
    auto rows = [](const TensorIntrinBuffer& t) { return *ir::as_const_int(t.buffer->shape[t.buffer->shape.size() - 2]); };
    const int64_t a_down = cols(ta) / 8 * 128, b_down = cols(tb) / 8 * 128;
    auto offsets = [&](const TensorIntrinBuffer& t, bool n_major, std::vector<int64_t> core) {
      if (t.buffer->layout == ir::TileLayout::kSwizzle128B) core = {n_major ? rows(t) * 128 : 16, 1024};
      for (int64_t v : core) args.push_back(i32(v));
    };
    offsets(ta, false, {128, a_down});
    offsets(tb, b_kn, b_kn ? std::vector<int64_t>{b_down, 128} : std::vector<int64_t>{128, b_down});
    args.push_back(i32(b_kn ? 1 : 0));
    args.push_back(i32(in_flight ? 1 : 0));
    ir::Expr call = ir::make_intrinsic(ir::DataType::i32(), ir::kWgmmaCall, args);
    // The same sums as plain loops: the lane's element e of C (tile e / 4, its element e % 4).
    const MmaElement x = mma_c_element(lane, ir::floormod(e, i32(4)));
    const ir::Expr col = x.col + ir::floordiv(e, i32(4)) * i32(8);
    const std::vector<ir::Expr> acc = unflatten(tc.buffer, p0 + e);
    const ir::DataType f32 = ir::DataType::f32();
    ir::Expr product = ir::cast(f32, ir::buffer_load(ta.buffer, at(ta, x.row, kk))) *
                       ir::cast(f32, ir::buffer_load(tb.buffer, b_at(tb, kk, col)));
    ir::Stmt sum = ir::buffer_store(tc.buffer, ir::buffer_load(tc.buffer, acc) + product, acc);
    ir::Stmt reference =
        ir::for_loop(e, 0, per_lane, ir::ForKind::Serial, ir::for_loop(kk, 0, 16, ir::ForKind::Serial, sum));
    return lanes(lane, tc.buffer, ir::attr_stmt(ir::kWgmma, tc.buffer->data, call, reference));
  };
  auto body = [init, update](const std::vector<TensorIntrinBuffer>& ins, const std::vector<TensorIntrinBuffer>& out) {
    return ir::seq({init(ins, out), update(ins, out)});
  };
  return TensorIntrin{name, c, body, update, init};
}

TensorIntrin mma_store_m16n8() {
  const std::string name = "mma_store_m16n8_float32";
  te::Tensor f = te::placeholder({16, 8}, ir::DataType::f32(), "f");
  te::Tensor c = te::compute({16, 8}, [&](ir::Var i, ir::Var j) { return f(i, j); }, name, {"i", "j"});
  auto body = [name](const std::vector<TensorIntrinBuffer>& ins, const std::vector<TensorIntrinBuffer>& out) {
    ir::Var lane("lane"), e("e");
    const MmaElement x = mma_c_element(lane, e);
    const std::vector<ir::Expr> idx = at(out[0], x.row, x.col);
    ir::Stmt store = ir::buffer_store(out[0].buffer, fragment(ins[0], lane_offset(ins[0], name) + e), idx);
    // Only inside C's buffer (clips_outputs): a tile can straddle the end of the region its
    // stage realizes (a block tile over a product's last rows).
    const size_t nd = idx.size();
    ir::Expr inside = ir::logical_and(idx[nd - 2] < out[0].buffer->shape[nd - 2], idx[nd - 1] < out[0].buffer->shape[nd - 1]);
    store = ir::if_then_else(inside, store);
    return lanes(lane, ins[0].buffer, ir::for_loop(e, 0, 4, ir::ForKind::Unrolled, store));
  };
  TensorIntrin intrin{name, c, body, nullptr, nullptr};
  intrin.clips_outputs = true;
  return intrin;
}

}  // namespace kiln::schedule
