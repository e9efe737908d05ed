#include "kiln/te/ops/nn_int8.h"

#include "kiln/support/error.h"
#include "kiln/te/ops/transform.h"
#include "kiln/te/reduce.h"

namespace kiln::te::ops {

using ir::DataType;
using ir::Expr;
using ir::Var;

namespace {

Expr c32(int64_t v) { return Expr(static_cast<int>(v)); }
int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// What the data's values add to make them the layout's: +128 from int8 to uint8, -128 from
// uint8 to int8, 0 when they agree or the layout's int16 holds either.
int shift_of(DataType x, DataType data) {
  if (data.bits == 16 || x.is_int() == data.is_int()) return 0;
  return data.is_uint() ? 128 : -128;
}

// v (of x's dtype) as a value of the layout's dtype.
Expr to_layout(const Expr& v, DataType data) {
  int shift = shift_of(v.dtype(), data);
  if (shift == 0) return data == v.dtype() ? v : ir::cast(data, v);
  return ir::cast(data, ir::cast(DataType::i32(), v) + Expr(shift));
}

void check_operands(const Tensor& x, const Tensor& w, const Expr& zp, const Int8Layout& layout, const std::string& name) {
  DataType xt = x.dtype();
  KILN_USER_CHECK(xt == DataType::i8() || xt == DataType::u8())
      << name << ": data '" << x.name() << "' must be int8 or uint8, got " << xt.str();
  KILN_USER_CHECK(w.dtype() == DataType::i8()) << name << ": weight '" << w.name() << "' must be int8, got "
                                              << w.dtype().str();
  KILN_USER_CHECK(zp.dtype() == xt) << name << ": the data's zero point must be " << xt.str() << ", got "
                                    << zp.dtype().str();
  const bool bytes = layout.group == 4 && (layout.data == DataType::u8() || layout.data == DataType::i8());
  KILN_USER_CHECK(layout.lanes >= 1 && (bytes || (layout.group == 2 && layout.data == DataType::i16())))
      << name << ": bad int8 layout (" << layout.group << " channels of " << layout.data.str() << ")";
}

// sum of the packed weights of each output (row-major over wpack's leading block axis and L).
Tensor weight_sums_of(const Tensor& wpack, int64_t lanes, const std::string& name) {
  const int64_t group = wpack.shape().back();
  const std::vector<int64_t>& ws = wpack.shape();
  std::vector<ir::IterVar> axes;
  for (size_t d = 1; d + 2 < ws.size(); ++d) axes.push_back(reduce_axis(ws[d], "s" + std::to_string(d)));
  axes.push_back(reduce_axis(group, "sk"));
  return compute({ws[0] * lanes}, [&](Var o) {
    std::vector<Expr> idx = {o / c32(lanes)};
    for (size_t d = 0; d + 1 < axes.size(); ++d) idx.push_back(axes[d]->var);
    idx.push_back(o % c32(lanes));
    idx.push_back(axes.back()->var);
    return te::sum(ir::cast(DataType::i32(), wpack(idx)), axes);
  }, name + kInt8WeightSumSuffix);
}

}  // namespace

Tensor pack_int8_weight(const Tensor& w, int64_t lanes, int64_t group, const std::string& name) {
  const int64_t o = w.shape()[0], c = w.shape()[1], L = lanes, G = group;
  std::vector<int64_t> shape = {round_up(o, L) / L, round_up(c, G) / G};
  shape.insert(shape.end(), w.shape().begin() + 2, w.shape().end());
  shape.push_back(L);
  shape.push_back(G);
  return compute(shape, [&](const std::vector<Var>& v) {
    const size_t taps = v.size() - 4;  // the kernel window's dims between the blocks and (L, G)
    Expr oo = v[0] * c32(L) + v[taps + 2], ci = v[1] * c32(G) + v[taps + 3];
    Expr inside = ir::logical_and(oo < c32(o), ci < c32(c));
    std::vector<Expr> idx = {ir::min(oo, c32(o - 1)), ir::min(ci, c32(c - 1))};
    for (size_t d = 0; d < taps; ++d) idx.push_back(v[2 + d]);
    return ir::select(inside, w(idx), ir::make_zero(DataType::i8()));
  }, name + kPackSuffix);
}

namespace {
// The channels of data x in `io`'s input layout (checked: NCHW, or NCHW[b]c with b its last dim).
int64_t data_channels(const Tensor& x, const Int8ConvIO& io, const std::string& name) {
  const bool blocked = io.in_block > 0;
  KILN_USER_CHECK(x.ndim() == (blocked ? 5 : 4) && (!blocked || x.shape()[4] == io.in_block))
      << name << ": data '" << x.name() << "' must be "
      << (blocked ? "[N, C/" + std::to_string(io.in_block) + ", H, W, " + std::to_string(io.in_block) + "]"
                  : std::string("[N, C, H, W]"));
  return blocked ? x.shape()[1] * io.in_block : x.shape()[1];
}
}  // namespace

Tensor conv2d_int8(const Tensor& x, const Tensor& w, const Expr& x_zero_point, const ConvNdAttrs& a,
                   const Int8Layout& layout, const std::string& name, const Tensor& weight_sums, const Int8ConvIO& io) {
  check_operands(x, w, x_zero_point, layout, name);
  KILN_USER_CHECK(w.ndim() == 4 && w.shape()[1] == data_channels(x, io, name))
      << name << ": weight '" << w.name() << "' must be [OC, C, KY, KX] over the C channels of data '" << x.name() << "'";
  return conv2d_int8_packed(x, pack_int8_weight(w, layout.lanes, layout.group, name), w.shape()[0], x_zero_point, a, layout,
                            name, weight_sums, io);
}

Tensor conv2d_int8_packed(const Tensor& x, const Tensor& wpack, int64_t oc, const Expr& x_zero_point,
                          const ConvNdAttrs& a, const Int8Layout& layout, const std::string& name,
                          const Tensor& weight_sums, const Int8ConvIO& io) {
  KILN_USER_CHECK(a.dims() == 2 && a.groups == 1 && wpack.ndim() == 6)
      << name << ": 2-d convolutions of one group only (data " << x.name() << ", weight " << wpack.name() << ")";
  KILN_USER_CHECK(io.out_block == 0 || oc % io.out_block == 0)
      << name << ": " << oc << " output channels do not fill blocks of " << io.out_block;
  const int64_t n = x.shape()[0], c = data_channels(x, io, name), ky = wpack.shape()[2], kx = wpack.shape()[3];
  const int64_t L = layout.lanes, G = layout.group, cg = wpack.shape()[1], nblk = wpack.shape()[0];
  KILN_USER_CHECK(cg == round_up(c, G) / G && wpack.shape()[4] == L && wpack.shape()[5] == G && nblk * L >= oc)
      << name << ": packed weight '" << wpack.name() << "' does not fit data '" << x.name() << "'";
  int64_t out[2];
  for (int i = 0; i < 2; ++i) {
    int64_t ext = a.dilation[i] * ((i == 0 ? ky : kx) - 1) + 1;
    int64_t padded = x.shape()[2 + i] + a.padding[i] + a.padding[2 + i];
    KILN_USER_CHECK(a.strides[i] >= 1 && padded >= ext) << name << ": kernel extent " << ext
                                                        << " exceeds the padded input " << padded;
    out[i] = (padded - ext) / a.strides[i] + 1;
  }
  // Channels past C and the spatial border hold the zero point: (zp - zp) * w adds nothing.
  // Blocked data [N, C/b, H, W, b] pads only the pixels; the pack tests for channels past C.
  const int64_t xb = io.in_block;
  Tensor padded = xb > 0 ? pad_masked(x, {0, 0, a.padding[0], a.padding[1], 0},
                                      {0, 0, a.padding[2], a.padding[3], 0}, x_zero_point, name + kPadSuffix)
                         : pad_masked(x, {0, 0, a.padding[0], a.padding[1]},
                                      {0, cg * G - c, a.padding[2], a.padding[3]}, x_zero_point, name + kPadSuffix);
  const int64_t hp = padded.shape()[2], wp = padded.shape()[3];
  Tensor pack = compute({n, cg, hp, wp, G}, [&](Var b, Var cb, Var h, Var ww, Var k) {
    Expr ch = cb * c32(G) + k;
    if (xb == 0) return to_layout(padded(b, ch, h, ww), layout.data);
    Expr v = padded(b, ch / c32(xb), h, ww, ch % c32(xb));
    if (cg * G != c) v = ir::select(ch < c32(c), v, x_zero_point);
    return to_layout(v, layout.data);
  }, name + kInt8PackSuffix);
  Tensor wsum = weight_sums.defined() ? weight_sums : weight_sums_of(wpack, L, name);

  auto rc = reduce_axis(cg, "rc"), ry = reduce_axis(ky, "ry"), rx = reduce_axis(kx, "rx"), rk = reduce_axis(G, "rk");
  const DataType i32 = DataType::i32();
  Tensor blocked = compute({n, nblk, out[0], out[1], L}, [&](Var b, Var blk, Var oy, Var ox, Var j) {
    Expr y = oy * c32(a.strides[0]) + ry * c32(a.dilation[0]);
    Expr xx = ox * c32(a.strides[1]) + rx * c32(a.dilation[1]);
    return te::sum(ir::cast(i32, pack(b, rc, y, xx, rk)) * ir::cast(i32, wpack(blk, rc, ry, rx, j, rk)),
                   {rc, ry, rx, rk});
  }, name + kBlockedSuffix);
  Expr zps = ir::cast(i32, x_zero_point) + Expr(shift_of(x.dtype(), layout.data));
  if (io.out_block > 0) {
    const int64_t yb = io.out_block;
    return compute({n, oc / yb, out[0], out[1], yb}, [&](Var b, Var ob, Var oy, Var ox, Var j) {
      Expr o = ob * c32(yb) + j;
      return blocked(b, o / c32(L), oy, ox, o % c32(L)) - zps * wsum(o);
    }, name);
  }
  return compute({n, oc, out[0], out[1]}, [&](Var b, Var o, Var oy, Var ox) {
    return blocked(b, o / c32(L), oy, ox, o % c32(L)) - zps * wsum(o);
  }, name);
}

Tensor depthwise_conv2d_int8(const Tensor& x, const Tensor& w, const Expr& x_zero_point, const ConvNdAttrs& a,
                             int64_t row_multiple, const std::string& name) {
  DataType xt = x.dtype();
  KILN_USER_CHECK(xt == DataType::i8() || xt == DataType::u8())
      << name << ": data '" << x.name() << "' must be int8 or uint8, got " << xt.str();
  KILN_USER_CHECK(w.dtype() == DataType::i8() || w.dtype() == DataType::f32())
      << name << ": weight '" << w.name() << "' must be int8 (or its values as float32), got " << w.dtype().str();
  KILN_USER_CHECK(x_zero_point.dtype() == xt)
      << name << ": the data's zero point must be " << xt.str() << ", got " << x_zero_point.dtype().str();
  const bool blocked = x.ndim() == 5;
  KILN_USER_CHECK((x.ndim() == 4 || blocked) && w.ndim() == 4 && a.dims() == 2)
      << name << ": data '" << x.name() << "' and weight '" << w.name()
      << "' must be [N, C, H, W] and [OC, 1, KY, KX], or [N, C/b, H, W, b] and [C/b, KY, KX, b]";
  // |x - zero point| <= 255 and |w| <= 128: float32 holds every partial sum exactly while
  // taps * 255 * 128 stays below 2^24.
  const int64_t taps = blocked ? w.shape()[1] * w.shape()[2] : w.shape()[2] * w.shape()[3];
  const DataType acc = taps * 255 * 128 < (int64_t{1} << 24) ? DataType::f32() : DataType::i32();
  auto centered = [acc, zp = ir::cast(DataType::i32(), x_zero_point)](const Expr& v) {
    return ir::cast(acc, ir::cast(DataType::i32(), v) - zp);
  };
  if (x.ndim() == 5) return depthwise_conv2d_nchwc_mapped(x, w, a, name, centered, acc, DataType::i32());
  return depthwise_conv_nd_mapped(x, w, a, row_multiple, name, centered, acc, DataType::i32());
}

Tensor dense_int8(const Tensor& x, const Tensor& w, const Expr& x_zero_point, const Int8Layout& layout,
                  const std::string& name, const Tensor& weight_sums) {
  check_operands(x, w, x_zero_point, layout, name);
  KILN_USER_CHECK(x.ndim() >= 2 && w.ndim() == 2 && w.shape()[1] == x.shape().back())
      << name << ": data '" << x.name() << "' [..., M, K] and weight '" << w.name() << "' [N, K] disagree on K";
  return dense_int8_packed(x, pack_int8_weight(w, layout.lanes, layout.group, name), w.shape()[0], x_zero_point, layout, name,
                           weight_sums);
}

Tensor dense_int8_packed(const Tensor& x, const Tensor& wpack, int64_t nout, const Expr& x_zero_point,
                         const Int8Layout& layout, const std::string& name, const Tensor& weight_sums) {
  const int64_t k = x.shape().back(), L = layout.lanes, G = layout.group;
  const int64_t kg = round_up(k, G) / G, nblk = wpack.shape()[0];
  KILN_USER_CHECK(x.ndim() >= 2 && wpack.ndim() == 4 && wpack.shape()[1] == kg && wpack.shape()[2] == L &&
                  wpack.shape()[3] == G && nblk * L >= nout)
      << name << ": packed weight '" << wpack.name() << "' does not fit data '" << x.name() << "'";
  const size_t lead = x.ndim() - 1;
  std::vector<int64_t> pshape(x.shape().begin(), x.shape().end() - 1);
  pshape.push_back(kg);
  pshape.push_back(G);
  Tensor pack = compute(pshape, [&](const std::vector<Var>& v) {
    std::vector<Expr> idx(v.begin(), v.begin() + lead);
    Expr kk = v[lead] * c32(G) + v[lead + 1];
    if (k % G == 0) {
      idx.push_back(kk);
      return to_layout(x(idx), layout.data);
    }
    idx.push_back(ir::min(kk, c32(k - 1)));
    return to_layout(ir::select(kk < c32(k), x(idx), x_zero_point), layout.data);
  }, name + kInt8PackSuffix);
  Tensor wsum = weight_sums.defined() ? weight_sums : weight_sums_of(wpack, L, name);

  auto rb = reduce_axis(kg, "rb"), rk = reduce_axis(G, "rk");
  const DataType i32 = DataType::i32();
  std::vector<int64_t> bshape(x.shape().begin(), x.shape().end() - 1);
  bshape.push_back(nblk);
  bshape.push_back(L);
  Tensor blocked = compute(bshape, [&](const std::vector<Var>& v) {
    std::vector<Expr> xi(v.begin(), v.begin() + lead);
    xi.push_back(rb);
    xi.push_back(rk);
    return te::sum(ir::cast(i32, pack(xi)) * ir::cast(i32, wpack(v[lead], rb, v[lead + 1], rk)), {rb, rk});
  }, name + kBlockedSuffix);
  Expr zps = ir::cast(i32, x_zero_point) + Expr(shift_of(x.dtype(), layout.data));
  std::vector<int64_t> oshape(x.shape().begin(), x.shape().end() - 1);
  oshape.push_back(nout);
  return compute(oshape, [&](const std::vector<Var>& v) {
    std::vector<Expr> bi(v.begin(), v.begin() + lead);
    bi.push_back(v[lead] / c32(L));
    bi.push_back(v[lead] % c32(L));
    return blocked(bi) - zps * wsum(v[lead]);
  }, name);
}

}  // namespace kiln::te::ops
