// GraphPlan JSON: round trip, the exact text (so the format cannot drift unnoticed), the FNV-1a
// reference values, and every malformed-plan error naming its field.
#include <catch2/catch.hpp>

#include "kiln/runtime/graph_plan.h"
#include "kiln/runtime/ndarray.h"
#include "kiln/support/error.h"

using namespace kiln::runtime;

namespace {
GraphPlan small_plan() {
  GraphPlan p;
  p.kiln_version = "0.1.0";
  p.target = "llvm -mcpu=generic";
  p.storage_bytes = {64, 128};
  p.entries = {
      {dtype_f32(), {2, 8}, 0, 0, false},       // input
      {dtype_f32(), {8}, -1, 0, true},          // constant in the weights
      {dtype_f32(), {2, 8}, 1, 64, false},      // intermediate at an offset
      {dtype_i64(), {}, 1, 0, false},           // scalar
      {dtype_bool(), {3}, 1, 8, false},
  };
  p.nodes = {{"fused_add_relu_0", {0, 1, 2}, "add+nn.relu"}, {"fused_argmax_1", {2, 3}, "argmax"}};
  p.inputs = {{"x", 0}};
  p.outputs = {{"y", 2}, {"idx", 3}};
  p.weights_bytes = 32;
  p.weights_checksum = 0xfedcba9876543210ull;
  return p;
}
void require_same(const GraphPlan& a, const GraphPlan& b) {
  REQUIRE(a.entries.size() == b.entries.size());
  for (size_t i = 0; i < a.entries.size(); ++i) {
    CHECK(dtype_str(a.entries[i].dtype) == dtype_str(b.entries[i].dtype));
    CHECK(a.entries[i].shape == b.entries[i].shape);
    CHECK(a.entries[i].storage == b.entries[i].storage);
    CHECK(a.entries[i].offset == b.entries[i].offset);
    CHECK(a.entries[i].is_constant == b.entries[i].is_constant);
  }
  REQUIRE(a.nodes.size() == b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    CHECK(a.nodes[i].kernel == b.nodes[i].kernel);
    CHECK(a.nodes[i].args == b.nodes[i].args);
    CHECK(a.nodes[i].label == b.nodes[i].label);
  }
  auto io_eq = [](const std::vector<GraphIO>& x, const std::vector<GraphIO>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i].name != y[i].name || x[i].entry != y[i].entry) return false;
    return true;
  };
  CHECK(io_eq(a.inputs, b.inputs));
  CHECK(io_eq(a.outputs, b.outputs));
  CHECK(a.kiln_version == b.kiln_version);
  CHECK(a.target == b.target);
  CHECK(a.storage_bytes == b.storage_bytes);
  CHECK(a.weights_bytes == b.weights_bytes);
  CHECK(a.weights_checksum == b.weights_checksum);
}
void replace(std::string& s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  s.replace(at, from.size(), to);
}
}  // namespace

TEST_CASE("fnv1a64 matches the published FNV-1a 64 test vectors", "[graph][plan]") {
  CHECK(fnv1a64("", 0) == 0xcbf29ce484222325ull);
  CHECK(fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull);
  CHECK(fnv1a64("foobar", 6) == 0x85944171f73967e8ull);
}

TEST_CASE("a graph plan round-trips through JSON and the text is deterministic", "[graph][plan]") {
  GraphPlan p = small_plan();
  std::string text = to_json(p);
  GraphPlan q = plan_from_json(text);
  require_same(p, q);
  CHECK(to_json(q) == text);
  // Spot-check the format itself: sorted keys, dtype names, the checksum as hex.
  CHECK(text.find("\"weights_checksum\": \"fedcba9876543210\"") != std::string::npos);
  CHECK(text.find("\"dtype\": \"bool\"") != std::string::npos);
  CHECK(text.find("\"format\": \"kiln-graph-plan\"") != std::string::npos);
  CHECK(text.find("\"entries\"") < text.find("\"nodes\""));
}

TEST_CASE("plan_from_json rejects malformed plans naming the field", "[graph][plan]") {
  std::string good = to_json(small_plan());
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(plan_from_json("{not json"), Contains("not valid JSON"));
  CHECK_THROWS_WITH(plan_from_json("[1, 2]"), Contains("not a kiln graph plan"));
  CHECK_THROWS_WITH(plan_from_json("{\"format\": 3}"), Contains("not a kiln graph plan"));

  std::string s = good;
  replace(s, "\"format_version\": 1", "\"format_version\": 9");
  CHECK_THROWS_WITH(plan_from_json(s), Contains("format_version 9"));

  s = good;
  replace(s, "\"args\": [\n    0,", "\"args\": [\n    17,");
  CHECK_THROWS_WITH(plan_from_json(s), Contains("nodes[0] (fused_add_relu_0): argument entry 17 out of range"));

  s = good;
  replace(s, "\"storage\": 1\n", "\"storage\": 5\n");
  CHECK_THROWS_WITH(plan_from_json(s), Contains("entries[2].storage 5 out of range"));

  s = good;
  replace(s, "\"offset\": 64,", "\"offset\": 72,");
  CHECK_THROWS_WITH(plan_from_json(s), Contains("entries[2] (bytes [72, 136)) does not fit storage 1 of 128 bytes"));

  s = good;
  replace(s, "\"weights_bytes\": 32", "\"weights_bytes\": 16");
  CHECK_THROWS_WITH(plan_from_json(s), Contains("entries[1] (constant, bytes [0, 32)) lies outside the 16-byte weights"));

  s = good;
  replace(s, "\"dtype\": \"int64\"", "\"dtype\": \"int12\"");
  CHECK_THROWS_WITH(plan_from_json(s), Contains("entries[3].dtype: unknown dtype 'int12'"));

  s = good;
  replace(s, "\"name\": \"x\"", "\"nom\": \"x\"");
  CHECK_THROWS_WITH(plan_from_json(s), Contains("inputs[0]: missing field 'name'"));

  s = good;
  replace(s, "\"fedcba9876543210\"", "\"xyz\"");
  CHECK_THROWS_WITH(plan_from_json(s), Contains("weights_checksum 'xyz' is not 16 hex digits"));

  s = good;
  replace(s, "\"shape\": [\n    2,", "\"shape\": [\n    \"2\",");
  CHECK_THROWS_WITH(plan_from_json(s), Contains("entries[0].shape: expected an array of integers"));
}
