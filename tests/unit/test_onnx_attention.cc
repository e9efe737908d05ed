// The attention-family converters (convert_attention.cc, convert_norm_act.cc) on small hand-built
// models: the graphs they import to, and every user error they report (each names its node).
// Their numerics are checked by the ONNX node suite (test_attention_*, test_rms_normalization_*,
// test_rotary_embedding_*, test_swiglu*, test_causal_conv_with_state_*, test_linear_attention_*).
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <map>
#include <unordered_map>

#include "kiln/relay/error.h"
#include "kiln/relay/evaluate.h"
#include "kiln/relay/frontend/onnx.h"
#include "kiln/relay/printer.h"
#include "test_onnx_builder.h"
#include "test_ops_b_util.h"
#include "test_shared_dir.h"

using namespace kiln::relay;
using namespace onnx_builder;
using Catch::Matchers::Contains;

namespace {
Module import(const std::string& bytes) { return from_onnx_bytes(bytes, "test model", {}); }

// One node named `name` whose inputs are float graph inputs of the given shapes (an empty name
// skips an optional input), outputs y0, y1, ...
std::string one_node(int opset, const std::string& op,
                     const std::vector<std::pair<std::string, std::vector<int64_t>>>& in, size_t outputs,
                     const std::vector<Pb>& attrs, int elem = FLOAT) {
  std::vector<std::string> names, outs;
  std::vector<Pb> inputs, out_values;
  for (const auto& [n, shape] : in) {
    names.push_back(n);
    if (!n.empty()) inputs.push_back(value(n, n == "mask" ? BOOL : n == "lens" ? INT64 : elem, shape));
  }
  for (size_t i = 0; i < outputs; ++i) {
    outs.push_back("y" + std::to_string(i));
    out_values.push_back(value(outs.back(), elem, {}));
  }
  return model(opset, {node(op, names, outs, "n1", attrs)}, inputs, out_values);
}

using kiln::test::shared_dir;
using kiln::test::exists;

// Imports a node-suite case without folding any call (fold_limit 0), evaluates the graph call
// by call (the plain reference evaluator, or the op compiled alone) and compares with its outputs (the suite's rtol
// 1e-3, atol 1e-4; NaN only where NaN is expected). Empty when they agree, else what differs.
std::string evaluate_unfolded(const std::string& dir) {
  std::string data = dir + "/test_data_set_0";
  OnnxImportOptions opts;
  opts.fold_limit = 0;
  std::map<std::string, HostTensor> inputs;
  for (int i = 0; exists(data + "/input_" + std::to_string(i) + ".pb"); ++i) {
    NamedTensor t = load_tensor_pb(data + "/input_" + std::to_string(i) + ".pb");
    inputs[t.name] = t.value;
  }
  Module m = from_onnx(dir + "/model.onnx", opts);
  std::unordered_map<const ExprNode*, HostTensor> values;
  for (const Expr& e : post_order(m.outputs())) {
    if (const auto* v = e.as<VarNode>()) {
      values[e.get()] = inputs.at(v->name);
    } else if (const auto* c = e.as<ConstantNode>()) {
      values[e.get()] = c->value;
    } else if (const auto* call = e.as<CallNode>()) {
      std::vector<HostTensor> args;
      for (const auto& a : call->args) args.push_back(values.at(a.get()));
      if (auto r = evaluate_call(*call, args)) {
        values[e.get()] = *r;
        continue;
      }
      // Ops without a plain reference (matmul, softmax, conv): compiled with the CPU templates.
      std::vector<Type> types;
      for (const auto& a : args) types.push_back(a.type());
      kiln::opsb_test::Lowered l = kiln::opsb_test::lower_call(call->op->name, types, call->attrs);
      kiln::schedule::Config cfg;
      values[e.get()] = kiln::opsb_test::run(l.template_schedule(cfg), l, args).at(0);
    } else {
      return "unexpected node kind";
    }
  }
  std::vector<Expr> outs = m.outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    std::vector<double> want = load_tensor_pb(data + "/output_" + std::to_string(i) + ".pb").value.to_doubles();
    std::vector<double> got = values.at(outs[i].get()).to_doubles();
    if (got.size() != want.size()) return "output " + std::to_string(i) + ": element count";
    for (size_t j = 0; j < got.size(); ++j) {
      bool ok =
          got[j] == want[j] ||
          (std::isnan(want[j]) ? std::isnan(got[j]) : std::abs(got[j] - want[j]) <= 1e-4 + 1e-3 * std::abs(want[j]));
      if (!ok)
        return "output " + std::to_string(i) + " element " + std::to_string(j) + ": " + std::to_string(got[j]) +
               ", expected " + std::to_string(want[j]);
    }
  }
  return "";
}

std::string error_of(const std::string& bytes) {
  try {
    import(bytes);
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("Attention imports to batch matmuls around a softmax, GQA without copying K and V", "[onnx][attention]") {
  // 3-d GQA with a kv cache: 6 query heads share 2 kv heads.
  std::string m = one_node(
      23, "Attention",
      {{"q", {2, 4, 48}}, {"k", {2, 3, 16}}, {"v", {2, 3, 20}}, {"", {}}, {"pk", {2, 2, 5, 8}}, {"pv", {2, 2, 5, 10}}},
      3, {attr_i("q_num_heads", 6), attr_i("kv_num_heads", 2), attr_i("is_causal", 1)});
  Module mod = import(m);
  std::vector<std::string> types;
  for (const auto& t : mod.output_types()) types.push_back(t.str());
  CHECK(types == std::vector<std::string>{"float32[2,4,60]", "float32[2,2,8,8]", "float32[2,2,8,10]"});
  std::string text = to_string(mod);
  CHECK_THAT(text, Contains("nn.softmax"));
  CHECK_THAT(text, Contains("nn.matmul"));
  CHECK_THAT(text, !Contains("tile"));
  CHECK_THAT(text, !Contains("broadcast_to"));
}

TEST_CASE("Attention reports bad heads, modes, caches and masks by node", "[onnx][attention]") {
  std::vector<std::pair<std::string, std::vector<int64_t>>> qkv3 = {
      {"q", {1, 2, 12}}, {"k", {1, 2, 8}}, {"v", {1, 2, 8}}};
  CHECK_THAT(error_of(one_node(23, "Attention", qkv3, 1, {})),
             Contains("ONNX node 'n1' (Attention): 3-d Q, K and V need the attributes q_num_heads and kv_num_heads"));
  CHECK_THAT(error_of(one_node(23, "Attention", qkv3, 1, {attr_i("q_num_heads", 5), attr_i("kv_num_heads", 3)})),
             Contains("Q [1,2,12]: its hidden size 12 is not a multiple of the 5 heads"));
  CHECK_THAT(error_of(one_node(23, "Attention", qkv3, 1, {attr_i("q_num_heads", 3), attr_i("kv_num_heads", 2)})),
             Contains("q_num_heads 3 is not a multiple of kv_num_heads 2"));
  std::vector<std::pair<std::string, std::vector<int64_t>>> qkv4 = {
      {"q", {1, 2, 3, 4}}, {"k", {1, 2, 5, 4}}, {"v", {1, 2, 5, 4}}};
  CHECK_THAT(error_of(one_node(23, "Attention", qkv4, 1, {attr_i("qk_matmul_output_mode", 4)})),
             Contains("(Attention): qk_matmul_output_mode must be 0 to 3, got 4"));
  CHECK_THAT(error_of(one_node(23, "Attention", qkv4, 1, {attr_f("scale", -1)})),
             Contains("attribute 'scale' must be positive (Q and K are each scaled by its square root), got -1"));
  CHECK_THAT(error_of(one_node(23, "Attention", qkv4, 1, {attr_i("q_num_heads", 3)})),
             Contains("attribute 'q_num_heads' is 3, the 4-d inputs have 2 heads"));
  auto with = [&](std::vector<std::pair<std::string, std::vector<int64_t>>> extra) {
    auto in = qkv4;
    in.insert(in.end(), extra.begin(), extra.end());
    return one_node(24, "Attention", in, 1, {});
  };
  CHECK_THAT(error_of(with({{"", {}}, {"pk", {1, 2, 3, 4}}})),
             Contains("past_key and past_value must be given together"));
  CHECK_THAT(error_of(with({{"mask", {3, 6}}})), Contains("attn_mask [3,6] must have rank 1 to 4 and at most 5 keys"));
  CHECK_THAT(error_of(with({{"", {}}, {"pk", {1, 2, 3, 4}}, {"pv", {1, 2, 3, 4}}, {"lens", {1}}})),
             Contains("nonpad_kv_seqlen cannot be combined with past_key and past_value"));
  CHECK_THAT(error_of(with({{"", {}}, {"", {}}, {"", {}}, {"lens", {2}}})),
             Contains("nonpad_kv_seqlen int64[2] must be integers of shape [1]"));
  CHECK_THAT(error_of(one_node(23, "Attention", {{"q", {1, 2, 3, 4}}, {"k", {1, 2, 5, 4}}, {"v", {1, 2, 5}}}, 1, {})),
             Contains("must all be 3-d [batch, seq, hidden] or all 4-d"));
}

TEST_CASE("RotaryEmbedding and LinearAttention report bad attributes and shapes", "[onnx][attention]") {
  std::vector<std::pair<std::string, std::vector<int64_t>>> rope = {
      {"x", {1, 2, 3, 8}}, {"c", {1, 3, 4}}, {"s", {1, 3, 4}}};
  CHECK_THAT(
      error_of(one_node(23, "RotaryEmbedding", rope, 1, {attr_i("rotary_embedding_dim", 3)})),
      Contains("ONNX node 'n1' (RotaryEmbedding): rotary_embedding_dim 3 must be even and at most the head size 8"));
  CHECK_THAT(error_of(one_node(23, "RotaryEmbedding", {{"x", {1, 3, 16}}, {"c", {1, 3, 4}}, {"s", {1, 3, 4}}}, 1, {})),
             Contains("a 3-d input [1,3,16] needs num_heads dividing its hidden size, got 0"));
  CHECK_THAT(
      error_of(one_node(23, "RotaryEmbedding", {{"x", {1, 2, 3, 8}}, {"c", {1, 3, 2}}, {"s", {1, 3, 2}}}, 1, {})),
      Contains("cos_cache and sin_cache give [1,3,2] per position, expected [1,3,4]"));

  std::vector<std::pair<std::string, std::vector<int64_t>>> qkv = {
      {"q", {1, 3, 8}}, {"k", {1, 3, 8}}, {"v", {1, 3, 8}}};
  std::vector<Pb> heads = {attr_i("q_num_heads", 2), attr_i("kv_num_heads", 2)};
  auto attrs = [&](const Pb& extra) {
    auto a = heads;
    a.push_back(extra);
    return a;
  };
  CHECK_THAT(error_of(one_node(27, "LinearAttention", qkv, 2, attrs(attr_s("update_rule", "fast")))),
             Contains("(LinearAttention): attribute 'update_rule' must be 'linear', 'gated', 'delta' or 'gated_delta', "
                      "got 'fast'"));
  CHECK_THAT(error_of(one_node(27, "LinearAttention", qkv, 2, attrs(attr_s("update_rule", "gated")))),
             Contains("update_rule 'gated' needs the decay input"));
  CHECK_THAT(error_of(one_node(27, "LinearAttention", qkv, 2, {attr_i("q_num_heads", 3), attr_i("kv_num_heads", 2)})),
             Contains("q_num_heads 3 must be a positive multiple of kv_num_heads 2"));
  std::string long_seq = one_node(27, "LinearAttention", {{"q", {1, 300, 8}}, {"k", {1, 300, 8}}, {"v", {1, 300, 8}}},
                                  2, attrs(attr_s("update_rule", "linear")));
  REQUIRE_THROWS_AS(import(long_seq), UnsupportedError);
  CHECK_THAT(error_of(long_seq),
             Contains("LinearAttention over 300 steps: kiln unrolls the recurrence, up to 256 steps"));
  CHECK(
      import(one_node(27, "LinearAttention", qkv, 2, attrs(attr_s("update_rule", "linear")))).output_types()[1].str() ==
      "float32[1,2,4,4]");
}

TEST_CASE("RMSNormalization, SwiGLU and CausalConvWithState report bad attributes and shapes", "[onnx][attention]") {
  CHECK_THAT(error_of(one_node(23, "RMSNormalization", {{"x", {2, 3}}, {"w", {3}}}, 1, {attr_i("axis", 2)})),
             Contains("ONNX node 'n1' (RMSNormalization): axis 2 is out of range"));
  CHECK_THAT(error_of(one_node(23, "RMSNormalization", {{"x", {2, 3}}, {"w", {3}}}, 1, {attr_i("stash_type", 7)})),
             Contains("stash_type must be a floating-point type, got int64"));
  CHECK_THAT(error_of(one_node(28, "SwiGLU", {{"a", {2, 4}}, {"b", {1, 4}}}, 1, {})),
             Contains("(SwiGLU): A float32[2,4] and B float32[1,4] must be floating-point tensors of one type and one "
                      "shape (SwiGLU does not broadcast)"));
  std::vector<std::pair<std::string, std::vector<int64_t>>> conv = {{"x", {2, 4, 8}}, {"w", {4, 1, 3}}};
  CHECK_THAT(error_of(one_node(27, "CausalConvWithState", conv, 2, {attr_s("activation", "relu")})),
             Contains("(CausalConvWithState): attribute 'activation' must be 'none', 'silu' or 'swish', got 'relu'"));
  CHECK_THAT(error_of(one_node(27, "CausalConvWithState", {{"x", {2, 4, 8}}, {"w", {4, 2, 3}}}, 2, {})),
             Contains("weight float32[4,2,3] must be float32[4,1,k]"));
  CHECK_THAT(error_of(one_node(27, "CausalConvWithState",
                               {{"x", {2, 4, 8}}, {"w", {4, 1, 3}}, {"", {}}, {"p", {2, 4, 3}}}, 2, {})),
             Contains("past_state float32[2,4,3] must be float32[2,4,2]"));
}

TEST_CASE("the attention-family cases of the node suite hold unfolded, where masks are computed at run time",
          "[onnx][attention]") {
  // The suite's shapes are small enough that the importer folds the causal frontier and the
  // padding masks into constants; long sequences compute them in the graph. Evaluating the
  // unfolded graphs checks that form (kiln check runs the compiled one on the folded graphs).
  std::string root = shared_dir() + "/onnx/node";
  std::vector<std::string> cases;
  if (DIR* d = opendir(root.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      bool mine = n.rfind("test_attention_", 0) == 0 || n.rfind("test_rotary_embedding", 0) == 0 ||
                  n.rfind("test_rms_normalization", 0) == 0 || n.rfind("test_swiglu", 0) == 0 ||
                  n.rfind("test_causal_conv_with_state", 0) == 0 || n.rfind("test_linear_attention", 0) == 0;
      if (mine && n.find("_expanded") == std::string::npos) cases.push_back(n);
    }
    closedir(d);
  }
  std::sort(cases.begin(), cases.end());
  REQUIRE(cases.size() == 133);
  for (const std::string& c : cases) {
    INFO(c);
    CHECK(evaluate_unfolded(root + "/" + c) == "");
  }
}
