// Signal processing: DFT, STFT and MelWeightMatrix. A DFT is a product by constant cos / sin
// matrices (nn.dense): exact up to rounding and, for the short transforms models carry, no
// slower than an FFT would be here. Lengths and axes must be compile-time constants.
#include <cmath>
#include <numeric>

#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

constexpr double kPi = 3.14159265358979323846;

struct DftSpec {
  int64_t axis;    // normalized, < rank - 1 (the last axis holds real / imaginary parts)
  int64_t length;  // the transform length (the signal is cut or zero-padded to it)
  bool inverse = false;
  bool onesided = false;
};

// W [n_out * oc, n_in * ic] such that y[(k, o)] = sum_(j, c) W[(k, o), (j, c)] x[(j, c)] is the
// transform of one signal of n_in samples with ic parts (1: real, 2: complex) into n_out
// samples with oc parts.
std::vector<double> dft_matrix(const DftSpec& s, int64_t n_in, int64_t ic, int64_t n_out, int64_t oc) {
  int64_t L = s.length;
  std::vector<double> w(static_cast<size_t>(n_out * oc * n_in * ic), 0.0);
  auto at = [&](int64_t k, int64_t o, int64_t j, int64_t c) -> double& {
    return w[static_cast<size_t>(((k * oc + o) * n_in + j) * ic + c)];
  };
  for (int64_t k = 0; k < n_out; ++k) {
    for (int64_t j = 0; j < n_in; ++j) {
      // The phase from (j * k) mod L keeps it exact for long transforms.
      double theta = 2.0 * kPi * static_cast<double>((j * k) % L) / static_cast<double>(L);
      double cs = std::cos(theta), sn = std::sin(theta);
      if (s.inverse && s.onesided) {
        // Inverse of a one-sided spectrum (numpy irfft): input bin j < L/2 + 1 stands for itself
        // and its conjugate mirror L - j; the imaginary parts of bins 0 and L/2 drop out.
        if (j > L / 2) continue;
        bool self_mirror = j == 0 || 2 * j == L;
        double f = (self_mirror ? 1.0 : 2.0) / static_cast<double>(L);
        at(k, 0, j, 0) = f * cs;
        if (ic == 2) at(k, 0, j, 1) = self_mirror ? 0.0 : -f * sn;
        continue;
      }
      if (j >= L) continue;  // cut off
      double f = s.inverse ? 1.0 / static_cast<double>(L) : 1.0;
      double sg = s.inverse ? 1.0 : -1.0;  // e^(sg * i theta)
      // (a + ib)(cos + i sg sin) = a cos - sg b sin + i (sg a sin + b cos)
      at(k, 0, j, 0) = f * cs;
      at(k, 1, j, 0) = f * sg * sn;
      if (ic == 2) {
        at(k, 0, j, 1) = -f * sg * sn;
        at(k, 1, j, 1) = f * cs;
      }
    }
  }
  return w;
}

// The DFT of x [..., n, ..., ic] along s.axis: [..., n_out, ..., oc]. Moves the axis next to
// the parts, multiplies every signal by the transform matrix, moves it back.
Expr dft_of(NodeContext& c, const Expr& x, const DftSpec& s) {
  const TensorTypeNode& t = *x.type().as<TensorTypeNode>();
  int64_t r = static_cast<int64_t>(t.shape.size());
  int64_t ic = t.shape.back();
  KILN_USER_CHECK(ic == 1 || ic == 2) << "the last axis of input " << shape_str(t.shape)
                                      << " must be 1 (real) or 2 (complex)";
  KILN_USER_CHECK(t.dtype.is_floating()) << "input must be floating-point";
  KILN_USER_CHECK(s.length >= 1) << "dft_length " << s.length << " must be positive";
  int64_t n_in = t.shape[s.axis];
  int64_t n_out = s.onesided && !s.inverse ? s.length / 2 + 1 : s.length;
  int64_t oc = s.inverse && s.onesided ? 1 : 2;
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < r - 1; ++d)
    if (d != s.axis) perm.push_back(d);
  perm.push_back(s.axis);
  perm.push_back(r - 1);
  Shape moved;
  for (int64_t p : perm) moved.push_back(t.shape[p]);
  bool identity = s.axis == r - 2;
  Expr y = identity ? x : c.call("transpose", {x}, Attrs().set_ints("axes", perm));
  int64_t signals = t.num_elements() / std::max<int64_t>(n_in * ic, 1);
  y = c.call("reshape", {y}, Attrs().set_ints("newshape", {signals, n_in * ic}));
  HostTensor w = HostTensor::from_doubles(t.dtype, {n_out * oc, n_in * ic}, dft_matrix(s, n_in, ic, n_out, oc));
  y = c.call("nn.dense", {y, c.constant(w)});
  moved[moved.size() - 2] = n_out;
  moved.back() = oc;
  y = c.call("reshape", {y}, Attrs().set_ints("newshape", moved));
  if (identity) return y;
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return c.call("transpose", {y}, Attrs().set_ints("axes", inv));
}

int64_t scalar_input(NodeContext& c, size_t i, const char* role) {
  std::vector<int64_t> v = c.const_ints(i, role);
  KILN_USER_CHECK(v.size() == 1) << role << " must be a scalar, has " << v.size() << " values";
  return v[0];
}

std::vector<Expr> dft(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "input");
  int64_t r = static_cast<int64_t>(x.shape.size());
  KILN_USER_CHECK(r >= 2) << "input " << shape_str(x.shape) << " must have rank >= 2 (signal axes, then parts)";
  DftSpec s;
  s.inverse = c.attr_int("inverse", 0) != 0;
  s.onesided = c.attr_int("onesided", 0) != 0;
  // Opset 20 made the axis an input (default -2); before it was an attribute (default 1).
  int64_t axis = c.opset() >= 20 ? (c.has_input(2) ? scalar_input(c, 2, "axis") : -2) : c.attr_int("axis", 1);
  KILN_USER_CHECK((axis >= -r && axis <= -2) || (axis >= 0 && axis <= r - 2))
      << "axis " << axis << " is out of range [-" << r << ", -2] U [0, " << r - 2 << "] for input "
      << shape_str(x.shape) << " (the last axis holds the real and imaginary parts)";
  s.axis = axis < 0 ? axis + r : axis;
  int64_t n = x.shape[s.axis];
  s.length = c.has_input(1) ? scalar_input(c, 1, "dft_length") : (s.inverse && s.onesided ? 2 * (n - 1) : n);
  KILN_USER_CHECK(s.length >= 1) << "dft_length " << s.length << " must be positive";
  return {dft_of(c, c.input(0), s)};
}

// STFT: the frames [batch, frames, frame_length, parts] gathered by constant indices, scaled
// by the window, transformed along the frame axis.
std::vector<Expr> stft(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "signal");
  KILN_USER_CHECK(x.shape.size() == 3 && (x.shape[2] == 1 || x.shape[2] == 2))
      << "signal " << shape_str(x.shape) << " must be [batch, signal_length, 1 or 2]";
  int64_t len = x.shape[1];
  int64_t step = scalar_input(c, 1, "frame_step");
  KILN_USER_CHECK(step >= 1) << "frame_step " << step << " must be positive";
  int64_t frame = len;
  if (c.has_input(3)) {
    frame = scalar_input(c, 3, "frame_length");
  } else if (c.has_input(2)) {
    frame = c.input_type(2, "window").shape.empty() ? 1 : c.input_type(2, "window").shape[0];
  }
  KILN_USER_CHECK(frame >= 1 && frame <= len) << "frame_length " << frame << " must be in [1, signal_length " << len
                                              << "]";
  if (c.has_input(2)) {
    const TensorTypeNode& w = c.input_type(2, "window");
    KILN_USER_CHECK(w.shape.size() == 1 && w.shape[0] == frame)
        << "window " << shape_str(w.shape) << " must be [frame_length] = [" << frame << "]";
    KILN_USER_CHECK(w.dtype == x.dtype) << "window must have the signal's type " << x.dtype.str();
  }
  int64_t frames = (len - frame) / step + 1;
  std::vector<double> idx;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t t = 0; t < frame; ++t) idx.push_back(static_cast<double>(f * step + t));
  Expr index = c.constant(HostTensor::from_doubles(DataType::i64(), {frames, frame}, idx));
  Expr y = c.call("take", {c.input(0), index}, Attrs().set_int("axis", 1));  // [batch, frames, frame, parts]
  if (c.has_input(2)) {
    Expr w = c.call("reshape", {c.input(2)}, Attrs().set_ints("newshape", {frame, 1}));
    y = c.call("multiply", {y, w});
  }
  DftSpec s;
  s.axis = 2;
  s.length = frame;
  s.onesided = c.attr_int("onesided", 1) != 0;
  KILN_USER_CHECK(!s.onesided || x.shape[2] == 1) << "onesided=1 needs a real signal (its last axis 1)";
  return {dft_of(c, y, s)};
}

// MelWeightMatrix [dft_length / 2 + 1, num_mel_bins]: triangular filters between mel-spaced
// bins, computed here from its constant inputs as the ONNX reference does (the mel edges in
// the edge's float type, the bins in double, floored).
std::vector<Expr> mel_weight_matrix(NodeContext& c) {
  int64_t mels = scalar_input(c, 0, "num_mel_bins");
  int64_t dft_len = scalar_input(c, 1, "dft_length");
  int64_t rate = scalar_input(c, 2, "sample_rate");
  std::vector<double> lo = c.require_const(3, "lower_edge_hertz").to_doubles();
  std::vector<double> hi = c.require_const(4, "upper_edge_hertz").to_doubles();
  KILN_USER_CHECK(lo.size() == 1 && hi.size() == 1) << "lower_edge_hertz and upper_edge_hertz must be scalars";
  KILN_USER_CHECK(mels >= 1 && dft_len >= 1 && rate >= 1)
      << "num_mel_bins " << mels << ", dft_length " << dft_len << " and sample_rate " << rate << " must be positive";
  KILN_USER_CHECK(lo[0] >= 0 && lo[0] < hi[0]) << "the edges must satisfy 0 <= lower_edge_hertz (" << lo[0]
                                               << ") < upper_edge_hertz (" << hi[0] << ")";
  DataType out = dtype_from_onnx(static_cast<int>(c.attr_int("output_datatype", 1)), c.name());
  KILN_USER_CHECK(out.is_floating()) << "output_datatype must be a floating-point type, not " << out.str();
  bool f32 = c.input_type(3, "lower_edge_hertz").dtype == DataType::f32();
  auto mel = [f32](double hz) {
    if (f32) return static_cast<double>(2595.0f * std::log1p(static_cast<float>(hz) / 700.0f)) / std::log(10.0);
    return 2595.0 * std::log1p(hz / 700.0) / std::log(10.0);
  };
  double low = mel(lo[0]), step = (mel(hi[0]) - low) / static_cast<double>(mels + 2);
  std::vector<int64_t> bin;
  for (int64_t i = 0; i < mels + 2; ++i) {
    double hz = 700.0 * std::expm1((static_cast<double>(i) * step + low) / 2595.0 * std::log(10.0));
    bin.push_back(static_cast<int64_t>(std::floor(static_cast<double>(dft_len + 1) * hz / static_cast<double>(rate))));
  }
  int64_t bins = dft_len / 2 + 1;
  for (int64_t b : bin)
    KILN_USER_CHECK(b >= 0 && b < bins) << "upper_edge_hertz " << hi[0] << " lies above the Nyquist frequency of "
                                        << "sample_rate " << rate;
  std::vector<double> w(static_cast<size_t>(bins * mels), 0.0);
  for (int64_t i = 0; i < mels; ++i) {
    int64_t l = bin[i], m = bin[i + 1], h = bin[i + 2];
    if (m == l) w[static_cast<size_t>(m * mels + i)] = 1.0;
    for (int64_t j = l; m > l && j <= m; ++j)
      w[static_cast<size_t>(j * mels + i)] = static_cast<double>(j - l) / static_cast<double>(m - l);
    for (int64_t j = m; j < h; ++j)
      w[static_cast<size_t>(j * mels + i)] = static_cast<double>(h - j) / static_cast<double>(h - m);
  }
  return {c.constant(HostTensor::from_doubles(out, {bins, mels}, w))};
}

}  // namespace

void register_signal_converters(ConverterTable& t) {
  t["DFT"] = dft;
  t["STFT"] = stft;
  t["MelWeightMatrix"] = mel_weight_matrix;
}

}  // namespace kiln::relay::onnx_frontend
