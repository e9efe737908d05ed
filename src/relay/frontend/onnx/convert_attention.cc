// Attention-family nodes (Attention, RotaryEmbedding, LinearAttention), decomposed into graph
// ops: batch matmuls, softmax, where, reshapes and transposes. The decompositions follow the ONNX
// reference (onnx/reference/ops/op_attention.py ...), which the function bodies of the opset
// also spell out, so that kiln's results match the suite's expected outputs bit for bit where the
// arithmetic allows it.
#include <cmath>
#include <limits>

#include "convert.h"
#include "kiln/support/error.h"

namespace kiln::relay::onnx_frontend {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

Expr reshape(NodeContext& c, const Expr& x, const Shape& shape) {
  return c.call("reshape", {x}, Attrs().set_ints("newshape", shape));
}
Expr transpose(NodeContext& c, const Expr& x, const std::vector<int64_t>& axes) {
  return c.call("transpose", {x}, Attrs().set_ints("axes", axes));
}
Expr where(NodeContext& c, const Expr& cond, const Expr& a, const Expr& b) { return c.call("where", {cond, a, b}); }
Expr add(NodeContext& c, const Expr& a, const Expr& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return c.call("add", {a, b});
}

// [B, S, H*D] -> [B, H, S, D]: the 3-d form of Q, K and V.
Expr split_heads(NodeContext& c, const Expr& x, int64_t heads, const char* role) {
  const Shape& s = x.tensor_type().shape;
  KILN_USER_CHECK(heads >= 1 && s[2] % heads == 0) << role << " " << shape_str(s) << ": its hidden size " << s[2]
                                                   << " is not a multiple of the " << heads << " heads";
  return transpose(c, reshape(c, x, {s[0], s[1], heads, s[2] / heads}), {0, 2, 1, 3});
}

// The attention scores' additive bias, broadcastable to [B, Hq, Sq, St] (undefined when nothing
// masks): the attn_mask (a bool mask as 0 / -inf, padded with -inf to St keys), the causal
// frontier (query i sees key j iff j <= i + offset, offset = past length, or per batch
// nonpad_kv_seqlen - Sq) and the padding of nonpad_kv_seqlen (key j exists iff j < nonpad).
Expr attention_bias(NodeContext& c, DataType t, int64_t batch, int64_t sq, int64_t st, int64_t past) {
  Expr zero = c.scalar(t, 0), neg_inf = c.scalar(t, kNegInf);
  Expr bias;
  if (c.has_input(3)) {
    const TensorTypeNode& m = c.input_type(3, "attn_mask");
    KILN_USER_CHECK(m.dtype.is_bool() || m.dtype == t)
        << "attn_mask is " << m.dtype.str() << "; it must be bool or " << t.str() << " like Q";
    KILN_USER_CHECK(m.rank() >= 1 && m.rank() <= 4 && m.shape.back() <= st)
        << "attn_mask " << shape_str(m.shape) << " must have rank 1 to 4 and at most " << st
        << " keys (past + current)";
    bias = m.dtype.is_bool() ? where(c, c.input(3), zero, neg_inf) : c.input(3);
    if (m.shape.back() < st) {
      // A shorter mask leaves the last keys out: pad them with -inf.
      Shape pad = m.shape;
      pad.back() = st - m.shape.back();
      int64_t n = 1;
      for (int64_t d : pad) n *= d;
      Expr fill = c.constant(HostTensor::from_doubles(t, pad, std::vector<double>(n, kNegInf)));
      bias = c.call("concatenate", {bias, fill}, Attrs().set_int("axis", m.rank() - 1));
    }
  }
  bool nonpad = c.opset() >= 24 && c.has_input(6);
  Expr lens;
  if (nonpad) {
    const TensorTypeNode& n = c.input_type(6, "nonpad_kv_seqlen");
    KILN_USER_CHECK(n.dtype.is_integer() && n.rank() == 1 && n.shape[0] == batch)
        << "nonpad_kv_seqlen " << n.dtype.str() << shape_str(n.shape) << " must be integers of shape [" << batch << "]";
    lens = reshape(c, cast_to(c, c.input(6), DataType::i64()), {batch, 1, 1, 1});
  }
  // Index vectors rather than a [Sq, St] table: the importer folds the frontier into a constant
  // when it is small, and a long sequence computes it in the kernel that adds it to the scores
  // instead of carrying Sq x St bias values in the weights.
  auto iota = [&](int64_t n, int64_t from, int64_t step, const Shape& shape) {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < n; ++i) v.push_back(from + step * i);
    return c.constant(HostTensor::from_int64s(DataType::i64(), shape, v));
  };
  if (c.attr_int("is_causal", 0)) {
    Expr key = iota(st, 0, 1, {1, 1, 1, st});
    Expr allowed;
    if (nonpad) {
      // Per batch: j <= i + lens[b] - Sq  <=>  j + (Sq - i) <= lens[b].
      allowed = c.call("less_equal", {c.call("add", {key, iota(sq, sq, -1, {1, 1, sq, 1})}), lens});
    } else {
      allowed = c.call("less_equal", {key, iota(sq, past, 1, {1, 1, sq, 1})});
    }
    bias = add(c, bias, where(c, allowed, zero, neg_inf));
  }
  if (nonpad) bias = add(c, bias, where(c, c.call("less", {iota(st, 0, 1, {1, 1, 1, st}), lens}), zero, neg_inf));
  return bias;
}

// a [B, Hq, M, N] times b [B, Hkv, N, P] with Hq = r * Hkv (GQA / MQA): head h of `a` pairs
// with head h / r of `b` (ONNX repeats each kv head r times, interleaved). Grouping the r query
// heads of one kv head into the rows of one matmul does that without copying `b` r times.
Expr grouped_matmul(NodeContext& c, const Expr& a, const Expr& b) {
  const Shape& sa = a.tensor_type().shape;
  const Shape& sb = b.tensor_type().shape;
  if (sa[1] == sb[1]) return c.call("nn.matmul", {a, b});
  int64_t r = sa[1] / sb[1];
  Expr y = c.call("nn.matmul", {reshape(c, a, {sa[0], sb[1], r * sa[2], sa[3]}), b});
  return reshape(c, y, {sa[0], sa[1], sa[2], sb[3]});
}

std::vector<Expr> attention(NodeContext& c) {
  const TensorTypeNode& q = c.input_type(0, "Q");
  const TensorTypeNode& k = c.input_type(1, "K");
  const TensorTypeNode& v = c.input_type(2, "V");
  DataType t = q.dtype;
  KILN_USER_CHECK(t.is_floating() && k.dtype == t && v.dtype == t)
      << "Q, K and V must be floating-point tensors of one type, got " << q.dtype.str() << ", " << k.dtype.str()
      << " and " << v.dtype.str();
  KILN_USER_CHECK((q.rank() == 3 || q.rank() == 4) && k.rank() == q.rank() && v.rank() == q.rank())
      << "Q " << shape_str(q.shape) << ", K " << shape_str(k.shape) << " and V " << shape_str(v.shape)
      << " must all be 3-d [batch, seq, hidden] or all 4-d [batch, heads, seq, head_size]";
  Expr Q = c.input(0), K = c.input(1), V = c.input(2);
  bool three_d = q.rank() == 3;
  if (three_d) {
    KILN_USER_CHECK(c.has_attr("q_num_heads") && c.has_attr("kv_num_heads"))
        << "3-d Q, K and V need the attributes q_num_heads and kv_num_heads";
    Q = split_heads(c, Q, c.attr_int("q_num_heads"), "Q");
    K = split_heads(c, K, c.attr_int("kv_num_heads"), "K");
    V = split_heads(c, V, c.attr_int("kv_num_heads"), "V");
  } else {
    for (const char* a : {"q_num_heads", "kv_num_heads"}) {
      int64_t heads = (a[0] == 'q' ? q : k).shape[1];
      KILN_USER_CHECK(c.attr_int(a, heads) == heads)
          << "attribute '" << a << "' is " << c.attr_int(a) << ", the 4-d inputs have " << heads << " heads";
    }
  }
  Shape qs = Q.tensor_type().shape, ks = K.tensor_type().shape, vs = V.tensor_type().shape;
  int64_t batch = qs[0], hq = qs[1], sq = qs[2], hkv = ks[1];
  KILN_USER_CHECK(hkv >= 1 && hq % hkv == 0) << "q_num_heads " << hq << " is not a multiple of kv_num_heads " << hkv;
  KILN_USER_CHECK(ks[0] == batch && vs[0] == batch && vs[1] == hkv && ks[2] == vs[2] && ks[3] == qs[3])
      << "K " << shape_str(ks) << " and V " << shape_str(vs) << " (as [batch, heads, seq, head_size]) do not fit Q "
      << shape_str(qs);

  // The kv cache: present = past ++ current along the sequence.
  KILN_USER_CHECK(c.has_input(4) == c.has_input(5)) << "past_key and past_value must be given together";
  int64_t past = 0;
  if (c.has_input(4)) {
    KILN_USER_CHECK(!(c.opset() >= 24 && c.has_input(6)))
        << "nonpad_kv_seqlen cannot be combined with past_key and past_value";
    const TensorTypeNode& pk = c.input_type(4, "past_key");
    const TensorTypeNode& pv = c.input_type(5, "past_value");
    KILN_USER_CHECK(pk.rank() == 4 && pv.rank() == 4 && pk.shape[0] == batch && pk.shape[1] == hkv &&
                    pk.shape[3] == ks[3] && pv.shape[0] == batch && pv.shape[1] == hkv && pv.shape[3] == vs[3] &&
                    pv.shape[2] == pk.shape[2] && pk.dtype == t && pv.dtype == t)
        << "past_key " << pk.dtype.str() << shape_str(pk.shape) << " and past_value " << pv.dtype.str()
        << shape_str(pv.shape) << " do not fit K " << shape_str(ks) << " and V " << shape_str(vs);
    past = pk.shape[2];
    K = c.call("concatenate", {c.input(4), K}, Attrs().set_int("axis", 2));
    V = c.call("concatenate", {c.input(5), V}, Attrs().set_int("axis", 2));
  }
  int64_t st = K.tensor_type().shape[2];

  int64_t mode = c.attr_int("qk_matmul_output_mode", 0);
  KILN_USER_CHECK(mode >= 0 && mode <= 3) << "qk_matmul_output_mode must be 0 to 3, got " << mode;
  double scale = c.attr_float("scale", 1.0 / std::sqrt(static_cast<double>(qs[3])));
  KILN_USER_CHECK(scale > 0) << "attribute 'scale' must be positive (Q and K are each scaled by its square root), got "
                             << scale;
  double softcap = c.attr_float("softcap", 0.0);
  DataType soft_t = t;
  if (c.has_attr("softmax_precision")) {
    soft_t = dtype_from_onnx(static_cast<int>(c.attr_int("softmax_precision")), "attribute 'softmax_precision'");
    KILN_USER_CHECK(soft_t.is_floating()) << "softmax_precision must be a floating-point type, got " << soft_t.str();
  }

  // Q and K are each scaled by sqrt(scale) before their product (the spec's guard against fp16
  // overflow); K^T is a transpose feeding the batch matmul, as in exported transformers.
  Expr root = c.scalar(t, std::sqrt(scale));
  Expr kt = transpose(c, c.call("multiply", {K, root}), {0, 1, 3, 2});
  Expr qk = grouped_matmul(c, c.call("multiply", {Q, root}), kt);
  Expr qk_out = qk;
  if (softcap > 0) {
    // Before the mask, so that masked scores stay -inf.
    Expr cap = c.scalar(t, softcap);
    qk = c.call("multiply", {c.call("tanh", {c.call("divide", {qk, cap})}), cap});
    if (mode == 1) qk_out = qk;
  }
  Expr bias = attention_bias(c, t, batch, sq, st, past);
  Expr scores = add(c, qk, bias);
  if (mode == 2) qk_out = scores;
  Expr probs = c.call("nn.softmax", {cast_to(c, scores, soft_t)}, Attrs().set_int("axis", 3));
  // Only an attn_mask or nonpad_kv_seqlen can mask a whole row: the causal frontier alone always
  // leaves key 0 (its offset, the past length, is never negative).
  bool rows_may_die = c.has_input(3) || (c.opset() >= 24 && c.has_input(6));
  if (rows_may_die) {
    // A row that the bias masks entirely (no key to attend) is zero, not the NaN that softmax
    // makes of all -inf; decided on the bias, so NaN or inf scores cannot unmask it.
    Expr max = c.call("max", {bias}, Attrs().set_ints("axes", {bias.tensor_type().rank() - 1}).set_int("keepdims", 1));
    Expr dead = c.call("equal", {max, c.scalar(t, kNegInf)});
    const auto* folded = dead.as<ConstantNode>();
    bool any_dead = true;
    if (folded) {
      any_dead = false;
      for (int64_t x : folded->value.to_int64s()) any_dead = any_dead || x != 0;
    }
    if (any_dead) probs = where(c, dead, c.scalar(soft_t, 0), probs);
  }
  probs = cast_to(c, probs, t);
  if (mode == 3) qk_out = probs;
  Expr y = grouped_matmul(c, probs, V);
  if (three_d) {
    int64_t dv = vs[3];
    y = reshape(c, transpose(c, y, {0, 2, 1, 3}), {batch, sq, hq * dv});
  }
  std::vector<Expr> outs = {y, Expr(), Expr(), Expr()};
  if (c.output_used(1)) outs[1] = K;
  if (c.output_used(2)) outs[2] = V;
  if (c.output_used(3)) outs[3] = qk_out;
  return outs;
}

// x[..., begin:end:stride] along the last axis.
Expr slice_last(NodeContext& c, const Expr& x, int64_t begin, int64_t end, int64_t stride = 1) {
  const Shape& s = x.tensor_type().shape;
  std::vector<int64_t> b(s.size(), 0), e(s.begin(), s.end()), st(s.size(), 1);
  b.back() = begin;
  e.back() = end;
  st.back() = stride;
  return c.call("strided_slice", {x}, Attrs().set_ints("begin", b).set_ints("end", e).set_ints("strides", st));
}

// Rotates the first rotary_embedding_dim (R) features of each head by the position's angles:
// pairs (x1, x2) -> (cos x1 - sin x2, sin x1 + cos x2), the pairs being the two halves of the R
// features, or neighbours with interleaved=1. The input stays in its own layout ([B, H, S, D],
// or [B, S, H, D] seen through a reshape of [B, S, H*D]); cos and sin broadcast over the heads.
std::vector<Expr> rotary_embedding(NodeContext& c) {
  const TensorTypeNode& x = c.input_type(0, "input");
  const TensorTypeNode& cc = c.input_type(1, "cos_cache");
  const TensorTypeNode& sc = c.input_type(2, "sin_cache");
  KILN_USER_CHECK(x.dtype.is_floating() && cc.dtype == x.dtype && sc.dtype == x.dtype && cc.shape == sc.shape)
      << "input " << x.dtype.str() << ", cos_cache " << cc.dtype.str() << shape_str(cc.shape) << " and sin_cache "
      << sc.dtype.str() << shape_str(sc.shape) << " must be floating-point of one type, the caches of one shape";
  KILN_USER_CHECK(x.rank() == 3 || x.rank() == 4)
      << "input " << shape_str(x.shape) << " must be [batch, heads, seq, head_size] or [batch, seq, hidden]";
  Expr in = c.input(0);
  int64_t batch = x.shape[0], seq = x.rank() == 4 ? x.shape[2] : x.shape[1];
  if (x.rank() == 3) {
    int64_t heads = c.attr_int("num_heads", 0);
    KILN_USER_CHECK(heads >= 1 && x.shape[2] % heads == 0)
        << "a 3-d input " << shape_str(x.shape) << " needs num_heads dividing its hidden size, got " << heads;
    in = reshape(c, in, {batch, seq, heads, x.shape[2] / heads});
  }
  int64_t d = in.tensor_type().shape[3];
  int64_t r = c.attr_int("rotary_embedding_dim", 0);
  if (r == 0) r = d;
  KILN_USER_CHECK(r >= 2 && r <= d && r % 2 == 0)
      << "rotary_embedding_dim " << r << " must be even and at most the head size " << d;
  Expr cos = c.input(1), sin = c.input(2);
  if (c.has_input(3)) {
    const TensorTypeNode& p = c.input_type(3, "position_ids");
    KILN_USER_CHECK(cc.rank() == 2 && p.dtype.is_integer() && p.shape == Shape({batch, seq}))
        << "with position_ids " << p.dtype.str() << shape_str(p.shape) << " the caches " << shape_str(cc.shape)
        << " must be [max_position, " << r / 2 << "] and the ids integers of shape [" << batch << "," << seq << "]";
    cos = c.call("take", {cos, c.input(3)}, Attrs().set_int("axis", 0));
    sin = c.call("take", {sin, c.input(3)}, Attrs().set_int("axis", 0));
  }
  const Shape& cs = cos.tensor_type().shape;
  KILN_USER_CHECK(cs == Shape({batch, seq, r / 2}))
      << "cos_cache and sin_cache give " << shape_str(cs) << " per position, expected [" << batch << "," << seq << ","
      << r / 2 << "] (rotary_embedding_dim / 2 angles)";
  Shape per_head = x.rank() == 4 ? Shape{batch, 1, seq, r / 2} : Shape{batch, seq, 1, r / 2};
  cos = reshape(c, cos, per_head);
  sin = reshape(c, sin, per_head);
  bool interleaved = c.attr_int("interleaved", 0) != 0;
  Expr x1 = interleaved ? slice_last(c, in, 0, r, 2) : slice_last(c, in, 0, r / 2);
  Expr x2 = interleaved ? slice_last(c, in, 1, r, 2) : slice_last(c, in, r / 2, r);
  Expr real = c.call("subtract", {c.call("multiply", {cos, x1}), c.call("multiply", {sin, x2})});
  Expr imag = c.call("add", {c.call("multiply", {sin, x1}), c.call("multiply", {cos, x2})});
  Expr rotated;
  if (interleaved) {
    // [..., R/2] pairs -> [..., R/2, 2] -> [..., R].
    Shape s = real.tensor_type().shape;
    Shape s1 = s;
    s1.push_back(1);
    Expr pairs = c.call("concatenate", {reshape(c, real, s1), reshape(c, imag, s1)}, Attrs().set_int("axis", 4));
    s.back() = r;
    rotated = reshape(c, pairs, s);
  } else {
    rotated = c.call("concatenate", {real, imag}, Attrs().set_int("axis", 3));
  }
  if (r < d) rotated = c.call("concatenate", {rotated, slice_last(c, in, r, d)}, Attrs().set_int("axis", 3));
  return {x.rank() == 3 ? reshape(c, rotated, x.shape) : rotated};
}

// The recurrence of LinearAttention is unrolled over the (static) sequence, a few small ops per
// step; past this many steps the graph would grow too large to compile in reasonable time (a
// chunk-parallel form would be needed).
constexpr int64_t kMaxLinearAttentionSteps = 256;

// x[:, t:t+1, :] of a [B, T, N] tensor, as `shape` (the step's 4-d view).
Expr step_of(NodeContext& c, const Expr& x, int64_t t, const Shape& shape) {
  const Shape& s = x.tensor_type().shape;
  Attrs a;
  a.set_ints("begin", {0, t, 0}).set_ints("end", {s[0], t + 1, s[2]}).set_ints("strides", {1, 1, 1});
  return reshape(c, c.call("strided_slice", {x}, a), shape);
}

// LinearAttention: per step t, with the state S [B, Hkv, dk, dv] (float32, as the reference):
//   gated:  S = exp(g_t) * S             delta: v_t = beta_t * (v_t - S^T k_t)
//   S = S + k_t v_t^T                    o_t = scale * q_t^T S (each kv head serves r q heads)
// The inputs stay packed [B, T, H*D]: one step's slice [B, 1, H*D] is a reshape of [B, H, 1, D].
std::vector<Expr> linear_attention(NodeContext& c) {
  const TensorTypeNode& q = c.input_type(0, "query");
  const TensorTypeNode& k = c.input_type(1, "key");
  const TensorTypeNode& v = c.input_type(2, "value");
  DataType t = q.dtype;
  KILN_USER_CHECK(t.is_floating() && k.dtype == t && v.dtype == t && q.rank() == 3 && k.rank() == 3 && v.rank() == 3)
      << "query " << q.dtype.str() << shape_str(q.shape) << ", key " << k.dtype.str() << shape_str(k.shape)
      << " and value " << v.dtype.str() << shape_str(v.shape) << " must be 3-d floating-point tensors of one type";
  std::string rule = c.attr_str("update_rule", "gated_delta");
  KILN_USER_CHECK(rule == "linear" || rule == "gated" || rule == "delta" || rule == "gated_delta")
      << "attribute 'update_rule' must be 'linear', 'gated', 'delta' or 'gated_delta', got '" << rule << "'";
  int64_t hq = c.attr_int("q_num_heads"), hkv = c.attr_int("kv_num_heads");
  KILN_USER_CHECK(hq >= 1 && hkv >= 1 && hq % hkv == 0)
      << "q_num_heads " << hq << " must be a positive multiple of kv_num_heads " << hkv;
  int64_t batch = q.shape[0], steps = q.shape[1];
  KILN_USER_CHECK(q.shape[2] % hq == 0 && k.shape[2] % hkv == 0 && v.shape[2] % hkv == 0 &&
                  k.shape[2] / hkv == q.shape[2] / hq && k.shape[0] == batch && v.shape[0] == batch &&
                  k.shape[1] == steps && v.shape[1] == steps)
      << "query " << shape_str(q.shape) << ", key " << shape_str(k.shape) << " and value " << shape_str(v.shape)
      << " do not split into " << hq << " query and " << hkv << " kv heads of one key size";
  int64_t dk = q.shape[2] / hq, dv = v.shape[2] / hkv;
  KILN_USER_CHECK(steps >= 1) << "query " << shape_str(q.shape) << " has no step";
  KILN_SUPPORTED(steps <= kMaxLinearAttentionSteps)
      << "LinearAttention over " << steps << " steps: kiln unrolls the recurrence, up to " << kMaxLinearAttentionSteps
      << " steps";
  bool gating = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  KILN_USER_CHECK(gating == c.has_input(4))
      << "update_rule '" << rule << "' " << (gating ? "needs" : "forbids") << " the decay input";
  KILN_USER_CHECK(delta == c.has_input(5))
      << "update_rule '" << rule << "' " << (delta ? "needs" : "forbids") << " the beta input";
  DataType f32 = DataType::f32();
  Expr Q = cast_to(c, c.input(0), f32), K = cast_to(c, c.input(1), f32), V = cast_to(c, c.input(2), f32);
  Expr decay, beta;
  int64_t decay_n = 0, beta_n = 0;
  if (gating) {
    const TensorTypeNode& g = c.input_type(4, "decay");
    decay_n = g.rank() == 3 ? g.shape[2] / hkv : 0;
    KILN_USER_CHECK(g.rank() == 3 && g.shape[0] == batch && g.shape[1] == steps &&
                    (g.shape[2] == hkv || g.shape[2] == hkv * dk) && g.dtype.is_floating())
        << "decay " << g.dtype.str() << shape_str(g.shape) << " must be [" << batch << "," << steps << "," << hkv
        << "] or [" << batch << "," << steps << "," << hkv * dk << "]";
    decay = cast_to(c, c.input(4), f32);
  }
  if (delta) {
    const TensorTypeNode& b = c.input_type(5, "beta");
    KILN_USER_CHECK(b.rank() == 3 && b.shape[0] == batch && b.shape[1] == steps &&
                    (b.shape[2] == hkv || b.shape[2] == 1) && b.dtype.is_floating())
        << "beta " << b.dtype.str() << shape_str(b.shape) << " must be [" << batch << "," << steps << "," << hkv
        << "] or [" << batch << "," << steps << ",1]";
    beta_n = b.shape[2];
    beta = cast_to(c, c.input(5), f32);
  }
  DataType state_t = t;
  Expr state;  // undefined: all zeros (no past_state), which the first step need not multiply
  if (c.has_input(3)) {
    const TensorTypeNode& p = c.input_type(3, "past_state");
    KILN_USER_CHECK(p.dtype.is_floating() && p.shape == Shape({batch, hkv, dk, dv}))
        << "past_state " << p.dtype.str() << shape_str(p.shape) << " must be floating-point [" << batch << "," << hkv
        << "," << dk << "," << dv << "]";
    state_t = p.dtype;
    state = cast_to(c, c.input(3), f32);
  }
  double scale = c.attr_float("scale", 0.0);
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(dk));
  std::vector<Expr> outs;
  for (int64_t i = 0; i < steps; ++i) {
    Expr kt = step_of(c, K, i, {batch, hkv, dk, 1});
    Expr vt = step_of(c, V, i, {batch, hkv, 1, dv});
    if (gating && state.defined())
      state = c.call("multiply", {state, c.call("exp", {step_of(c, decay, i, {batch, hkv, decay_n, 1})})});
    if (delta) {
      if (state.defined())
        vt = c.call("subtract", {vt, c.call("nn.matmul", {reshape(c, kt, {batch, hkv, 1, dk}), state})});
      vt = c.call("multiply", {step_of(c, beta, i, {batch, beta_n, 1, 1}), vt});
    }
    state = add(c, state, c.call("multiply", {kt, vt}));
    Expr o = grouped_matmul(c, step_of(c, Q, i, {batch, hq, 1, dk}), state);
    outs.push_back(reshape(c, o, {batch, 1, hq * dv}));
  }
  Expr y = outs.size() == 1 ? outs[0] : c.call("concatenate", outs, Attrs().set_int("axis", 1));
  y = cast_to(c, c.call("multiply", {y, c.scalar(f32, scale)}), t);
  if (!state.defined()) state = c.constant(HostTensor::zeros(f32, {batch, hkv, dk, dv}));
  return {y, cast_to(c, state, state_t)};
}

}  // namespace

void register_attention_converters(ConverterTable& t) {
  t["Attention"] = attention;
  t["RotaryEmbedding"] = rotary_embedding;
  t["LinearAttention"] = linear_attention;
}

}  // namespace kiln::relay::onnx_frontend
