#include "kiln/te/ops/nn_dense.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "kiln/support/error.h"
#include "kiln/te/ops/elemwise.h"
#include "kiln/te/ops/nn_conv.h"
#include "kiln/te/reduce.h"

namespace kiln::te::ops {

using ir::Expr;
using ir::Var;

namespace {
Expr c32(int64_t v) { return Expr(static_cast<int>(v)); }
int64_t round_up(int64_t v, int64_t multiple) { return (v + multiple - 1) / multiple * multiple; }

// t [..., r, c] as [..., rows, cols] (at least as large), zero past r x c: t itself when nothing
// is padded (ProductPad).
Tensor zero_padded(const Tensor& t, int64_t rows, int64_t cols, const std::string& name) {
  const size_t nd = t.ndim();
  const int64_t r = t.shape()[nd - 2], c = t.shape()[nd - 1];
  if (rows == r && cols == c) return t;
  std::vector<int64_t> shape = t.shape();
  shape[nd - 2] = rows;
  shape[nd - 1] = cols;
  return compute(shape, [&](const std::vector<Var>& v) {
    Expr inside;
    if (rows > r) inside = v[nd - 2] < c32(r);
    if (cols > c) inside = inside.defined() ? ir::logical_and(inside, v[nd - 1] < c32(c)) : v[nd - 1] < c32(c);
    return ir::select(inside, t(std::vector<Expr>(v.begin(), v.end())), ir::make_zero(t.dtype()));
  }, name);
}
}  // namespace

int64_t dense_panel_width(int64_t n, int64_t lanes) {
  int64_t w = 1;  // a power of two: odd vector widths make poor code
  while (w < n && w < lanes) w *= 2;
  return w;
}

namespace {
// x [..., M, K] times packed panels [NB, K, nr]: the blocked reduction over M rounded up to a
// multiple of `rows` (the rows past M read x's last row: computed, never stored), and its
// unpacking into [..., M, n].
Tensor dense_core(const Tensor& x, const Tensor& wp, int64_t n, int64_t rows, const std::string& name) {
  const size_t lead = x.ndim() - 2;
  int64_t m = x.shape()[lead], k = x.shape()[lead + 1], nb = wp.shape()[0], nr = wp.shape()[2];
  int64_t mp = round_up(m, std::max<int64_t>(rows, 1));
  auto rk = reduce_axis(k, "k");
  // float16 sums in float32 (as batch_matmul): the unpacking stage rounds once.
  ir::DataType acc_t = compute_type(x.dtype());
  std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + lead);
  std::vector<std::string> names(lead, "b");
  for (size_t d = 0; d < lead; ++d) names[d] += std::to_string(d);
  std::vector<int64_t> bshape = shape, oshape = shape;
  bshape.insert(bshape.end(), {mp, nb, nr});
  oshape.insert(oshape.end(), {m, n});
  std::vector<std::string> bnames = names, onames = names;
  bnames.insert(bnames.end(), {"i", "jo", "ji"});
  onames.insert(onames.end(), {"i", "j"});
  Tensor blk = compute(bshape, [&](const std::vector<Var>& v) {
    std::vector<Expr> xi(v.begin(), v.begin() + lead);
    xi.push_back(mp > m ? ir::min(v[lead], c32(m - 1)) : Expr(v[lead]));
    xi.push_back(rk);
    return te::sum(ir::cast(acc_t, x(xi)) * ir::cast(acc_t, wp(v[lead + 1], rk, v[lead + 2])), {rk});
  }, name + kBlockedSuffix, bnames);
  return compute(oshape, [&](const std::vector<Var>& v) {
    std::vector<Expr> bi(v.begin(), v.begin() + lead + 1);
    Expr j = v[lead + 1];
    bi.insert(bi.end(), {j / c32(nr), j % c32(nr)});
    return ir::cast(x.dtype(), blk(bi));
  }, name, onames);
}
}  // namespace

Tensor dense(const Tensor& x, const Tensor& w, const DenseBlocks& blocks, const std::string& name) {
  const bool kn = blocks.weight_kn;
  KILN_USER_CHECK(x.ndim() >= 2 && w.ndim() == 2 && x.shape().back() == w.shape()[kn ? 0 : 1])
      << name << ": dense takes data [..., M, K] and weight " << (kn ? "[K, N]" : "[N, K]") << ", got " << x.name()
      << " and " << w.name();
  int64_t k = x.shape().back(), n = w.shape()[kn ? 1 : 0];
  int64_t nr = blocks.panel;
  KILN_USER_CHECK(nr >= 1 && blocks.panel_group >= 1) << name << ": the panel width must be positive, got " << nr;
  int64_t nb = round_up((n + nr - 1) / nr, blocks.panel_group);
  Tensor wp = compute({nb, k, nr}, [&](Var jo, Var kk, Var ji) {
    Expr j = jo * c32(nr) + ji;
    auto read = [&](Expr col) { return kn ? w(kk, col) : w(col, kk); };
    if (nb * nr == n) return read(j);
    return ir::select(j < c32(n), read(ir::min(j, c32(n - 1))), ir::make_zero(w.dtype()));
  }, name + kPackSuffix, {"jo", "k", "ji"});
  return dense_core(x, wp, n, blocks.rows, name);
}

Tensor dense_plain(const Tensor& x, const Tensor& w, bool kn, const std::string& name, const ProductPad& pad) {
  KILN_USER_CHECK(x.ndim() >= 2 && w.ndim() == 2 && x.shape().back() == w.shape()[kn ? 0 : 1])
      << name << ": dense takes data [..., M, K] and weight " << (kn ? "[K, N]" : "[N, K]") << ", got " << x.name()
      << " and " << w.name();
  const int64_t m = x.shape()[x.ndim() - 2], k = x.shape().back(), n = w.shape()[kn ? 1 : 0];
  const int64_t mp = round_up(m, pad.m), np = round_up(n, pad.n), kp = round_up(k, pad.k);
  const Tensor xp = zero_padded(x, mp, kp, name + ".pad_x");
  const Tensor wp = kn ? zero_padded(w, kp, np, name + ".pad_w") : zero_padded(w, np, kp, name + ".pad_w");
  std::vector<int64_t> shape = x.shape();
  shape.back() = n;
  std::vector<int64_t> acc_shape = shape;
  acc_shape[acc_shape.size() - 2] = mp;
  acc_shape.back() = np;
  auto rk = reduce_axis(kp, "k");
  ir::DataType acc_t = compute_type(x.dtype());
  const bool split = acc_t != x.dtype() || acc_shape != shape;
  Tensor acc = compute(acc_shape, [&](const std::vector<Var>& v) {
    std::vector<Expr> xi(v.begin(), v.end() - 1);
    xi.push_back(rk);
    Expr wv = kn ? wp(rk, v.back()) : wp(v.back(), rk);
    return te::sum(ir::cast(acc_t, xp(xi)) * ir::cast(acc_t, wv), {rk});
  }, split ? name + ".acc" : name);
  if (!split) return acc;
  return compute(shape, [&](const std::vector<Var>& v) {
    return ir::cast(x.dtype(), acc(std::vector<Expr>(v.begin(), v.end())));
  }, name);
}

Tensor dense_packed(const Tensor& x, const Tensor& w_packed, int64_t n, int64_t rows, const std::string& name) {
  KILN_USER_CHECK(x.ndim() >= 2 && w_packed.ndim() == 3 && x.shape().back() == w_packed.shape()[1] &&
                  w_packed.shape()[0] * w_packed.shape()[2] >= n)
      << name << ": dense_packed takes data [..., M, K] and panels [NB, K, nr] covering N = " << n << ", got "
      << x.name() << " and " << w_packed.name();
  return dense_core(x, w_packed, n, rows, name);
}

namespace {

// batch_matmul of operands already padded: the result keeps only out_m x out_n of the padded
// M x N (all of it when they are 0).
Tensor matmul_core(const Tensor& a, const Tensor& b, int64_t rows, const std::string& name, int64_t out_m,
                   int64_t out_n);

}  // namespace

Tensor batch_matmul(const Tensor& a, const Tensor& b, int64_t rows, const std::string& name, const ProductPad& pad) {
  if (pad.m == 1 && pad.n == 1 && pad.k == 1) return matmul_core(a, b, rows, name, 0, 0);
  KILN_USER_CHECK(a.ndim() >= 2 && b.ndim() >= 2 && rows == 1)
      << name << ": padding to whole tiles takes operands of rank >= 2 (got " << a.ndim() << " and " << b.ndim() << ")";
  const int64_t m = a.shape()[a.ndim() - 2], k = a.shape().back(), n = b.shape().back();
  const Tensor ap = zero_padded(a, round_up(m, pad.m), round_up(k, pad.k), name + ".pad_a");
  const Tensor bp = zero_padded(b, round_up(k, pad.k), round_up(n, pad.n), name + ".pad_b");
  return matmul_core(ap, bp, 1, name, m, n);
}

namespace {

Tensor matmul_core(const Tensor& a, const Tensor& b, int64_t rows, const std::string& name, int64_t out_m,
                   int64_t out_n) {
  KILN_USER_CHECK(a.ndim() >= 1 && b.ndim() >= 1) << name << ": operands must have rank >= 1";
  std::vector<int64_t> sa = a.shape(), sb = b.shape();
  bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  KILN_USER_CHECK(sb[sb.size() - 2] == k) << name << ": reduction dims of " << a.name() << " and " << b.name()
                                          << " differ";
  size_t ra = sa.size() - 2, rb = sb.size() - 2, rbatch = std::max(ra, rb);
  std::vector<int64_t> batch(rbatch, 1);
  for (size_t i = 0; i < rbatch; ++i) {
    int64_t da = i + ra >= rbatch ? sa[i + ra - rbatch] : 1;
    int64_t db = i + rb >= rbatch ? sb[i + rb - rbatch] : 1;
    KILN_USER_CHECK(da == db || da == 1 || db == 1) << name << ": batch dims of " << a.name() << " and " << b.name()
                                                    << " do not broadcast";
    batch[i] = std::max(da, db);
  }
  // Rows padded to whole register tiles: the extra rows read a's last row (never stored).
  int64_t mp = a_vec ? m : round_up(m, std::max<int64_t>(rows, 1));
  std::vector<int64_t> shape = batch;
  if (!a_vec) shape.push_back(m);
  if (!b_vec) shape.push_back(n);
  auto rk = reduce_axis(k, "k");
  // Index of operand dims: batch dims right-aligned, broadcast dims read at 0.
  auto operand_index = [&](const std::vector<Var>& v, size_t rank, const std::vector<int64_t>& s, bool vec,
                           Expr row, Expr col) {
    std::vector<Expr> idx;
    for (size_t i = 0; i < rank; ++i) {
      size_t oi = i + rbatch - rank;
      idx.push_back(s[i] == 1 && batch[oi] != 1 ? Expr(0) : Expr(v[oi]));
    }
    if (!vec) idx.push_back(row);
    idx.push_back(col);
    return idx;
  };
  if (shape.empty()) shape.push_back(1);  // vector . vector: a one-element result
  std::vector<int64_t> acc_shape = shape;
  if (!a_vec) acc_shape[rbatch] = mp;
  // Operands padded to whole tiles (batch_matmul's ProductPad): the result is the real part.
  const bool sliced = out_m > 0;
  if (sliced) {
    shape[rbatch] = out_m;
    shape[rbatch + 1] = out_n;
  }
  bool scalar_result = a_vec && b_vec && rbatch == 0;
  // float16/bfloat16 products accumulate in float32 and round once (as numpy and onnxruntime
  // do): a float16 running sum loses a bit per addition. The cast (or the slice of padded rows)
  // is a stage of its own, which the anchor template finds by the ".acc" name and inlines into
  // the output.
  ir::DataType acc_t = compute_type(a.dtype());
  bool widen = acc_t != a.dtype(), padded = mp > m;
  Tensor acc = compute(acc_shape, [&](const std::vector<Var>& v) {
    Expr i = a_vec ? Expr(0) : padded ? ir::min(v[rbatch], c32(m - 1)) : Expr(v[rbatch]);
    Expr j = b_vec ? Expr(0) : Expr(v[rbatch + (a_vec ? 0 : 1)]);
    if (scalar_result) i = j = Expr(0);
    std::vector<Expr> ai = operand_index(v, ra, sa, a_vec, i, rk);
    std::vector<Expr> bi = operand_index(v, rb, sb, false, rk, j);
    if (b_vec) bi.pop_back();
    return te::sum(ir::cast(acc_t, a(ai)) * ir::cast(acc_t, b(bi)), {rk});
  }, widen || padded || sliced ? name + ".acc" : name);
  if (!widen && !padded && !sliced) return acc;
  return compute(shape, [&](const std::vector<Var>& v) {
    return ir::cast(a.dtype(), acc(std::vector<Expr>(v.begin(), v.end())));
  }, name);
}

}  // namespace

Tensor einsum(const std::string& eq, const std::vector<Tensor>& inputs, const std::string& name) {
  KILN_USER_CHECK(!inputs.empty()) << name << ": einsum '" << eq << "' needs at least one input";
  size_t arrow = eq.find("->");
  std::vector<std::string> terms(1);
  for (char c : eq.substr(0, arrow)) {
    if (c == ',') terms.emplace_back();
    else terms.back() += c;
  }
  KILN_USER_CHECK(terms.size() == inputs.size())
      << name << ": equation '" << eq << "' has " << terms.size() << " terms for " << inputs.size() << " inputs";
  // Ellipsis dims become labels '0', '1', ... (right-aligned across inputs).
  size_t ell_rank = 0;
  for (size_t t = 0; t < terms.size(); ++t) {
    size_t dots = terms[t].find("...");
    if (dots == std::string::npos) continue;
    size_t letters = terms[t].size() - 3;
    KILN_USER_CHECK(inputs[t].ndim() >= static_cast<int>(letters)) << name << ": term '" << terms[t]
                                                                     << "' does not match input " << t;
    ell_rank = std::max(ell_rank, inputs[t].ndim() - letters);
  }
  KILN_SUPPORTED(ell_rank <= 10) << name << ": einsum '" << eq << "' broadcasts over too many dims";
  std::string ell;
  for (size_t i = 0; i < ell_rank; ++i) ell += static_cast<char>('0' + i);
  std::map<char, int64_t> dims;
  std::map<char, int> count;
  std::vector<std::string> expanded;
  for (size_t t = 0; t < terms.size(); ++t) {
    std::string term = terms[t];
    size_t dots = term.find("...");
    if (dots != std::string::npos) {
      size_t mine = inputs[t].ndim() - (term.size() - 3);
      term = term.substr(0, dots) + ell.substr(ell_rank - mine) + term.substr(dots + 3);
    }
    // A relay scalar arrives as a one-element [1] tensor.
    bool scalar_input = term.empty() && inputs[t].ndim() == 1 && inputs[t].shape()[0] == 1;
    KILN_USER_CHECK(scalar_input || term.size() == static_cast<size_t>(inputs[t].ndim()))
        << name << ": term '" << terms[t] << "' does not match input " << t << " of rank " << inputs[t].ndim();
    for (size_t p = 0; p < term.size(); ++p) {
      char c = term[p];
      bool is_ell = std::isdigit(static_cast<unsigned char>(c));
      KILN_USER_CHECK(is_ell || std::isalpha(static_cast<unsigned char>(c)))
          << name << ": bad character '" << c << "' in einsum '" << eq << "'";
      int64_t d = inputs[t].shape()[p];
      auto it = dims.find(c);
      if (it == dims.end() || it->second == 1) dims[c] = d;
      else KILN_USER_CHECK(d == it->second || (is_ell && d == 1))
               << name << ": label '" << c << "' of einsum '" << eq << "' has sizes " << it->second << " and " << d;
      if (!is_ell) ++count[c];
    }
    expanded.push_back(term);
  }
  std::string out_term;
  if (arrow != std::string::npos) {
    out_term = eq.substr(arrow + 2);
    size_t dots = out_term.find("...");
    if (dots != std::string::npos) out_term = out_term.substr(0, dots) + ell + out_term.substr(dots + 3);
  } else {
    out_term = ell;
    for (const auto& [c, k] : count) {
      if (k == 1) out_term += c;
    }
  }
  std::vector<int64_t> shape;
  for (char c : out_term) {
    auto it = dims.find(c);
    KILN_USER_CHECK(it != dims.end()) << name << ": output label '" << c << "' of einsum '" << eq
                                      << "' appears in no input";
    KILN_SUPPORTED(out_term.find(c) == shape.size()) << name << ": einsum '" << eq << "' repeats an output label";
    shape.push_back(it->second);
  }
  std::map<char, IterVar> raxis;
  std::vector<ir::IterVar> axes;
  for (const auto& [c, d] : dims) {
    if (out_term.find(c) != std::string::npos) continue;
    raxis[c] = reduce_axis(d, std::string("r_") + c);
    axes.push_back(raxis[c]);
  }
  bool scalar = shape.empty();
  if (scalar) shape.push_back(1);
  return compute(shape, [&](const std::vector<Var>& v) {
    Expr prod;
    for (size_t t = 0; t < inputs.size(); ++t) {
      std::vector<Expr> idx;
      for (size_t p = 0; p < expanded[t].size(); ++p) {
        char c = expanded[t][p];
        if (inputs[t].shape()[p] == 1 && dims[c] != 1) {
          idx.push_back(Expr(0));
        } else if (size_t o = out_term.find(c); o != std::string::npos) {
          idx.push_back(v[o]);
        } else {
          idx.push_back(raxis.at(c));
        }
      }
      if (idx.empty()) idx.push_back(Expr(0));  // a scalar input
      Expr e = inputs[t](idx);
      prod = prod.defined() ? prod * e : e;
    }
    return axes.empty() ? prod : te::sum(prod, axes);
  }, name);
}

}  // namespace kiln::te::ops
