#include "kiln/te/ops/transform.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "kiln/support/error.h"
#include "kiln/te/ops/elemwise.h"

namespace kiln::te::ops {

using ir::DataType;
using ir::Expr;
using ir::Var;

namespace {

Expr i32(int64_t v) { return Expr(static_cast<int>(v)); }

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<Expr> as_exprs(const std::vector<Var>& v) { return std::vector<Expr>(v.begin(), v.end()); }

void check_axis(const std::string& name, int64_t axis, int rank) {
  KILN_USER_CHECK(axis >= 0 && axis < rank) << name << ": axis " << axis << " is out of range for rank " << rank;
}

// A data-dependent index into a dim of `extent`: negative counts from the end, then clamped.
Expr normalize_index(const Expr& v, int64_t extent) {
  Expr x = ir::cast(DataType::i64(), v);
  x = ir::select(x < int64_t{0}, x + extent, x);
  return ir::cast(DataType::i32(), ir::min(ir::max(x, int64_t{0}), extent - 1));
}

}  // namespace

Tensor reshape(const Tensor& x, const std::vector<int64_t>& newshape, const std::string& name) {
  std::vector<int64_t> out = newshape.empty() ? std::vector<int64_t>{1} : newshape;
  const std::vector<int64_t>& in = x.shape();
  KILN_USER_CHECK(numel(out) == numel(in)) << name << ": cannot reshape " << x.name() << " of " << numel(in)
                                           << " elements to " << numel(out);
  KILN_USER_CHECK(numel(in) <= std::numeric_limits<int32_t>::max())
      << name << ": " << numel(in) << " elements do not fit int32 index arithmetic";
  return compute(out, [&](const std::vector<Var>& idx) {
    std::vector<Expr> src(in.size(), Expr(0));
    size_t i = 0, o = 0;
    while (true) {
      while (i < in.size() && in[i] == 1) ++i;
      while (o < out.size() && out[o] == 1) ++o;
      if (i == in.size() || o == out.size()) break;
      // The shortest run of input dims and output dims with equal products: a segment whose
      // elements map onto each other in order.
      size_t i0 = i, o0 = o;
      int64_t pi = in[i++], po = out[o++];
      while (pi != po) {
        if (pi < po) pi *= in[i++];
        else po *= out[o++];
      }
      if (i - i0 == 1 && o - o0 == 1) {
        src[i0] = idx[o0];
        continue;
      }
      Expr lin = idx[o0];
      for (size_t q = o0 + 1; q < o; ++q) lin = lin * i32(out[q]) + idx[q];
      for (size_t p = i; p-- > i0;) {
        if (in[p] == 1) continue;
        src[p] = p == i0 ? lin : ir::floormod(lin, i32(in[p]));
        lin = ir::floordiv(lin, i32(in[p]));
      }
    }
    return x(src);
  }, name);
}

Tensor transpose(const Tensor& x, const std::vector<int64_t>& axes, const std::string& name) {
  int nd = x.ndim();
  KILN_USER_CHECK(static_cast<int>(axes.size()) == nd) << name << ": " << axes.size() << " axes for rank " << nd;
  std::vector<int64_t> shape(nd);
  std::vector<bool> seen(nd, false);
  for (int d = 0; d < nd; ++d) {
    check_axis(name, axes[d], nd);
    KILN_USER_CHECK(!seen[axes[d]]) << name << ": axes are not a permutation (axis " << axes[d] << " twice)";
    seen[axes[d]] = true;
    shape[d] = x.shape()[axes[d]];
  }
  return compute(shape, [&](const std::vector<Var>& idx) {
    std::vector<Expr> src(nd);
    for (int d = 0; d < nd; ++d) src[axes[d]] = idx[d];
    return x(src);
  }, name);
}

Tensor concatenate(const std::vector<Tensor>& inputs, int64_t axis, const std::string& name) {
  KILN_USER_CHECK(!inputs.empty()) << name << ": nothing to concatenate";
  const Tensor& first = inputs[0];
  check_axis(name, axis, first.ndim());
  std::vector<int64_t> shape = first.shape();
  std::vector<int64_t> offset{0};
  shape[axis] = 0;
  for (const Tensor& t : inputs) {
    bool ok = t.ndim() == first.ndim() && t.dtype() == first.dtype();
    for (int d = 0; ok && d < t.ndim(); ++d) ok = d == axis || t.shape()[d] == first.shape()[d];
    KILN_USER_CHECK(ok) << name << ": input " << t.name() << " does not match " << first.name() << " outside axis "
                        << axis;
    shape[axis] += t.shape()[axis];
    offset.push_back(shape[axis]);
  }
  if (inputs.size() == 1) return copy(first, name);
  return compute(shape, [&](const std::vector<Var>& idx) {
    auto read = [&](size_t k) {
      std::vector<Expr> src = as_exprs(idx);
      if (offset[k]) src[axis] = idx[axis] - i32(offset[k]);
      return inputs[k](src);
    };
    // A balanced tree of selects on the concatenation index: log2(inputs) tests per element,
    // not one per input (densenet121 concatenates up to 49 tensors).
    std::function<Expr(size_t, size_t)> pick = [&](size_t lo, size_t hi) -> Expr {
      if (hi - lo == 1) return read(lo);
      size_t mid = (lo + hi) / 2;
      return ir::select(idx[axis] < i32(offset[mid]), pick(lo, mid), pick(mid, hi));
    };
    return pick(0, inputs.size());
  }, name);
}

std::vector<Tensor> split(const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes, const std::string& name) {
  check_axis(name, axis, x.ndim());
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  KILN_USER_CHECK(total == x.shape()[axis]) << name << ": sizes add up to " << total << ", not to dim " << axis
                                            << " of " << x.name() << " (" << x.shape()[axis] << ")";
  std::vector<Tensor> outs;
  int64_t off = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    KILN_USER_CHECK(sizes[k] > 0) << name << ": piece " << k << " is empty (te tensors cannot be)";
    std::vector<int64_t> shape = x.shape();
    shape[axis] = sizes[k];
    outs.push_back(compute(shape, [&](const std::vector<Var>& idx) {
      std::vector<Expr> src = as_exprs(idx);
      if (off) src[axis] = idx[axis] + i32(off);
      return x(src);
    }, name + "." + std::to_string(k)));
    off += sizes[k];
  }
  return outs;
}

Tensor strided_slice(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                     const std::vector<int64_t>& strides, const std::string& name) {
  int nd = x.ndim();
  KILN_USER_CHECK(static_cast<int>(begin.size()) == nd && static_cast<int>(end.size()) == nd &&
                  static_cast<int>(strides.size()) == nd)
      << name << ": begin, end and strides need one entry per axis of " << x.name();
  std::vector<int64_t> shape(nd);
  for (int d = 0; d < nd; ++d) {
    int64_t b = begin[d], e = end[d], s = strides[d];
    KILN_USER_CHECK(s != 0) << name << ": stride 0 on axis " << d;
    shape[d] = s > 0 ? (e - b + s - 1) / s : (b - e - s - 1) / -s;
    KILN_USER_CHECK(shape[d] > 0) << name << ": the slice of axis " << d << " is empty";
    int64_t last = b + (shape[d] - 1) * s;
    KILN_USER_CHECK(b >= 0 && b < x.shape()[d] && last >= 0 && last < x.shape()[d])
        << name << ": slice " << b << ":" << e << ":" << s << " leaves axis " << d << " of " << x.name();
  }
  return compute(shape, [&](const std::vector<Var>& idx) {
    std::vector<Expr> src(nd);
    for (int d = 0; d < nd; ++d) {
      Expr i = strides[d] == 1 ? Expr(idx[d]) : idx[d] * i32(strides[d]);
      src[d] = begin[d] ? i + i32(begin[d]) : i;
    }
    return x(src);
  }, name);
}

Tensor broadcast_to(const Tensor& x, const std::vector<int64_t>& shape, const std::string& name) {
  std::vector<int64_t> out = shape.empty() ? std::vector<int64_t>{1} : shape;
  KILN_USER_CHECK(broadcast_shape(x.shape(), out) == out) << name << ": " << x.name() << " does not broadcast";
  return compute(out, [&](const std::vector<Var>& idx) { return broadcast_load(x, idx); }, name);
}

Tensor tile(const Tensor& x, const std::vector<int64_t>& reps, const std::string& name) {
  int nd = x.ndim();
  KILN_USER_CHECK(static_cast<int>(reps.size()) == nd) << name << ": " << reps.size() << " reps for rank " << nd;
  std::vector<int64_t> shape(nd);
  for (int d = 0; d < nd; ++d) {
    KILN_USER_CHECK(reps[d] > 0) << name << ": reps must be positive, got " << reps[d] << " on axis " << d;
    shape[d] = x.shape()[d] * reps[d];
  }
  return compute(shape, [&](const std::vector<Var>& idx) {
    std::vector<Expr> src(nd);
    for (int d = 0; d < nd; ++d) {
      int64_t e = x.shape()[d];
      src[d] = e == 1 ? Expr(0) : reps[d] == 1 ? Expr(idx[d]) : ir::floormod(idx[d], i32(e));
    }
    return x(src);
  }, name);
}

Tensor pad_masked(const Tensor& x, const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                  const Expr& value, const std::string& name, const std::function<Expr(const Expr&)>& map) {
  int nd = x.ndim();
  KILN_USER_CHECK(static_cast<int>(before.size()) == nd && static_cast<int>(after.size()) == nd)
      << name << ": pads must give one value per dimension of " << x.name();
  std::vector<int64_t> shape(nd);
  for (int d = 0; d < nd; ++d) shape[d] = x.shape()[d] + before[d] + after[d];
  return compute(shape, [&](const std::vector<Var>& idx) {
    // The load is only evaluated where `inside` holds (codegen branches or masks a select whose
    // load may leave its tensor), so the index needs no clamping.
    Expr inside;
    std::vector<Expr> src(nd);
    for (int d = 0; d < nd; ++d) {
      src[d] = before[d] == 0 ? Expr(idx[d]) : idx[d] - Expr(static_cast<int>(before[d]));
      if (before[d] == 0 && after[d] <= 0) continue;
      Expr in = before[d] == 0 ? src[d] < Expr(static_cast<int>(x.shape()[d]))
                               : src[d] >= 0 && src[d] < Expr(static_cast<int>(x.shape()[d]));
      inside = inside.defined() ? inside && in : in;
    }
    Expr v = map ? map(x(src)) : x(src);
    if (!inside.defined()) return v;
    return ir::select(inside, v, value);
  }, name);
}

Tensor pad_with(const Tensor& x, const std::vector<int64_t>& before, const std::vector<int64_t>& after, PadMode mode,
                double value, const std::string& name) {
  int nd = x.ndim();
  KILN_USER_CHECK(static_cast<int>(before.size()) == nd && static_cast<int>(after.size()) == nd)
      << name << ": pads must give one value per dimension of " << x.name();
  std::vector<int64_t> shape(nd);
  for (int d = 0; d < nd; ++d) {
    int64_t n = x.shape()[d];
    shape[d] = n + before[d] + after[d];
    KILN_USER_CHECK(shape[d] > 0) << name << ": pads leave axis " << d << " of " << x.name() << " empty";
    if (mode == PadMode::Reflect) {
      KILN_USER_CHECK(before[d] < n && after[d] < n)
          << name << ": reflect pads " << before[d] << ", " << after[d] << " must be smaller than dim " << d << " ("
          << n << ")";
    }
  }
  return compute(shape, [&](const std::vector<Var>& idx) {
    Expr inside = ir::make_int(DataType::boolean(), 1);
    std::vector<Expr> src(nd);
    for (int d = 0; d < nd; ++d) {
      int64_t n = x.shape()[d];
      Expr i = before[d] ? idx[d] - i32(before[d]) : Expr(idx[d]);
      bool low = before[d] > 0, high = after[d] > 0;  // can i leave [0, n)?
      if (!low && !high) {
        src[d] = i;
        continue;
      }
      Expr clamped = ir::min(ir::max(i, 0), i32(n - 1));
      switch (mode) {
        case PadMode::Constant:
          if (low) inside = inside && i >= 0;
          if (high) inside = inside && i < i32(n);
          src[d] = clamped;  // read in bounds even where the fill value is chosen
          break;
        case PadMode::Edge: src[d] = clamped; break;
        case PadMode::Reflect: {
          // |i| mirrors the low side, (n-1) - |(n-1) - j| the high side; pads < n need one fold.
          Expr j = ir::max(i, -i);
          src[d] = i32(n - 1) - ir::max(i32(n - 1) - j, j - i32(n - 1));
          break;
        }
        case PadMode::Wrap: src[d] = ir::floormod(i, i32(n)); break;
      }
    }
    Expr v = x(src);
    if (mode != PadMode::Constant) return v;
    return ir::select(inside, v, ir::make_const(x.dtype(), value));
  }, name);
}

Tensor depth_to_space(const Tensor& x, int64_t block, bool crd, const std::string& name) {
  KILN_USER_CHECK(x.ndim() == 4 && block >= 1 && x.shape()[1] % (block * block) == 0)
      << name << ": needs NCHW input with channels divisible by block^2";
  int64_t oc = x.shape()[1] / (block * block);
  int b = static_cast<int>(block);
  return compute({x.shape()[0], oc, x.shape()[2] * block, x.shape()[3] * block}, [&](Var n, Var ch, Var h, Var w) {
    Expr bh = ir::floormod(h, b), bw = ir::floormod(w, b);
    Expr ic = crd ? ch * (b * b) + bh * b + bw : (bh * b + bw) * i32(oc) + ch;
    return x(n, ic, ir::floordiv(h, b), ir::floordiv(w, b));
  }, name, {"n", "c", "h", "w"});
}

Tensor space_to_depth(const Tensor& x, int64_t block, const std::string& name) {
  KILN_USER_CHECK(x.ndim() == 4 && block >= 1 && x.shape()[2] % block == 0 && x.shape()[3] % block == 0)
      << name << ": needs NCHW input with spatial dims divisible by the block";
  int64_t c = x.shape()[1];
  int b = static_cast<int>(block);
  return compute({x.shape()[0], c * block * block, x.shape()[2] / block, x.shape()[3] / block},
                 [&](Var n, Var oc, Var h, Var w) {
                   Expr t = ir::floordiv(oc, i32(c));
                   return x(n, ir::floormod(oc, i32(c)), h * b + ir::floordiv(t, b), w * b + ir::floormod(t, b));
                 },
                 name, {"n", "c", "h", "w"});
}

Tensor layout_transform(const Tensor& x, int64_t src_block, int64_t dst_block, const std::string& name) {
  const std::vector<int64_t>& s = x.shape();
  KILN_USER_CHECK(src_block >= 0 && dst_block >= 0 && s.size() == (src_block ? 5u : 4u) &&
                  (!src_block || s[4] == src_block))
      << name << ": " << x.name() << " is not in layout " << (src_block ? "NCHW<x>c" : "NCHW");
  int64_t channels = src_block ? s[1] * src_block : s[1];
  KILN_USER_CHECK(!dst_block || channels % dst_block == 0)
      << name << ": " << channels << " channels are not a multiple of block " << dst_block;
  std::vector<int64_t> shape{s[0], dst_block ? channels / dst_block : channels, s[2], s[3]};
  if (dst_block) shape.push_back(dst_block);
  return compute(shape, [&](const std::vector<Var>& idx) {
    // The NCHW channel of this output element, then where the input keeps it.
    Expr c = dst_block ? idx[1] * i32(dst_block) + idx[4] : Expr(idx[1]);
    if (!src_block) return x(idx[0], c, idx[2], idx[3]);
    return x(idx[0], ir::floordiv(c, i32(src_block)), idx[2], idx[3], ir::floormod(c, i32(src_block)));
  }, name);
}

Tensor trilu(const Tensor& x, bool upper, int64_t k, const std::string& name) {
  int nd = x.ndim();
  KILN_USER_CHECK(nd >= 2) << name << ": needs rank >= 2, " << x.name() << " has " << nd;
  // Beyond +-(rows + cols) every k keeps all or nothing: clamping keeps the constant in int32.
  int64_t lim = x.shape()[nd - 2] + x.shape()[nd - 1];
  Expr kk = i32(std::clamp<int64_t>(k, -lim, lim));
  return compute(x.shape(), [&](const std::vector<Var>& idx) {
    Expr diff = idx[nd - 1] - idx[nd - 2];
    Expr keep = upper ? diff >= kk : diff <= kk;
    return ir::select(keep, x(as_exprs(idx)), ir::make_zero(x.dtype()));
  }, name);
}

Tensor take(const Tensor& data, const Tensor& indices, int64_t axis, const std::string& name) {
  check_axis(name, axis, data.ndim());
  KILN_USER_CHECK(indices.dtype().is_integer()) << name << ": indices must be integers";
  int q = indices.ndim();
  std::vector<int64_t> shape(data.shape().begin(), data.shape().begin() + axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  return compute(shape, [&](const std::vector<Var>& idx) {
    std::vector<Expr> ii(idx.begin() + axis, idx.begin() + axis + q);
    std::vector<Expr> src(idx.begin(), idx.begin() + axis);
    src.push_back(normalize_index(indices(ii), data.shape()[axis]));
    src.insert(src.end(), idx.begin() + axis + q, idx.end());
    return data(src);
  }, name);
}

Tensor gather_elements(const Tensor& data, const Tensor& indices, int64_t axis, const std::string& name) {
  check_axis(name, axis, data.ndim());
  KILN_USER_CHECK(indices.dtype().is_integer() && indices.ndim() == data.ndim())
      << name << ": indices must be integers of the rank of the data";
  return compute(indices.shape(), [&](const std::vector<Var>& idx) {
    std::vector<Expr> src = as_exprs(idx);
    src[axis] = normalize_index(indices(as_exprs(idx)), data.shape()[axis]);
    return data(src);
  }, name);
}

Tensor gather_nd(const Tensor& data, const Tensor& indices, int64_t batch_dims, const std::string& name) {
  int q = indices.ndim(), r = data.ndim();
  int64_t last = indices.shape()[q - 1], b = batch_dims;
  KILN_USER_CHECK(indices.dtype().is_integer() && b >= 0 && b < std::min(q, r) && last >= 1 && b + last <= r)
      << name << ": indices of shape with last dim " << last << " do not index data of rank " << r
      << " with batch_dims " << b;
  std::vector<int64_t> shape(indices.shape().begin(), indices.shape().end() - 1);
  shape.insert(shape.end(), data.shape().begin() + b + last, data.shape().end());
  if (shape.empty()) shape.push_back(1);
  bool scalar_out = static_cast<int>(indices.shape().size()) - 1 + (r - b - last) == 0;
  return compute(shape, [&](const std::vector<Var>& idx) {
    std::vector<Expr> src(idx.begin(), idx.begin() + b);
    std::vector<Expr> ipos;
    for (int d = 0; d < q - 1; ++d) ipos.push_back(idx[d]);
    ipos.push_back(Expr(0));
    for (int64_t j = 0; j < last; ++j) {
      ipos.back() = i32(j);
      src.push_back(normalize_index(indices(ipos), data.shape()[b + j]));
    }
    if (!scalar_out) src.insert(src.end(), idx.begin() + (q - 1), idx.end());
    return data(src);
  }, name);
}

Tensor one_hot(const Tensor& indices, const Tensor& values, int64_t depth, int64_t axis, const std::string& name) {
  int q = indices.ndim();
  KILN_USER_CHECK(axis >= 0 && axis <= q) << name << ": axis " << axis << " out of range for rank " << q + 1;
  KILN_USER_CHECK(values.ndim() == 1 && values.shape()[0] == 2) << name << ": values must be [off, on]";
  std::vector<int64_t> shape = indices.shape();
  shape.insert(shape.begin() + axis, depth);
  return compute(shape, [&](const std::vector<Var>& idx) {
    std::vector<Expr> ii;
    for (int d = 0; d <= q; ++d)
      if (d != axis) ii.push_back(idx[d]);
    Expr v = ir::cast(DataType::i64(), indices(ii));
    v = ir::select(v < int64_t{0}, v + depth, v);
    return ir::select(ir::eq(v, ir::cast(DataType::i64(), idx[axis])), values(1), values(0));
  }, name);
}

Tensor full(const std::vector<int64_t>& shape, const ir::Expr& value, const std::string& name) {
  std::vector<int64_t> s = shape.empty() ? std::vector<int64_t>{1} : shape;
  return compute(s, [&](const std::vector<Var>&) { return value; }, name);
}

Tensor copy(const Tensor& x, const std::string& name) {
  return compute(x.shape(), [&](const std::vector<Var>& idx) { return x(as_exprs(idx)); }, name);
}

}  // namespace kiln::te::ops
