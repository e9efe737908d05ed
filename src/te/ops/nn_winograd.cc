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

// 2G: the filter transform doubled, integer (exact as doubles).
constexpr double kG2[4][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};

// The 16 values of T g Tt for a 3x3 filter g (T: G or 2G), element e = 4i + j: the sum over the
// taps (r, q) with a non-zero coefficient k = T[i][r] * T[j][q] of tap(r, q, k), g[r][q] times k.
template <typename Tap>
std::vector<Expr> filter_transform_cases(const double (&t)[4][3], Tap tap) {
  std::vector<Expr> cases;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      Expr acc;
      for (int r = 0; r < 3; ++r) {
        for (int q = 0; q < 3; ++q) {
          double k = t[i][r] * t[j][q];
          if (k == 0) continue;
          Expr term = tap(r, q, k);
          acc = acc.defined() ? acc + term : term;
        }
      }
      cases.push_back(acc);
    }
  }
  return cases;
}

// The padded extent of a Winograd conv's input, checking its attributes (shared by both forms).
struct WinogradTiles {
  int64_t oh, ow, th, tw;
};

WinogradTiles winograd_tiles(const Tensor& x, const ConvNdAttrs& a, const std::string& name) {
  const std::vector<int64_t> ones(2, 1);
  KILN_USER_CHECK(a.dims() == 2 && a.groups == 1 && a.strides == ones && a.dilation == ones && a.padding.size() == 4)
      << name << ": the Winograd form is for stride 1, dilation 1, one group";
  int64_t oh = x.shape()[2] + a.padding[0] + a.padding[2] - 2, ow = x.shape()[3] + a.padding[1] + a.padding[3] - 2;
  KILN_USER_CHECK(oh >= 1 && ow >= 1) << name << ": a 3x3 kernel exceeds the padded input";
  return {oh, ow, (oh + 1) / 2, (ow + 1) / 2};
}

}  // namespace

Tensor winograd_weight_transform(const Tensor& w, int64_t co, const std::string& name) {
  KILN_USER_CHECK(w.ndim() == 4 && w.shape()[2] == 3 && w.shape()[3] == 3 && co >= 1)
      << name << ": the Winograd filter transform needs a weight [OC, C, 3, 3], got " << w.name();
  int64_t oc = w.shape()[0], c = w.shape()[1], nblk = (oc + co - 1) / co;
  return compute({16, nblk, c, co}, [&](Var e, Var ob, Var ci, Var lane) {
    Expr o = ob * c32(co) + lane;
    Expr oo = nblk * co == oc ? o : ir::min(o, c32(oc - 1));
    Expr u = pick(e, filter_transform_cases(kG, [&](int r, int q, double k) {
      return w(oo, ci, c32(r), c32(q)) * ir::make_const(w.dtype(), k);
    }));
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
  const auto [oh, ow, th, tw] = winograd_tiles(x, a, name);
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

Tensor winograd_int8_weight_transform(const Tensor& w, int64_t lanes, const std::string& name) {
  KILN_USER_CHECK(w.ndim() == 4 && w.shape()[2] == 3 && w.shape()[3] == 3 && w.dtype() == ir::DataType::i8() &&
                  lanes >= 1)
      << name << ": the integer Winograd filter transform needs an int8 weight [OC, C, 3, 3], got " << w.name();
  const int64_t oc = w.shape()[0], c = w.shape()[1], nblk = (oc + lanes - 1) / lanes, cp = (c + 1) / 2;
  const ir::DataType i16 = ir::DataType::i16();
  return compute({16, nblk, cp, lanes, 2}, [&](const std::vector<Var>& v) {
    Expr o = v[1] * c32(lanes) + v[3], ci = v[2] * c32(2) + v[4];
    Expr oo = ir::min(o, c32(oc - 1)), cc = ir::min(ci, c32(c - 1));
    Expr u = pick(v[0], filter_transform_cases(kG2, [&](int r, int q, double k) {
      return ir::cast(i16, w(oo, cc, c32(r), c32(q))) * ir::make_const(i16, k);
    }));
    return ir::select(ir::logical_and(o < c32(oc), ci < c32(c)), u, ir::make_zero(i16));
  }, name + kPackSuffix);
}

Tensor conv2d_winograd_int8_packed(const Tensor& x, const Expr& x_zero_point, const Tensor& u, int64_t oc,
                                   const ConvNdAttrs& a, const std::string& name) {
  const ir::DataType i16 = ir::DataType::i16(), i32 = ir::DataType::i32();
  KILN_USER_CHECK(x.ndim() == 4 && (x.dtype() == ir::DataType::i8() || x.dtype() == ir::DataType::u8()) &&
                  x_zero_point.dtype() == x.dtype())
      << name << ": integer Winograd conv2d needs int8 or uint8 data [N, C, H, W] and a zero point of its type, got "
      << x.name() << " " << x.dtype().str();
  const int64_t n = x.shape()[0], c = x.shape()[1], cp = (c + 1) / 2;
  KILN_USER_CHECK(u.ndim() == 5 && u.shape()[0] == 16 && u.shape()[2] == cp && u.shape()[4] == 2 &&
                  u.dtype() == i16 && u.shape()[1] * u.shape()[3] >= oc)
      << name << ": transformed weight " << u.name() << " is not [16, OC/L, C/2, L, 2] int16 for " << oc
      << " outputs of " << c << " channels";
  KILN_USER_CHECK(c <= kWinogradInt8MaxChannels) << name << ": " << c << " channels could overflow the int32 sums of "
                                                 << "the integer Winograd form (at most " << kWinogradInt8MaxChannels << ")";
  const int64_t nblk = u.shape()[1], lanes = u.shape()[3];
  const WinogradTiles t = winograd_tiles(x, a, name);
  // Padded with the zero point to whole tiles, and one more channel of it when C is odd: every
  // padded value is zp, whose x - zp is 0.
  Tensor xp = pad_masked(x, {0, 0, a.padding[0], a.padding[1]},
                         {0, 2 * cp - c, 2 * t.th + 2 - x.shape()[2] - a.padding[0],
                          2 * t.tw + 2 - x.shape()[3] - a.padding[1]},
                         x_zero_point, name + kPadSuffix);
  Expr zp = ir::cast(i16, x_zero_point);
  Tensor v = compute({n, 16, cp, t.th, t.tw, 2}, [&](const std::vector<Var>& i) {
    Expr ch = i[2] * c32(2) + i[5];
    auto d = [&](int r, int s) {
      return ir::cast(i16, xp(i[0], ch, i[3] * c32(2) + c32(r), i[4] * c32(2) + c32(s))) - zp;
    };
    std::vector<Expr> cases;
    for (int r = 0; r < 4; ++r)
      for (int s = 0; s < 4; ++s)
        cases.push_back(signed_sum(4, kBt[r], [&](int p) { return signed_sum(4, kBt[s], [&](int q) { return d(p, q); }); }));
    return pick(i[1], cases);
  }, name + kWinogradInSuffix);

  ir::IterVar rc = reduce_axis(cp, "rc"), rk = reduce_axis(2, "rk");
  Tensor m = compute({n, 16, nblk, t.th, t.tw, lanes}, [&](const std::vector<Var>& i) {
    return te::sum(ir::cast(i32, v(i[0], i[1], rc, i[3], i[4], rk)) * ir::cast(i32, u(i[1], i[2], rc, i[5], rk)),
                   {rc, rk});
  }, name + kWinogradGemmSuffix);

  Tensor yt = compute({n, nblk, t.th, 2, 2 * t.tw, lanes}, [&](const std::vector<Var>& i) {
    Expr tx = i[4] / c32(2), wx = i[4] % c32(2);
    auto at = [&](int r, int s) {
      Expr y4 = signed_sum(4, kAt[r], [&](int p) {
        return signed_sum(4, kAt[s], [&](int q) { return m(i[0], c32(p * 4 + q), i[1], i[2], tx, i[5]); });
      });
      return y4 / c32(4);  // exact: M' = 4M, so y4 is a multiple of 4 (floor division: a shift)
    };
    return pick(i[3] * c32(2) + wx, {at(0, 0), at(0, 1), at(1, 0), at(1, 1)});
  }, name + kWinogradOutSuffix);

  return compute({n, oc, t.oh, t.ow}, [&](Var b, Var o, Var y, Var xx) {
    return yt(b, o / c32(lanes), y / c32(2), y % c32(2), xx, o % c32(lanes));
  }, name);
}

}  // namespace kiln::te::ops
