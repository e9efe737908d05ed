// vectorize_loops: printed IR before/after for each rule, and each fallback with its note.
#include <catch2/catch.hpp>

#include "kiln/ir/printer.h"
#include "kiln/ir/transforms.h"

using namespace kiln::ir;

namespace {

Stmt vfor(const Var& v, Expr extent, Stmt body) { return for_loop(v, 0, std::move(extent), ForKind::Vectorized, std::move(body)); }

// Vectorizes s, expecting the loop `loop` to stay serial for `why`: the output is s with that
// loop serial, and the one note says so.
void check_kept_serial(const Stmt& s, const std::string& expected, const std::string& loop, const std::string& why) {
  std::vector<std::string> notes;
  Stmt out = vectorize_loops(s, &notes);
  CHECK(to_string(out) == expected);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "vectorize: loop '" + loop + "' kept serial: " + why);
}

}  // namespace

TEST_CASE("vectorize: contiguous accesses become ramps, invariant loads are broadcast", "[vectorize]") {
  Buffer a = Buffer::make("A", DataType::f32(), {1024});
  Buffer b = Buffer::make("B", DataType::f32(), {1024});
  Buffer c = Buffer::make("C", DataType::f32(), {64});
  Var i("i"), j("j");
  Stmt s = for_loop(i, 0, 64, ForKind::Parallel,
                    vfor(j, 16, buffer_store(b, buffer_load(a, {i * 16 + j}) * 2.0f + buffer_load(c, {i}), {i * 16 + j})));
  std::vector<std::string> notes;
  CHECK(to_string(vectorize_loops(s, &notes)) ==
        "parallel for (i, 0, 64) {\n"
        "  B[ramp(i*16, 1, 16)] = A[ramp(i*16, 1, 16)]*broadcast(2f, 16) + broadcast(C[i], 16)\n"
        "}\n");
  CHECK(notes.empty());
}

TEST_CASE("vectorize: index rules keep ramps closed under + - * by scalars", "[vectorize]") {
  Buffer a = Buffer::make("A", DataType::i32(), {256});
  Buffer b = Buffer::make("B", DataType::i32(), {256});
  Var i("i"), j("j");
  Stmt strided = vfor(j, 8, buffer_store(b, buffer_load(a, {j * 4 + 1}), {j}));
  CHECK(to_string(vectorize_loops(strided)) == "B[ramp(0, 1, 8)] = A[ramp(1, 4, 8)]\n");
  Stmt reversed = vfor(j, 8, buffer_store(b, buffer_load(a, {7 - j}), {j + j}));
  CHECK(to_string(vectorize_loops(reversed)) == "B[ramp(0, 2, 8)] = A[ramp(7, -1, 8)]\n");
  // (j + i) - j is lane-invariant: ramp - ramp with equal strides is a broadcast.
  Stmt invariant = for_loop(i, 0, 4, ForKind::Serial, vfor(j, 8, buffer_store(b, (j + i) - j, {i * 8 + j})));
  CHECK(to_string(vectorize_loops(invariant)) ==
        "for (i, 0, 4) {\n"
        "  B[ramp(i*8, 1, 8)] = broadcast(i, 8)\n"
        "}\n");
  // The symbolic scalar factor: ramp * scalar distributes over base and stride.
  Stmt scaled = for_loop(i, 1, 4, ForKind::Serial, vfor(j, 4, buffer_store(b, j * i, {j * i})));
  CHECK(to_string(vectorize_loops(scaled)) ==
        "for (i, 1, 4) {\n"
        "  B[ramp(0, i, 4)] = ramp(0, i, 4)\n"
        "}\n");
  // Other operators on vectors stay plain vector ops (the backend sees a gather here).
  Stmt gather = vfor(j, 8, buffer_store(b, buffer_load(a, {j / 2}), {j}));
  CHECK(to_string(vectorize_loops(gather)) == "B[ramp(0, 1, 8)] = A[floordiv(ramp(0, 1, 8), broadcast(2, 8))]\n");
}

TEST_CASE("vectorize: select, cast, comparisons and pure intrinsics become vector ops", "[vectorize]") {
  Buffer a = Buffer::make("A", DataType::f32(), {16});
  Buffer n = Buffer::make("N", DataType::i8(), {16});
  Buffer b = Buffer::make("B", DataType::f32(), {16});
  Var j("j");
  Expr x = buffer_load(a, {j});
  Stmt s = vfor(j, 16, buffer_store(b, select(x > 0.0f, make_intrinsic("exp", {x}), cast(DataType::f32(), buffer_load(n, {j}))), {j}));
  Stmt v = vectorize_loops(s);
  CHECK(to_string(v) ==
        "B[ramp(0, 1, 16)] = select(A[ramp(0, 1, 16)] > broadcast(0f, 16), exp(A[ramp(0, 1, 16)]), "
        "float32x16(N[ramp(0, 1, 16)]))\n");
  CHECK(v.as<BufferStoreNode>()->value.dtype() == DataType::f32(16));
  // A lane-invariant argument stays scalar inside and is broadcast once.
  Stmt inv = vfor(j, 4, buffer_store(b, make_intrinsic("sqrt", {buffer_load(a, {0})}) + x, {j}));
  CHECK(to_string(vectorize_loops(inv)) == "B[ramp(0, 1, 4)] = broadcast(sqrt(A[0]), 4) + A[ramp(0, 1, 4)]\n");
}

TEST_CASE("vectorize: lets of vector values get vector-typed variables", "[vectorize]") {
  Buffer a = Buffer::make("A", DataType::f32(), {8});
  Buffer b = Buffer::make("B", DataType::f32(), {8});
  Var j("j"), x("x", DataType::f32()), y("y", DataType::f32()), k("k");
  Stmt s = vfor(j, 8, let_stmt(x, buffer_load(a, {j}) * 3.0f,
                               let_stmt(k, Expr(2), buffer_store(b, let(y, x + 1.0f, y * x) + cast(DataType::f32(), k), {j}))));
  Stmt v = vectorize_loops(s);
  CHECK(to_string(v) ==
        "let x = A[ramp(0, 1, 8)]*broadcast(3f, 8)\n"
        "let k = 2\n"
        "B[ramp(0, 1, 8)] = (let y = x + broadcast(1f, 8) in y*x) + broadcast(float32(k), 8)\n");
  const auto* let_x = v.as<LetStmtNode>();
  REQUIRE(let_x);
  CHECK(let_x->var.dtype() == DataType::f32(8));
  CHECK(!let_x->var.same_as(x));
  const auto* let_k = let_x->body.as<LetStmtNode>();
  REQUIRE(let_k);
  CHECK(let_k->var.same_as(k));  // a scalar let keeps its variable
}

TEST_CASE("vectorize: stores of invariant values and scalar-condition ifs", "[vectorize]") {
  Buffer a = Buffer::make("A", DataType::f32(), {16});
  Buffer b = Buffer::make("B", DataType::f32(), {16});
  Buffer flag = Buffer::make("F", DataType::f32(), {1});
  Var j("j");
  // The invariant store is idempotent: storing once equals storing 16 times.
  Stmt s = vfor(j, 16, if_then_else(buffer_load(a, {0}) > 0.0f,
                                    seq({buffer_store(b, 1.0f, {j}), buffer_store(flag, 1.0f, {0})}),
                                    buffer_store(b, buffer_load(a, {j}), {j})));
  CHECK(to_string(vectorize_loops(s)) ==
        "if (A[0] > 0f) {\n"
        "  B[ramp(0, 1, 16)] = broadcast(1f, 16)\n"
        "  F[0] = 1f\n"
        "} else {\n"
        "  B[ramp(0, 1, 16)] = A[ramp(0, 1, 16)]\n"
        "}\n");
}

TEST_CASE("vectorize: a lane condition on one in-bounds store becomes a select", "[vectorize]") {
  Buffer a = Buffer::make("A", DataType::f32(), {64});
  Buffer b = Buffer::make("B", DataType::f32(), {64});
  Var i("i"), j("j");
  Stmt guarded = for_loop(i, 0, 4, ForKind::Serial,
                          vfor(j, 16, if_then_else(j < 10, buffer_store(b, buffer_load(a, {i * 16 + j}), {i * 16 + j}))));
  std::vector<std::string> notes;
  CHECK(to_string(vectorize_loops(guarded, &notes)) ==
        "for (i, 0, 4) {\n"
        "  B[ramp(i*16, 1, 16)] = select(ramp(0, 1, 16) < broadcast(10, 16), A[ramp(i*16, 1, 16)], B[ramp(i*16, 1, 16)])\n"
        "}\n");
  CHECK(notes.empty());
  // Lets around the store run for every lane as well (their loads are checked in bounds).
  Var x("x", DataType::f32());
  Stmt with_let = vfor(j, 16, if_then_else(j < 10, let_stmt(x, buffer_load(a, {j}), buffer_store(b, x * 2.0f, {j}))));
  CHECK(to_string(vectorize_loops(with_let)) ==
        "let x = A[ramp(0, 1, 16)]\n"
        "B[ramp(0, 1, 16)] = select(ramp(0, 1, 16) < broadcast(10, 16), x*broadcast(2f, 16), B[ramp(0, 1, 16)])\n");
  Stmt both = vfor(j, 16, if_then_else(buffer_load(a, {j}) > 0.0f, buffer_store(b, 1.0f, {j}), buffer_store(b, -1.0f, {j})));
  CHECK(to_string(vectorize_loops(both)) ==
        "B[ramp(0, 1, 16)] = select(A[ramp(0, 1, 16)] > broadcast(0f, 16), broadcast(1f, 16), broadcast(-1f, 16))\n");
}

TEST_CASE("vectorize: loop forms: non-zero min, extent 1, inner loops first", "[vectorize]") {
  Buffer b = Buffer::make("B", DataType::i32(), {64});
  Var i("i"), j("j");
  Stmt shifted = for_loop(i, 0, 4, ForKind::Serial, for_loop(j, i * 16, 16, ForKind::Vectorized, buffer_store(b, j, {j})));
  CHECK(to_string(vectorize_loops(shifted)) ==
        "for (i, 0, 4) {\n"
        "  B[ramp(i*16, 1, 16)] = ramp(i*16, 1, 16)\n"
        "}\n");
  CHECK(to_string(vectorize_loops(for_loop(j, 3, 1, ForKind::Vectorized, buffer_store(b, j, {j})))) == "B[3] = 3\n");
  // An outer vectorized loop around an inner one: the inner vectorizes, the outer cannot
  // (it would need vectors of vectors) and stays serial.
  Stmt nested = vfor(i, 4, vfor(j, 16, buffer_store(b, j, {i * 16 + j})));
  check_kept_serial(nested,
                    "for (i, 0, 4) {\n"
                    "  B[ramp(i*16, 1, 16)] = ramp(0, 1, 16)\n"
                    "}\n",
                    "i", "the body already holds vector expressions");
}

TEST_CASE("vectorize: a lane-guarded store becomes the masked-store form, even past the buffer or in parallel",
          "[vectorize]") {
  // select(cond, new, A[idx]) stored to A[idx] is a masked store in the backend: masked-off
  // lanes are never written, and the true side's loads are masked, so neither bounds nor other
  // threads constrain it.
  Buffer b = Buffer::make("B", DataType::f32(), {64});
  Buffer small = Buffer::make("S", DataType::f32(), {10});
  Var i("i"), j("j");
  std::vector<std::string> notes;
  // The last row's guard is a bounds check: i*16 + j reaches 79.
  Stmt tail = for_loop(i, 0, 5, ForKind::Parallel,
                       vfor(j, 16, if_then_else(i * 16 + j < 64, buffer_store(b, 1.0f, {i * 16 + j}))));
  CHECK(to_string(vectorize_loops(tail, &notes)) ==
        "parallel for (i, 0, 5) {\n"
        "  B[ramp(i*16, 1, 16)] = select(ramp(i*16, 1, 16) < broadcast(64, 16), broadcast(1f, 16), B[ramp(i*16, 1, 16)])\n"
        "}\n");
  // A guarded read past its buffer.
  CHECK(to_string(vectorize_loops(vfor(j, 16, if_then_else(j < 10, buffer_store(b, buffer_load(small, {j}), {j}))), &notes)) ==
        "B[ramp(0, 1, 16)] = select(ramp(0, 1, 16) < broadcast(10, 16), S[ramp(0, 1, 16)], B[ramp(0, 1, 16)])\n");
  CHECK(notes.empty());
}

TEST_CASE("vectorize: fallbacks keep the loop serial and say why", "[vectorize]") {
  Buffer a = Buffer::make("A", DataType::f32(), {64});
  Buffer b = Buffer::make("B", DataType::f32(), {64});
  Buffer c = Buffer::make("C", DataType::f32(), {1});
  Var i("i"), j("j"), k("k");
  SECTION("a reduction into an invariant location") {
    check_kept_serial(vfor(j, 16, buffer_store(c, buffer_load(c, {0}) + buffer_load(a, {j}), {0})),
                      "for (j, 0, 16) {\n  C[0] = C[0] + A[j]\n}\n", "j",
                      "store to 'C' at an index invariant in the loop var takes a lane-dependent value (a reduction)");
  }
  SECTION("an invariant read-modify-write would run once instead of per lane") {
    check_kept_serial(vfor(j, 16, seq({buffer_store(b, 0.0f, {j}), buffer_store(c, buffer_load(c, {0}) + 1.0f, {0})})),
                      "for (j, 0, 16) {\n  B[j] = 0f\n  C[0] = C[0] + 1f\n}\n", "j",
                      "store to 'C' at an index invariant in the loop var reads 'C' (a loop-carried update)");
  }
  SECTION("a nested loop") {
    check_kept_serial(vfor(j, 4, for_loop(k, 0, 16, ForKind::Serial, buffer_store(b, 0.0f, {j * 16 + k}))),
                      "for (j, 0, 4) {\n  for (k, 0, 16) {\n    B[j*16 + k] = 0f\n  }\n}\n", "j",
                      "it contains a nested loop 'k'");
  }
  SECTION("an allocation inside") {
    Buffer t = Buffer::make("T", DataType::f32(), {1}, "local");
    check_kept_serial(vfor(j, 4, allocate(t, buffer_store(b, 0.0f, {j}))),
                      "for (j, 0, 4) {\n  allocate T: float32[1], local\n  B[j] = 0f\n}\n", "j",
                      "it allocates 'T' inside");
  }
  SECTION("a lane condition around more than one store") {
    check_kept_serial(vfor(j, 4, if_then_else(j < 2, seq({buffer_store(b, 0.0f, {j}), buffer_store(a, 0.0f, {j})}))),
                      "for (j, 0, 4) {\n  if (j < 2) {\n    B[j] = 0f\n    A[j] = 0f\n  }\n}\n", "j",
                      "an if condition depends on the lane and its branches are not one store to one location");
  }
  SECTION("a lane condition guarding an access in a let, which runs for every lane") {
    Buffer small = Buffer::make("S", DataType::f32(), {10});
    Var v("v", DataType::f32());
    check_kept_serial(vfor(j, 16, if_then_else(j < 10, let_stmt(v, buffer_load(small, {j}), buffer_store(b, v, {j})))),
                      "for (j, 0, 16) {\n  if (j < 10) {\n    let v = S[j]\n    B[j] = v\n  }\n}\n", "j",
                      "an if condition depends on the lane and 'S' may be accessed out of bounds");
  }
  SECTION("a lane condition guarding an integer division") {
    Buffer n = Buffer::make("N", DataType::i32(), {16});
    check_kept_serial(vfor(j, 16, if_then_else(ne(buffer_load(n, {j}), 0), buffer_store(n, 100 / buffer_load(n, {j}), {j}))),
                      "for (j, 0, 16) {\n  if (N[j] != 0) {\n    N[j] = floordiv(100, N[j])\n  }\n}\n", "j",
                      "an if condition depends on the lane and an integer division may divide by zero");
  }
  SECTION("an extern call") {
    check_kept_serial(vfor(j, 4, evaluate(call_extern(DataType::i32(), "log_lane", {j}))),
                      "for (j, 0, 4) {\n  extern log_lane(j)\n}\n", "j", "it calls extern function 'log_lane'");
  }
  SECTION("the address of a lane-dependent element") {
    check_kept_serial(vfor(j, 4, evaluate(make_intrinsic("address_of", {buffer_load(a, {j})}))),
                      "for (j, 0, 4) {\n  address_of(A[j])\n}\n", "j",
                      "intrinsic 'address_of' yields a handle from a lane-dependent argument");
  }
  SECTION("a non-constant extent") {
    check_kept_serial(for_loop(i, 1, 4, ForKind::Serial, vfor(j, i * 4, buffer_store(b, 0.0f, {j}))),
                      "for (i, 1, 4) {\n  for (j, 0, i*4) {\n    B[j] = 0f\n  }\n}\n", "j", "its extent is not a constant");
  }
  SECTION("a read of other lanes' elements (a dependence across lanes)") {
    check_kept_serial(vfor(j, 16, buffer_store(b, buffer_load(b, {j + 1}), {j})),
                      "for (j, 0, 16) {\n  B[j] = B[j + 1]\n}\n", "j",
                      "'B' is read at other elements than a store writes (a dependence across lanes)");
  }
  SECTION("a read-modify-write whose lanes may hit one element") {
    check_kept_serial(vfor(j, 16, buffer_store(b, buffer_load(b, {j / 4}) + 1.0f, {j / 4})),
                      "for (j, 0, 16) {\n  B[floordiv(j, 4)] = B[floordiv(j, 4)] + 1f\n}\n", "j",
                      "store to 'B' reads it at lanes that may alias (a reduction)");
  }
  SECTION("an access that was not flattened") {
    Buffer m = Buffer::make("M", DataType::f32(), {4, 16});
    check_kept_serial(vfor(j, 16, buffer_store(m, 0.0f, {0, j})), "for (j, 0, 16) {\n  M[0, j] = 0f\n}\n", "j",
                      "access to 'M' is not flattened (run flatten_storage first)");
  }
}

TEST_CASE("vectorize: a PrimFunc keeps its params, no notes pointer is fine", "[vectorize]") {
  Buffer b = Buffer::make("B", DataType::f32(), {8});
  Var j("j");
  PrimFunc f{"fill", {b}, vfor(j, 8, buffer_store(b, 0.0f, {j}))};
  PrimFunc g = vectorize_loops(f);
  CHECK(to_string(g) == "func fill(B: float32[8]) {\n  B[ramp(0, 1, 8)] = broadcast(0f, 8)\n}\n");
  CHECK(g.params[0].same_as(b));
  PrimFunc kept{"red", {b}, vfor(j, 8, buffer_store(b, buffer_load(b, {0}) + buffer_load(b, {j}), {0}))};
  CHECK(to_string(vectorize_loops(kept)) == "func red(B: float32[8]) {\n  for (j, 0, 8) {\n    B[0] = B[0] + B[j]\n  }\n}\n");
}
