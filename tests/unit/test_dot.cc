// relay::to_dot: the Graphviz text of a module and of a fused module (clusters, their names and
// time shares), checked line by line: the pictures are deterministic like the printers.
#include <catch2/catch.hpp>

#include "relay/dot.h"
#include "test_graph_util.h"

using namespace kiln::graph_test;

namespace {
bool has(const std::string& text, const std::string& line) { return text.find(line) != std::string::npos; }
}  // namespace

TEST_CASE("to_dot: ops, weights by type, inputs and outputs, no scalars", "[graph][dot]") {
  relay::Expr x = var("x\"1", {1, 4});
  relay::Expr y = call("nn.relu", {call("multiply", {call("add", {x, cst({1, 4}, {1, 2, 3, 4})}), scalar(2)})});
  std::string dot = to_dot(Module::make({x}, {y}, {"y"}), DotOptions{"t", {}, {}});
  INFO(dot);
  CHECK(has(dot, "label=\"t\"];\n"));
  CHECK(has(dot, "  n0 [shape=ellipse, fillcolor=\"#dde8f7\", label=\"x\\\"1\\nfloat32[1,4]\"];\n"));
  CHECK(has(dot, "  n1 [fontsize=8, color=\"#aaaaaa\", fillcolor=\"#eeeeee\", label=\"float32[1,4]\"];\n"));
  CHECK(has(dot, "  n2 [label=\"add\\nfloat32[1,4]\"];\n"));
  CHECK(has(dot, "  n0 -> n2;\n  n1 -> n2;\n  n2 -> n3;\n  n3 -> n4;\n"));
  CHECK(has(dot, "  out0 [shape=ellipse, fillcolor=\"#e3f0dc\", label=\"y\\nfloat32[1,4]\"];\n  n4 -> out0;\n"));
  CHECK(!has(dot, "cluster"));
  CHECK(!has(dot, "n5"));  // the scalar 2 is compiled into the kernel: no node
}

TEST_CASE("to_dot: a fused module's groups are clusters with names and time shares", "[graph][dot]") {
  relay::Expr x = var("x", {1, 4});
  relay::Expr s = call("nn.softmax", {call("nn.relu", {x})}, Attrs().set_int("axis", 1));
  relay::Expr y = call("nn.relu", {s});
  FusedModule f = fuse_ops(Module::make({x}, {y}, {"y"}));
  REQUIRE(f.groups.size() == 3);  // relu | softmax (opaque) | relu
  SECTION("names") {
    std::string dot = to_dot(f, DotOptions{"", {"k_a", "k_b", "k_c"}, {}});
    INFO(dot);
    CHECK(has(dot, "  subgraph cluster_0 {\n    label=\"k_a\"; style=\"rounded,filled\"; fillcolor=\"#f1f1fa\";"));
    CHECK(has(dot, "  subgraph cluster_2 {\n    label=\"k_c\";"));
    CHECK(has(dot, "    n1 [label=\"nn.relu\\nfloat32[1,4]\"];\n  }\n  subgraph cluster_1"));
  }
  SECTION("no names: group N") { CHECK(has(to_dot(f), "label=\"group 1\"")); }
  SECTION("shares: the heaviest is the reddest") {
    std::string dot = to_dot(f, DotOptions{"", {"k_a", "k_b", "k_c"}, {0.25, 0.5, 0.25}});
    INFO(dot);
    CHECK(has(dot, "label=\"k_b\\n50.0%\"; style=\"rounded,filled\"; fillcolor=\"0.000 0.650 1.000\""));
    CHECK(has(dot, "label=\"k_a\\n25.0%\"; style=\"rounded,filled\"; fillcolor=\"0.000 0.350 1.000\""));
    CHECK(has(dot, "share of the profiled time"));
  }
  SECTION("a name per group, or an internal error") {
    CHECK_THROWS_AS(to_dot(f, DotOptions{"", {"k_a"}, {}}), kiln::InternalError);
  }
}
