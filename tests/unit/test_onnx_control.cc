// The ONNX importer's static control flow (If inlined, Loop and Scan unrolled, subgraphs in a
// nested scope) and recurrent layers (RNN, GRU, LSTM unrolled), on small hand-built models, with
// the refusals of what is decided at run time.
#include <catch2/catch.hpp>

#include "kiln/relay/error.h"
#include "kiln/relay/frontend/onnx.h"
#include "kiln/relay/printer.h"
#include "test_onnx_builder.h"

using namespace kiln::relay;
using namespace onnx_builder;
using Catch::Matchers::Contains;

namespace {
Module import(const std::string& bytes, const OnnxImportOptions& opts = {}) {
  return from_onnx_bytes(bytes, "test model", opts);
}
std::string print(const std::string& bytes, const OnnxImportOptions& opts = {}) { return to_string(import(bytes, opts)); }

// GraphProto (nodes 1, name 2, initializers 5, inputs 11, outputs 12) and a graph attribute
// (g 6, type GRAPH 5).
Pb graph(const std::string& name, const std::vector<Pb>& nodes, const std::vector<Pb>& inputs,
         const std::vector<Pb>& outputs, const std::vector<Pb>& inits = {}) {
  Pb g;
  for (const auto& n : nodes) g.msg(1, n);
  g.str(2, name);
  for (const auto& t : inits) g.msg(5, t);
  for (const auto& v : inputs) g.msg(11, v);
  for (const auto& v : outputs) g.msg(12, v);
  return g;
}
Pb attr_g(const std::string& n, const Pb& g) { return Pb().str(1, n).msg(6, g).i(20, 5); }
Pb attr_strs(const std::string& n, const std::vector<std::string>& v) {
  Pb a;
  a.str(1, n);
  for (const auto& s : v) a.str(9, s);
  return a.i(20, 8);
}
Pb tensor_bool(const std::string& name, bool v) { return tensor_raw(name, BOOL, {}, std::string(1, v ? '\1' : '\0')); }

// y = If(cond) { relu(x) } else { neg(x) }, the branches reading the outer x.
std::string if_model(const std::vector<Pb>& pre, const std::vector<Pb>& inputs, const std::vector<Pb>& inits) {
  Pb then_g = graph("then", {node("Relu", {"x"}, {"t"})}, {}, {value("t", FLOAT, {2, 3})});
  Pb else_g = graph("else", {node("Neg", {"x"}, {"e"})}, {}, {value("e", FLOAT, {2, 3})});
  std::vector<Pb> nodes = pre;
  nodes.push_back(node("If", {"cond"}, {"y"}, "if1", {attr_g("then_branch", then_g), attr_g("else_branch", else_g)}));
  std::vector<Pb> ins = {value("x", FLOAT, {2, 3})};
  ins.insert(ins.end(), inputs.begin(), inputs.end());
  return model(13, nodes, ins, {value("y", FLOAT, {})}, inits);
}
}  // namespace

TEST_CASE("If with a constant condition inlines the taken branch, which sees the outer scope", "[onnx]") {
  CHECK_THAT(print(if_model({}, {}, {tensor_bool("cond", true)})), Contains("nn.relu(%x)"));
  std::string taken_else = print(if_model({}, {}, {tensor_bool("cond", false)}));
  CHECK_THAT(taken_else, Contains("neg(%x)"));
  CHECK_THAT(taken_else, !Contains("relu"));
  // A condition from a graph input asks for its value; bound, it is inlined.
  std::string from_input = if_model({}, {value("cond", BOOL, {})}, {});
  REQUIRE_THROWS_AS(import(from_input), CompileTimeInputError);
  OnnxImportOptions bind;
  bind.bind["cond"] = HostTensor::scalar(DataType::boolean(), 0);
  CHECK_THAT(print(from_input, bind), Contains("neg(%x)"));
  // A condition computed at run time (here: too big to fold) is refused, saying why.
  OnnxImportOptions no_fold;
  no_fold.fold_limit = 0;
  std::string computed = if_model({node("Greater", {"a", "b"}, {"cond"})}, {},
                                  {tensor_f32("a", {}, {1}), tensor_f32("b", {}, {0})});
  REQUIRE_THROWS_WITH(import(computed, no_fold),
                      "test model: ONNX node 'if1' (If): the condition is computed at run time; kiln inlines an If "
                      "only when it is known at compile time");
}

TEST_CASE("Loop with a constant trip count unrolls, scan outputs stack", "[onnx]") {
  // body(i, cond, acc): acc + x, scan out acc + x.
  Pb body = graph("body", {node("Add", {"acc", "x"}, {"acc_out"}), node("Identity", {"cond_in"}, {"cond_out"}),
                           node("Identity", {"acc_out"}, {"scan"})},
                  {value("i", INT64, {}), value("cond_in", BOOL, {}), value("acc", FLOAT, {2})},
                  {value("cond_out", BOOL, {}), value("acc_out", FLOAT, {2}), value("scan", FLOAT, {2})});
  auto loop_model = [&](const Pb& b) {
    return model(13, {node("Loop", {"M", "", "x"}, {"final", "all"}, "loop1", {attr_g("body", b)})},
                 {value("x", FLOAT, {2})}, {value("final", FLOAT, {}), value("all", FLOAT, {})},
                 {tensor_i64("M", {}, {3})});
  };
  Module m = import(loop_model(body));
  CHECK(m.output_types()[0].str() == "float32[2]");
  CHECK(m.output_types()[1].str() == "float32[3,2]");
  // A body whose condition depends on the data cannot be unrolled.
  Pb data_cond = graph("body", {node("Add", {"acc", "x"}, {"acc_out"}), node("ReduceSum", {"acc_out"}, {"s"}),
                                node("Less", {"s", "ten"}, {"cond_out"}), node("Identity", {"acc_out"}, {"scan"})},
                       {value("i", INT64, {}), value("cond_in", BOOL, {}), value("acc", FLOAT, {2})},
                       {value("cond_out", BOOL, {}), value("acc_out", FLOAT, {2}), value("scan", FLOAT, {2})},
                       {tensor_f32("ten", {}, {10})});
  REQUIRE_THROWS_WITH(import(loop_model(data_cond)),
                      "test model: ONNX node 'loop1' (Loop): the condition the body computes in iteration 0 is not "
                      "known at compile time; kiln unrolls a Loop only when it is");
  // Errors inside a body name the body's node and the subgraph.
  Pb bad = graph("body", {node("Add", {"acc", "nowhere"}, {"acc_out"}, "add1"),
                          node("Identity", {"cond_in"}, {"cond_out"}), node("Identity", {"acc_out"}, {"scan"})},
                 {value("i", INT64, {}), value("cond_in", BOOL, {}), value("acc", FLOAT, {2})},
                 {value("cond_out", BOOL, {}), value("acc_out", FLOAT, {2}), value("scan", FLOAT, {2})});
  REQUIRE_THROWS_WITH(import(loop_model(bad)),
                      "test model: ONNX node 'loop1' (Loop): ONNX node 'add1' (Add) of subgraph 'body' reads "
                      "'nowhere', which no earlier node, initializer or graph input produces");
}

TEST_CASE("Scan over a static length unrolls, unsupported ops in subgraphs are listed", "[onnx]") {
  Pb body = graph("body", {node("Add", {"s_in", "v"}, {"s_out"}), node("Identity", {"s_out"}, {"o"})},
                  {value("s_in", FLOAT, {2}), value("v", FLOAT, {2})},
                  {value("s_out", FLOAT, {2}), value("o", FLOAT, {2})});
  std::string m = model(11, {node("Scan", {"init", "xs"}, {"sum", "all"}, "scan1",
                                  {attr_i("num_scan_inputs", 1), attr_g("body", body), attr_ints("scan_output_axes", {1})})},
                        {value("init", FLOAT, {2}), value("xs", FLOAT, {4, 2})},
                        {value("sum", FLOAT, {}), value("all", FLOAT, {})});
  Module mod = import(m);
  CHECK(mod.output_types()[0].str() == "float32[2]");
  CHECK(mod.output_types()[1].str() == "float32[2,4]");
  Pb fancy = graph("fancy_body", {node("FancyOp", {"s_in", "v"}, {"s_out"}, "f1"), node("Identity", {"s_out"}, {"o"})},
                   {value("s_in", FLOAT, {2}), value("v", FLOAT, {2})}, {value("s_out", FLOAT, {2}), value("o", FLOAT, {2})});
  std::string unsupported = model(11, {node("Scan", {"init", "xs"}, {"sum", "all"}, "scan1",
                                            {attr_i("num_scan_inputs", 1), attr_g("body", fancy)})},
                                  {value("init", FLOAT, {2}), value("xs", FLOAT, {4, 2})},
                                  {value("sum", FLOAT, {}), value("all", FLOAT, {})});
  REQUIRE_THROWS_WITH(import(unsupported), "test model: unsupported ONNX operator (1 op type): FancyOp (node "
                                           "'fancy_body'/'f1')");
}

TEST_CASE("RNN, GRU and LSTM unroll, what a static unrolling cannot do is refused", "[onnx]") {
  // X [seq 3, batch 2, input 4], hidden 5.
  auto rnn = [](const std::string& op, int64_t gates, const std::vector<Pb>& attrs, const std::vector<int64_t>& lens,
                int64_t w_rows) {
    std::vector<Pb> inits = {tensor_f32("w", {1, w_rows, 4}, std::vector<float>(w_rows * 4, 0.1f)),
                             tensor_f32("r", {1, gates * 5, 5}, std::vector<float>(gates * 25, 0.1f))};
    std::vector<std::string> ins = {"x", "w", "r"};
    if (!lens.empty()) {
      inits.push_back(Pb().i(1, 2).i(2, INT32).packed_i(5, lens).str(8, "lens"));
      ins = {"x", "w", "r", "", "lens"};
    }
    return model(14, {node(op, ins, {"y", "yh"}, "rnn1", attrs)}, {value("x", FLOAT, {3, 2, 4})},
                 {value("y", FLOAT, {}), value("yh", FLOAT, {})}, inits);
  };
  Module lstm = import(rnn("LSTM", 4, {attr_i("hidden_size", 5), attr_s("direction", "forward")}, {}, 20));
  CHECK(lstm.output_types()[0].str() == "float32[3,1,2,5]");
  CHECK(lstm.output_types()[1].str() == "float32[1,2,5]");
  CHECK(import(rnn("GRU", 3, {attr_i("hidden_size", 5), attr_strs("activations", {"sigmoid", "tanh"})}, {2, 2}, 15))
            .output_types()[0]
            .str() == "float32[3,1,2,5]");
  REQUIRE_THROWS_WITH(import(rnn("RNN", 1, {attr_i("hidden_size", 5)}, {3, 2}, 5)),
                      "test model: ONNX node 'rnn1' (RNN): sequence_lens [3,2] differ within the batch; kiln unrolls "
                      "one static length for all");
  REQUIRE_THROWS_AS(import(rnn("RNN", 1, {attr_i("hidden_size", 5)}, {3, 2}, 5)), UnsupportedError);
  REQUIRE_THROWS_WITH(import(rnn("GRU", 3, {attr_i("hidden_size", 5)}, {}, 12)),
                      "test model: ONNX node 'rnn1' (GRU): W [1,12,4] does not hold 3 gates of hidden_size 5");
  REQUIRE_THROWS_WITH(import(rnn("GRU", 3, {}, {}, 14)), Contains("W [1,14,4] must be [1, 3 x hidden_size, 4]"));
  REQUIRE_THROWS_WITH(import(rnn("RNN", 1, {attr_s("direction", "sideways")}, {}, 5)),
                      Contains("attribute 'direction' must be forward, reverse or bidirectional, got 'sideways'"));
  REQUIRE_THROWS_WITH(import(rnn("RNN", 1, {attr_strs("activations", {"Swish"})}, {}, 5)),
                      Contains("activation 'Swish' in attribute 'activations' is not supported"));
}
