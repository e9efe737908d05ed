// Convolutions over 1 to 3 spatial dims, NC[D]HW data and OI[D]HW weights, and their
// transposes (weights IO[D]HW). Padding is explicit: ONNX auto_pad is resolved by the importer.
#include <utility>

#include "kiln/support/error.h"
#include "op_families.h"
#include "op_util.h"

namespace kiln::relay {

namespace {

struct Window {
  std::vector<int64_t> strides, padding, dilation;
};

Window read_window(const Attrs& attrs, size_t d) {
  Window w{attrs.get_ints("strides"), attrs.get_ints("padding"), attrs.get_ints("dilation")};
  check_count(w.strides, d, "strides");
  check_count(w.padding, 2 * d, "padding");
  check_count(w.dilation, d, "dilation");
  for (size_t i = 0; i < d; ++i) {
    KILN_USER_CHECK(w.strides[i] >= 1) << "strides " << shape_str(w.strides) << " must be positive";
    KILN_USER_CHECK(w.dilation[i] >= 1) << "dilation " << shape_str(w.dilation) << " must be positive";
  }
  return w;
}

// Data and weight of a d-dimensional (transposed) convolution: floating (or int32, where
// `int32_too`: ConvInteger sums int32 products), one dtype, rank d + 2.
std::pair<const TensorTypeNode*, const TensorTypeNode*> conv_operands(const std::vector<Type>& args, size_t d,
                                                                      bool int32_too) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const TensorTypeNode& w = tensor_arg(args, 1, "weight");
  if (int32_too) {
    KILN_USER_CHECK(x.dtype.is_floating() || x.dtype == DataType::i32())
        << "data must be floating-point or int32, got " << x.dtype.str();
  } else {
    check_floating(x, "data");
  }
  check_same_dtype(x, w, "data and weight");
  KILN_USER_CHECK(x.rank() == static_cast<int64_t>(d + 2))
      << "data must have rank " << d + 2 << " (N, C and " << d << " spatial dims), got " << shape_str(x.shape);
  KILN_USER_CHECK(w.rank() == x.rank()) << "weight must have rank " << x.rank() << ", got " << shape_str(w.shape);
  return {&x, &w};
}

TypeRelation conv_rel(size_t d) {
  return [d](const std::vector<Type>& args, const Attrs& attrs) -> Type {
    auto [xp, wp] = conv_operands(args, d, true);
    const TensorTypeNode& x = *xp;
    const TensorTypeNode& w = *wp;
    Window win = read_window(attrs, d);
    int64_t groups = attrs.get_int("groups");
    KILN_USER_CHECK(groups >= 1 && x.shape[1] % groups == 0 && w.shape[0] % groups == 0)
        << "groups " << groups << " must divide input channels " << x.shape[1] << " and output channels " << w.shape[0];
    KILN_USER_CHECK(w.shape[1] * groups == x.shape[1])
        << "weight " << shape_str(w.shape) << " expects " << w.shape[1] * groups << " input channels (" << w.shape[1]
        << " x groups " << groups << "), data has " << x.shape[1];
    Shape out = {x.shape[0], w.shape[0]};
    for (size_t i = 0; i < d; ++i) {
      int64_t padded = x.shape[2 + i] + win.padding[i] + win.padding[d + i];
      int64_t ext = win.dilation[i] * (w.shape[2 + i] - 1) + 1;
      KILN_USER_CHECK(padded >= ext) << "kernel of extent " << ext << " is larger than the padded input (" << padded
                                     << ") on spatial axis " << i;
      out.push_back((padded - ext) / win.strides[i] + 1);
    }
    return tensor_type(x.dtype, out);
  };
}

TypeRelation conv_transpose_rel(size_t d) {
  return [d](const std::vector<Type>& args, const Attrs& attrs) -> Type {
    auto [xp, wp] = conv_operands(args, d, false);
    const TensorTypeNode& x = *xp;
    const TensorTypeNode& w = *wp;
    Window win = read_window(attrs, d);
    std::vector<int64_t> out_pad = attrs.get_ints("output_padding");
    check_count(out_pad, d, "output_padding");
    int64_t groups = attrs.get_int("groups");
    KILN_USER_CHECK(groups >= 1 && x.shape[1] % groups == 0) << "groups " << groups << " must divide input channels "
                                                             << x.shape[1];
    KILN_USER_CHECK(w.shape[0] == x.shape[1])
        << "weight " << shape_str(w.shape) << " expects " << w.shape[0] << " input channels, data has " << x.shape[1];
    Shape out = {x.shape[0], w.shape[1] * groups};
    for (size_t i = 0; i < d; ++i) {
      int64_t ext = win.dilation[i] * (w.shape[2 + i] - 1) + 1;
      int64_t o = win.strides[i] * (x.shape[2 + i] - 1) + out_pad[i] + ext - win.padding[i] - win.padding[d + i];
      KILN_USER_CHECK(o >= 1) << "output size " << o << " on spatial axis " << i << " is not positive";
      out.push_back(o);
    }
    return tensor_type(x.dtype, out);
  };
}

}  // namespace

void register_conv_ops() {
  const std::string doc =
      "strides (ints, d), padding (ints, 2d: all begins then all ends), dilation (ints, d), groups (int)";
  for (size_t d = 1; d <= 3; ++d) {
    std::string dim = std::to_string(d) + "d";
    register_op("nn.conv" + dim, 2, 2, OpPattern::OutElementwiseFusable, conv_rel(d),
                "conv(data NC*, weight OI*), floating or int32: " + doc);
    register_op("nn.conv" + dim + "_transpose", 2, 2, OpPattern::OutElementwiseFusable, conv_transpose_rel(d),
                "conv_transpose(data NC*, weight IO*): " + doc + ", output_padding (ints, d)");
  }
}

}  // namespace kiln::relay
