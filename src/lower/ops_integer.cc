// Lowerings of the integer conv and dense (relay/op/integer.cc) for every target: the op
// library's int8 computes in the plain layout of four lanes of uint8 (no instruction behind it;
// the CPU strategy picks the target's own layout and tensorizes: strategy_cpu.cc).
#include "kiln/te/ops/nn_int8.h"
#include "op_table.h"

namespace kiln::lower::detail {

ir::Expr scalar_value(const te::Tensor& t) {
  return t(std::vector<ir::Expr>(static_cast<size_t>(t.ndim()), ir::Expr(0)));
}

void add_integer_lowerings() {
  const Int8Layout plain{4, ir::DataType::u8(), 4};
  set_lowering("nn.conv2d_integer", [plain](const std::vector<Tensor>& in, const relay::Attrs& a, const relay::Type&) {
    return std::vector<Tensor>{
        conv2d_int8(in[0], in[1], scalar_value(in[2]), conv_attrs(a, false), plain, "conv_int8", in[3])};
  });
  set_lowering("nn.dense_integer", [plain](const std::vector<Tensor>& in, const relay::Attrs&, const relay::Type&) {
    return std::vector<Tensor>{dense_int8(in[0], in[1], scalar_value(in[2]), plain, "dense_int8", in[3])};
  });
}

}  // namespace kiln::lower::detail
