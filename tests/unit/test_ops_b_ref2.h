// Plain-loop references, part 2: normalizations, softmax, LRN, resize, cumsum, topk, scatter.
#pragma once

#include "test_ops_b_ref.h"

namespace kiln::opsb_ref {

// Mean / two-pass variance over the index groups given by key(index) -> group id.
inline void moments(const Dense& x, int64_t groups, const std::function<int64_t(const Index&)>& key,
                    std::vector<double>* mean, std::vector<double>* var) {
  std::vector<double> sum(groups, 0), cnt(groups, 0), sq(groups, 0);
  for_each(x.shape, [&](const Index& i) {
    sum[key(i)] += x.at(i);
    cnt[key(i)] += 1;
  });
  mean->resize(groups);
  for (int64_t g = 0; g < groups; ++g) (*mean)[g] = sum[g] / cnt[g];
  for_each(x.shape, [&](const Index& i) {
    double dv = x.at(i) - (*mean)[key(i)];
    sq[key(i)] += dv * dv;
  });
  var->resize(groups);
  for (int64_t g = 0; g < groups; ++g) (*var)[g] = sq[g] / cnt[g];
}

inline HostTensor batch_norm(const HostTensor& xt, const HostTensor& g, const HostTensor& b, const HostTensor& m,
                             const HostTensor& v, int64_t axis, double eps) {
  Dense x(xt), y(xt.shape());
  for_each(x.shape, [&](const Index& i) {
    int64_t c = i[axis];
    y.at(i) = (x.at(i) - m.double_at(c)) / std::sqrt(v.double_at(c) + eps) * g.double_at(c) + b.double_at(c);
  });
  return y.to(xt.dtype());
}

inline HostTensor layer_norm(const HostTensor& xt, const HostTensor& g, const HostTensor* b, int64_t axis,
                             double eps) {
  Dense x(xt), y(xt.shape());
  int64_t inner = 1;
  for (size_t d = axis; d < x.shape.size(); ++d) inner *= x.shape[d];
  int64_t rows = relay::num_elements(x.shape) / inner;
  std::vector<double> mean, var;
  moments(x, rows, [&](const Index& i) { return flat(x.shape, i) / inner; }, &mean, &var);
  // A parameter broadcast against the trailing dims.
  auto param = [&](const HostTensor& p, const Index& i) {
    Index pi;
    size_t off = i.size() - p.shape().size();
    for (size_t d = 0; d < p.shape().size(); ++d) pi.push_back(p.shape()[d] == 1 ? 0 : i[off + d]);
    return p.double_at(flat(p.shape(), pi));
  };
  for_each(x.shape, [&](const Index& i) {
    int64_t r = flat(x.shape, i) / inner;
    double v = (x.at(i) - mean[r]) / std::sqrt(var[r] + eps) * param(g, i);
    y.at(i) = b ? v + param(*b, i) : v;
  });
  return y.to(xt.dtype());
}

inline HostTensor group_norm(const HostTensor& xt, const HostTensor& g, const HostTensor& b, int64_t groups,
                             double eps) {
  Dense x(xt), y(xt.shape());
  int64_t c = x.shape[1], cpg = c / groups;
  auto key = [&](const Index& i) { return i[0] * groups + i[1] / cpg; };
  std::vector<double> mean, var;
  moments(x, x.shape[0] * groups, key, &mean, &var);
  for_each(x.shape, [&](const Index& i) {
    int64_t k = key(i);
    y.at(i) = (x.at(i) - mean[k]) / std::sqrt(var[k] + eps) * g.double_at(i[1]) + b.double_at(i[1]);
  });
  return y.to(xt.dtype());
}

inline HostTensor lrn(const HostTensor& xt, int64_t size, double alpha, double beta, double bias) {
  Dense x(xt), y(xt.shape());
  int64_t c = x.shape[1];
  for_each(x.shape, [&](const Index& i) {
    double sq = 0;
    int64_t lo = std::max<int64_t>(0, i[1] - (size - 1) / 2), hi = std::min<int64_t>(c - 1, i[1] + size / 2);
    for (int64_t ch = lo; ch <= hi; ++ch) {
      Index j = i;
      j[1] = ch;
      sq += x.at(j) * x.at(j);
    }
    y.at(i) = x.at(i) / std::pow(bias + alpha / double(size) * sq, beta);
  });
  return y.to(xt.dtype());
}

inline HostTensor softmax(const HostTensor& xt, int64_t axis, bool log) {
  Dense x(xt), y(xt.shape());
  for_each(x.shape, [&](const Index& i) {
    Index j = i;
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (j[axis] = 0; j[axis] < x.shape[axis]; ++j[axis]) mx = std::max(mx, x.at(j));
    for (j[axis] = 0; j[axis] < x.shape[axis]; ++j[axis]) sum += std::exp(x.at(j) - mx);
    y.at(i) = log ? x.at(i) - mx - std::log(sum) : std::exp(x.at(i) - mx) / sum;
  });
  return y.to(xt.dtype());
}

// ---- resize: the ONNX reference algorithm (onnx/reference/ops/op_resize.py), per element ----

struct ResizeSpec {
  Shape sizes;
  std::vector<double> scales, roi;
  std::string mode = "nearest", coord = "half_pixel", nearest = "round_prefer_floor";
  double cubic_a = -0.75, extrapolation = 0.0;
  bool exclude_outside = false;
};

// Interpolates `data` (one axis) at output coordinate x; nullopt-like NaN flag for extrapolation.
inline double resize_1d(const std::vector<double>& data, double scale, int64_t out_size, int64_t x,
                        const ResizeSpec& s, double roi_start, double roi_end, bool* outside) {
  int64_t in = static_cast<int64_t>(data.size());
  double ow = scale * double(in), xo = 0;
  const std::string& m = s.coord;
  if (m == "align_corners") xo = ow == 1 ? 0 : double(x) * double(in - 1) / (ow - 1);
  else if (m == "asymmetric") xo = double(x) / scale;
  else if (m == "tf_crop_and_resize") {
    xo = ow == 1 ? (roi_end - roi_start) * double(in - 1) / 2 : double(x) * (roi_end - roi_start) * double(in - 1) / (ow - 1);
    xo += roi_start * double(in - 1);
    if (xo < 0 || xo > double(in - 1)) {
      *outside = true;
      return s.extrapolation;
    }
  } else if (m == "pytorch_half_pixel") xo = ow == 1 ? -0.5 : (double(x) + 0.5) / scale - 0.5;
  else if (m == "half_pixel") xo = (double(x) + 0.5) / scale - 0.5;
  else if (m == "tf_half_pixel_for_nn") xo = (double(x) + 0.5) / scale;
  else if (m == "half_pixel_symmetric") {
    double adj = double(out_size) / ow, center = double(in) / 2;
    xo = center * (1 - adj) + (double(x) + 0.5) / scale - 0.5;
  }
  double xi = std::floor(xo);
  double ratio = xo == xi ? 1.0 : xo - xi;
  std::vector<double> c;
  if (s.mode == "nearest") {
    if (xo == xi) c = {0, 1};
    else if (s.nearest == "round_prefer_floor") c = {double(ratio <= 0.5), double(ratio > 0.5)};
    else if (s.nearest == "round_prefer_ceil") c = {double(ratio < 0.5), double(ratio >= 0.5)};
    else if (s.nearest == "floor") c = {1, 0};
    else c = {0, 1};
  } else if (s.mode == "linear") {
    c = {1 - ratio, ratio};
  } else {
    double A = s.cubic_a, r = ratio;
    c = {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
         ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1,
         ((A * ((1 - r) + 1) - 5 * A) * ((1 - r) + 1) + 8 * A) * ((1 - r) + 1) - 4 * A};
  }
  int64_t n = static_cast<int64_t>(c.size()), pad = (n + 1) / 2;
  // The n indices of the edge-padded data closest to x (ties: the lower one), in order.
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < in + 2 * pad; ++i) idx.push_back(i);
  double xp = xo + double(pad);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return std::fabs(xp - a) < std::fabs(xp - b); });
  idx.resize(n);
  std::sort(idx.begin(), idx.end());
  if (s.exclude_outside) {
    double total = 0;
    for (int64_t k = 0; k < n; ++k) {
      if (idx[k] - pad < 0 || idx[k] - pad >= in) c[k] = 0;
      total += c[k];
    }
    for (double& v : c) v /= total;
  }
  double acc = 0;
  for (int64_t k = 0; k < n; ++k) acc += c[k] * data[std::clamp<int64_t>(idx[k] - pad, 0, in - 1)];
  return acc;
}

inline HostTensor resize(const HostTensor& xt, const ResizeSpec& s) {
  Dense x(xt), y(s.sizes);
  size_t r = x.shape.size();
  for_each(s.sizes, [&](const Index& o) {
    bool outside = false;
    // Innermost axis first over every combination of outer input indices, as the reference
    // recursion does.
    std::function<double(Index, size_t)> interp = [&](Index prefix, size_t d) -> double {
      std::vector<double> line;
      for (int64_t i = 0; i < x.shape[d]; ++i) {
        Index p = prefix;
        p.push_back(i);
        line.push_back(d + 1 == r ? x.at(p) : interp(p, d + 1));
      }
      double rs = s.roi.empty() ? 0 : s.roi[d], re = s.roi.empty() ? 1 : s.roi[r + d];
      return resize_1d(line, s.scales[d], s.sizes[d], o[d], s, rs, re, &outside);
    };
    double v = interp({}, 0);
    y.at(o) = outside ? s.extrapolation : v;
  });
  return y.to(xt.dtype());
}

// ---- scans and scatters ----------------------------------------------------------------------

inline HostTensor cumsum(const HostTensor& xt, int64_t axis, bool exclusive, bool reverse) {
  Dense x(xt), y(xt.shape());
  for_each(x.shape, [&](const Index& i) {
    double acc = 0;
    Index j = i;
    for (j[axis] = 0; j[axis] < x.shape[axis]; ++j[axis]) {
      bool take = reverse ? (exclusive ? j[axis] > i[axis] : j[axis] >= i[axis])
                          : (exclusive ? j[axis] < i[axis] : j[axis] <= i[axis]);
      if (take) acc += x.at(j);
    }
    y.at(i) = acc;
  });
  return y.to(xt.dtype());
}

inline std::vector<HostTensor> topk(const HostTensor& xt, int64_t k, int64_t axis, bool largest) {
  Dense x(xt);
  Shape os = x.shape;
  os[axis] = k;
  Dense v(os), ix(os);
  for_each(os, [&](const Index& o) {
    if (o[axis] != 0) return;
    std::vector<int64_t> order;
    for (int64_t i = 0; i < x.shape[axis]; ++i) order.push_back(i);
    Index j = o;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      Index ja = o, jb = o;
      ja[axis] = a;
      jb[axis] = b;
      return largest ? x.at(ja) > x.at(jb) : x.at(ja) < x.at(jb);
    });
    for (int64_t r = 0; r < k; ++r) {
      j[axis] = order[r];
      Index out = o;
      out[axis] = r;
      v.at(out) = x.at(j);
      ix.at(out) = double(order[r]);
    }
  });
  return {v.to(xt.dtype()), ix.to(DataType::i64())};
}

inline double combine(const std::string& red, double a, double b) {
  if (red == "add") return a + b;
  if (red == "mul") return a * b;
  if (red == "max") return std::max(a, b);
  if (red == "min") return std::min(a, b);
  return b;
}

inline HostTensor scatter_elements(const HostTensor& dt, const HostTensor& it, const HostTensor& ut, int64_t axis,
                                   const std::string& red) {
  Dense y(dt), u(ut);
  std::vector<int64_t> idx = it.to_int64s();
  for_each(u.shape, [&](const Index& i) {
    Index t = i;
    int64_t k = idx[flat(u.shape, i)];
    t[axis] = k < 0 ? k + y.shape[axis] : k;
    y.at(t) = combine(red, y.at(t), u.at(i));
  });
  return y.to(dt.dtype());
}

inline HostTensor scatter_nd(const HostTensor& dt, const HostTensor& it, const HostTensor& ut, const std::string& red) {
  Dense y(dt), u(ut);
  std::vector<int64_t> idx = it.to_int64s();
  int64_t q = it.shape().back();
  Shape lead(it.shape().begin(), it.shape().end() - 1);
  Shape rest(y.shape.begin() + q, y.shape.end());
  for_each(lead, [&](const Index& l) {
    Index base;
    for (int64_t j = 0; j < q; ++j) {
      int64_t k = idx[flat(lead, l) * q + j];
      base.push_back(k < 0 ? k + y.shape[j] : k);
    }
    for_each(rest, [&](const Index& r) {
      Index t = base, ui = l;
      t.insert(t.end(), r.begin(), r.end());
      ui.insert(ui.end(), r.begin(), r.end());
      y.at(t) = combine(red, y.at(t), u.at(ui));
    });
  });
  return y.to(dt.dtype());
}

}  // namespace kiln::opsb_ref
