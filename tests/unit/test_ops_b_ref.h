// Plain-loop references for the nn ops of the op library (tests of lower/ops_nn.cc): one
// output element at a time, in double, written from the ONNX operator specs (resize follows the
// ONNX reference implementation's neighbour selection literally), independent of kiln's te.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kiln/relay/host_tensor.h"

namespace kiln::opsb_ref {

using relay::DataType;
using relay::HostTensor;
using relay::Shape;
using Index = std::vector<int64_t>;

inline std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

inline int64_t flat(const Shape& s, const Index& i) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + i[d];
  return f;
}

// Calls f(index) for every index of `s` in row-major order.
inline void for_each(const Shape& s, const std::function<void(const Index&)>& f) {
  if (relay::num_elements(s) == 0) return;
  Index i(s.size(), 0);
  while (true) {
    f(i);
    size_t d = s.size();
    while (d-- > 0) {
      if (++i[d] < s[d]) break;
      i[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

struct Dense {
  Shape shape;
  std::vector<double> v;
  explicit Dense(const HostTensor& t) : shape(t.shape()), v(t.to_doubles()) {}
  Dense(Shape s, double fill = 0.0) : shape(std::move(s)), v(relay::num_elements(shape), fill) {}
  double& at(const Index& i) { return v[flat(shape, i)]; }
  double at(const Index& i) const { return v[flat(shape, i)]; }
  HostTensor to(DataType t) const { return HostTensor::from_doubles(t, shape, v); }
};

// ---- convolutions -------------------------------------------------------------------------

inline HostTensor conv(const HostTensor& xt, const HostTensor& wt, const Index& strides, const Index& pads,
                       const Index& dil, int64_t groups) {
  Dense x(xt), w(wt);
  size_t d = strides.size();
  int64_t oc = w.shape[0], cg = w.shape[1], og = oc / groups;
  Shape os = {x.shape[0], oc};
  for (size_t i = 0; i < d; ++i) {
    int64_t ext = dil[i] * (w.shape[2 + i] - 1) + 1;
    os.push_back((x.shape[2 + i] + pads[i] + pads[d + i] - ext) / strides[i] + 1);
  }
  Dense y(os);
  Shape ks(w.shape.begin() + 2, w.shape.end());
  for_each(os, [&](const Index& o) {
    double acc = 0;
    int64_t g = o[1] / og;
    for (int64_t c = 0; c < cg; ++c) {
      for_each(ks, [&](const Index& k) {
        Index xi = {o[0], g * cg + c};
        for (size_t i = 0; i < d; ++i) {
          int64_t p = o[2 + i] * strides[i] + k[i] * dil[i] - pads[i];
          if (p < 0 || p >= x.shape[2 + i]) return;
          xi.push_back(p);
        }
        Index wi = {o[1], c};
        wi.insert(wi.end(), k.begin(), k.end());
        acc += x.at(xi) * w.at(wi);
      });
    }
    y.at(o) = acc;
  });
  return y.to(xt.dtype());
}

inline HostTensor conv_transpose(const HostTensor& xt, const HostTensor& wt, const Index& strides, const Index& pads,
                                 const Index& dil, int64_t groups, const Index& out_pad) {
  Dense x(xt), w(wt);
  size_t d = strides.size();
  int64_t c = x.shape[1], og = w.shape[1], cg = c / groups;
  Shape os = {x.shape[0], og * groups};
  for (size_t i = 0; i < d; ++i) {
    os.push_back(strides[i] * (x.shape[2 + i] - 1) + out_pad[i] + dil[i] * (w.shape[2 + i] - 1) + 1 - pads[i] -
                 pads[d + i]);
  }
  Dense y(os);
  Shape ks(w.shape.begin() + 2, w.shape.end());
  for_each(x.shape, [&](const Index& xi) {
    int64_t g = xi[1] / cg;
    for (int64_t ol = 0; ol < og; ++ol) {
      for_each(ks, [&](const Index& k) {
        Index yi = {xi[0], g * og + ol};
        for (size_t i = 0; i < d; ++i) {
          int64_t p = xi[2 + i] * strides[i] + k[i] * dil[i] - pads[i];
          if (p < 0 || p >= os[2 + i]) return;
          yi.push_back(p);
        }
        Index wi = {xi[1], ol};
        wi.insert(wi.end(), k.begin(), k.end());
        y.at(yi) += x.at(xi) * w.at(wi);
      });
    }
  });
  return y.to(xt.dtype());
}

// ---- pooling ------------------------------------------------------------------------------

struct PoolSpec {
  Index kernel, strides, pads, dil;
  bool ceil_mode = false, count_include_pad = false;
  int64_t p = 2;
};

inline HostTensor pool(const HostTensor& xt, const std::string& kind, const PoolSpec& s) {
  Dense x(xt);
  size_t d = s.kernel.size();
  Shape os = {x.shape[0], x.shape[1]};
  for (size_t i = 0; i < d; ++i) {
    int64_t in = x.shape[2 + i], ext = s.dil[i] * (s.kernel[i] - 1) + 1;
    int64_t span = in + s.pads[i] + s.pads[d + i] - ext;
    int64_t o = (s.ceil_mode ? (span + s.strides[i] - 1) / s.strides[i] : span / s.strides[i]) + 1;
    if (s.ceil_mode && (o - 1) * s.strides[i] >= in + s.pads[i]) --o;
    os.push_back(o);
  }
  Dense y(os);
  for_each(os, [&](const Index& o) {
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    int64_t inside = 0, padded = 0;
    for_each(s.kernel, [&](const Index& k) {
      Index xi = {o[0], o[1]};
      bool in_x = true, in_pad = true;
      for (size_t i = 0; i < d; ++i) {
        int64_t p = o[2 + i] * s.strides[i] - s.pads[i] + k[i] * s.dil[i];
        in_x = in_x && p >= 0 && p < x.shape[2 + i];
        in_pad = in_pad && p >= -s.pads[i] && p < x.shape[2 + i] + s.pads[d + i];
        xi.push_back(p);
      }
      padded += in_pad;
      if (!in_x) return;
      ++inside;
      double v = x.at(xi);
      mx = std::max(mx, v);
      sum += kind == "lp" ? std::pow(std::fabs(v), double(s.p)) : v;
    });
    if (kind == "max") y.at(o) = mx;
    else if (kind == "avg") y.at(o) = sum / double(s.count_include_pad ? padded : inside);
    else y.at(o) = std::pow(sum, 1.0 / double(s.p));
  });
  return y.to(xt.dtype());
}

inline HostTensor global_pool(const HostTensor& xt, bool is_max) {
  Dense x(xt);
  Shape os = x.shape;
  for (size_t i = 2; i < os.size(); ++i) os[i] = 1;
  Dense y(os, is_max ? -std::numeric_limits<double>::infinity() : 0.0);
  int64_t count = relay::num_elements(x.shape) / (x.shape[0] * x.shape[1]);
  for_each(x.shape, [&](const Index& i) {
    Index o = {i[0], i[1]};
    o.resize(os.size(), 0);
    y.at(o) = is_max ? std::max(y.at(o), x.at(i)) : y.at(o) + x.at(i) / double(count);
  });
  return y.to(xt.dtype());
}

// ---- products -----------------------------------------------------------------------------

inline HostTensor dense(const HostTensor& xt, const HostTensor& wt) {
  Dense x(xt), w(wt);
  Dense y({x.shape[0], w.shape[0]});
  for_each(y.shape, [&](const Index& o) {
    double acc = 0;
    for (int64_t k = 0; k < x.shape[1]; ++k) acc += x.at({o[0], k}) * w.at({o[1], k});
    y.at(o) = acc;
  });
  return y.to(xt.dtype());
}

// numpy matmul through einsum-like explicit broadcasting.
inline HostTensor matmul(const HostTensor& at, const HostTensor& bt) {
  Dense a(at), b(bt);
  Shape sa = a.shape, sb = b.shape;
  bool av = sa.size() == 1, bv = sb.size() == 1;
  if (av) sa.insert(sa.begin(), 1);
  if (bv) sb.push_back(1);
  size_t ra = sa.size() - 2, rb = sb.size() - 2, r = std::max(ra, rb);
  Shape batch(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i + ra >= r ? sa[i + ra - r] : 1, db = i + rb >= r ? sb[i + rb - r] : 1;
    batch[i] = std::max(da, db);
  }
  int64_t m = sa[ra], k = sa[ra + 1], n = sb[rb + 1];
  Shape full = batch;
  full.push_back(m);
  full.push_back(n);
  Dense y(full);
  for_each(full, [&](const Index& o) {
    double acc = 0;
    for (int64_t q = 0; q < k; ++q) {
      Index ia, ib;
      for (size_t i = 0; i < ra; ++i) ia.push_back(sa[i] == 1 ? 0 : o[i + r - ra]);
      for (size_t i = 0; i < rb; ++i) ib.push_back(sb[i] == 1 ? 0 : o[i + r - rb]);
      if (!av) ia.push_back(o[r]);
      ia.push_back(q);
      ib.push_back(q);
      if (!bv) ib.push_back(o[r + 1]);
      acc += a.v[flat(a.shape, ia)] * b.v[flat(b.shape, ib)];
    }
    y.at(o) = acc;
  });
  Shape os = batch;
  if (!av) os.push_back(m);
  if (!bv) os.push_back(n);
  if (os.empty()) os.push_back(1);
  y.shape = os;
  return y.to(at.dtype());
}

// Einsum with explicit output, letters only (no ellipsis), no repeated labels within a term.
inline HostTensor einsum(const std::string& eq, const std::vector<HostTensor>& ins) {
  size_t arrow = eq.find("->");
  std::vector<std::string> terms(1);
  for (char c : eq.substr(0, arrow)) {
    if (c == ',') terms.emplace_back();
    else terms.back() += c;
  }
  std::string out = eq.substr(arrow + 2), labels;
  std::vector<int64_t> size(128, 0);
  for (size_t t = 0; t < terms.size(); ++t) {
    for (size_t p = 0; p < terms[t].size(); ++p) {
      char c = terms[t][p];
      if (labels.find(c) == std::string::npos) labels += c;
      size[c] = ins[t].shape()[p];
    }
  }
  Shape all, os;
  for (char c : labels) all.push_back(size[c]);
  for (char c : out) os.push_back(size[c]);
  std::vector<Dense> in;
  for (const auto& t : ins) in.emplace_back(t);
  Dense y(os.empty() ? Shape{1} : os);
  for_each(all, [&](const Index& a) {
    auto val = [&](char c) { return a[labels.find(c)]; };
    double prod = 1;
    for (size_t t = 0; t < terms.size(); ++t) {
      Index i;
      for (char c : terms[t]) i.push_back(val(c));
      prod *= in[t].at(i);
    }
    Index o;
    for (char c : out) o.push_back(val(c));
    if (o.empty()) o.push_back(0);
    y.at(o) += prod;
  });
  return y.to(ins[0].dtype());
}

}  // namespace kiln::opsb_ref
