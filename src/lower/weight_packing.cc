// Compile-time weight packing (see weight_packing.h).
#include "lower/weight_packing.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kiln/support/error.h"

namespace kiln::lower {

relay::HostTensor pack_conv_weight(const relay::HostTensor& w, int64_t groups, int64_t co) {
  KILN_USER_CHECK(w.rank() >= 3 && groups >= 1 && co >= 1 && w.shape()[0] % groups == 0)
      << "pack_conv_weight: weight " << w.type().str() << " is not [OC, C/groups, K...] for " << groups << " groups";
  int64_t oc = w.shape()[0];
  int64_t nblk = (oc + co - 1) / co, inner = w.numel() / std::max<int64_t>(oc, 1);
  size_t eb = static_cast<size_t>(w.dtype().bytes());
  relay::Shape shape = {nblk};
  shape.insert(shape.end(), w.shape().begin() + 1, w.shape().end());
  shape.push_back(co);
  std::vector<uint8_t> bytes(static_cast<size_t>(nblk * inner * co) * eb, 0);
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t r = 0; r < inner; ++r) {
      std::memcpy(&bytes[static_cast<size_t>(((o / co) * inner + r) * co + o % co) * eb], w.data() + (o * inner + r) * eb,
                  eb);
    }
  }
  return relay::HostTensor(w.dtype(), shape, std::move(bytes));
}

relay::HostTensor pack_dense_weight(const relay::HostTensor& w, int64_t nr, int64_t panel_group, bool kn) {
  KILN_USER_CHECK(w.rank() == 2 && nr >= 1 && panel_group >= 1)
      << "pack_dense_weight: weight " << w.type().str() << " is not " << (kn ? "[K, N]" : "[N, K]");
  int64_t n = w.shape()[kn ? 1 : 0], k = w.shape()[kn ? 0 : 1];
  int64_t nb = ((n + nr - 1) / nr + panel_group - 1) / panel_group * panel_group;
  size_t eb = static_cast<size_t>(w.dtype().bytes());
  std::vector<uint8_t> bytes(static_cast<size_t>(nb * k * nr) * eb, 0);
  // Loops in the source's order: it is read once, sequentially (an LM head's B is 100 MB).
  auto copy = [&](int64_t j, int64_t q) {
    int64_t from = kn ? q * n + j : j * k + q;
    std::memcpy(&bytes[static_cast<size_t>(((j / nr) * k + q) * nr + j % nr) * eb], w.data() + from * eb, eb);
  };
  for (int64_t a = 0; a < (kn ? k : n); ++a)
    for (int64_t b = 0; b < (kn ? n : k); ++b) kn ? copy(b, a) : copy(a, b);
  return relay::HostTensor(w.dtype(), {nb, k, nr}, std::move(bytes));
}

relay::HostTensor pack_winograd_weight(const relay::HostTensor& w, int64_t co) {
  KILN_USER_CHECK(w.rank() == 4 && w.shape()[2] == 3 && w.shape()[3] == 3 && w.dtype() == relay::DataType::f32())
      << "pack_winograd_weight: weight " << w.type().str() << " is not float32 [OC, C, 3, 3]";
  // G of F(2x2, 3x3) (Lavin & Gray, 2015): U = G g Gt maps a 3x3 filter to a 4x4 tile.
  constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  int64_t oc = w.shape()[0], c = w.shape()[1], nblk = (oc + co - 1) / co;
  const float* g = w.data_as<float>();
  std::vector<float> u(static_cast<size_t>(16 * nblk * c * co), 0.0f);
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t ci = 0; ci < c; ++ci) {
      const float* k = g + (o * c + ci) * 9;
      double gk[4][3];  // G g
      for (int i = 0; i < 4; ++i)
        for (int l = 0; l < 3; ++l) gk[i][l] = kG[i][0] * k[l] + kG[i][1] * k[3 + l] + kG[i][2] * k[6 + l];
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          double v = kG[j][0] * gk[i][0] + kG[j][1] * gk[i][1] + kG[j][2] * gk[i][2];
          u[static_cast<size_t>((((i * 4 + j) * nblk + o / co) * c + ci) * co + o % co)] = static_cast<float>(v);
        }
      }
    }
  }
  return relay::HostTensor(relay::DataType::f32(), {16, nblk, c, co}, u.data());
}

relay::HostTensor pack_winograd_int8_weight(const relay::HostTensor& w, int64_t lanes) {
  KILN_USER_CHECK(w.rank() == 4 && w.shape()[2] == 3 && w.shape()[3] == 3 && w.dtype() == relay::DataType::i8() &&
                  lanes >= 1)
      << "pack_winograd_int8_weight: weight " << w.type().str() << " is not int8 [OC, C, 3, 3]";
  // 2G of F(2x2, 3x3), integer: U' = (2G) g (2G)t = 4 G g Gt (te/ops/nn_winograd.h).
  constexpr int kG2[4][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};
  const int64_t oc = w.shape()[0], c = w.shape()[1], nblk = (oc + lanes - 1) / lanes, cp = (c + 1) / 2;
  const int8_t* g = w.data_as<int8_t>();
  std::vector<int16_t> u(static_cast<size_t>(16 * nblk * cp * lanes * 2), 0);
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t ci = 0; ci < c; ++ci) {
      const int8_t* k = g + (o * c + ci) * 9;
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          int v = 0;
          for (int r = 0; r < 3; ++r)
            for (int q = 0; q < 3; ++q) v += kG2[i][r] * kG2[j][q] * k[r * 3 + q];
          u[static_cast<size_t>((((i * 4 + j) * nblk + o / lanes) * cp + ci / 2) * lanes * 2 + (o % lanes) * 2 + ci % 2)] =
              static_cast<int16_t>(v);
        }
      }
    }
  }
  return relay::HostTensor(relay::DataType::i16(), {16, nblk, cp, lanes, 2}, u.data());
}

relay::HostTensor pack_int8_weight(const relay::HostTensor& w, int64_t lanes, int64_t group) {
  KILN_USER_CHECK(w.rank() >= 2 && w.dtype() == relay::DataType::i8() && lanes >= 1 && group >= 1)
      << "pack_int8_weight: weight " << w.type().str() << " is not int8 [O, C, K...]";
  const int64_t o = w.shape()[0], c = w.shape()[1], taps = w.numel() / std::max<int64_t>(o * c, 1);
  const int64_t nblk = (o + lanes - 1) / lanes, cg = (c + group - 1) / group;
  relay::Shape shape = {nblk, cg};
  shape.insert(shape.end(), w.shape().begin() + 2, w.shape().end());
  shape.push_back(lanes);
  shape.push_back(group);
  std::vector<uint8_t> bytes(static_cast<size_t>(nblk * cg * taps * lanes * group), 0);
  for (int64_t oo = 0; oo < o; ++oo)
    for (int64_t cc = 0; cc < c; ++cc)
      for (int64_t t = 0; t < taps; ++t)
        bytes[static_cast<size_t>((((oo / lanes) * cg + cc / group) * taps + t) * lanes * group + (oo % lanes) * group +
                                  cc % group)] = w.data()[(oo * c + cc) * taps + t];
  return relay::HostTensor(w.dtype(), shape, std::move(bytes));
}

}  // namespace kiln::lower
