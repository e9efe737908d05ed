// alter_layout: 2-d convolutions in blocked NCHW[x]c layout (see transforms.h).
//
// Each node gets its new value in the original layout (`plain`) and/or in a blocked layout
// (`blocked`, with its block size), both made on demand and memoized. A blocked conv (or depthwise
// conv) produces a blocked value; ops that can run blocked (elementwise ops; broadcasts with
// per-channel operands or equally shaped ones; channel concatenations; max/avg and global pools)
// keep it blocked, and so do slices of whole channel blocks; every other reader asks for the plain value, which creates the one
// layout_transform back. Since transforms are only ever made where a reader needs
// another layout, conv -> relu -> conv exchanges blocked tensors with no transform in between.
#include <cstring>
#include <unordered_map>

#include "kiln/relay/transforms.h"
#include "kiln/support/error.h"

namespace kiln::relay {

namespace {

std::string blocked_layout(int64_t block) { return "NCHW" + std::to_string(block) + "c"; }

int64_t choose_block(int64_t channels, int64_t max_block) {
  for (int64_t b = std::min(channels, max_block); b > 1; --b)
    if (channels % b == 0) return b;
  return 1;
}

// The block of a blocked op's output channels (its vector lanes), or 1 when the channel count
// has no divisor that fills most of a vector: shufflenet_v2's 58, 116 and 232 channels give
// blocks of 2, 4 and 8 of 16 lanes, whose kernels ran 1.6x slower than NCHW's (Zen 4).
int64_t output_block(int64_t channels, int64_t max_block) {
  int64_t b = choose_block(channels, max_block);
  return b == channels || 4 * b >= 3 * max_block ? b : 1;
}

// OIHW -> [O/y, I/x, KH, KW, x, y]: out[ob, ib, h, w, i, o] = W[ob*y + o, ib*x + i, h, w].
HostTensor pack_weight(const HostTensor& w, int64_t x, int64_t y) {
  const Shape& s = w.shape();
  int64_t O = s[0], I = s[1], KH = s[2], KW = s[3];
  size_t eb = static_cast<size_t>(w.dtype().bytes());
  std::vector<uint8_t> out(w.nbytes());
  size_t at = 0;
  for (int64_t ob = 0; ob < O / y; ++ob)
    for (int64_t ib = 0; ib < I / x; ++ib)
      for (int64_t h = 0; h < KH; ++h)
        for (int64_t k = 0; k < KW; ++k)
          for (int64_t i = 0; i < x; ++i)
            for (int64_t o = 0; o < y; ++o, at += eb) {
              int64_t src = (((ob * y + o) * I + ib * x + i) * KH + h) * KW + k;
              std::memcpy(out.data() + at, w.data() + src * eb, eb);
            }
  return HostTensor(w.dtype(), {O / y, I / x, KH, KW, x, y}, std::move(out));
}

class LayoutRewriter {
 public:
  explicit LayoutRewriter(const AlterLayoutOptions& o) : opts_(o) {}

  // The new value of `e` in its original layout.
  Expr plain(const Expr& e) {
    auto it = plain_.find(e.get());
    if (it != plain_.end()) return it->second;
    const auto& b = blocked_.at(e.get());
    Expr t = transform(b.first, b.second, 0);
    plain_[e.get()] = t;
    return t;
  }

  void visit(const Expr& e) {
    const auto* c = e.as<CallNode>();
    if (!c) {
      plain_[e.get()] = rebuild(e);
      return;
    }
    if (try_conv(e, c) || try_depthwise(e, c) || try_conv_integer(e, c) || try_quantize(e, c) ||
        try_elementwise(e, c) || try_broadcast(e, c) || try_concat(e, c) || try_global_pool(e, c) || try_pool(e, c) ||
        try_channel_slice(e, c))
      return;
    plain_[e.get()] = rebuild(e);
  }

 private:
  Expr transform(const Expr& v, int64_t from, int64_t to) {
    std::string src = from ? blocked_layout(from) : "NCHW", dst = to ? blocked_layout(to) : "NCHW";
    return make_call("layout_transform", {v}, Attrs().set_str("src_layout", src).set_str("dst_layout", dst));
  }

  // The new value of `e` in layout NCHW<block>c.
  Expr blocked(const Expr& e, int64_t block) {
    auto it = blocked_.find(e.get());
    if (it != blocked_.end() && it->second.second == block) return it->second.first;
    auto key = std::make_pair(e.get(), block);
    auto cached = converted_.find(key);
    if (cached != converted_.end()) return cached->second;
    Expr t = it != blocked_.end() ? transform(it->second.first, it->second.second, block)
                                  : transform(plain(e), 0, block);
    converted_[key] = t;
    return t;
  }

  int64_t block_of(const Expr& e) const {
    auto it = blocked_.find(e.get());
    return it == blocked_.end() ? 0 : it->second.second;
  }

  Expr rebuild(const Expr& e) {
    std::vector<Expr> kids = children(e);
    bool same = true;
    std::vector<Expr> now;
    for (const Expr& k : kids) {
      now.push_back(plain(k));
      same = same && now.back().same_as(k);
    }
    if (same) return e;
    if (const auto* c = e.as<CallNode>()) return make_call(*c->op, now, c->attrs, c->name);
    if (e.as<TupleNode>()) return make_tuple(now);
    if (const auto* g = e.as<TupleGetItemNode>()) return make_tuple_get_item(now[0], g->index);
    return e;
  }

  bool try_conv(const Expr& e, const CallNode* c) {
    if (c->op_name() != "nn.conv2d" || c->attrs.get_int("groups") != 1) return false;
    const auto* w = c->args[1].as<ConstantNode>();
    if (!w || (opts_.keep_plain && opts_.keep_plain(*c))) return false;
    const Shape& out = c->type.as<TensorTypeNode>()->shape;
    // The input keeps its producer's block when that divides the channels (no transform).
    const int64_t cin = w->value.shape()[1];
    int64_t x = block_of(c->args[0]);
    if (x == 0 || cin % x != 0) x = choose_block(cin, opts_.max_block);
    int64_t y = output_block(out[1], opts_.max_block);
    if (y == 1) return false;  // nothing to vectorize over: stays NCHW
    Attrs a = c->attrs;
    a.set_str("data_layout", blocked_layout(x)).set_str("out_layout", blocked_layout(y));
    a.set_str("kernel_layout", "OIHW" + std::to_string(x) + "i" + std::to_string(y) + "o");
    Expr conv = make_call("nn.conv2d_NCHWc", {blocked(c->args[0], x), make_constant(pack_weight(w->value, x, y))}, a,
                          c->name);
    blocked_[e.get()] = {conv, y};
    return true;
  }

  // Depthwise (groups == C == OC, constant weight [C, 1, KH, KW] packed to [C/b, KH, KW, b]).
  bool try_depthwise(const Expr& e, const CallNode* c) {
    if (c->op_name() != "nn.conv2d") return false;
    const auto* w = c->args[1].as<ConstantNode>();
    const Shape& in = c->args[0].tensor_type().shape;
    const Shape& out = c->type.as<TensorTypeNode>()->shape;
    int64_t ch = in.size() == 4 ? in[1] : 0;
    if (!w || ch <= 1 || c->attrs.get_int("groups") != ch || out[1] != ch || w->value.shape()[1] != 1) return false;
    if (opts_.keep_plain && opts_.keep_plain(*c)) return false;
    // The producer's block when it divides the channels (no transform between them), else ours.
    int64_t b = block_of(c->args[0]);
    if (b == 0 || ch % b != 0) b = output_block(ch, opts_.max_block);
    if (b == 1) return false;
    const Shape& ws = w->value.shape();
    HostTensor packed = pack_weight(w->value.reshaped({ch, 1, ws[2], ws[3]}), 1, b);  // [C/b, 1, KH, KW, 1, b]
    Attrs a = c->attrs;
    a.set_str("data_layout", blocked_layout(b)).set_str("out_layout", blocked_layout(b));
    Expr conv = make_call("nn.depthwise_conv2d_NCHWc",
                          {blocked(c->args[0], b), make_constant(packed.reshaped({ch / b, ws[2], ws[3], b}))}, a, c->name);
    blocked_[e.get()] = {conv, b};
    return true;
  }

  // An integer conv of one group or depthwise (realize_integer_ops): its int32 sums in blocks of
  // the output channels. A conv of one group reads its data in the producer's blocks, or in NCHW
  // when the producer is plain (the int8 kernel packs either, so no transform); a depthwise
  // conv's data has its output's blocks. Blocked, an int8 conv writes each pixel's outputs as one
  // vector and the depthwise conv keeps channels in lanes (no strided windows).
  bool try_conv_integer(const Expr& e, const CallNode* c) {
    if (c->op_name() != "nn.conv2d_integer" || (opts_.keep_plain && opts_.keep_plain(*c))) return false;
    const Shape& out = c->type.as<TensorTypeNode>()->shape;
    const int64_t cin = c->args[0].tensor_type().shape[1];
    const bool depthwise = c->attrs.get_int("groups") != 1;
    if (depthwise && out[1] != cin) return false;  // a channel multiplier: blocks would span groups
    int64_t x = block_of(c->args[0]);
    if (x != 0 && cin % x != 0) x = 0;
    int64_t y = depthwise && x ? x : output_block(out[1], opts_.max_block);
    if (y == 1) return false;
    if (depthwise) x = y;
    Attrs a = c->attrs;
    a.set_str("data_layout", x ? blocked_layout(x) : "NCHW").set_str("out_layout", blocked_layout(y));
    Expr data = x ? blocked(c->args[0], x) : plain(c->args[0]);
    Expr conv = make_call("nn.conv2d_integer_NCHWc", {data, c->args[1], c->args[2], c->args[3]}, a, c->name);
    blocked_[e.get()] = {conv, y};
    return true;
  }

  // quantize / dequantize of a blocked value: per tensor, the blocks stay (scalars broadcast
  // over any layout); the per-channel dequantize of an integer conv's sums (no zero point)
  // becomes cast * scale with the scale in blocks [1, C/b, 1, 1, b], the same float product.
  bool try_quantize(const Expr& e, const CallNode* c) {
    const std::string& op = c->op_name();
    if (op != "quantize" && op != "dequantize") return false;
    const int64_t b = block_of(c->args[0]);
    if (b == 0) return false;
    bool scalars = true;
    for (size_t i = 1; i < c->args.size(); ++i) scalars = scalars && c->args[i].tensor_type().rank() == 0;
    Expr x = blocked_.at(c->args[0].get()).first;
    if (scalars) {
      std::vector<Expr> args = c->args;
      args[0] = x;
      blocked_[e.get()] = {make_call(*c->op, args, c->attrs, c->name), b};
      return true;
    }
    const Shape& in = c->args[0].tensor_type().shape;
    const auto* scale = c->args[1].as<ConstantNode>();
    if (op != "dequantize" || c->args.size() != 2 || !scale || c->attrs.get_int("axis") != 1 || in.size() != 4 ||
        scale->value.rank() != 1)
      return false;
    const DataType st = scale->value.dtype();
    Expr wide = make_call(get_op("cast"), {x}, Attrs().set_str("dtype", st.str()));
    Expr scaled = make_call(get_op("multiply"), {wide, make_constant(scale->value.reshaped({1, in[1] / b, 1, 1, b}))},
                            Attrs(), c->name);
    blocked_[e.get()] = {scaled, b};
    return true;
  }

  // A concatenation of channels with a blocked operand, when every operand's channels are whole
  // blocks of it: the blocks concatenate on axis 1 (squeezenet's fire modules, densenet).
  bool try_concat(const Expr& e, const CallNode* c) {
    if (c->op_name() != "concatenate" || c->attrs.get_int("axis") != 1) return false;
    int64_t b = 0;
    for (const Expr& a : c->args)
      if (!b) b = block_of(a);
    for (const Expr& a : c->args)
      if (b == 0 || a.tensor_type().shape.size() != 4 || a.tensor_type().shape[1] % b != 0) return false;
    std::vector<Expr> args;
    for (const Expr& a : c->args) args.push_back(blocked(a, b));
    blocked_[e.get()] = {make_call(*c->op, args, c->attrs, c->name), b};
    return true;
  }

  // A global pool of a blocked 2-d value: the mean (max) over its spatial axes, [N, C/x, 1, 1, x]
  // (efficientnet's squeeze-and-excitation reads it in blocks too).
  bool try_global_pool(const Expr& e, const CallNode* c) {
    const std::string& op = c->op_name();
    if (op != "nn.global_avg_pool" && op != "nn.global_max_pool") return false;
    int64_t b = block_of(c->args[0]);
    if (b == 0 || c->args[0].tensor_type().shape.size() != 4) return false;
    Attrs a = Attrs().set_ints("axes", {2, 3}).set_int("keepdims", 1);
    Expr pooled = make_call(get_op(op == "nn.global_avg_pool" ? "mean" : "max"), {blocked_.at(c->args[0].get()).first}, a, c->name);
    blocked_[e.get()] = {pooled, b};
    return true;
  }

  // A 2-d max/avg pool of a blocked value pools its blocks (resnet's and squeezenet's max pools
  // after blocked convs).
  bool try_pool(const Expr& e, const CallNode* c) {
    const std::string& op = c->op_name();
    if (op != "nn.max_pool2d" && op != "nn.avg_pool2d") return false;
    int64_t b = block_of(c->args[0]);
    if (b == 0) return false;
    Attrs a = c->attrs;
    a.set_str("layout", blocked_layout(b));
    blocked_[e.get()] = {make_call(*c->op, {blocked_.at(c->args[0].get()).first}, a, c->name), b};
    return true;
  }

  // A slice of whole channel blocks (combine_parallel's branches of a combined conv) slices the
  // blocks: each branch's reader then transforms only its own channels, fused with the slice,
  // instead of all branches waiting for one transform of the whole combined output.
  bool try_channel_slice(const Expr& e, const CallNode* c) {
    if (c->op_name() != "strided_slice") return false;
    int64_t b = block_of(c->args[0]);
    const Shape& in = c->args[0].tensor_type().shape;
    if (b == 0 || in.size() != 4) return false;
    const auto& begin = c->attrs.get_ints("begin");
    const auto& end = c->attrs.get_ints("end");
    const auto& strides = c->attrs.get_ints("strides");
    for (size_t i = 0; i < 4; ++i) {
      bool whole = begin[i] == 0 && end[i] == in[i];
      if (strides[i] != 1 || (i != 1 && !whole)) return false;
    }
    if (begin[1] % b != 0 || end[1] % b != 0) return false;
    Attrs a;
    a.set_ints("begin", {0, begin[1] / b, 0, 0, 0})
        .set_ints("end", {in[0], end[1] / b, in[2], in[3], b})
        .set_ints("strides", {1, 1, 1, 1, 1});
    blocked_[e.get()] = {make_call(*c->op, {blocked_.at(c->args[0].get()).first}, a, c->name), b};
    return true;
  }

  bool try_elementwise(const Expr& e, const CallNode* c) {
    if (c->op->pattern != OpPattern::Elementwise || c->args.size() != 1) return false;
    int64_t b = block_of(c->args[0]);
    if (b == 0 || c->args[0].tensor_type().shape != c->type.as<TensorTypeNode>()->shape) return false;
    blocked_[e.get()] = {make_call(*c->op, {blocked_.at(c->args[0].get()).first}, c->attrs, c->name), b};
    return true;
  }

  // add(conv, bias[C,1,1]), multiply(x, scale), add(conv, residual), nn.bias_add(conv, b[C]).
  bool try_broadcast(const Expr& e, const CallNode* c) {
    const std::string& op = c->op_name();
    bool bias_add = op == "nn.bias_add";
    if (c->op->pattern != OpPattern::Broadcast || c->args.size() != 2 || op == "nn.prelu") return false;
    if (bias_add && c->attrs.get_int("axis") != 1) return false;
    const Shape& out = c->type.as<TensorTypeNode>()->shape;
    int64_t b = 0;
    for (const Expr& a : c->args)
      if (!b && block_of(a) && a.tensor_type().shape == out) b = block_of(a);
    if (b == 0) return false;
    std::vector<Expr> args;
    for (const Expr& a : c->args) {
      const Shape& s = a.tensor_type().shape;
      if (s == out) {
        args.push_back(blocked(a, b));
        continue;
      }
      const auto* k = a.as<ConstantNode>();
      // A computed per-channel operand [N, C, 1, 1] (a squeeze-and-excitation scale) in blocks
      // [N, C/b, 1, 1, b] broadcasts over the blocked value's pixels.
      if (!k && s.size() == 4 && s[0] == out[0] && s[1] == out[1] && s[2] == 1 && s[3] == 1) {
        args.push_back(blocked(a, b));
        continue;
      }
      if (!k) return false;
      if (num_elements(s) == 1 && (s.size() <= 4 || bias_add)) {
        args.push_back(a);  // broadcasts against any layout
        continue;
      }
      // Per-channel constants ([C], [C,1,1], [1,C,1,1]) keep their memory order as [1, C/b, 1, 1, b].
      bool per_channel = bias_add ? s.size() == 1 : (s.size() == 3 && s[1] == 1 && s[2] == 1) ||
                                                        (s.size() == 4 && s[0] == 1 && s[2] == 1 && s[3] == 1);
      int64_t ch = bias_add ? s[0] : s[s.size() - 3];
      if (!per_channel || ch != out[1]) return false;
      args.push_back(make_constant(k->value.reshaped({1, out[1] / b, 1, 1, b})));
    }
    const OpDef& def = bias_add ? get_op("add") : *c->op;
    blocked_[e.get()] = {make_call(def, args, bias_add ? Attrs() : c->attrs, c->name), b};
    return true;
  }

  AlterLayoutOptions opts_;
  std::unordered_map<const ExprNode*, Expr> plain_;
  std::unordered_map<const ExprNode*, std::pair<Expr, int64_t>> blocked_;
  struct KeyHash {
    size_t operator()(const std::pair<const ExprNode*, int64_t>& k) const {
      return std::hash<const void*>()(k.first) ^ static_cast<size_t>(k.second * 0x9e3779b97f4a7c15ull);
    }
  };
  std::unordered_map<std::pair<const ExprNode*, int64_t>, Expr, KeyHash> converted_;
};

}  // namespace

Module alter_layout(const Module& m, const AlterLayoutOptions& options) {
  KILN_USER_CHECK(options.max_block >= 1) << "alter_layout: max_block must be positive, got " << options.max_block;
  LayoutRewriter rw(options);
  for (const Expr& e : post_order({m.body})) rw.visit(e);
  Expr body = rw.plain(m.body);
  return body.same_as(m.body) ? m : m.with_body(body);
}

LayoutTraffic layout_traffic(const Module& m) {
  LayoutTraffic t;
  for (const Expr& e : post_order({m.body})) {
    const auto* c = e.as<CallNode>();
    if (!c) continue;
    const std::string& op = c->op_name();
    int64_t n = num_elements(c->type.as<TensorTypeNode>() ? c->type.as<TensorTypeNode>()->shape : Shape{});
    if (op == "layout_transform") t.transformed += n;
    const bool integer = op == "nn.conv2d_integer_NCHWc";
    if (op == "nn.conv2d_NCHWc" || op == "nn.depthwise_conv2d_NCHWc" || integer) t.blocked += n;
    if (integer) t.integer += n;
  }
  return t;
}

}  // namespace kiln::relay
