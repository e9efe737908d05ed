// Static control flow: kiln compiles dataflow graphs of static shapes, so control flow whose
// decisions are known at compile time is resolved here. If with a constant condition inlines the
// taken branch; Loop with a constant trip count (and conditions that fold) and Scan over a static
// sequence length are unrolled, one copy of the body per iteration. Anything decided at run time
// is refused as unsupported, saying which value is not known.
#include <algorithm>

#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

// Unrolling copies the body per iteration: past this many the graph would be huge; such loops
// are better left to a runtime with control flow.
constexpr int64_t kMaxUnroll = 4096;

// The value of a scalar control input (If's cond, Loop's M and cond), known at compile time. One
// computed from graph inputs asks for them to be bound (CompileTimeInputError: kiln check and
// --bind do); one computed otherwise at run time is unsupported.
HostTensor control_value(NodeContext& c, size_t i, const char* role, const char* why) {
  HostTensor v;
  try {
    v = c.require_const(i, role);
  } catch (const CompileTimeInputError&) {
    throw;
  } catch (const Error&) {
    KILN_SUPPORTED(false) << role << " is computed at run time; kiln " << why << " only when it is known at compile time";
  }
  KILN_USER_CHECK(v.numel() == 1) << role << " must hold one value, got shape " << shape_str(v.shape());
  return v;
}

// Stacks equally shaped parts along a new `axis`.
Expr stack(NodeContext& c, const std::vector<Expr>& parts, int64_t axis) {
  std::vector<Expr> expanded;
  for (const Expr& p : parts) {
    Shape s = p.tensor_type().shape;
    s.insert(s.begin() + axis, 1);
    expanded.push_back(c.call("reshape", {p}, Attrs().set_ints("newshape", s)));
  }
  return expanded.size() == 1 ? expanded[0] : c.call("concatenate", expanded, Attrs().set_int("axis", axis));
}

Expr take_step(NodeContext& c, const Expr& x, int64_t axis, int64_t t) {
  const Shape& s = x.tensor_type().shape;
  std::vector<int64_t> b(s.size(), 0), e(s.begin(), s.end()), st(s.size(), 1);
  b[axis] = t;
  e[axis] = t + 1;
  Expr one = c.call("strided_slice", {x}, Attrs().set_ints("begin", b).set_ints("end", e).set_ints("strides", st));
  Shape out = s;
  out.erase(out.begin() + axis);
  return c.call("reshape", {one}, Attrs().set_ints("newshape", out));
}

void check_same_shapes(const std::vector<Expr>& parts, const char* what, size_t k) {
  for (const Expr& p : parts)
    KILN_SUPPORTED(p.tensor_type().shape == parts[0].tensor_type().shape)
        << what << " " << k << " changes shape between iterations (" << shape_str(parts[0].tensor_type().shape)
        << " and " << shape_str(p.tensor_type().shape) << "); kiln stacks equal shapes only";
}

std::vector<Expr> if_node(NodeContext& c) {
  HostTensor cond = control_value(c, 0, "the condition", "inlines an If");
  std::vector<Expr> outs = c.run_graph(cond.double_at(0) != 0 ? "then_branch" : "else_branch", {});
  KILN_USER_CHECK(outs.size() == c.num_outputs()) << "the taken branch has " << outs.size() << " outputs, the node "
                                                  << c.num_outputs();
  return outs;
}

std::vector<Expr> loop(NodeContext& c) {
  KILN_USER_CHECK(c.num_inputs() >= 2) << "needs inputs M and cond (either may be empty)";
  bool has_trip = c.has_input(0);
  int64_t trips = has_trip ? control_value(c, 0, "the trip count M", "unrolls a Loop").int64_at(0) : -1;
  bool cond = c.has_input(1) ? control_value(c, 1, "the condition", "unrolls a Loop").double_at(0) != 0 : true;
  KILN_SUPPORTED(has_trip || c.has_input(1)) << "a Loop with neither a trip count nor a condition never ends";
  KILN_SUPPORTED(trips <= kMaxUnroll) << "the trip count M " << trips << " is over " << kMaxUnroll
                                      << ", the most iterations kiln unrolls";
  std::vector<Expr> state;
  for (size_t i = 2; i < c.num_inputs(); ++i) state.push_back(c.input(i, "loop-carried value"));
  size_t n = state.size();
  size_t scans = 0;
  std::vector<std::vector<Expr>> scanned;
  int64_t it = 0;
  for (; (!has_trip || it < trips) && cond; ++it) {
    KILN_SUPPORTED(it < kMaxUnroll) << "the Loop runs over " << kMaxUnroll << " iterations, the most kiln unrolls";
    std::vector<Expr> in = {c.constant(HostTensor::from_int64s(DataType::i64(), {}, {it})),
                            c.constant(HostTensor::scalar(DataType::boolean(), cond ? 1 : 0))};
    in.insert(in.end(), state.begin(), state.end());
    std::vector<Expr> out = c.run_graph("body", in);
    KILN_USER_CHECK(out.size() >= 1 + n) << "the body has " << out.size() << " outputs, fewer than the condition and "
                                         << n << " loop-carried values";
    const auto* next = out[0].as<ConstantNode>();
    KILN_SUPPORTED(next != nullptr) << "the condition the body computes in iteration " << it
                                    << " is not known at compile time; kiln unrolls a Loop only when it is";
    cond = next->value.double_at(0) != 0;
    state.assign(out.begin() + 1, out.begin() + 1 + static_cast<std::ptrdiff_t>(n));
    scans = out.size() - 1 - n;
    scanned.resize(scans);
    for (size_t k = 0; k < scans; ++k) scanned[k].push_back(out[1 + n + k]);
  }
  std::vector<Expr> outs = state;
  for (size_t k = 0; k < scans; ++k) {
    check_same_shapes(scanned[k], "scan output", k);
    outs.push_back(stack(c, scanned[k], 0));
  }
  // With no iteration the scan outputs are empty, of a shape only running the body tells.
  KILN_SUPPORTED(it > 0 || c.num_outputs() <= n) << "the Loop runs no iteration, so its scan outputs are empty; "
                                                  << "kiln does not support that";
  return outs;
}

// Scan (opset 9 on) over inputs `in` (states, then scan inputs), with no batch axis; Scan-8 names
// its scan input directions `directions`.
std::vector<Expr> scan_once(NodeContext& c, const std::vector<Expr>& in, size_t m) {
  size_t n = in.size() - m;
  std::vector<int64_t> in_axes = c.attr_ints("scan_input_axes", std::vector<int64_t>(m, 0));
  std::vector<int64_t> in_dirs =
      c.attr_ints(c.opset() >= 9 ? "scan_input_directions" : "directions", std::vector<int64_t>(m, 0));
  KILN_USER_CHECK(in_axes.size() == m && in_dirs.size() == m)
      << "the scan input axes and directions must have one entry per scan input (" << m << ")";
  int64_t len = -1;
  for (size_t j = 0; j < m; ++j) {
    const TensorTypeNode& t = in[n + j].tensor_type();
    in_axes[j] = normalize_axis_for(in_axes[j], t.rank(), c, "scan input axis");
    int64_t l = t.shape[in_axes[j]];
    KILN_USER_CHECK(len < 0 || l == len) << "the scan inputs have different lengths (" << len << " and " << l << ")";
    len = l;
  }
  KILN_SUPPORTED(len > 0) << "a Scan over an empty sequence has empty outputs of a shape only the body tells; "
                          << "kiln does not support that";
  KILN_SUPPORTED(len <= kMaxUnroll) << "the sequence length " << len << " is over " << kMaxUnroll
                                    << ", the most iterations kiln unrolls";
  std::vector<Expr> state(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<std::vector<Expr>> scanned;
  for (int64_t t = 0; t < len; ++t) {
    std::vector<Expr> body_in = state;
    for (size_t j = 0; j < m; ++j) body_in.push_back(take_step(c, in[n + j], in_axes[j], in_dirs[j] ? len - 1 - t : t));
    std::vector<Expr> out = c.run_graph("body", body_in);
    KILN_USER_CHECK(out.size() >= n) << "the body has " << out.size() << " outputs, fewer than its " << n << " states";
    state.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
    scanned.resize(out.size() - n);
    for (size_t k = 0; k < scanned.size(); ++k) scanned[k].push_back(out[n + k]);
  }
  size_t k_out = scanned.size();
  std::vector<int64_t> out_axes = c.attr_ints("scan_output_axes", std::vector<int64_t>(k_out, 0));
  std::vector<int64_t> out_dirs = c.attr_ints("scan_output_directions", std::vector<int64_t>(k_out, 0));
  KILN_USER_CHECK(out_axes.size() == k_out && out_dirs.size() == k_out)
      << "scan_output_axes and scan_output_directions must have one entry per scan output (" << k_out << ")";
  std::vector<Expr> outs = state;
  for (size_t k = 0; k < k_out; ++k) {
    check_same_shapes(scanned[k], "scan output", k);
    if (out_dirs[k]) std::reverse(scanned[k].begin(), scanned[k].end());
    int64_t axis = normalize_axis_for(out_axes[k], scanned[k][0].tensor_type().rank() + 1, c, "scan output axis");
    outs.push_back(stack(c, scanned[k], axis));
  }
  return outs;
}

std::vector<Expr> scan(NodeContext& c) {
  auto m = static_cast<size_t>(c.attr_int("num_scan_inputs"));
  if (c.opset() >= 9) {
    KILN_USER_CHECK(m >= 1 && m <= c.num_inputs()) << "num_scan_inputs " << m << " does not fit " << c.num_inputs()
                                                   << " inputs";
    std::vector<Expr> in;
    for (size_t i = 0; i < c.num_inputs(); ++i) in.push_back(c.input(i));
    return scan_once(c, in, m);
  }
  // Scan-8: every input has a batch axis 0 first (scan inputs then scan along axis 1), and an
  // optional sequence_lens input; each batch entry scans on its own.
  KILN_USER_CHECK(m >= 1 && m + 1 <= c.num_inputs()) << "num_scan_inputs " << m << " does not fit " << c.num_inputs()
                                                     << " inputs";
  std::vector<Expr> in;
  for (size_t i = 1; i < c.num_inputs(); ++i) in.push_back(c.input(i));
  KILN_USER_CHECK(in[0].tensor_type().rank() >= 1) << "every input of Scan-8 needs a batch axis 0";
  int64_t batch = in[0].tensor_type().shape[0];
  KILN_SUPPORTED(batch >= 1) << "a Scan-8 over an empty batch is not supported";
  if (c.has_input(0)) {
    std::vector<int64_t> lens = c.const_ints(0, "sequence_lens");
    int64_t full = in.back().tensor_type().shape.at(1);
    for (int64_t l : lens)
      KILN_SUPPORTED(l == full) << "sequence_lens " << shape_str(lens) << " are shorter than the sequence length "
                                << full << "; kiln unrolls full sequences only";
  }
  std::vector<std::vector<Expr>> per_batch;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Expr> sliced;
    for (const Expr& x : in) {
      KILN_USER_CHECK(x.tensor_type().rank() >= 1 && x.tensor_type().shape[0] == batch)
          << "every input of Scan-8 needs the batch axis 0 of size " << batch;
      sliced.push_back(take_step(c, x, 0, b));
    }
    per_batch.push_back(scan_once(c, sliced, m));
  }
  std::vector<Expr> outs;
  for (size_t k = 0; k < per_batch[0].size(); ++k) {
    std::vector<Expr> parts;
    for (const auto& r : per_batch) parts.push_back(r[k]);
    outs.push_back(stack(c, parts, 0));
  }
  return outs;
}

}  // namespace

void register_control_converters(ConverterTable& t) {
  t["If"] = if_node;
  t["Loop"] = loop;
  t["Scan"] = scan;
}

}  // namespace kiln::relay::onnx_frontend
