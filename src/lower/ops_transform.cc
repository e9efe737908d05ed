// Lowerings of the injective ops: reshape, transpose, concatenate, split, strided_slice,
// broadcast_to, tile, pad, depth_to_space / space_to_depth, trilu, take, gather_elements,
// gather_nd, one_hot.
#include "kiln/support/error.h"
#include "kiln/te/ops/transform.h"
#include "op_table.h"

namespace kiln::lower::detail {

namespace {

using relay::Attrs;
using Lowered = std::vector<Tensor>;
using Inputs = std::vector<Tensor>;

PadMode pad_mode(const std::string& mode) {
  if (mode == "constant") return PadMode::Constant;
  if (mode == "reflect") return PadMode::Reflect;
  if (mode == "edge") return PadMode::Edge;
  KILN_USER_CHECK(mode == "wrap") << "unknown pad mode '" << mode << "'";
  return PadMode::Wrap;
}

}  // namespace

int64_t layout_block(const std::string& s) {
  if (s == "NCHW") return 0;
  bool ok = s.size() > 5 && s.compare(0, 4, "NCHW") == 0 && s.back() == 'c' &&
            s.substr(4, s.size() - 5).find_first_not_of("0123456789") == std::string::npos;
  KILN_USER_CHECK(ok) << "layout '" << s << "' is not NCHW or NCHW<x>c";
  return std::stoll(s.substr(4, s.size() - 5));
}

void add_transform_lowerings() {
  set_lowering("layout_transform", [](const Inputs& in, const Attrs& a, const relay::Type&) -> Lowered {
    return {layout_transform(in[0], layout_block(a.get_str("src_layout")), layout_block(a.get_str("dst_layout")),
                             "layout_transform")};
  });
  set_lowering("reshape", [](const Inputs& in, const Attrs&, const relay::Type& out) -> Lowered {
    return {reshape(in[0], te_shape(out), "reshape")};
  });
  set_lowering("transpose", [](const Inputs& in, const Attrs& a, const relay::Type&) -> Lowered {
    const auto& axes = a.get_ints("axes");
    if (scalar_with_empty_axes(in[0], axes.size())) return {copy(in[0], "transpose")};
    return {transpose(in[0], axes, "transpose")};
  });
  set_lowering("concatenate", [](const Inputs& in, const Attrs& a, const relay::Type&) -> Lowered {
    return {concatenate(in, a.get_int("axis"), "concatenate")};
  });
  set_lowering("split", [](const Inputs& in, const Attrs& a, const relay::Type&) -> Lowered {
    return split(in[0], a.get_int("axis"), a.get_ints("sizes"), "split");
  });
  set_lowering("strided_slice", [](const Inputs& in, const Attrs& a, const relay::Type&) -> Lowered {
    const auto& begin = a.get_ints("begin");
    if (scalar_with_empty_axes(in[0], begin.size())) return {copy(in[0], "strided_slice")};
    return {strided_slice(in[0], begin, a.get_ints("end"), a.get_ints("strides"), "strided_slice")};
  });
  set_lowering("broadcast_to", [](const Inputs& in, const Attrs&, const relay::Type& out) -> Lowered {
    return {broadcast_to(in[0], te_shape(out), "broadcast_to")};
  });
  set_lowering("tile", [](const Inputs& in, const Attrs& a, const relay::Type&) -> Lowered {
    const auto& reps = a.get_ints("reps");
    if (scalar_with_empty_axes(in[0], reps.size())) return {copy(in[0], "tile")};
    return {tile(in[0], reps, "tile")};
  });
  set_lowering("nn.pad", [](const Inputs& in, const Attrs& a, const relay::Type&) -> Lowered {
    const auto& pads = a.get_ints("pad_width");
    PadMode mode = pad_mode(a.get_str("mode"));
    if (scalar_with_empty_axes(in[0], pads.size())) return {copy(in[0], "pad")};
    size_t r = pads.size() / 2;
    std::vector<int64_t> before(pads.begin(), pads.begin() + r), after(pads.begin() + r, pads.end());
    return {pad_with(in[0], before, after, mode, a.get_float("pad_value"), "pad")};
  });
  set_lowering("nn.depth_to_space", [](const Inputs& in, const Attrs& a, const relay::Type&) -> Lowered {
    const std::string& mode = a.get_str("mode");
    KILN_USER_CHECK(mode == "DCR" || mode == "CRD") << "mode must be DCR or CRD, got '" << mode << "'";
    return {depth_to_space(in[0], a.get_int("block_size"), mode == "CRD", "depth_to_space")};
  });
  set_lowering("nn.space_to_depth", [](const Inputs& in, const Attrs& a, const relay::Type&) -> Lowered {
    return {space_to_depth(in[0], a.get_int("block_size"), "space_to_depth")};
  });
  set_lowering("trilu", [](const Inputs& in, const Attrs& a, const relay::Type&) -> Lowered {
    return {trilu(in[0], a.get_int("upper") != 0, a.get_int("k"), "trilu")};
  });
  set_lowering("take", [](const Inputs& in, const Attrs& a, const relay::Type&) -> Lowered {
    return {take(in[0], in[1], a.get_int("axis"), "take")};
  });
  set_lowering("gather_elements", [](const Inputs& in, const Attrs& a, const relay::Type&) -> Lowered {
    return {gather_elements(in[0], in[1], a.get_int("axis"), "gather_elements")};
  });
  set_lowering("gather_nd", [](const Inputs& in, const Attrs& a, const relay::Type&) -> Lowered {
    return {gather_nd(in[0], in[1], a.get_int("batch_dims"), "gather_nd")};
  });
  set_lowering("one_hot", [](const Inputs& in, const Attrs& a, const relay::Type& out) -> Lowered {
    // A scalar index (te {1}) puts the depth axis at 0 or 1 of a {1, depth} / {depth, 1} result
    // that the wrapper reshapes to [depth].
    int64_t axis = a.get_int("axis");
    const auto* tt = out.as<relay::TensorTypeNode>();
    if (tt && tt->rank() == 1) axis = 0;
    return {one_hot(in[0], in[1], a.get_int("depth"), axis, "one_hot")};
  });
}

}  // namespace kiln::lower::detail
