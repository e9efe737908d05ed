// Shape manipulation and data movement: everything static is resolved here (-1 and 0 in
// Reshape, negative axes, Slice bounds clamped, Expand's bidirectional broadcast).
#include <algorithm>

#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

Expr reshape_to(NodeContext& c, const Expr& x, const Shape& shape) {
  return c.call("reshape", {x}, Attrs().set_ints("newshape", shape));
}

std::vector<Expr> reshape(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "data");
  // Reshape-1 (opsets 1 to 4) takes the shape as an attribute.
  std::vector<int64_t> spec = c.opset() < 5 ? c.attr_ints("shape") : c.const_ints(1, "shape");
  bool allowzero = c.attr_int("allowzero", 0) != 0;
  Shape out;
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allowzero) {
      KILN_USER_CHECK(static_cast<int64_t>(i) < x.rank()) << "shape " << shape_str(spec) << " copies dim " << i
                                                          << " of an input of rank " << x.rank();
      d = x.shape[i];
    }
    if (d == -1) {
      KILN_USER_CHECK(infer < 0) << "shape " << shape_str(spec) << " has more than one -1";
      infer = static_cast<int64_t>(i);
      d = 1;
    } else {
      KILN_USER_CHECK(d >= 0) << "shape " << shape_str(spec) << " has a negative dim";
      known *= d;
    }
    out.push_back(d);
  }
  if (infer >= 0) {
    KILN_USER_CHECK(known > 0 && x.num_elements() % known == 0)
        << "cannot reshape " << shape_str(x.shape) << " to " << shape_str(spec);
    out[infer] = x.num_elements() / known;
  }
  return {reshape_to(c, c.input(0), out)};
}

std::vector<Expr> flatten(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += x.rank();
  KILN_USER_CHECK(axis >= 0 && axis <= x.rank()) << "axis " << c.attr_int("axis", 1) << " is out of range for rank "
                                                 << x.rank();
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.shape[i];
  int64_t inner = 1;
  for (int64_t i = axis; i < x.rank(); ++i) inner *= x.shape[i];
  return {reshape_to(c, c.input(0), {outer, inner})};
}

std::vector<Expr> squeeze(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  std::vector<int64_t> axes = c.opset() >= 13 ? (c.has_input(1) ? c.const_ints(1, "axes") : std::vector<int64_t>{})
                                              : c.attr_ints("axes", {});
  if (axes.empty()) {
    for (int64_t i = 0; i < x.rank(); ++i)
      if (x.shape[i] == 1) axes.push_back(i);
  }
  axes = normalize_axes_for(axes, x.rank(), c);
  Shape out;
  for (int64_t i = 0; i < x.rank(); ++i) {
    bool drop = std::binary_search(axes.begin(), axes.end(), i);
    KILN_USER_CHECK(!drop || x.shape[i] == 1) << "cannot squeeze axis " << i << " of size " << x.shape[i];
    if (!drop) out.push_back(x.shape[i]);
  }
  return {reshape_to(c, c.input(0), out)};
}

std::vector<Expr> unsqueeze(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  std::vector<int64_t> axes = c.opset() >= 13 ? c.const_ints(1, "axes") : c.attr_ints("axes");
  int64_t rank = x.rank() + static_cast<int64_t>(axes.size());
  axes = normalize_axes_for(axes, rank, c);
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::binary_search(axes.begin(), axes.end(), i)) {
      out.push_back(1);
    } else {
      out.push_back(x.shape[next++]);
    }
  }
  return {reshape_to(c, c.input(0), out)};
}

std::vector<Expr> transpose(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  std::vector<int64_t> perm;
  for (int64_t i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  perm = c.attr_ints("perm", perm);
  for (auto& p : perm) p = normalize_axis_for(p, x.rank(), c, "perm entry");
  return {c.call("transpose", {c.input(0)}, Attrs().set_ints("axes", perm))};
}

std::vector<Expr> concat(NodeContext& c) {
  std::vector<Expr> args;
  for (size_t i = 0; i < c.num_inputs(); ++i) args.push_back(c.input(i));
  KILN_USER_CHECK(!args.empty()) << "needs at least one input";
  // Concat-1 (opsets 1 to 3) has axis 1 by default.
  int64_t axis = c.opset() < 4 ? c.attr_int("axis", 1) : c.attr_int("axis");
  axis = normalize_axis_for(axis, args[0].tensor_type().rank(), c);
  // Parts with no elements along the axis add nothing (a rotary embedding over the whole head
  // concatenates an empty "not rotated" part): dropping them keeps empty tensors out of kernels.
  std::vector<Expr> nonempty;
  for (const Expr& a : args) {
    const auto& t = a.tensor_type();
    if (axis >= t.rank() || t.shape[axis] != 0) nonempty.push_back(a);
  }
  if (!nonempty.empty() && nonempty.size() < args.size()) args = nonempty;
  if (args.size() == 1) return {args[0]};
  return {c.call("concatenate", args, Attrs().set_int("axis", axis))};
}

std::vector<Expr> split(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  int64_t axis = normalize_axis_for(c.attr_int("axis", 0), x.rank(), c);
  int64_t dim = x.shape[axis], n = static_cast<int64_t>(c.num_outputs());
  // The sizes are an optional input in Split-1 and from opset 13, an attribute in between (and
  // also in Split-1).
  bool as_input = (c.opset() >= 13 || c.opset() < 2) && c.has_input(1);
  std::vector<int64_t> sizes = as_input ? c.const_ints(1, "split") : c.attr_ints("split", {});
  if (sizes.empty()) {
    if (c.has_attr("num_outputs")) {
      // Opset 18: equal chunks of ceil(dim / n), the last one smaller.
      n = c.attr_int("num_outputs");
      KILN_USER_CHECK(n >= 1) << "num_outputs must be positive";
      int64_t chunk = (dim + n - 1) / n;
      for (int64_t i = 0; i < n; ++i) sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
    } else {
      KILN_USER_CHECK(n >= 1 && dim % n == 0) << "cannot split dim " << dim << " into " << n << " equal parts";
      sizes.assign(static_cast<size_t>(n), dim / n);
    }
  }
  KILN_USER_CHECK(static_cast<int64_t>(sizes.size()) == n)
      << "split " << shape_str(sizes) << " does not give the node's " << n << " outputs";
  // Zero-size parts are empty constants, split off nothing: kernels have no empty tensors, and
  // such a part is usually only concatenated back (Concat drops it) or unused.
  std::vector<int64_t> nonzero;
  for (int64_t s : sizes)
    if (s != 0) nonzero.push_back(s);
  Expr parts;
  // A constant input splits into constant slices: shape arithmetic (Split of a shape) folds on,
  // where a tuple would not fold.
  bool fold = c.const_input(0).has_value();
  if (nonzero.size() > 1 && !fold)
    parts = c.call("split", {c.input(0)}, Attrs().set_int("axis", axis).set_ints("sizes", nonzero));
  std::vector<Expr> outs;
  int part = 0;
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    offset += sizes[i];
    if (fold && sizes[i] != 0) {
      std::vector<int64_t> begin(x.rank(), 0), end = x.shape, stride(x.rank(), 1);
      begin[axis] = offset - sizes[i];
      end[axis] = offset;
      Attrs a = Attrs().set_ints("begin", begin).set_ints("end", end).set_ints("strides", stride);
      outs.push_back(c.call("strided_slice", {c.input(0)}, a));
    } else if (sizes[i] == 0) {
      Shape empty = x.shape;
      empty[axis] = 0;
      outs.push_back(c.constant(HostTensor(x.dtype, empty, std::vector<uint8_t>{})));
    } else {
      outs.push_back(parts.defined() ? make_tuple_get_item(parts, part++) : c.input(0));
    }
  }
  return outs;
}

// Slice bounds, clamped as the spec says: a forward slice into [0, dim], a backward one from
// [0, dim-1] down to [-1, dim-1] (-1 meaning "through element 0").
std::vector<Expr> slice(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "data");
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() >= 10) {
    starts = c.const_ints(1, "starts");
    ends = c.const_ints(2, "ends");
    if (c.has_input(3)) axes = c.const_ints(3, "axes");
    if (c.has_input(4)) steps = c.const_ints(4, "steps");
  } else {
    starts = c.attr_ints("starts");
    ends = c.attr_ints("ends");
    axes = c.attr_ints("axes", {});
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  KILN_USER_CHECK(ends.size() == starts.size() && axes.size() == starts.size() && steps.size() == starts.size())
      << "starts, ends, axes and steps must have one length";
  std::vector<int64_t> begin(x.rank(), 0), end = x.shape, stride(x.rank(), 1);
  std::vector<bool> seen(x.rank(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = normalize_axis_for(axes[i], x.rank(), c);
    KILN_USER_CHECK(!seen[a]) << "axis " << a << " is sliced twice";
    seen[a] = true;
    int64_t d = x.shape[a], s = steps[i], b = starts[i], e = ends[i];
    KILN_USER_CHECK(s != 0) << "step 0 on axis " << a;
    if (b < 0) b += d;
    if (e < 0) e += d;
    if (d == 0) {
      b = e = 0;
    } else if (s > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
    } else {
      b = std::clamp<int64_t>(b, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
    }
    begin[a] = b;
    end[a] = e;
    stride[a] = s;
  }
  return {c.call("strided_slice", {c.input(0)},
                 Attrs().set_ints("begin", begin).set_ints("end", end).set_ints("strides", stride))};
}

Converter gather_like(const std::string& op) {
  return [op](NodeContext& c) -> std::vector<Expr> {
    const TensorTypeNode& x = c.input_type(0, "data");
    Attrs a;
    if (op == "gather_nd") {
      a.set_int("batch_dims", c.attr_int("batch_dims", 0));
    } else {
      a.set_int("axis", normalize_axis_for(c.attr_int("axis", 0), x.rank(), c));
    }
    return {c.call(op, {c.input(0, "data"), c.input(1, "indices")}, a)};
  };
}

std::vector<Expr> expand(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0);
  std::vector<int64_t> shape = c.const_ints(1, "shape");
  // Expand broadcasts both ways: a 1 in `shape` keeps the input's dim.
  size_t n = std::max(shape.size(), x.shape.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t a = i < n - x.shape.size() ? 1 : x.shape[i - (n - x.shape.size())];
    int64_t b = i < n - shape.size() ? 1 : shape[i - (n - shape.size())];
    KILN_USER_CHECK(a == b || a == 1 || b == 1) << "cannot expand " << shape_str(x.shape) << " to " << shape_str(shape);
    out[i] = a == 1 ? b : a;
  }
  return {c.call("broadcast_to", {c.input(0)}, Attrs().set_ints("shape", out))};
}

std::vector<Expr> pad(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "data");
  std::string mode = c.attr_str("mode", "constant");
  std::vector<int64_t> pads;
  double value = 0;
  if (c.opset() < 11) {
    // Pad-1 called them paddings (ONNX 1.0's own test data already says pads: either is read).
    pads = c.attr_ints(c.opset() < 2 && !c.has_attr("pads") ? "paddings" : "pads");
    value = c.attr_float("value", 0.0);
  } else {
    pads = c.const_ints(1, "pads");
    if (c.has_input(2)) {
      HostTensor v = c.require_const(2, "constant_value");
      KILN_USER_CHECK(v.numel() == 1) << "constant_value must be a scalar, got " << v.str(4);
      value = v.double_at(0);
    }
    if (c.has_input(3)) {  // opset 18: pads for some axes only
      std::vector<int64_t> axes = c.const_ints(3, "axes");
      KILN_USER_CHECK(pads.size() == 2 * axes.size()) << "pads " << shape_str(pads) << " do not fit axes "
                                                      << shape_str(axes);
      std::vector<int64_t> full(2 * x.rank(), 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        int64_t a = normalize_axis_for(axes[i], x.rank(), c);
        full[a] = pads[i];
        full[x.rank() + a] = pads[axes.size() + i];
      }
      pads = full;
    }
  }
  KILN_USER_CHECK(static_cast<int64_t>(pads.size()) == 2 * x.rank())
      << "pads " << shape_str(pads) << " must have 2 entries per axis of " << shape_str(x.shape);
  Attrs a = Attrs().set_ints("pad_width", pads).set_str("mode", mode).set_float("pad_value", value);
  return {c.call("nn.pad", {c.input(0)}, a)};
}

std::vector<Expr> trilu(NodeContext& c) {
  int64_t k = 0;
  if (c.has_input(1)) k = c.require_const(1, "k").int64_at(0);
  return {c.call("trilu", {c.input(0)}, Attrs().set_int("upper", c.attr_int("upper", 1)).set_int("k", k))};
}

}  // namespace

void register_tensor_converters(ConverterTable& t) {
  t["Reshape"] = reshape;
  t["Flatten"] = flatten;
  t["Squeeze"] = squeeze;
  t["Unsqueeze"] = unsqueeze;
  t["Transpose"] = transpose;
  t["Concat"] = concat;
  t["Split"] = split;
  t["Slice"] = slice;
  t["Gather"] = gather_like("take");
  t["GatherElements"] = gather_like("gather_elements");
  t["GatherND"] = gather_like("gather_nd");
  t["Expand"] = expand;
  t["Tile"] = [](NodeContext& c) -> std::vector<Expr> {
    std::vector<int64_t> reps = c.opset() < 6 ? legacy_tile_reps(c) : c.const_ints(1, "repeats");
    return {c.call("tile", {c.input(0)}, Attrs().set_ints("reps", reps))};
  };
  t["Pad"] = pad;
  t["DepthToSpace"] = [](NodeContext& c) -> std::vector<Expr> {
    Attrs a = Attrs().set_int("block_size", c.attr_int("blocksize")).set_str("mode", c.attr_str("mode", "DCR"));
    return {c.call("nn.depth_to_space", {c.input(0)}, a)};
  };
  t["SpaceToDepth"] = [](NodeContext& c) -> std::vector<Expr> {
    return {c.call("nn.space_to_depth", {c.input(0)}, Attrs().set_int("block_size", c.attr_int("blocksize")))};
  };
  t["Trilu"] = trilu;
}

}  // namespace kiln::relay::onnx_frontend
