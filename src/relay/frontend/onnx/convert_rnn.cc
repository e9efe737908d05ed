// RNN, GRU and LSTM: kiln compiles static shapes, so the sequence length is known and the
// recurrence is unrolled here into dense products and elementwise ops, one step per time step
// and direction (as TVM's ONNX frontend does). The input projection of all steps is one dense
// product; each step adds its recurrent product. Gates follow the ONNX order (LSTM i,o,f,c; GRU
// z,r,h).
#include <cctype>
#include <cmath>

#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

enum class Cell { kRnn, kGru, kLstm };

Expr slice_axis(NodeContext& c, const Expr& x, int64_t axis, int64_t begin, int64_t end) {
  const Shape& s = x.tensor_type().shape;
  std::vector<int64_t> b(s.size(), 0), e(s.begin(), s.end()), st(s.size(), 1);
  b[axis] = begin;
  e[axis] = end;
  return c.call("strided_slice", {x}, Attrs().set_ints("begin", b).set_ints("end", e).set_ints("strides", st));
}

Expr reshape(NodeContext& c, const Expr& x, const Shape& shape) {
  return c.call("reshape", {x}, Attrs().set_ints("newshape", shape));
}

// One activation of the `activations` attribute, with its alpha/beta (the ONNX op's defaults
// where the lists give none).
struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

Expr apply(NodeContext& c, const Activation& f, const Expr& x) {
  DataType t = x.tensor_type().dtype;
  const std::string& n = f.name;
  if (n == "Sigmoid") return c.call("sigmoid", {x});
  if (n == "Tanh") return c.call("tanh", {x});
  if (n == "Relu") return c.call("nn.relu", {x});
  if (n == "Softsign") return c.call("nn.softsign", {x});
  if (n == "Softplus") return c.call("nn.softplus", {x});
  if (n == "LeakyRelu") return c.call("nn.leaky_relu", {x}, Attrs().set_float("alpha", f.alpha));
  if (n == "ThresholdedRelu") return c.call("nn.thresholded_relu", {x}, Attrs().set_float("alpha", f.alpha));
  if (n == "Elu") return c.call("nn.elu", {x}, Attrs().set_float("alpha", f.alpha));
  if (n == "HardSigmoid")
    return c.call("nn.hard_sigmoid", {x}, Attrs().set_float("alpha", f.alpha).set_float("beta", f.beta));
  if (n == "Affine")
    return c.call("add", {c.call("multiply", {x, c.scalar(t, f.alpha)}), c.scalar(t, f.beta)});
  // ScaledTanh: alpha * tanh(beta * x).
  return c.call("multiply", {c.call("tanh", {c.call("multiply", {x, c.scalar(t, f.beta)})}), c.scalar(t, f.alpha)});
}

std::vector<Activation> read_activations(NodeContext& c, Cell cell, int64_t dirs) {
  std::vector<std::string> dflt = cell == Cell::kRnn   ? std::vector<std::string>{"Tanh"}
                                  : cell == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                       : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  size_t per = dflt.size();
  std::vector<std::string> names;
  if (c.has_attr("activations")) {
    const auto& a = c.node().attribute();
    for (const auto& attr : a)
      if (attr.name() == "activations") names.assign(attr.strings().begin(), attr.strings().end());
    KILN_USER_CHECK(names.size() == per * static_cast<size_t>(dirs) || names.size() == per)
        << "attribute 'activations' has " << names.size() << " entries, expected " << per * dirs << " (" << per
        << " per direction)";
    if (names.size() == per && dirs == 2) names.insert(names.end(), names.begin(), names.end());
  } else {
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), dflt.begin(), dflt.end());
  }
  std::vector<double> alphas = c.attr_floats("activation_alpha", {}), betas = c.attr_floats("activation_beta", {});
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (std::string n : names) {
    // Old PyTorch exports spell them in lower case ("tanh"), which onnxruntime accepts too.
    for (const char* k : {"Sigmoid", "Tanh", "Relu", "Softsign", "Softplus", "LeakyRelu", "ThresholdedRelu", "Elu",
                          "HardSigmoid", "Affine", "ScaledTanh"}) {
      std::string lower = k;
      for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      std::string given = n;
      for (auto& ch : given) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (given == lower) n = k;
    }
    static const std::map<std::string, std::pair<double, double>> known = {
        {"Sigmoid", {0, 0}},     {"Tanh", {0, 0}},      {"Relu", {0, 0}},       {"Softsign", {0, 0}},
        {"Softplus", {0, 0}},    {"LeakyRelu", {0.01, 0}}, {"ThresholdedRelu", {1.0, 0}}, {"Elu", {1.0, 0}},
        {"HardSigmoid", {0.2, 0.5}}, {"Affine", {1.0, 0.0}}, {"ScaledTanh", {1.0, 1.0}}};
    auto it = known.find(n);
    KILN_SUPPORTED(it != known.end()) << "activation '" << n << "' in attribute 'activations' is not supported";
    Activation f{n, it->second.first, it->second.second};
    bool takes_alpha = n == "LeakyRelu" || n == "ThresholdedRelu" || n == "Elu" || n == "HardSigmoid" ||
                       n == "Affine" || n == "ScaledTanh";
    bool takes_beta = n == "HardSigmoid" || n == "Affine" || n == "ScaledTanh";
    if (takes_alpha && ai < alphas.size()) f.alpha = alphas[ai++];
    if (takes_beta && bi < betas.size()) f.beta = betas[bi++];
    out.push_back(f);
  }
  return out;
}

std::vector<Expr> recurrent(NodeContext& c, Cell cell) {
  const int64_t gates = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
  const TensorTypeNode& xt = c.input_type(0, "X");
  DataType dt = xt.dtype;
  int64_t layout = c.attr_int("layout", 0);
  KILN_USER_CHECK(layout == 0 || layout == 1) << "attribute 'layout' must be 0 or 1, got " << layout;
  KILN_USER_CHECK(xt.rank() == 3) << "X " << shape_str(xt.shape) << " must be 3-D";
  Expr x = c.input(0);
  if (layout == 1) x = c.call("transpose", {x}, Attrs().set_ints("axes", {1, 0, 2}));  // -> [seq, batch, input]
  const Shape& xs = x.tensor_type().shape;
  int64_t seq = xs[0], batch = xs[1], in = xs[2];
  std::string direction = c.attr_str("direction", "forward");
  KILN_USER_CHECK(direction == "forward" || direction == "reverse" || direction == "bidirectional")
      << "attribute 'direction' must be forward, reverse or bidirectional, got '" << direction << "'";
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const TensorTypeNode& wt = c.input_type(1, "W");
  KILN_USER_CHECK(wt.rank() == 3 && wt.shape[0] == dirs && wt.shape[1] % gates == 0 && wt.shape[2] == in)
      << "W " << shape_str(wt.shape) << " must be [" << dirs << ", " << gates << " x hidden_size, " << in << "]";
  int64_t hidden = c.attr_int("hidden_size", wt.shape[1] / gates);
  KILN_USER_CHECK(wt.shape[1] == gates * hidden) << "W " << shape_str(wt.shape) << " does not hold " << gates
                                                 << " gates of hidden_size " << hidden;
  const TensorTypeNode& rt = c.input_type(2, "R");
  KILN_USER_CHECK(rt.shape == Shape({dirs, gates * hidden, hidden}))
      << "R " << shape_str(rt.shape) << " must be [" << dirs << ", " << gates * hidden << ", " << hidden << "]";
  if (c.has_input(3)) {
    KILN_USER_CHECK(c.input_type(3, "B").shape == Shape({dirs, 2 * gates * hidden}))
        << "B " << shape_str(c.input_type(3, "B").shape) << " must be [" << dirs << ", " << 2 * gates * hidden << "]";
  }
  // A static unrolling runs one length for the whole batch: sequence_lens must say so.
  int64_t steps = seq;
  if (c.has_input(4)) {
    std::vector<int64_t> lens = c.const_ints(4, "sequence_lens");
    KILN_USER_CHECK(static_cast<int64_t>(lens.size()) == batch) << "sequence_lens must hold one length per batch entry";
    for (int64_t l : lens) {
      KILN_SUPPORTED(l == lens[0]) << "sequence_lens " << shape_str(lens) << " differ within the batch; kiln unrolls "
                                   << "one static length for all";
      KILN_USER_CHECK(l >= 0 && l <= seq) << "sequence_lens " << shape_str(lens) << " exceed the sequence length " << seq;
    }
    if (!lens.empty()) steps = lens[0];
  }
  double clip = c.attr_float("clip", 0.0);
  bool has_clip = c.has_attr("clip");
  KILN_USER_CHECK(!has_clip || clip > 0) << "attribute 'clip' must be positive, got " << clip;
  int64_t linear_before_reset = cell == Cell::kGru ? c.attr_int("linear_before_reset", 0) : 0;
  bool input_forget = cell == Cell::kLstm && c.attr_int("input_forget", 0) != 0;
  std::vector<Activation> acts = read_activations(c, cell, dirs);
  size_t per = acts.size() / static_cast<size_t>(dirs);

  // Initial states [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]).
  auto initial = [&](size_t i, const char* role) -> Expr {
    if (!c.has_input(i)) return Expr();
    Expr v = c.input(i, role);
    if (layout == 1) v = c.call("transpose", {v}, Attrs().set_ints("axes", {1, 0, 2}));
    KILN_USER_CHECK(v.tensor_type().shape == Shape({dirs, batch, hidden}))
        << role << " " << shape_str(c.input_type(i, role).shape) << " does not fit " << dirs << " directions, batch "
        << batch << " and hidden_size " << hidden;
    return v;
  };
  Expr h0 = initial(5, "initial_h"), c0 = cell == Cell::kLstm ? initial(6, "initial_c") : Expr();
  Expr peep = cell == Cell::kLstm && c.has_input(7) ? c.input(7, "P") : Expr();
  if (peep.defined()) {
    KILN_USER_CHECK(peep.tensor_type().shape == Shape({dirs, 3 * hidden}))
        << "P " << shape_str(peep.tensor_type().shape) << " must be [" << dirs << ", " << 3 * hidden << "]";
  }

  auto clipped = [&](const Expr& v) {
    return has_clip ? c.call("clip", {v}, Attrs().set_float("a_min", -clip).set_float("a_max", clip)) : v;
  };
  auto gate = [&](const Expr& all, int64_t g) { return slice_axis(c, all, 1, g * hidden, (g + 1) * hidden); };
  Expr zeros = c.call("full", {}, Attrs().set_ints("shape", {batch, hidden}).set_tensor("value", HostTensor::scalar(dt, 0)));

  std::vector<Expr> y_dirs, h_last, c_last;
  for (int64_t d = 0; d < dirs; ++d) {
    const Activation* f = &acts[d * per];
    Expr w = reshape(c, slice_axis(c, c.input(1), 0, d, d + 1), {gates * hidden, in});
    Expr r = reshape(c, slice_axis(c, c.input(2), 0, d, d + 1), {gates * hidden, hidden});
    Expr wb, rb;
    if (c.has_input(3)) {
      Expr b = reshape(c, slice_axis(c, c.input(3), 0, d, d + 1), {2 * gates * hidden});
      wb = slice_axis(c, b, 0, 0, gates * hidden);
      rb = slice_axis(c, b, 0, gates * hidden, 2 * gates * hidden);
    }
    // The input projection of every step at once: [seq * batch, gates * hidden].
    Expr xw = c.call("nn.dense", {reshape(c, x, {seq * batch, in}), w});
    // GRU keeps the recurrent bias of its h gate apart (it goes inside the reset with
    // linear_before_reset); the others add both biases to the input projection.
    if (wb.defined()) xw = c.call("add", {xw, cell == Cell::kGru ? wb : c.call("add", {wb, rb})});
    Expr h = h0.defined() ? reshape(c, slice_axis(c, h0, 0, d, d + 1), {batch, hidden}) : zeros;
    Expr cs = c0.defined() ? reshape(c, slice_axis(c, c0, 0, d, d + 1), {batch, hidden}) : zeros;
    Expr pi, po, pf;
    if (peep.defined()) {
      Expr p = reshape(c, slice_axis(c, peep, 0, d, d + 1), {3 * hidden});
      pi = slice_axis(c, p, 0, 0, hidden);
      po = slice_axis(c, p, 0, hidden, 2 * hidden);
      pf = slice_axis(c, p, 0, 2 * hidden, 3 * hidden);
    }
    bool reverse = direction == "reverse" || d == 1;
    std::vector<Expr> ys(static_cast<size_t>(seq));
    for (int64_t k = 0; k < steps; ++k) {
      int64_t t = reverse ? steps - 1 - k : k;
      Expr xg = slice_axis(c, xw, 0, t * batch, (t + 1) * batch);
      if (cell == Cell::kRnn) {
        h = apply(c, f[0], clipped(c.call("add", {xg, c.call("nn.dense", {h, r})})));
      } else if (cell == Cell::kGru) {
        Expr rzr = slice_axis(c, r, 0, 0, 2 * hidden), rh = slice_axis(c, r, 0, 2 * hidden, 3 * hidden);
        Expr hr = c.call("nn.dense", {h, rzr});
        if (rb.defined()) hr = c.call("add", {hr, slice_axis(c, rb, 0, 0, 2 * hidden)});
        Expr zr = c.call("add", {slice_axis(c, xg, 1, 0, 2 * hidden), hr});
        Expr z = apply(c, f[0], clipped(gate(zr, 0))), rr = apply(c, f[0], clipped(gate(zr, 1)));
        Expr rbh = rb.defined() ? slice_axis(c, rb, 0, 2 * hidden, 3 * hidden) : Expr();
        Expr hh;
        if (linear_before_reset) {
          hh = c.call("nn.dense", {h, rh});
          if (rbh.defined()) hh = c.call("add", {hh, rbh});
          hh = c.call("multiply", {rr, hh});
        } else {
          hh = c.call("nn.dense", {c.call("multiply", {rr, h}), rh});
          if (rbh.defined()) hh = c.call("add", {hh, rbh});
        }
        Expr cand = apply(c, f[1], clipped(c.call("add", {gate(xg, 2), hh})));
        // h = (1 - z) * cand + z * h = cand + z * (h - cand)
        h = c.call("add", {cand, c.call("multiply", {z, c.call("subtract", {h, cand})})});
      } else {
        Expr g = c.call("add", {xg, c.call("nn.dense", {h, r})});
        Expr gi = gate(g, 0), go = gate(g, 1), gf = gate(g, 2), gc = gate(g, 3);
        if (pi.defined()) {
          gi = c.call("add", {gi, c.call("multiply", {pi, cs})});
          gf = c.call("add", {gf, c.call("multiply", {pf, cs})});
        }
        Expr i = apply(c, f[0], clipped(gi));
        Expr fg = input_forget ? c.call("subtract", {c.scalar(dt, 1.0), i}) : apply(c, f[0], clipped(gf));
        Expr cand = apply(c, f[1], clipped(gc));
        cs = c.call("add", {c.call("multiply", {fg, cs}), c.call("multiply", {i, cand})});
        if (po.defined()) go = c.call("add", {go, c.call("multiply", {po, cs})});
        Expr o = apply(c, f[0], clipped(go));
        h = c.call("multiply", {o, apply(c, f[2], cs)});
      }
      ys[static_cast<size_t>(t)] = reshape(c, h, {1, 1, batch, hidden});
    }
    // Steps past the sequence length output zeros, as ONNX says.
    for (auto& y : ys)
      if (!y.defined()) y = reshape(c, zeros, {1, 1, batch, hidden});
    y_dirs.push_back(ys.size() == 1 ? ys[0] : c.call("concatenate", ys, Attrs().set_int("axis", 0)));
    h_last.push_back(reshape(c, h, {1, batch, hidden}));
    c_last.push_back(reshape(c, cs, {1, batch, hidden}));
  }
  auto join = [&](std::vector<Expr> parts, int64_t axis) {
    return parts.size() == 1 ? parts[0] : c.call("concatenate", parts, Attrs().set_int("axis", axis));
  };
  Expr y = join(y_dirs, 1), yh = join(h_last, 0), yc = join(c_last, 0);
  if (layout == 1) {
    y = c.call("transpose", {y}, Attrs().set_ints("axes", {2, 0, 1, 3}));
    yh = c.call("transpose", {yh}, Attrs().set_ints("axes", {1, 0, 2}));
    yc = c.call("transpose", {yc}, Attrs().set_ints("axes", {1, 0, 2}));
  }
  std::vector<Expr> outs = {y, yh};
  if (cell == Cell::kLstm) outs.push_back(yc);
  return outs;
}

}  // namespace

void register_rnn_converters(ConverterTable& t) {
  t["RNN"] = [](NodeContext& c) { return recurrent(c, Cell::kRnn); };
  t["GRU"] = [](NodeContext& c) { return recurrent(c, Cell::kGru); };
  t["LSTM"] = [](NodeContext& c) { return recurrent(c, Cell::kLstm); };
}

}  // namespace kiln::relay::onnx_frontend
