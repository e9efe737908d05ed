// The lowering slots of the nn ops: relay attributes (as each op's attrs_doc describes them)
// turned into the op library's compute definitions.
#include "kiln/te/ops/register_b.h"

#include <string>

#include "kiln/relay/error.h"
#include "kiln/relay/op.h"
#include "kiln/relay/transforms.h"
#include "kiln/support/error.h"
#include "kiln/te/ops/lowering.h"
#include "kiln/te/ops/nn_conv.h"
#include "kiln/te/ops/nn_dense.h"
#include "kiln/te/ops/nn_image.h"
#include "kiln/te/ops/nn_norm.h"
#include "kiln/te/ops/nn_pool.h"
#include "kiln/te/ops/nn_scan.h"
#include "kiln/te/ops/nn_winograd.h"

namespace kiln::te::ops {

namespace {

using relay::Attrs;
using Inputs = std::vector<Tensor>;

// The output shape te can hold: a relay scalar becomes [1].
std::vector<int64_t> te_shape(const relay::Shape& s) { return s.empty() ? std::vector<int64_t>{1} : s; }

// The lowering must produce the call's type exactly (a lowering bug otherwise).
void check_result(const std::string& op, const Tensor& t, const relay::Type& type) {
  const auto* tt = type.as<relay::TensorTypeNode>();
  KILN_CHECK(tt != nullptr) << op << ": expected a tensor type, got " << type.str();
  KILN_CHECK(t.shape() == te_shape(tt->shape) && t.dtype() == tt->dtype)
      << op << ": lowering produced " << t.dtype().str() << " " << relay::shape_str(t.shape()) << " for "
      << type.str();
}

// Wraps a one-output lowering with the arity and result checks every op needs.
void set_single(const std::string& op, size_t min_args, size_t max_args,
                std::function<Tensor(const Inputs&, const Attrs&)> f) {
  FLower lower = [op, min_args, max_args, f](const Inputs& in, const Attrs& attrs, const relay::Type& type) {
    KILN_CHECK(in.size() >= min_args && in.size() <= max_args) << op << ": " << in.size() << " inputs";
    Tensor t = f(in, attrs);
    check_result(op, t, type);
    return std::vector<Tensor>{t};
  };
  relay::set_op_lowering(op, lower);
}

ConvNdAttrs conv_attrs(const Attrs& a, bool transpose) {
  ConvNdAttrs c;
  c.strides = a.get_ints("strides");
  c.padding = a.get_ints("padding");
  c.dilation = a.get_ints("dilation");
  c.groups = a.get_int("groups");
  if (transpose) c.output_padding = a.get_ints("output_padding");
  return c;
}

PoolNdAttrs pool_attrs(const Attrs& a) {
  PoolNdAttrs p;
  p.kernel = a.get_ints("kernel");
  p.strides = a.get_ints("strides");
  p.padding = a.get_ints("padding");
  p.dilation = a.get_ints("dilation");
  p.ceil_mode = a.get_int("ceil_mode") != 0;
  p.count_include_pad = a.get_int("count_include_pad", 0) != 0;
  p.p = a.get_int("p", 2);
  return p;
}

void register_convs() {
  for (int d = 1; d <= 3; ++d) {
    std::string base = "conv" + std::to_string(d) + "d";
    set_single("nn." + base, 2, 2, [base](const Inputs& in, const Attrs& a) {
      ConvNdAttrs c = conv_attrs(a, false);
      // One input channel per group: a block of output channels would span groups.
      if (c.groups > 1 && in[1].shape()[1] == 1) return depthwise_conv_nd(in[0], in[1], c, "dw" + base);
      return conv_nd(in[0], in[1], c, 0, base);
    });
    set_single("nn." + base + "_transpose", 2, 2, [base](const Inputs& in, const Attrs& a) {
      return conv_transpose_nd(in[0], in[1], conv_attrs(a, true), base + "_transpose");
    });
  }
}

// "NCHW" -> 0, "NCHW16c" -> 16 (alter_layout's layout strings).
int64_t layout_block(const std::string& layout, const std::string& op) {
  if (layout == "NCHW") return 0;
  KILN_USER_CHECK(layout.size() > 5 && layout.compare(0, 4, "NCHW") == 0 && layout.back() == 'c')
      << op << ": layout '" << layout << "' is not NCHW or NCHW<x>c";
  return std::stoll(layout.substr(4, layout.size() - 5));
}

// The blocked convolution and the layout transforms of relay::alter_layout. That pass registers
// both ops on its first use, so they are made to exist here first (a module without calls
// passes through it unchanged).
void register_blocked_layout() {
  if (!relay::find_op("nn.conv2d_NCHWc") || !relay::find_op("layout_transform")) {
    relay::Expr v = relay::make_var("x", relay::tensor_type(ir::DataType::f32(), {1}));
    relay::alter_layout(relay::Module::make({v}, {v}, {"x"}));
  }
  if (relay::find_op("nn.conv2d_NCHWc")) {
    set_single("nn.conv2d_NCHWc", 2, 2, [](const Inputs& in, const Attrs& a) {
      return conv2d_nchwc(in[0], in[1], conv_attrs(a, false));
    });
  }
  if (relay::find_op("layout_transform")) {
    set_single("layout_transform", 1, 1, [](const Inputs& in, const Attrs& a) {
      const std::string op = "layout_transform";
      int64_t src = layout_block(a.get_str("src_layout"), op), dst = layout_block(a.get_str("dst_layout"), op);
      const Tensor& x = in[0];
      std::vector<int64_t> nchw = x.shape();
      if (src) nchw = {nchw[0], nchw[1] * src, nchw[2], nchw[3]};
      std::vector<int64_t> shape = nchw;
      if (dst) shape = {nchw[0], nchw[1] / dst, nchw[2], nchw[3], dst};
      return compute(shape, [&](const std::vector<ir::Var>& v) {
        ir::Expr c = dst ? v[1] * static_cast<int>(dst) + v[4] : ir::Expr(v[1]);
        if (!src) return x({v[0], c, v[2], v[3]});
        return x({v[0], c / static_cast<int>(src), v[2], v[3], c % static_cast<int>(src)});
      }, "layout_transform");
    });
  }
}

void register_pools() {
  for (int d = 1; d <= 3; ++d) {
    std::string dim = std::to_string(d) + "d";
    set_single("nn.max_pool" + dim, 1, 1, [dim](const Inputs& in, const Attrs& a) {
      return max_pool_nd(in[0], pool_attrs(a), "max_pool" + dim);
    });
    set_single("nn.avg_pool" + dim, 1, 1, [dim](const Inputs& in, const Attrs& a) {
      return avg_pool_nd(in[0], pool_attrs(a), "avg_pool" + dim);
    });
    set_single("nn.lp_pool" + dim, 1, 1, [dim](const Inputs& in, const Attrs& a) {
      return lp_pool_nd(in[0], pool_attrs(a), "lp_pool" + dim);
    });
  }
  set_single("nn.global_avg_pool", 1, 1, [](const Inputs& in, const Attrs&) { return global_avg_pool(in[0]); });
  set_single("nn.global_max_pool", 1, 1, [](const Inputs& in, const Attrs&) { return global_max_pool(in[0]); });
}

void register_products() {
  set_single("nn.dense", 2, 2, [](const Inputs& in, const Attrs&) { return dense(in[0], in[1]); });
  set_single("nn.matmul", 2, 2, [](const Inputs& in, const Attrs&) { return batch_matmul(in[0], in[1]); });
  set_single("einsum", 1, 64, [](const Inputs& in, const Attrs& a) { return einsum(a.get_str("equation"), in); });
}

void register_norms() {
  set_single("nn.batch_norm", 5, 5, [](const Inputs& in, const Attrs& a) {
    return batch_norm_inference(in[0], in[1], in[2], in[3], in[4], a.get_int("axis"), a.get_float("epsilon"));
  });
  set_single("nn.layer_norm", 2, 3, [](const Inputs& in, const Attrs& a) {
    return layer_norm(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), a.get_int("axis"), a.get_float("epsilon"));
  });
  set_single("nn.instance_norm", 3, 3, [](const Inputs& in, const Attrs& a) {
    return instance_norm(in[0], in[1], in[2], a.get_float("epsilon"));
  });
  set_single("nn.group_norm", 3, 3, [](const Inputs& in, const Attrs& a) {
    return group_norm(in[0], in[1], in[2], a.get_int("num_groups"), a.get_float("epsilon"));
  });
  set_single("nn.lrn", 1, 1, [](const Inputs& in, const Attrs& a) {
    return lrn(in[0], a.get_int("size"), a.get_float("alpha"), a.get_float("beta"), a.get_float("bias"));
  });
  set_single("nn.softmax", 1, 1, [](const Inputs& in, const Attrs& a) { return softmax(in[0], a.get_int("axis")); });
  set_single("nn.log_softmax", 1, 1,
             [](const Inputs& in, const Attrs& a) { return log_softmax(in[0], a.get_int("axis")); });
}

void register_image() {
  set_single("image.resize", 1, 1, [](const Inputs& in, const Attrs& a) {
    ResizeAttrs r;
    r.sizes = a.get_ints("sizes");
    r.scales = a.get_floats("scales");
    r.mode = a.get_str("mode");
    r.coordinate_transformation_mode = a.get_str("coordinate_transformation_mode");
    r.nearest_mode = a.get_str("nearest_mode");
    r.cubic_coeff_a = a.get_float("cubic_coeff_a");
    r.exclude_outside = a.get_int("exclude_outside") != 0;
    r.extrapolation_value = a.get_float("extrapolation_value");
    r.roi = a.get_floats("roi");
    return resize(in[0], r);
  });
}

void register_opaque() {
  set_single("cumsum", 1, 1, [](const Inputs& in, const Attrs& a) {
    return cumsum(in[0], a.get_int("axis"), a.get_int("exclusive") != 0, a.get_int("reverse") != 0);
  });
  FLower top = [](const Inputs& in, const Attrs& a, const relay::Type& type) {
    KILN_CHECK(in.size() == 1) << "topk: " << in.size() << " inputs";
    std::vector<Tensor> out = topk(in[0], a.get_int("k"), a.get_int("axis"), a.get_int("largest") != 0);
    const auto* tt = type.as<relay::TupleTypeNode>();
    KILN_CHECK(tt && tt->fields.size() == 2) << "topk: expected a pair type, got " << type.str();
    check_result("topk", out[0], tt->fields[0]);
    check_result("topk", out[1], tt->fields[1]);
    return out;
  };
  relay::set_op_lowering("topk", top);
  set_single("scatter_elements", 3, 3, [](const Inputs& in, const Attrs& a) {
    return scatter_elements(in[0], in[1], in[2], a.get_int("axis"), a.get_str("reduction", "none"));
  });
  set_single("scatter_nd", 3, 3, [](const Inputs& in, const Attrs& a) {
    return scatter_nd(in[0], in[1], in[2], a.get_str("reduction", "none"));
  });
}

}  // namespace

std::optional<WeightPrepack> weight_prepack(const relay::CallNode& call, bool winograd) {
  const std::string& op = call.op_name();
  bool is_conv = op == "nn.conv1d" || op == "nn.conv2d" || op == "nn.conv3d";
  if (!is_conv && op != "nn.dense") return std::nullopt;
  if (call.args.size() != 2) return std::nullopt;
  const auto* w = call.args[1]->type.as<relay::TensorTypeNode>();
  const auto* out = call.type.as<relay::TensorTypeNode>();
  if (!w || !out) return std::nullopt;
  WeightPrepack p;
  p.input = 1;
  if (op == "nn.dense") {
    int64_t n = out->shape[1];
    p.pack = [](const relay::HostTensor& t) { return pack_dense_weight(t); };
    p.lower = [op, n](const Inputs& in, const Attrs&, const relay::Type& type) {
      Tensor t = dense_packed(in[0], in[1], n);
      check_result(op, t, type);
      return std::vector<Tensor>{t};
    };
    return p;
  }
  int64_t groups = call.attrs.get_int("groups");
  if (groups > 1 && w->shape[1] == 1) return std::nullopt;  // depthwise: read as is
  std::string base = op.substr(3);
  int64_t oc = out->shape[1];
  bool wino = winograd && op == "nn.conv2d" && w->dtype == relay::DataType::f32() && out->shape.size() == 4 &&
              winograd_applies(oc, w->shape[1], w->shape[2], w->shape[3], conv_attrs(call.attrs, false),
                               out->shape[2], out->shape[3]);
  if (wino) p.pack = [](const relay::HostTensor& t) { return pack_winograd_weight(t); };
  else p.pack = [groups](const relay::HostTensor& t) { return pack_conv_weight(t, groups); };
  p.lower = [op, base, oc, wino](const Inputs& in, const Attrs& attrs, const relay::Type& type) {
    ConvNdAttrs a = conv_attrs(attrs, false);
    Tensor t = wino ? conv2d_winograd_packed(in[0], in[1], oc, a, base) : conv_nd_packed(in[0], in[1], oc, a, base);
    check_result(op, t, type);
    return std::vector<Tensor>{t};
  };
  return p;
}

void register_lowerings_b() {
  register_convs();
  register_blocked_layout();
  register_pools();
  register_products();
  register_norms();
  register_image();
  register_opaque();
}

}  // namespace kiln::te::ops
