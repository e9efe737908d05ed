#include "kiln/te/ops/nn_winograd.h"

#include "kiln/support/error.h"
#include "kiln/te/ops/transform.h"
#include "kiln/te/reduce.h"

namespace kiln::te::ops {

using ir::Expr;
using ir::Var;

namespace {

Expr c32(int64_t v) { return Expr(static_cast<int>(v)); }

// F(2x2, 3x3): V = Bt d B (input tile 4x4), U = G g Gt (filter 3x3 -> 4x4), Y = At M A (2x2).
// lower/weight_packing.cc computes U on the host for constant weights (in double).
constexpr int kBt[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr int kAt[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};

// sum of sign * term over the non-zero signs, without multiplications: the transforms' entries
// are 0 and +-1, so each output is a handful of additions.
// A positive term goes first (every row has one), so no negation is needed: 0 - x is not x's
// negation for LLVM without fast-math (the sign of zero), and would cost a subtraction.
template <typename F>
Expr signed_sum(int n, const int* signs, F term) {
  int first = 0;
  while (signs[first] <= 0) ++first;
  Expr acc = term(first);
  for (int k = 0; k < n; ++k) {
    if (k == first || signs[k] == 0) continue;
    acc = signs[k] > 0 ? acc + term(k) : acc - term(k);
  }
  return acc;
}

// The k-th of `cases` picked by an index known only at run time (loops the schedule unrolls,
// after which every select has a constant condition and folds away).
Expr pick(const Expr& index, const std::vector<Expr>& cases) {
  Expr e = cases.back();
  for (int k = static_cast<int>(cases.size()) - 2; k >= 0; --k) e = ir::select(ir::eq(index, c32(k)), cases[k], e);
  return e;
}

}  // namespace

Tensor winograd_weight_transform(const Tensor& w, int64_t co, const std::string& name) {
  KILN_USER_CHECK(w.ndim() == 4 && w.shape()[2] == 3 && w.shape()[3] == 3 && co >= 1)
      << name << ": the Winograd filter transform needs a weight [OC, C, 3, 3], got " << w.name();
  int64_t oc = w.shape()[0], c = w.shape()[1], nblk = (oc + co - 1) / co;
  return compute({16, nblk, c, co}, [&](Var e, Var ob, Var ci, Var lane) {
    Expr o = ob * c32(co) + lane;
    Expr oo = nblk * co == oc ? o : ir::min(o, c32(oc - 1));
    std::vector<Expr> cases;
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        Expr acc;
        for (int r = 0; r < 3; ++r) {
          for (int q = 0; q < 3; ++q) {
            double k = kG[i][r] * kG[j][q];
            if (k == 0) continue;
            Expr term = w(oo, ci, c32(r), c32(q)) * ir::make_const(w.dtype(), k);
            acc = acc.defined() ? acc + term : term;
          }
        }
        cases.push_back(acc);
      }
    }
    Expr u = pick(e, cases);
    return nblk * co == oc ? u : ir::select(o < c32(oc), u, ir::make_zero(w.dtype()));
  }, name + kPackSuffix);
}

Tensor conv2d_winograd_packed(const Tensor& x, const Tensor& u, int64_t oc, const ConvNdAttrs& a, int64_t row_multiple,
                              const std::string& name) {
  KILN_USER_CHECK(x.ndim() == 4 && u.ndim() == 4 && u.shape()[0] == 16)
      << name << ": Winograd conv2d needs data [N, C, H, W] and a transformed weight [16, OC/co, C, co], got "
      << x.name() << " of rank " << x.ndim() << " and " << u.name() << " of rank " << u.ndim();
  int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  int64_t nblk = u.shape()[1], co = u.shape()[3];
  KILN_USER_CHECK(u.shape()[2] == c && nblk == (oc + co - 1) / co)
      << name << ": transformed weight " << u.name() << " does not hold " << oc << " output channels of " << c
      << " inputs";
  const std::vector<int64_t> ones(2, 1);
  KILN_USER_CHECK(a.dims() == 2 && a.groups == 1 && a.strides == ones && a.dilation == ones && a.padding.size() == 4)
      << name << ": the Winograd form is for stride 1, dilation 1, one group";
  int64_t oh = h + a.padding[0] + a.padding[2] - 2, ow = w + a.padding[1] + a.padding[3] - 2;
  KILN_USER_CHECK(oh >= 1 && ow >= 1) << name << ": a 3x3 kernel exceeds the padded input";
  int64_t th = (oh + 1) / 2, tw = (ow + 1) / 2;
  // Padded to whole tiles: the rows and columns past the real padding only feed outputs past
  // OH x OW, which the result never reads. Rows longer than row_multiple are widened to whole
  // vectors (zeros never read) so that the pad vectorizes.
  int64_t row = 2 * tw + 2;
  int64_t padded_row = row > row_multiple ? (row + row_multiple - 1) / row_multiple * row_multiple : row;
  Tensor xp = pad_masked(x, {0, 0, a.padding[0], a.padding[1]},
                         {0, 0, 2 * th + 2 - h - a.padding[0], padded_row - w - a.padding[1]},
                         ir::make_zero(x.dtype()), name + kPadSuffix);

  Tensor v = compute({n, 16, c, th, tw}, [&](Var b, Var e, Var ci, Var ty, Var tx) {
    std::vector<Expr> cases;
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        cases.push_back(signed_sum(4, kBt[i], [&](int r) {
          return signed_sum(4, kBt[j], [&](int s) { return xp(b, ci, ty * 2 + c32(r), tx * 2 + c32(s)); });
        }));
      }
    }
    return pick(e, cases);
  }, name + kWinogradInSuffix);

  ir::IterVar rc = reduce_axis(c, "rc");
  Tensor m = compute({n, 16, nblk, th, tw, co}, [&](const std::vector<Var>& i) {
    return te::sum(u(i[1], i[2], rc, i[5]) * v(i[0], i[1], rc, i[3], i[4]), {rc});
  }, name + kWinogradGemmSuffix);

  Tensor yt = compute({n, nblk, th, 2, 2 * tw, co}, [&](const std::vector<Var>& i) {
    Expr tx = i[4] / c32(2), wx = i[4] % c32(2);
    auto at = [&](int r, int s) {
      return signed_sum(4, kAt[r], [&](int p) {
        return signed_sum(4, kAt[s], [&](int q) { return m(i[0], c32(p * 4 + q), i[1], i[2], tx, i[5]); });
      });
    };
    return pick(i[3] * c32(2) + wx, {at(0, 0), at(0, 1), at(1, 0), at(1, 1)});
  }, name + kWinogradOutSuffix);

  return compute({n, oc, oh, ow}, [&](Var b, Var o, Var y, Var xx) {
    return yt(b, o / c32(co), y / c32(2), y % c32(2), xx, o % c32(co));
  }, name);
}

}  // namespace kiln::te::ops
