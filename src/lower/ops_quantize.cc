// Lowerings of quantize and dequantize (relay/op/quantize.cc) to the op library's computes
// (te/ops/nn_quantize.h). A relay scalar scale or zero point is a te tensor of shape {1}: the
// per-tensor case.
#include "kiln/te/ops/nn_quantize.h"
#include "op_table.h"

namespace kiln::lower::detail {

void add_quantize_lowerings() {
  set_lowering("quantize", [](const std::vector<Tensor>& in, const relay::Attrs& a,
                              const relay::Type& out) -> std::vector<Tensor> {
    return {quantize(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), a.get_int("axis"), out_dtype(out))};
  });
  set_lowering("dequantize", [](const std::vector<Tensor>& in, const relay::Attrs& a,
                                const relay::Type&) -> std::vector<Tensor> {
    return {dequantize(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), a.get_int("axis"))};
  });
}

}  // namespace kiln::lower::detail
