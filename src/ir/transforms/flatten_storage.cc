// flatten_storage: multi-dimensional buffer accesses -> one flat row-major index.
//
// Code generation only knows pointers plus one element offset, so every access must be
// linearized before it. Each original buffer gets exactly one flattened Buffer object (same
// data Var, name, dtype and scope; shape {d0*...*dk-1}) so that later passes and the verifier
// can compare buffers by identity. A one-dimensional buffer is already flat and serves as its
// own flattened buffer.
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "kiln/ir/functor.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"

namespace kiln::ir {
namespace {

// a * b with the constant cases folded, so that constant shapes give constant strides.
Expr mul_folded(const Expr& a, const Expr& b) {
  if (is_one(a)) return b;
  if (is_one(b)) return a;
  return mul(a, b);
}

Expr add_folded(const Expr& a, const Expr& b) {
  if (!a.defined()) return b;
  if (is_zero(a)) return b;
  if (is_zero(b)) return a;
  return add(a, b);
}

// Converts an integer index expression to type t (the widest index type of one access), so
// that mixed int32/int64 indices still form a well-typed sum.
Expr to_index_type(const Expr& e, DataType t) {
  if (e.dtype() == t) return e;
  if (auto c = as_const_int(e); c && e.dtype().is_scalar() && t.is_scalar()) return make_int(t, *c);
  return cast(t, e);
}

class StorageFlattener : public StmtMutator {
 public:
  // The flattened buffer of b (created once, then reused: identity stays consistent).
  Buffer flat(const Buffer& b) {
    auto it = flat_.find(b.get());
    if (it != flat_.end()) return it->second;
    Buffer out = b;
    if (b->shape.size() != 1) {
      Expr extent;
      for (const Expr& d : b->shape) extent = extent.defined() ? mul_folded(extent, d) : d;
      // A rank-0 buffer (a scalar) holds one element.
      if (!extent.defined()) extent = make_int(DataType::i32(), 1);
      auto node = std::make_shared<BufferNode>(*b.get());
      node->shape = {extent};
      // The layout stays named: the flat index already holds it (linearize), and what comes
      // after reads it (shared alignment, wgmma's descriptors).
      out = Buffer(std::move(node));
    }
    flat_.emplace(b.get(), out);
    return out;
  }

 protected:
  Expr visit_buffer_load(const BufferLoadNode* op, const Expr& self) override {
    std::vector<Expr> indices;
    bool changed = mutate_all(op->indices, &indices);
    Buffer fb = flat(op->buffer);
    if (!changed && fb.same_as(op->buffer)) return self;
    std::vector<Expr> flat_index = {linearize(op->buffer, indices)};
    // Constructed directly: the dtype (lanes included) is the load's own, which stays right
    // whatever lanes the flat index has.
    return Expr(std::make_shared<BufferLoadNode>(op->dtype, fb, std::move(flat_index)));
  }

  Stmt visit_buffer_store(const BufferStoreNode* op, const Stmt& self) override {
    std::vector<Expr> indices;
    bool changed = mutate_all(op->indices, &indices);
    Expr value = mutate(op->value);
    Buffer fb = flat(op->buffer);
    if (!changed && value.same_as(op->value) && fb.same_as(op->buffer)) return self;
    return buffer_store(fb, value, {linearize(op->buffer, indices)});
  }

  Stmt visit_allocate(const AllocateNode* op, const Stmt& self) override {
    Stmt body = mutate_stmt(op->body);
    Buffer fb = flat(op->buffer);
    if (body.same_as(op->body) && fb.same_as(op->buffer)) return self;
    return allocate(fb, body);
  }

 private:
  // Row-major: i0*(d1*...*dk-1) + ... + ik-2*dk-1 + ik-1, summed left to right.
  Expr linearize(const Buffer& b, const std::vector<Expr>& idx) {
    KILN_CHECK(idx.size() == b->shape.size())
        << "access to buffer '" << b->name << "' has " << idx.size() << " indices, rank is "
        << b->shape.size();
    if (idx.empty()) return make_int(DataType::i32(), 0);
    if (idx.size() == 1) return idx[0];
    // Widest index type and lane count among the indices: every term is brought to them.
    DataType t = idx[0].dtype().element_of();
    int lanes = 1;
    for (const Expr& i : idx) {
      KILN_CHECK(i.dtype().is_integer()) << "index of '" << b->name << "' is " << i.dtype().str();
      if (i.dtype().bits > t.bits) t = i.dtype().element_of();
      if (i.dtype().lanes > 1) lanes = i.dtype().lanes;
    }
    // int32 offsets would wrap on a buffer of 2^31 elements or more.
    if (t.bits < 64 && b->shape.size() > 1) {
      bool all_const = true;
      int64_t n = 1;
      for (const Expr& d : b->shape) {
        auto c = as_const_int(d);
        if (!c) { all_const = false; break; }
        n = (*c != 0 && n > INT64_MAX / *c) ? INT64_MAX : n * *c;
      }
      if (all_const && n > INT32_MAX) t = DataType::i64();
    }
    if (idx.size() >= 2 && b->layout == TileLayout::kCoreMatrices) return core_matrix_offset(b, idx, t);
    if (idx.size() >= 2 && b->layout == TileLayout::kSwizzle128B) return swizzled_offset(b, idx, t);
    // strides[d] = d(d+1) * ... * d(k-1)
    std::vector<Expr> strides(idx.size());
    strides.back() = make_int(t, 1);
    for (size_t d = idx.size() - 1; d-- > 0;)
      strides[d] = mul_folded(to_index_type(b->shape[d + 1], t), strides[d + 1]);
    Expr sum;
    for (size_t d = 0; d < idx.size(); ++d) {
      Expr i = to_index_type(idx[d], t.with_lanes(idx[d].dtype().lanes));
      if (i.dtype().lanes != lanes) i = broadcast(i, lanes);
      if (is_zero(i)) continue;
      Expr s = lanes > 1 ? broadcast(strides[d], lanes) : strides[d];
      sum = add_folded(sum, mul_folded(i, s));
    }
    if (!sum.defined()) return make_int(t.with_lanes(lanes), 0);
    return sum;
  }

  // `sum`, the offset in one matrix of a tile laid out by TileLayout, after the matrices before
  // (those of the leading indices, row-major, `matrix` elements each).
  static Expr plus_leading(const Buffer& b, const std::vector<Expr>& idx, DataType t, int64_t matrix, Expr sum) {
    Expr before;
    for (size_t d = 0; d + 2 < idx.size(); ++d)
      before = add_folded(before.defined() ? mul_folded(before, to_index_type(b->shape[d], t)) : before,
                          to_index_type(idx[d], t));
    return before.defined() ? add(mul(before, make_int(t, matrix)), sum) : sum;
  }

  // TileLayout::kCoreMatrices: the last two indices (r, c) of an [R, C] matrix at
  // ((r / 8) (C / 8) + c / 8) 64 + (r % 8) 8 + c % 8, the matrices before in row-major order.
  Expr core_matrix_offset(const Buffer& b, const std::vector<Expr>& idx, DataType t) {
    const size_t nd = idx.size();
    const std::optional<int64_t> rows = as_const_int(b->shape[nd - 2]), cols = as_const_int(b->shape[nd - 1]);
    KILN_CHECK(nd >= 2 && rows && cols && *rows % 8 == 0 && *cols % 8 == 0)
        << "buffer '" << b->name << "' in core matrices is not made of whole 8 x 8 matrices";
    KILN_CHECK(idx[nd - 1].dtype().is_scalar()) << "buffer '" << b->name << "' in core matrices: a vector index";
    auto c = [&](int64_t v) { return make_int(t, v); };
    const Expr r = to_index_type(idx[nd - 2], t), k = to_index_type(idx[nd - 1], t);
    Expr sum = add((floordiv(r, c(8)) * c(*cols / 8) + floordiv(k, c(8))) * c(64), floormod(r, c(8)) * c(8) + floormod(k, c(8)));
    return plus_leading(b, idx, t, *rows * *cols, sum);
  }

  // TileLayout::kSwizzle128B: the last two indices (r, c) of an [R, C] matrix whose rows are
  // whole 128-byte panels of P elements (16 bytes a chunk of Q): panel by panel, each R rows of
  // 128 bytes, at ((c / P) R + r) P + ((c % P / Q) xor (r % 8)) Q + c % Q, the matrices before in
  // row-major order. A K-major tile is one panel wide; an N-major one (K x N) is N / P panels,
  // each the 64 x 8 atoms wgmma reads with its leading offset between them.
  // The IR has no xor: of two 3-bit values it is the sum over bits b of 2^b ((x >> b) + (y >> b)) % 2.
  Expr swizzled_offset(const Buffer& b, const std::vector<Expr>& idx, DataType t) {
    const size_t nd = idx.size();
    const std::optional<int64_t> rows = as_const_int(b->shape[nd - 2]), cols = as_const_int(b->shape[nd - 1]);
    const int64_t bytes = b->dtype.bytes(), panel = 128 / bytes, chunk = 16 / bytes;
    KILN_CHECK(rows && cols && *rows % 8 == 0 && bytes <= 16 && *cols % panel == 0)
        << "buffer '" << b->name << "' swizzled in 128-byte rows is not whole panels of 128-byte rows, 8 rows a group";
    KILN_CHECK(idx[nd - 1].dtype().is_scalar()) << "buffer '" << b->name << "' swizzled: a vector index";
    auto c = [&](int64_t v) { return make_int(t, v); };
    Expr r = to_index_type(idx[nd - 2], t);
    const Expr k = to_index_type(idx[nd - 1], t);
    // Every term but the last through the chunk's index q: a loop over a chunk's elements then
    // leaves them one run of consecutive offsets (a vector copy).
    const Expr q = floordiv(k, c(chunk));
    const Expr chunk_of = *cols == panel ? q : floormod(q, c(panel / chunk)), phase = floormod(r, c(8));
    Expr swizzled;
    for (int64_t bit : {1, 2, 4})
      swizzled = add_folded(swizzled, mul_folded(floormod(floordiv(chunk_of, c(bit)) + floordiv(phase, c(bit)), c(2)), c(bit)));
    if (*cols > panel) r = floordiv(q, c(panel / chunk)) * c(*rows) + r;
    Expr sum = add(r * c(panel) + swizzled * c(chunk), floormod(k, c(chunk)));
    return plus_leading(b, idx, t, *rows * *cols, sum);
  }

  std::unordered_map<const BufferNode*, Buffer> flat_;
};

}  // namespace

PrimFunc flatten_storage(const PrimFunc& f) {
  StorageFlattener flattener;
  PrimFunc out = f;
  // Params keep their logical shapes: they are the kernel's signature (argument checks compare
  // tensors against them). Accesses use the flattened view, which shares the param's data var.
  out.body = flattener.mutate_stmt(f.body);
  return out;
}

}  // namespace kiln::ir
