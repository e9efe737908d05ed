// Plain-loop reference implementations: the independent yardstick for numerical tests.
// Deliberately naive (no blocking, no vectorization) so that they are easy to trust.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace kiln::ref {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// C[M,N] = A[M,K] * B[K,N], accumulated in double.
inline std::vector<float> matmul(const std::vector<float>& a, const std::vector<float>& b, int m, int n, int k) {
  std::vector<float> c(static_cast<size_t>(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p) s += double(a[size_t(i) * k + p]) * b[size_t(p) * n + j];
      c[size_t(i) * n + j] = float(s);
    }
  return c;
}

struct Conv2dShape {
  int n, c, h, w;      // input NCHW
  int oc, kh, kw;      // weights OC x (C/groups) x KH x KW
  int stride = 1, pad = 0, dilation = 1, groups = 1;
  int out_h() const { return (h + 2 * pad - dilation * (kh - 1) - 1) / stride + 1; }
  int out_w() const { return (w + 2 * pad - dilation * (kw - 1) - 1) / stride + 1; }
};

// Grouped NCHW convolution with zero padding (depthwise: groups == c == oc).
inline std::vector<float> conv2d_nchw(const std::vector<float>& x, const std::vector<float>& wt, const Conv2dShape& s) {
  int oh = s.out_h(), ow = s.out_w(), cg = s.c / s.groups, og = s.oc / s.groups;
  std::vector<float> y(size_t(s.n) * s.oc * oh * ow);
  for (int b = 0; b < s.n; ++b)
    for (int o = 0; o < s.oc; ++o)
      for (int i = 0; i < oh; ++i)
        for (int j = 0; j < ow; ++j) {
          double acc = 0;
          int g = o / og;
          for (int c = 0; c < cg; ++c)
            for (int r = 0; r < s.kh; ++r)
              for (int q = 0; q < s.kw; ++q) {
                int hi = i * s.stride - s.pad + r * s.dilation, wi = j * s.stride - s.pad + q * s.dilation;
                if (hi < 0 || hi >= s.h || wi < 0 || wi >= s.w) continue;
                acc += double(x[((size_t(b) * s.c + g * cg + c) * s.h + hi) * s.w + wi]) *
                       wt[((size_t(o) * cg + c) * s.kh + r) * s.kw + q];
              }
          y[((size_t(b) * s.oc + o) * oh + i) * ow + j] = float(acc);
        }
  return y;
}

// Max or average pooling over NCHW; average counts only in-bounds elements (count_include_pad=0).
inline std::vector<float> pool2d_nchw(const std::vector<float>& x, int n, int c, int h, int w, int k, int stride,
                                      int pad, bool is_max) {
  int oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  std::vector<float> y(size_t(n) * c * oh * ow);
  for (int b = 0; b < n * c; ++b)
    for (int i = 0; i < oh; ++i)
      for (int j = 0; j < ow; ++j) {
        double acc = is_max ? -std::numeric_limits<double>::infinity() : 0;
        int count = 0;
        for (int r = 0; r < k; ++r)
          for (int q = 0; q < k; ++q) {
            int hi = i * stride - pad + r, wi = j * stride - pad + q;
            if (hi < 0 || hi >= h || wi < 0 || wi >= w) continue;
            double v = x[(size_t(b) * h + hi) * w + wi];
            acc = is_max ? std::max(acc, v) : acc + v;
            ++count;
          }
        y[(size_t(b) * oh + i) * ow + j] = float(is_max ? acc : acc / count);
      }
  return y;
}

// Softmax over the last axis of a [rows, cols] matrix.
inline std::vector<float> softmax_rows(const std::vector<float>& x, int rows, int cols) {
  std::vector<float> y(x.size());
  for (int r = 0; r < rows; ++r) {
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int c = 0; c < cols; ++c) mx = std::max(mx, double(x[size_t(r) * cols + c]));
    for (int c = 0; c < cols; ++c) sum += std::exp(double(x[size_t(r) * cols + c]) - mx);
    for (int c = 0; c < cols; ++c) y[size_t(r) * cols + c] = float(std::exp(double(x[size_t(r) * cols + c]) - mx) / sum);
  }
  return y;
}

// Largest |a - b| / (atol + rtol * |b|); <= 1 means within tolerance everywhere.
inline double worst_error_ratio(const std::vector<float>& a, const std::vector<float>& b, double rtol, double atol) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double e = std::abs(double(a[i]) - b[i]) / (atol + rtol * std::abs(double(b[i])));
    if (!(e <= worst)) worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
  }
  return worst;
}

}  // namespace kiln::ref
