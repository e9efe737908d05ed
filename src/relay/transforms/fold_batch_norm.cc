// fold_batch_norm: inference batch norm (and constant per-channel scale/shift) folded into the
// convolution before it.
//
// batch_norm(conv(x, W) + b) = conv(x, W * s) + (b - mean) * s + beta, s = gamma / sqrt(var + eps),
// with s scaling output channel o of W. A multiply by a per-channel constant c scales W and b by
// c; an add of one adds to b. Each rewrite needs constant weights and a convolution (and bias)
// with no other user, or the original convolution would have to stay as well.
#include <cmath>
#include <optional>
#include <unordered_map>

#include "kiln/relay/op.h"
#include "kiln/relay/transforms.h"
#include "per_channel.h"
#include "kiln/support/error.h"

namespace kiln::relay {

namespace {

using UseCounts = std::unordered_map<const ExprNode*, int>;

UseCounts count_uses(const Expr& body) {
  UseCounts uses;
  for (const Expr& e : post_order({body}))
    for (const Expr& c : children(e)) ++uses[c.get()];
  ++uses[body.get()];
  return uses;
}

bool is_conv(const CallNode* c) {
  const std::string& n = c->op_name();
  return n == "nn.conv1d" || n == "nn.conv2d" || n == "nn.conv3d";
}

// conv(x, W) or bias_add(conv(x, W), b, axis=1) with constant W (and b), used only here.
struct ConvChain {
  const CallNode* conv = nullptr;
  const CallNode* bias_add = nullptr;
  HostTensor weight;
  std::vector<double> bias;  // per output channel, zeros when there is no bias_add
};

std::optional<ConvChain> match_conv(const Expr& e, const UseCounts& uses) {
  auto single_use = [&](const Expr& x) { auto it = uses.find(x.get()); return it != uses.end() && it->second == 1; };
  ConvChain chain;
  Expr conv = e;
  const auto* c = e.as<CallNode>();
  if (!c || !single_use(e)) return std::nullopt;
  if (c->op_name() == "nn.bias_add") {
    const HostTensor* b = constant_value(c->args[1]);
    if (!b || c->attrs.get_int("axis") != 1 || !single_use(c->args[0])) return std::nullopt;
    chain.bias_add = c;
    chain.bias = b->to_doubles();
    conv = c->args[0];
    c = conv.as<CallNode>();
  }
  if (!c || !is_conv(c)) return std::nullopt;
  const HostTensor* w = constant_value(c->args[1]);
  if (!w || !w->dtype().is_floating()) return std::nullopt;
  chain.conv = c;
  chain.weight = *w;
  if (!chain.bias_add) chain.bias.assign(static_cast<size_t>(w->shape()[0]), 0.0);
  return chain;
}

// conv(x, W * scale[o]) then bias_add(bias): the folded chain.
Expr rebuild(const ConvChain& chain, const std::vector<double>& scale, const std::vector<double>& bias) {
  const HostTensor& w = chain.weight;
  int64_t per_out = w.numel() / w.shape()[0];
  std::vector<double> wv = w.to_doubles();
  for (int64_t i = 0; i < w.numel(); ++i) wv[i] *= scale[i / per_out];
  Expr weight = make_constant(HostTensor::from_doubles(w.dtype(), w.shape(), wv));
  Expr conv = make_call(*chain.conv->op, {chain.conv->args[0], weight}, chain.conv->attrs, chain.conv->name);
  Expr b = make_constant(HostTensor::from_doubles(w.dtype(), {w.shape()[0]}, bias));
  std::string name = chain.bias_add ? chain.bias_add->name : chain.conv->name;
  return make_call("nn.bias_add", {conv, b}, Attrs().set_int("axis", 1), name);
}

class BatchNormFolder : public ExprMutator {
 public:
  explicit BatchNormFolder(UseCounts uses) : uses_(std::move(uses)) {}

 protected:
  Expr rewrite_call(const CallNode* op, const Expr& self, std::vector<Expr> args) override {
    // Match on the graph as it was (arguments unchanged in this round), where use counts hold.
    bool unchanged = true;
    for (size_t i = 0; i < args.size(); ++i) unchanged = unchanged && args[i].same_as(op->args[i]);
    const std::string& name = op->op_name();
    if (unchanged && name == "nn.batch_norm") return fold_bn(op, self);
    if (unchanged && (name == "multiply" || name == "add" || name == "subtract" || name == "divide")) {
      if (auto r = fold_scale_shift(op)) return *r;
    }
    return ExprMutator::rewrite_call(op, self, std::move(args));
  }

 private:
  // gamma / sqrt(var + eps) and beta - mean * that, per channel, if all four are constants.
  std::optional<std::pair<std::vector<double>, std::vector<double>>> bn_affine(const CallNode* bn) {
    const HostTensor *g = constant_value(bn->args[1]), *b = constant_value(bn->args[2]),
                     *m = constant_value(bn->args[3]), *v = constant_value(bn->args[4]);
    if (!g || !b || !m || !v) return std::nullopt;
    double eps = bn->attrs.get_float("epsilon");
    auto gv = g->to_doubles(), bv = b->to_doubles(), mv = m->to_doubles(), vv = v->to_doubles();
    std::vector<double> scale(gv.size()), shift(gv.size());
    for (size_t i = 0; i < gv.size(); ++i) {
      scale[i] = gv[i] / std::sqrt(vv[i] + eps);
      shift[i] = bv[i] - mv[i] * scale[i];
    }
    return std::make_pair(scale, shift);
  }

  Expr fold_bn(const CallNode* bn, const Expr& self) {
    auto affine = bn_affine(bn);
    if (!affine) return self;
    auto& [scale, shift] = *affine;
    if (auto chain = match_conv(bn->args[0], uses_); chain && bn->attrs.get_int("axis") == 1) {
      std::vector<double> bias(scale.size());
      for (size_t i = 0; i < scale.size(); ++i) bias[i] = chain->bias[i] * scale[i] + shift[i];
      return rebuild(*chain, scale, bias);
    }
    // No convolution to fold into: x * scale + shift, per channel along the batch norm's axis.
    const TensorTypeNode& t = self.tensor_type();
    int64_t axis = bn->attrs.get_int("axis");
    Shape shape(static_cast<size_t>(t.rank() - axis), 1);
    shape[0] = t.shape[axis];
    Expr s = make_constant(HostTensor::from_doubles(t.dtype, shape, scale));
    Expr b = make_constant(HostTensor::from_doubles(t.dtype, shape, shift));
    return make_call("add", {make_call("multiply", {bn->args[0], s}, {}, bn->name), b}, {}, bn->name);
  }

  // chain * c, c * chain, chain + c, c + chain, chain - c, chain / c with a per-channel c.
  std::optional<Expr> fold_scale_shift(const CallNode* op) {
    const std::string& name = op->op_name();
    bool commutes = name == "multiply" || name == "add";
    int conv_side = 0;
    if (commutes && op->args[0].as<ConstantNode>()) conv_side = 1;
    auto chain = match_conv(op->args[conv_side], uses_);
    const HostTensor* c = constant_value(op->args[1 - conv_side]);
    if (!chain || !c) return std::nullopt;
    const Expr& x = op->args[conv_side];
    if (op->type != x.type()) return std::nullopt;  // the constant would broadcast the output
    auto v = per_channel(*c, x.tensor_type().rank(), 1, x.tensor_type().shape[1]);
    if (!v) return std::nullopt;
    std::vector<double> scale(v->size(), 1.0), bias = chain->bias;
    for (size_t i = 0; i < v->size(); ++i) {
      double k = (*v)[i];
      if (name == "multiply" || name == "divide") {
        scale[i] = name == "multiply" ? k : 1.0 / k;
        bias[i] *= scale[i];
      } else {
        bias[i] += name == "add" ? k : -k;
      }
    }
    return rebuild(*chain, scale, bias);
  }

  UseCounts uses_;
};

}  // namespace

Module fold_batch_norm(const Module& m) {
  // Each round folds one layer (bn, then a following multiply, then an add), and a round matches
  // only calls whose arguments it left unchanged: repeat until stable, at most once per node
  // (densenet121's batch norms after concatenations took 60 rounds; 16 left most unfolded).
  Module cur = m;
  const size_t rounds = post_order({m.body}).size() + 1;
  for (size_t round = 0; round < rounds; ++round) {
    Expr body = BatchNormFolder(count_uses(cur.body)).mutate(cur.body);
    if (body.same_as(cur.body)) break;
    cur = cur.with_body(body);
  }
  return cur;
}

}  // namespace kiln::relay
