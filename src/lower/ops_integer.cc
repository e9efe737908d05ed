// Lowerings of the integer conv and dense (relay/op/integer.cc) for every target: the op
// library's int8 computes in the plain layout of four lanes of uint8 (no instruction behind it;
// the CPU strategy picks the target's own layout and tensorizes: strategy_cpu.cc); a depthwise
// conv sums its windows exactly in float32 or int32 (nn_int8.h).
#include "kiln/te/ops/nn_int8.h"
#include "op_table.h"

namespace kiln::lower::detail {

ir::Expr scalar_value(const te::Tensor& t) {
  return t(std::vector<ir::Expr>(static_cast<size_t>(t.ndim()), ir::Expr(0)));
}

Int8ConvIO integer_conv_io(const std::string& op, const relay::Attrs& a) {
  if (op != "nn.conv2d_integer_NCHWc") return {};
  return {layout_block(a.get_str("data_layout")), layout_block(a.get_str("out_layout"))};
}

Tensor block_depthwise_weight(const Tensor& w, int64_t b, const std::string& name) {
  return te::compute({w.shape()[0] / b, w.shape()[2], w.shape()[3], b}, [&](ir::Var cb, ir::Var ky, ir::Var kx, ir::Var j) {
    return w(cb * ir::Expr(static_cast<int>(b)) + j, 0, ky, kx);
  }, name + kPackSuffix);
}

void add_integer_lowerings() {
  const Int8Layout plain{4, ir::DataType::u8(), 4};
  for (const char* op : {"nn.conv2d_integer", "nn.conv2d_integer_NCHWc"}) {
    set_lowering(op, [plain, op](const std::vector<Tensor>& in, const relay::Attrs& a, const relay::Type&) {
      const ConvNdAttrs ca = conv_attrs(a, false);
      const Int8ConvIO io = integer_conv_io(op, a);
      if (ca.groups > 1) {
        Tensor w = io.in_block ? block_depthwise_weight(in[1], io.in_block, "dwconv_int8") : in[1];
        return std::vector<Tensor>{depthwise_conv2d_int8(in[0], w, scalar_value(in[2]), ca, 1)};
      }
      return std::vector<Tensor>{conv2d_int8(in[0], in[1], scalar_value(in[2]), ca, plain, "conv_int8", in[3], io)};
    });
  }
  set_lowering("nn.dense_integer", [plain](const std::vector<Tensor>& in, const relay::Attrs&, const relay::Type&) {
    return std::vector<Tensor>{dense_int8(in[0], in[1], scalar_value(in[2]), plain, "dense_int8", in[3])};
  });
}

}  // namespace kiln::lower::detail
