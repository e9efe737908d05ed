// flatten_storage: printed IR before/after, and buffer identity after flattening.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "kiln/ir/functor.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/transforms.h"

using namespace kiln::ir;

namespace {

// Every distinct buffer object that the loads, stores and allocations of s refer to.
std::set<const BufferNode*> buffers_used(const Stmt& s) {
  struct Collector : StmtVisitor {
    std::set<const BufferNode*> seen;
    void visit_buffer_load(const BufferLoadNode* op) override {
      seen.insert(op->buffer.get());
      StmtVisitor::visit_buffer_load(op);
    }
    void visit_buffer_store(const BufferStoreNode* op) override {
      seen.insert(op->buffer.get());
      StmtVisitor::visit_buffer_store(op);
    }
    void visit_allocate(const AllocateNode* op) override {
      seen.insert(op->buffer.get());
      StmtVisitor::visit_allocate(op);
    }
  } c;
  c.visit_stmt(s);
  return c.seen;
}

// A float16 shared tile of `shape` laid out by `layout`.
Buffer tile(const std::string& name, std::vector<Expr> shape, TileLayout layout) {
  auto node = std::make_shared<BufferNode>(*Buffer::make(name, DataType::f16(), std::move(shape), "shared").get());
  node->layout = layout;
  return Buffer(std::move(node));
}

// The flattened, simplified text of a function that stores t at each index of `at` into O[i].
std::string flattened_reads(const Buffer& t, const std::vector<std::vector<int>>& at) {
  const Buffer out = Buffer::make("O", DataType::f16(), {static_cast<int64_t>(at.size())});
  std::vector<Stmt> stores;
  for (size_t i = 0; i < at.size(); ++i)
    stores.push_back(buffer_store(out, buffer_load(t, std::vector<Expr>(at[i].begin(), at[i].end())), {int(i)}));
  return to_string(simplify(flatten_storage(PrimFunc{"reads", {out}, allocate(t, seq(stores))})));
}

}  // namespace

TEST_CASE("flatten: 2-D accesses become row-major flat indices", "[flatten]") {
  Buffer a = Buffer::make("A", DataType::f32(), {64, 16});
  Buffer b = Buffer::make("B", DataType::f32(), {64, 16});
  Var i("i"), j("j");
  Stmt body = for_loop(i, 0, 64, ForKind::Serial,
                       for_loop(j, 0, 16, ForKind::Serial, buffer_store(b, buffer_load(a, {i, j}) * 2.0f, {i, j})));
  PrimFunc f{"scale", {a, b}, body};
  CHECK(to_string(f) ==
        "func scale(A: float32[64, 16], B: float32[64, 16]) {\n"
        "  for (i, 0, 64) {\n"
        "    for (j, 0, 16) {\n"
        "      B[i, j] = A[i, j]*2f\n"
        "    }\n"
        "  }\n"
        "}\n");
  PrimFunc g = flatten_storage(f);
  CHECK(to_string(g) ==
        "func scale(A: float32[64, 16], B: float32[64, 16]) {\n"
        "  for (i, 0, 64) {\n"
        "    for (j, 0, 16) {\n"
        "      B[i*16 + j] = A[i*16 + j]*2f\n"
        "    }\n"
        "  }\n"
        "}\n");
  // Params keep their logical shape (the signature); every access uses one flattened object per
  // buffer, with data var, name, dtype and scope carried over.
  REQUIRE(g.params.size() == 2);
  CHECK(g.params[0].same_as(a));
  auto used = buffers_used(g.body);
  REQUIRE(used.size() == 2);
  for (const BufferNode* flat : used) {
    CHECK(flat->shape.size() == 1);
    CHECK((flat->data.same_as(a->data) || flat->data.same_as(b->data)));
    CHECK(flat->dtype == DataType::f32());
    CHECK(flat->scope == "global");
  }
  // The input is not modified.
  CHECK(f.params[0]->shape.size() == 2);
}

TEST_CASE("flatten: 4-D accesses use every stride, constant zero indices drop out", "[flatten]") {
  Buffer x = Buffer::make("X", DataType::i8(), {2, 3, 4, 5});
  Buffer y = Buffer::make("Y", DataType::i8(), {2, 3, 4, 5});
  Var n("n"), c("c"), h("h"), w("w");
  Stmt s = seq({buffer_store(y, buffer_load(x, {n, c, h, w}), {n, c, h, w}),
                buffer_store(y, buffer_load(x, {0, c, 0, w}), {0, 0, 0, 0}),
                buffer_store(y, buffer_load(x, {1, 2, 3, 4}), {n, 0, h, 0})});
  PrimFunc g = flatten_storage(PrimFunc{"copy4", {x, y}, s});
  CHECK(to_string(g) ==
        "func copy4(X: int8[2, 3, 4, 5], Y: int8[2, 3, 4, 5]) {\n"
        "  Y[n*60 + c*20 + h*5 + w] = X[n*60 + c*20 + h*5 + w]\n"
        "  Y[0] = X[c*20 + w]\n"
        "  Y[n*60 + h*5] = X[119]\n"
        "}\n");
}

TEST_CASE("flatten: 1-D accesses stay as they are, on the same buffer object", "[flatten]") {
  Buffer a = Buffer::make("A", DataType::f32(), {16});
  Buffer b = Buffer::make("B", DataType::f32(), {16});
  Var i("i");
  Stmt body = for_loop(i, 0, 16, ForKind::Serial, buffer_store(b, buffer_load(a, {15 - i}), {i}));
  PrimFunc f{"rev", {a, b}, body};
  PrimFunc g = flatten_storage(f);
  CHECK(to_string(g) == to_string(f));
  CHECK(g.body.same_as(f.body));  // nothing to rewrite: the very same tree comes back
  CHECK(g.params[0].same_as(a));
  CHECK(buffers_used(g.body) == std::set<const BufferNode*>{a.get(), b.get()});
}

TEST_CASE("flatten: allocations get the flat extent and keep their scope", "[flatten]") {
  Buffer a = Buffer::make("A", DataType::f32(), {4, 8});
  Buffer t = Buffer::make("T", DataType::f32(), {4, 8}, "local");
  Var i("i"), j("j");
  Stmt fill = for_loop(j, 0, 8, ForKind::Serial, buffer_store(t, buffer_load(a, {i, j}), {i, j}));
  Stmt back = for_loop(j, 0, 8, ForKind::Serial, buffer_store(a, buffer_load(t, {i, 7 - j}), {i, j}));
  Stmt body = allocate(t, for_loop(i, 0, 4, ForKind::Serial, seq({fill, back})));
  PrimFunc g = flatten_storage(PrimFunc{"mirror", {a}, body});
  CHECK(to_string(g) ==
        "func mirror(A: float32[4, 8]) {\n"
        "  allocate T: float32[32], local\n"
        "  for (i, 0, 4) {\n"
        "    for (j, 0, 8) {\n"
        "      T[i*8 + j] = A[i*8 + j]\n"
        "    }\n"
        "    for (j, 0, 8) {\n"
        "      A[i*8 + j] = T[i*8 + (7 - j)]\n"
        "    }\n"
        "  }\n"
        "}\n");
  const auto* alloc = g.body.as<AllocateNode>();
  REQUIRE(alloc);
  CHECK(alloc->buffer->scope == "local");
  CHECK(alloc->buffer->data.same_as(t->data));
  auto used = buffers_used(g.body);
  CHECK(used.size() == 2);  // the flat views of A and of T
  CHECK(used.count(alloc->buffer.get()) == 1);
}

TEST_CASE("flatten: loads inside call arguments and inside indices are rewritten", "[flatten]") {
  Buffer c = Buffer::make("C", DataType::f32(), {8, 16});
  Buffer idx = Buffer::make("Idx", DataType::i32(), {8, 2});
  Var i("i");
  // tensorize passes the address of a tile: "address_of"(C[i, 0]) must flatten like any load.
  Stmt call = evaluate(call_extern(DataType::i32(), "gemm_update",
                                   {make_intrinsic("address_of", {buffer_load(c, {i, 0})}), 16}));
  Stmt gather = buffer_store(c, buffer_load(c, {buffer_load(idx, {i, 1}), 3}), {i, 3});
  PrimFunc g = flatten_storage(PrimFunc{"tiles", {c, idx}, for_loop(i, 0, 8, ForKind::Serial, seq({call, gather}))});
  CHECK(to_string(g) ==
        "func tiles(C: float32[8, 16], Idx: int32[8, 2]) {\n"
        "  for (i, 0, 8) {\n"
        "    extern gemm_update(address_of(C[i*16]), 16)\n"
        "    C[i*16 + 3] = C[Idx[i*2 + 1]*16 + 3]\n"
        "  }\n"
        "}\n");
}

TEST_CASE("flatten: mixed int64/int32 indices are brought to int64", "[flatten]") {
  Buffer a = Buffer::make("A", DataType::f32(), {Expr(int64_t{4}), Expr(int64_t{8})});
  Var i("i", DataType::i64()), j("j");
  PrimFunc g = flatten_storage(PrimFunc{"wide", {a}, buffer_store(a, 0.0f, {i, j})});
  CHECK(to_string(g) ==
        "func wide(A: float32[int64(4), int64(8)]) {\n"
        "  A[i*int64(8) + int64(j)] = 0f\n"
        "}\n");
  CHECK(g.body.as<BufferStoreNode>()->indices[0].dtype() == DataType::i64());
}

TEST_CASE("flatten: a rank-0 buffer becomes one element at index 0", "[flatten]") {
  Buffer s = Buffer::make("S", DataType::f32(), {});
  Buffer a = Buffer::make("A", DataType::f32(), {4});
  // Rank-0 accesses have no indices, which the checking makers refuse: build the nodes.
  Expr load_s(std::make_shared<BufferLoadNode>(DataType::f32(), s, std::vector<Expr>{}));
  Stmt st(std::make_shared<BufferStoreNode>(s, load_s + buffer_load(a, {2}), std::vector<Expr>{}));
  PrimFunc g = flatten_storage(PrimFunc{"acc", {s, a}, st});
  CHECK(to_string(g) ==
        "func acc(S: float32[], A: float32[4]) {\n"
        "  S[0] = S[0] + A[2]\n"
        "}\n");
}

TEST_CASE("flatten: a buffer in core matrices lays each 8 x 8 block out contiguously", "[flatten]") {
  // [2, 16, 24] float16 in core matrices: matrix n of 16 x 24 at n * 384, element (r, c) at
  // ((r / 8) * 3 + c / 8) * 64 + (r % 8) * 8 + c % 8.
  const Buffer s = tile("S", {2, 16, 24}, TileLayout::kCoreMatrices);
  const Buffer out = Buffer::make("O", DataType::f16(), {1});
  Stmt body = allocate(s, seq({buffer_store(s, make_zero(DataType::f16()), {1, 9, 10}),
                               buffer_store(out, buffer_load(s, {0, 7, 23}), {0})}));
  PrimFunc g = simplify(flatten_storage(PrimFunc{"core", {out}, body}));
  const std::string text = to_string(g);
  // (1, 9, 10): 384 + (1 * 3 + 1) * 64 + 1 * 8 + 2 = 650; (0, 7, 23): 2 * 64 + 7 * 8 + 7 = 191.
  CHECK_THAT(text, Catch::Matchers::Contains("S[650] = "));
  CHECK_THAT(text, Catch::Matchers::Contains("S[191]"));
  CHECK_THAT(text, Catch::Matchers::Contains("allocate S: float16[768], shared, core_matrices\n"));
  CHECK_THAT(to_string(PrimFunc{"core", {out}, body}), Catch::Matchers::Contains("shared, core_matrices"));
}

TEST_CASE("flatten: a 128-byte swizzled tile permutes each row's 16-byte chunks by the row", "[flatten]") {
  // [2, 16, 64] float16 swizzled: matrix n at n * 1024, element (r, c) at
  // r * 64 + ((c / 8) ^ (r % 8)) * 8 + c % 8, the pattern wgmma's 128-byte swizzle reads.
  const std::vector<std::vector<int>> at = {{1, 9, 10}, {0, 7, 23}, {0, 3, 60}, {1, 14, 33}};
  const std::string text = flattened_reads(tile("S", {2, 16, 64}, TileLayout::kSwizzle128B), at);
  INFO(text);
  for (size_t i = 0; i < at.size(); ++i) {
    const int n = at[i][0], r = at[i][1], c = at[i][2];
    const int want = n * 1024 + r * 64 + ((c / 8) ^ (r % 8)) * 8 + c % 8;
    CHECK_THAT(text, Catch::Matchers::Contains("O[" + std::to_string(i) + "] = S[" + std::to_string(want) + "]"));
  }
  CHECK_THAT(text, Catch::Matchers::Contains("allocate S: float16[2048], shared, swizzle_128b\n"));
  // Rows of 2 panels (an N-major K x N tile, [16, 128]): panel p's 16 rows of 64 at p * 1024,
  // each swizzled as above, wgmma's leading offset (16 x 128 bytes) from one panel to the next.
  const std::vector<std::vector<int>> in_panels = {{9, 10}, {7, 70}, {3, 127}, {14, 64}};
  const std::string panels = flattened_reads(tile("P", {16, 128}, TileLayout::kSwizzle128B), in_panels);
  INFO(panels);
  for (size_t i = 0; i < in_panels.size(); ++i) {
    const int r = in_panels[i][0], c = in_panels[i][1];
    const int want = (c / 64) * 1024 + r * 64 + ((c % 64 / 8) ^ (r % 8)) * 8 + c % 8;
    CHECK_THAT(panels, Catch::Matchers::Contains("O[" + std::to_string(i) + "] = P[" + std::to_string(want) + "]"));
  }
  // Rows of other than whole 128-byte panels are refused, naming the buffer.
  CHECK_THROWS_WITH(flattened_reads(tile("W", {8, 32}, TileLayout::kSwizzle128B), {{1, 2}}),
                    Catch::Matchers::Contains("buffer 'W' swizzled in 128-byte rows is not whole panels of 128-byte rows"));
}
