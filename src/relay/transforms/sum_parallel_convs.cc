// sum_parallel_convs: convs of one input whose outputs are only added together become one conv
// with the weights summed (RepVGG / ACNet branches: a 3x3, a 1x1 and an identity-like conv).
//
// conv(x, W1) + conv(x, W2) = conv(x, W1 + W2) when both convs have the same strides, dilation
// and groups and produce the same shape. Kernels of different sizes sum too when the smaller
// one, zero-padded, is the larger one's window: per spatial axis the smaller kernel sits at
// offset o (in taps) inside the larger, and the paddings say so, pad1_begin - pad2_begin = o *
// dilation and pad1_end - pad2_end = (k1 - k2 - o) * dilation. Biases (nn.bias_add on axis 1)
// add up. Each conv (and bias_add) must be read by the add alone, or it would have to stay.
// Chains of adds fold bottom-up: ((a + b) + c) becomes one conv.
#include <optional>
#include <unordered_map>

#include "kiln/relay/op.h"
#include "kiln/relay/transforms.h"
#include "kiln/support/error.h"

namespace kiln::relay {

namespace {

using UseCounts = std::unordered_map<const ExprNode*, int>;

// conv(x, W) [+ bias_add(b)] with constant W (and b).
struct Branch {
  const CallNode* conv = nullptr;
  HostTensor weight;
  std::vector<double> bias;  // per output channel; zeros without a bias_add
  bool has_bias = false;
};

std::optional<Branch> match_branch(const Expr& e, bool single_use) {
  const auto* c = e.as<CallNode>();
  if (!c || !single_use) return std::nullopt;
  Branch b;
  if (c->op_name() == "nn.bias_add") {
    const HostTensor* bias = constant_value(c->args[1]);
    if (!bias || c->attrs.get_int("axis") != 1) return std::nullopt;
    b.bias = bias->to_doubles();
    b.has_bias = true;
    c = c->args[0].as<CallNode>();
  }
  if (!c || c->op_name() != "nn.conv2d") return std::nullopt;
  const HostTensor* w = constant_value(c->args[1]);
  if (!w || !w->dtype().is_floating()) return std::nullopt;
  b.conv = c;
  b.weight = *w;
  if (!b.has_bias) b.bias.assign(static_cast<size_t>(w->shape()[0]), 0.0);
  return b;
}

// Where the smaller kernel `small` sits inside `big`'s window, per spatial axis (in taps), or
// nothing when the two do not read the same window.
std::optional<std::vector<int64_t>> offsets(const Branch& big, const Branch& small) {
  const Attrs &a = big.conv->attrs, &b = small.conv->attrs;
  if (a.get_ints("strides") != b.get_ints("strides") || a.get_ints("dilation") != b.get_ints("dilation") ||
      a.get_int("groups") != b.get_int("groups"))
    return std::nullopt;
  const Shape &wa = big.weight.shape(), &wb = small.weight.shape();
  if (wa[0] != wb[0] || wa[1] != wb[1] || big.weight.dtype() != small.weight.dtype()) return std::nullopt;
  const auto& pa = a.get_ints("padding");
  const auto& pb = b.get_ints("padding");
  const auto& dil = a.get_ints("dilation");
  std::vector<int64_t> at;
  for (size_t d = 0; d < 2; ++d) {
    const int64_t extra = wa[2 + d] - wb[2 + d];
    const int64_t begin = pa[d] - pb[d], end = pa[2 + d] - pb[2 + d];
    if (extra < 0 || begin % dil[d] != 0) return std::nullopt;
    const int64_t o = begin / dil[d];
    if (o < 0 || o > extra || end != (extra - o) * dil[d]) return std::nullopt;
    at.push_back(o);
  }
  return at;
}

// big's weight plus small's, placed at `at` inside big's window.
HostTensor summed_weight(const Branch& big, const Branch& small, const std::vector<int64_t>& at) {
  const Shape &wa = big.weight.shape(), &wb = small.weight.shape();
  std::vector<double> sum = big.weight.to_doubles(), add = small.weight.to_doubles();
  for (int64_t oi = 0; oi < wa[0] * wa[1]; ++oi)
    for (int64_t h = 0; h < wb[2]; ++h)
      for (int64_t w = 0; w < wb[3]; ++w)
        sum[static_cast<size_t>((oi * wa[2] + h + at[0]) * wa[3] + w + at[1])] +=
            add[static_cast<size_t>((oi * wb[2] + h) * wb[3] + w)];
  return HostTensor::from_doubles(big.weight.dtype(), wa, sum);
}

class SumFolder : public ExprMutator {
 public:
  explicit SumFolder(UseCounts uses) : uses_(std::move(uses)) {}
  int folded() const { return folded_; }

 protected:
  Expr rewrite_call(const CallNode* op, const Expr& self, std::vector<Expr> args) override {
    if (op->op_name() != "add" || args.size() != 2) return ExprMutator::rewrite_call(op, self, std::move(args));
    // The original branch (a bias_add and its conv, or a conv) is read by this add alone.
    auto single = [&](const Expr& original) {
      if (uses_[original.get()] != 1) return false;
      const auto* c = original.as<CallNode>();
      return !(c && c->op_name() == "nn.bias_add") || uses_[c->args[0].get()] == 1;
    };
    auto a = match_branch(args[0], single(op->args[0]));
    auto b = match_branch(args[1], single(op->args[1]));
    if (!a || !b || !a->conv->args[0].same_as(b->conv->args[0]) ||
        !(a->conv->type.as<TensorTypeNode>()->shape == b->conv->type.as<TensorTypeNode>()->shape))
      return ExprMutator::rewrite_call(op, self, std::move(args));
    if (a->weight.shape()[2] < b->weight.shape()[2] || a->weight.shape()[3] < b->weight.shape()[3]) std::swap(a, b);
    auto at = offsets(*a, *b);
    if (!at) return ExprMutator::rewrite_call(op, self, std::move(args));
    Expr conv = make_call(*a->conv->op, {a->conv->args[0], make_constant(summed_weight(*a, *b, *at))}, a->conv->attrs,
                          a->conv->name);
    ++folded_;
    if (!a->has_bias && !b->has_bias) return conv;
    std::vector<double> bias = a->bias;
    for (size_t i = 0; i < bias.size(); ++i) bias[i] += b->bias[i];
    Expr bv = make_constant(HostTensor::from_doubles(a->weight.dtype(), {static_cast<int64_t>(bias.size())}, bias));
    return make_call("nn.bias_add", {conv, bv}, Attrs().set_int("axis", 1), op->name);
  }

 private:
  UseCounts uses_;
  int folded_ = 0;
};

}  // namespace

Module sum_parallel_convs(const Module& m) {
  UseCounts uses;
  for (const Expr& e : post_order({m.body}))
    for (const Expr& c : children(e)) ++uses[c.get()];
  ++uses[m.body.get()];
  SumFolder f(std::move(uses));
  Expr body = f.mutate(m.body);
  return f.folded() == 0 ? m : m.with_body(body);
}

}  // namespace kiln::relay
