// Programs the schedule and lowering tests share: a matmul, an elementwise chain and a
// conv2d with padding, each with named axes so printed IR reads like the schedule.
#pragma once

#include "kiln/ir/printer.h"
#include "kiln/schedule/loop_nest.h"
#include "kiln/te/operation.h"

namespace kiln::testing {

inline const ir::DataType kF32 = ir::DataType::f32();

// C[i, j] = sum_k A[i, k] * B[k, j]
struct Matmul {
  te::Tensor A, B, C;
  te::IterVar k;
  Matmul(int64_t m = 64, int64_t n = 48, int64_t kk = 32) {
    A = te::placeholder({m, kk}, kF32, "A");
    B = te::placeholder({kk, n}, kF32, "B");
    k = te::reduce_axis(kk, "k");
    C = te::compute({m, n}, [&](ir::Var i, ir::Var j) { return te::sum(A(i, k) * B(k, j), {k}); }, "C", {"i", "j"});
  }
  std::vector<te::Tensor> args() const { return {A, B, C}; }
};

// B = A * 2, C = B + 1, D = C * C; axes named after their stage (b0, c0, d0, ...).
struct Chain {
  te::Tensor A, B, C, D;
  Chain(int64_t m = 20, int64_t n = 16) {
    A = te::placeholder({m, n}, kF32, "A");
    B = te::compute({m, n}, [&](ir::Var i, ir::Var j) { return A(i, j) * 2.0f; }, "B", {"bi", "bj"});
    C = te::compute({m, n}, [&](ir::Var i, ir::Var j) { return B(i, j) + 1.0f; }, "C", {"ci", "cj"});
    D = te::compute({m, n}, [&](ir::Var i, ir::Var j) { return C(i, j) * C(i, j); }, "D", {"i", "j"});
  }
  std::vector<te::Tensor> args() const { return {A, D}; }
};

// Y[n, f, y, x] = sum_{rc, ry, rx} P[n, rc, y + ry, x + rx] * W[f, rc, ry, rx], with P the input
// X zero-padded by 1 on each side (a 3x3 "same" convolution).
struct Conv {
  te::Tensor X, W, P, Y;
  te::IterVar rc, ry, rx;
  Conv(int64_t c = 3, int64_t h = 8, int64_t w = 8, int64_t f = 4) {
    X = te::placeholder({1, c, h, w}, kF32, "X");
    W = te::placeholder({f, c, 3, 3}, kF32, "W");
    P = te::compute({1, c, h + 2, w + 2}, [&](ir::Var n, ir::Var ch, ir::Var y, ir::Var x) {
      ir::Expr inside = y >= 1 && y < ir::Expr(int(h + 1)) && x >= 1 && x < ir::Expr(int(w + 1));
      return ir::select(inside, X(n, ch, y - 1, x - 1), ir::make_zero(kF32));
    }, "P", {"pn", "pc", "py", "px"});
    rc = te::reduce_axis(c, "rc");
    ry = te::reduce_axis(3, "ry");
    rx = te::reduce_axis(3, "rx");
    Y = te::compute({1, f, h, w}, [&](ir::Var n, ir::Var ff, ir::Var y, ir::Var x) {
      return te::sum(P(n, rc, y + ry, x + rx) * W(ff, rc, ry, rx), {rc, ry, rx});
    }, "Y", {"n", "f", "y", "x"});
  }
  std::vector<te::Tensor> args() const { return {X, W, Y}; }
};

// The printed body of the lowered function.
inline std::string lowered_body(const schedule::Schedule& s, const std::vector<te::Tensor>& args) {
  return ir::to_string(schedule::loop_nest(s, args, "f").body);
}

}  // namespace kiln::testing
