// combine_parallel: parallel branches that read one input become one wider op whose output is
// sliced back into the branches (TVM's CombineParallelConv2D / CombineParallelDense).
//
// Inception blocks apply several 1x1 convs to one tensor; attention layers apply three
// projections to one tensor. Each branch alone is a narrow GEMM that reads the whole input; as
// one op the input is read once and the GEMM is wide enough to fill the target's register tiles.
// A group is two or more calls of one op with the same data argument, equal attributes and
// constant weights of one dtype whose shapes differ only in the output channels: 2-d convs with
// groups = 1 (weights concatenated along O), dense (along N), matmul by a constant 2-d B (along
// N). The branches' epilogues join the combined op as long as every branch continues with the
// same op and every intermediate value has that one reader: bias_add, add or multiply by a
// per-channel constant (concatenated per channel), and one-argument elementwise ops with equal
// attributes. Each branch then reads a strided_slice of the combined end, which later passes
// fuse into its readers (layout transforms, concatenations, the next op's producer).
#include <map>
#include <optional>
#include <unordered_map>

#include "kiln/relay/evaluate.h"
#include "kiln/relay/op.h"
#include "kiln/relay/transforms.h"
#include "per_channel.h"
#include "kiln/support/error.h"

namespace kiln::relay {

namespace {

using Users = std::unordered_map<const ExprNode*, std::vector<Expr>>;

// How a combinable op's weight and output grow with its output channels.
struct ChannelAxes {
  int weight_axis;  // the weight's output-channel axis
  int out_axis;     // the output's channel axis (negative: from the end)
};

std::optional<ChannelAxes> combinable(const CallNode& c) {
  const std::string& n = c.op_name();
  if (c.args.size() != 2) return std::nullopt;
  const HostTensor* w = constant_value(c.args[1]);
  if (!w || !w->dtype().is_floating()) return std::nullopt;
  if (n == "nn.conv2d" && c.attrs.get_int("groups") == 1) return ChannelAxes{0, 1};
  if (n == "nn.dense") return ChannelAxes{0, -1};
  if (n == "nn.matmul" && w->rank() == 2 && c.args[0].tensor_type().rank() >= 2) return ChannelAxes{1, -1};
  return std::nullopt;
}

// The key under which calls combine: op, attributes and the weight shape without its
// output-channel dim.
std::string group_key(const CallNode& c, const ChannelAxes& s) {
  const HostTensor& w = *constant_value(c.args[1]);
  Shape rest = w.shape();
  rest.erase(rest.begin() + s.weight_axis);
  std::string key = c.op_name() + "|" + c.attrs.str() + "|" + w.dtype().str() + "|";
  for (int64_t d : rest) key += std::to_string(d) + ",";
  return key;
}

int64_t channels_of(const CallNode& c, const ChannelAxes& s) {
  return constant_value(c.args[1])->shape()[s.weight_axis];
}

// One epilogue step every branch shares.
struct Step {
  const CallNode* first;             // branch 0's call (op and attributes of all)
  int chain_arg = 0;                 // which argument is the branch's value
  std::vector<std::vector<double>> constants;  // per branch, per channel (bias_add, add, multiply)
};

class Combiner : public ExprMutator {
 public:
  Combiner(const std::vector<Expr>& order, int min_branches) : min_branches_(min_branches) {
    for (const Expr& e : order)
      for (const Expr& c : children(e)) users_[c.get()].push_back(e);
    for (const Expr& e : order) find_groups(e);
  }

  int combined() const { return combined_; }

 protected:
  Expr rewrite_call(const CallNode* op, const Expr& self, std::vector<Expr> args) override {
    auto it = branch_end_.find(op);
    if (it == branch_end_.end()) return ExprMutator::rewrite_call(op, self, std::move(args));
    Group& g = groups_[it->second.first];
    if (!g.combined.defined()) build(g);
    int b = it->second.second;
    const TensorTypeNode& t = g.combined.tensor_type();
    int64_t axis = g.shape.out_axis < 0 ? t.rank() + g.shape.out_axis : g.shape.out_axis;
    std::vector<int64_t> begin(static_cast<size_t>(t.rank()), 0), end(t.shape.begin(), t.shape.end()),
        strides(static_cast<size_t>(t.rank()), 1);
    begin[axis] = g.offsets[b];
    end[axis] = g.offsets[b] + g.channels[b];
    Attrs a;
    a.set_ints("begin", begin).set_ints("end", end).set_ints("strides", strides);
    return make_call("strided_slice", {g.combined}, a, op->name);
  }

 private:
  struct Group {
    Expr data;
    std::vector<const CallNode*> heads;  // the combinable calls
    ChannelAxes shape;
    std::vector<Step> steps;
    std::vector<int64_t> channels, offsets;
    Expr combined;
  };

  std::vector<Expr> users_of(const ExprNode* n) const {
    auto it = users_.find(n);
    return it == users_.end() ? std::vector<Expr>{} : it->second;
  }

  // The one reader of `n`, when it has exactly one and it is a call.
  const CallNode* only_reader(const ExprNode* n) const {
    std::vector<Expr> u = users_of(n);
    return u.size() == 1 ? u[0].as<CallNode>() : nullptr;
  }

  void find_groups(const Expr& data) {
    std::map<std::string, std::vector<const CallNode*>> by_key;
    std::vector<std::string> keys;  // first-seen order, so the result is deterministic
    for (const Expr& u : users_of(data.get())) {
      const auto* c = u.as<CallNode>();
      // The data must be the call's first argument and not also its second (x * x); a unary
      // reader (relu) has no second argument to compare.
      if (!c || !c->args[0].same_as(data) || (c->args.size() > 1 && c->args[1].same_as(data))) continue;
      auto s = combinable(*c);
      if (!s) continue;
      std::string k = group_key(*c, *s);
      auto& v = by_key[k];
      if (v.empty()) keys.push_back(k);
      if (std::find(v.begin(), v.end(), c) == v.end()) v.push_back(c);
    }
    for (const std::string& k : keys) {
      const auto& heads = by_key[k];
      if (static_cast<int>(heads.size()) < min_branches_) continue;
      Group g;
      g.data = data;
      g.heads = heads;
      g.shape = *combinable(*heads[0]);
      int64_t off = 0;
      for (const CallNode* h : heads) {
        g.channels.push_back(channels_of(*h, g.shape));
        g.offsets.push_back(off);
        off += g.channels.back();
      }
      std::vector<const CallNode*> ends = extend(g);
      size_t index = groups_.size();
      for (size_t b = 0; b < ends.size(); ++b) branch_end_[ends[b]] = {index, static_cast<int>(b)};
      groups_.push_back(std::move(g));
      ++combined_;
    }
  }

  // Appends the epilogue steps all branches share; returns each branch's last call.
  std::vector<const CallNode*> extend(Group& g) {
    std::vector<const CallNode*> ends = g.heads;
    const int64_t rank = g.heads[0]->type.as<TensorTypeNode>()->rank();
    const int64_t axis = g.shape.out_axis < 0 ? rank + g.shape.out_axis : g.shape.out_axis;
    while (true) {
      std::vector<const CallNode*> next;
      for (const CallNode* e : ends) next.push_back(only_reader(e));
      auto step = shared_step(ends, next, rank, axis, g.channels);
      if (!step) return ends;
      g.steps.push_back(std::move(*step));
      ends = next;
    }
  }

  std::optional<Step> shared_step(const std::vector<const CallNode*>& ends, const std::vector<const CallNode*>& next,
                                  int64_t rank, int64_t axis, const std::vector<int64_t>& channels) const {
    const CallNode* n0 = next[0];
    if (!n0) return std::nullopt;
    const std::string& name = n0->op_name();
    Step step{n0};
    for (size_t b = 0; b < next.size(); ++b) {
      const CallNode* n = next[b];
      if (!n || n->op_name() != name || !(n->attrs == n0->attrs) || n->type.as<TensorTypeNode>() == nullptr) {
        return std::nullopt;
      }
      if (n->args.size() == 1 && n->op->pattern == OpPattern::Elementwise) continue;
      bool biased = name == "nn.bias_add" && n->attrs.get_int("axis") == axis;
      if (!(biased || name == "add" || name == "multiply") || n->args.size() != 2) return std::nullopt;
      int at = n->args[0].get() == ends[b] ? 0 : 1;
      if (biased && at != 0) return std::nullopt;
      if (b == 0) step.chain_arg = at;
      const HostTensor* c = constant_value(n->args[1 - at]);
      if (!c || n->args[at].get() != ends[b]) return std::nullopt;
      // The result must keep the branch's shape: the constant only broadcasts into it.
      if (!(n->type.as<TensorTypeNode>()->shape == ends[b]->type.as<TensorTypeNode>()->shape)) return std::nullopt;
      auto v = biased ? std::optional(c->to_doubles()) : per_channel(*c, rank, axis, channels[b]);
      if (!v || static_cast<int64_t>(v->size()) != channels[b]) return std::nullopt;
      step.constants.push_back(std::move(*v));
    }
    return step;
  }

  // Concatenation of the branches' constants along `axis`, evaluated now.
  static HostTensor concat_constants(const std::vector<Expr>& parts, int64_t axis) {
    Expr cat = make_call("concatenate", parts, Attrs().set_int("axis", axis));
    std::vector<HostTensor> values;
    for (const Expr& p : parts) values.push_back(*constant_value(p));
    auto r = evaluate_call(*cat.as<CallNode>(), values);
    KILN_CHECK(r.has_value()) << "concatenate of constants did not evaluate";
    return *r;
  }

  void build(Group& g) {
    const CallNode& h = *g.heads[0];
    std::vector<Expr> weights;
    for (const CallNode* c : g.heads) weights.push_back(c->args[1]);
    Expr weight = make_constant(concat_constants(weights, g.shape.weight_axis));
    Expr e = make_call(*h.op, {rewritten(g.data), weight}, h.attrs, h.name);
    const TensorTypeNode& t = e.tensor_type();
    const int64_t axis = g.shape.out_axis < 0 ? t.rank() + g.shape.out_axis : g.shape.out_axis;
    const int64_t total = t.shape[axis];
    for (const Step& s : g.steps) {
      if (s.constants.empty()) {
        e = make_call(*s.first->op, {e}, s.first->attrs, s.first->name);
        continue;
      }
      std::vector<double> all;
      for (const auto& v : s.constants) all.insert(all.end(), v.begin(), v.end());
      DataType dt = constant_value(s.first->args[1 - s.chain_arg])->dtype();
      bool biased = s.first->op_name() == "nn.bias_add";
      Shape cs = biased ? Shape{total} : Shape(static_cast<size_t>(t.rank() - axis), 1);
      cs[0] = total;
      Expr c = make_constant(HostTensor::from_doubles(dt, cs, all));
      std::vector<Expr> args = s.chain_arg == 0 ? std::vector<Expr>{e, c} : std::vector<Expr>{c, e};
      e = make_call(*s.first->op, args, s.first->attrs, s.first->name);
    }
    g.combined = e;
  }

  int min_branches_;
  Users users_;
  std::vector<Group> groups_;
  std::unordered_map<const CallNode*, std::pair<size_t, int>> branch_end_;
  int combined_ = 0;
};

}  // namespace

CombineResult combine_parallel(const Module& m, int min_branches) {
  KILN_CHECK(min_branches >= 2) << "combine_parallel needs at least 2 branches, got " << min_branches;
  std::vector<Expr> order = post_order({m.body});
  Combiner c(order, min_branches);
  if (c.combined() == 0) return {m, 0};
  Expr body = c.mutate(m.body);
  return {m.with_body(body), c.combined()};
}

}  // namespace kiln::relay
