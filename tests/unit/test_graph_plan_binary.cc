// GraphPlan's binary form: round trip, the exact layout (so the format cannot drift unnoticed),
// the FNV-1a reference values, and every damaged plan refused with a message, never a crash.
#include <catch2/catch.hpp>

#include <cstring>

#include "kiln/runtime/graph_plan.h"
#include "kiln/runtime/module_loader.h"
#include "kiln/runtime/ndarray.h"
#include "kiln/support/error.h"

using namespace kiln::runtime;

namespace {
GraphPlan small_plan() {
  GraphPlan p;
  p.kiln_version = "0.1.0";
  p.target = "llvm -mcpu=generic";
  p.storage_bytes = {64, 192};
  p.entries = {
      {dtype_f32(), {2, 8}, 0, 0, false},       // input
      {dtype_f32(), {8}, -1, 0, true},          // constant in the weights
      {dtype_f32(), {2, 8}, 1, 64, false},      // intermediate at an offset
      {dtype_i64(), {}, 1, 0, false},           // scalar
      {dtype_bool(), {3}, 1, 128, false},
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
GraphPlan decode(const std::string& b) { return decode_plan(b.data(), b.size()); }
template <class T>
void poke(std::string& b, size_t at, T v) {
  REQUIRE(at + sizeof(T) <= b.size());
  std::memcpy(&b[at], &v, sizeof(T));
}
}  // namespace

TEST_CASE("fnv1a64 matches the published FNV-1a 64 test vectors", "[graph][plan]") {
  CHECK(fnv1a64("", 0) == 0xcbf29ce484222325ull);
  CHECK(fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull);
  CHECK(fnv1a64("foobar", 6) == 0x85944171f73967e8ull);
}

TEST_CASE("a graph plan round-trips through its binary form, which is deterministic", "[graph][plan]") {
  GraphPlan p = small_plan();
  std::string bytes = encode_plan(p);
  GraphPlan q = decode(bytes);
  require_same(p, q);
  CHECK(encode_plan(q) == bytes);
  // The layout itself (graph_plan.h): header, version, then the first string's length.
  REQUIRE(bytes.size() > 12);
  CHECK(bytes.substr(0, 4) == "KPLN");
  uint32_t version, len;
  std::memcpy(&version, &bytes[4], 4);
  std::memcpy(&len, &bytes[8], 4);
  CHECK(version == kPlanFormatVersion);
  CHECK(len == 5);  // "0.1.0"
  CHECK(bytes.substr(12, 5) == "0.1.0");
  // 4+4 header, 2 strings (4+5, 4+18), 8+8 weights, 4+2*8 storages, 4+5 entries of 18 bytes and
  // their 2+1+2+0+1 extents of 8, 4+2 nodes, inputs, outputs.
  size_t entries = 5 * 18 + (2 + 1 + 2 + 0 + 1) * 8;
  size_t nodes = (4 + 16 + 4 + 11 + 4 + 3 * 4) + (4 + 14 + 4 + 6 + 4 + 2 * 4);
  size_t io = (4 + 4 + 1 + 4) + (4 + 4 + 1 + 4 + 4 + 3 + 4);
  CHECK(bytes.size() == 8 + 9 + 22 + 16 + 20 + 4 + entries + 4 + nodes + io);
}

TEST_CASE("a device plan round-trips as version 2 with its device type and launches", "[graph][plan]") {
  GraphPlan p = small_plan();
  p.target = "opencl";
  p.device_type = kDLOpenCL;
  p.nodes[0].launch.grid[0] = 6;
  p.nodes[0].launch.block[0] = 256;
  p.nodes[1].launch.grid[1] = 3;
  p.nodes[1].launch.block[2] = 4;
  p.nodes[1].launch.dynamic_shared_bytes = 1024;
  std::string bytes = encode_plan(p);
  uint32_t version;
  std::memcpy(&version, &bytes[4], 4);
  CHECK(version == kDevicePlanFormatVersion);
  GraphPlan q = decode(bytes);
  require_same(p, q);
  CHECK(q.device_type == kDLOpenCL);
  for (size_t n = 0; n < p.nodes.size(); ++n)
    CHECK(std::memcmp(&p.nodes[n].launch, &q.nodes[n].launch, sizeof(LaunchDims)) == 0);
  CHECK(encode_plan(q) == bytes);
  // The CPU form of the same plan is 4 (device type) + 2 x 28 (launches) bytes shorter.
  GraphPlan cpu = p;
  cpu.device_type = kDLCPU;
  CHECK(encode_plan(cpu).size() + 4 + 2 * 28 == bytes.size());
  // A device type that is neither CUDA nor OpenCL.
  poke<int32_t>(bytes, 8 + 4 + 5 + 4 + 6, 7);
  CHECK_THROWS_WITH(decode(bytes), Catch::Contains("unknown device type 7"));
}

TEST_CASE("decode_plan refuses every truncation and trailing bytes, naming what it could not read", "[graph][plan]") {
  std::string good = encode_plan(small_plan());
  // Every proper prefix is an error (never a crash, never an over-read: ASan checks that).
  for (size_t n = 0; n < good.size(); ++n) {
    std::string cut = good.substr(0, n);
    CHECK_THROWS_AS(decode(cut), kiln::Error);
  }
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(decode(good.substr(0, 14)), Contains("graph plan: truncated while reading kiln_version"));
  CHECK_THROWS_WITH(decode(good.substr(0, 20)), Contains("graph plan: truncated while reading target"));
  CHECK_THROWS_WITH(decode(good + "x"), Contains("1 bytes after the end of the plan"));
}

TEST_CASE("decode_plan refuses a foreign header, another version, impossible counts and unknown dtypes", "[graph][plan]") {
  using Catch::Matchers::Contains;
  std::string good = encode_plan(small_plan());
  std::string s = good;
  s[0] = 'J';
  CHECK_THROWS_WITH(decode(s), Contains("not a kiln graph plan"));
  CHECK_THROWS_WITH(decode("{\"format\": 1}"), Contains("not a kiln graph plan"));

  s = good;
  poke<uint32_t>(s, 4, 9);
  CHECK_THROWS_WITH(decode(s), Contains("format version 9 is not supported (this runtime reads 1 to 5)"));

  // The storage count sits after the header (8), the two strings (9 + 22) and the weights (16).
  const size_t storages_at = 8 + 9 + 22 + 16;
  s = good;
  poke<uint32_t>(s, storages_at, 0xfffffff0u);  // would be 32 GiB of storage sizes
  CHECK_THROWS_WITH(decode(s), Contains("storage_bytes: count 4294967280 exceeds the plan's size"));

  const size_t first_entry = storages_at + 4 + 16 + 4;
  s = good;
  poke<uint8_t>(s, first_entry + 1, 12);  // float12
  CHECK_THROWS_WITH(decode(s), Contains("entry 0 has an unknown dtype float12"));
  s = good;
  poke<uint16_t>(s, first_entry + 2, 4);  // lanes
  CHECK_THROWS_WITH(decode(s), Contains("entry 0 has an unknown dtype float32x4"));
}

TEST_CASE("plan_problem names the entry, node or input a decoded plan gets wrong", "[graph][plan]") {
  using Catch::Matchers::Contains;
  GraphPlan p = small_plan();
  CHECK(plan_problem(p, p.weights_bytes).empty());
  p.nodes[0].args[0] = 17;
  CHECK_THAT(plan_problem(p, p.weights_bytes), Contains("node 0 'add+nn.relu' passes entry 17, which does not exist"));
  p = small_plan();
  p.entries[2].storage = 5;
  CHECK_THAT(plan_problem(p, p.weights_bytes), Contains("entry 2 lives in storage 5, which does not exist"));
  p = small_plan();
  p.entries[2].offset = 192;
  CHECK_THAT(plan_problem(p, p.weights_bytes), Contains("entry 2 (in storage 1): bytes [192, 256) lie outside the 192 bytes of its storage"));
  p = small_plan();
  p.entries[2].offset = 72;
  CHECK_THAT(plan_problem(p, p.weights_bytes), Contains("entry 2 has offset 72, not a multiple of 64"));
  p = small_plan();
  CHECK_THAT(plan_problem(p, 16), Contains("entry 1 (a constant): bytes [0, 32) lie outside the 16 bytes of the weights"));
  p = small_plan();
  p.entries[0].shape = {int64_t(1) << 40, int64_t(1) << 40};
  CHECK_THAT(plan_problem(p, p.weights_bytes), Contains("entry 0 has an invalid dtype or shape"));
  p = small_plan();
  p.inputs[0].entry = 1;
  CHECK_THAT(plan_problem(p, p.weights_bytes), Contains("input 'x' is a constant entry"));
  p = small_plan();
  p.outputs[1].name = "y";
  CHECK_THAT(plan_problem(p, p.weights_bytes), Contains("output 1 'y': the name is used twice"));
}

TEST_CASE("a dynamic-batch plan round-trips as version 5 with its batch range, and bad ranges are refused", "[graph][plan]") {
  using Catch::Matchers::Contains;
  GraphPlan p = small_plan();
  p.outputs.pop_back();  // a scalar output has no batch dim
  p.has_costs = true;
  p.batch_min = 1;
  p.batch_max = 32;
  std::string b = encode_plan(p);
  uint32_t version = 0;
  std::memcpy(&version, b.data() + 4, 4);
  CHECK(version == kDynamicBatchPlanFormatVersion);
  GraphPlan q = decode(b);
  require_same(p, q);
  CHECK(q.batch_min == 1);
  CHECK(q.batch_max == 32);
  CHECK(plan_problem(q, q.weights_bytes).empty());
  // The range is the plan's last 16 bytes.
  std::string s = b;
  poke<int64_t>(s, s.size() - 16, 0);
  CHECK_THAT(plan_problem(decode(s), q.weights_bytes), Contains("bad batch range 0..32"));
  poke<int64_t>(s, s.size() - 16, 33);
  CHECK_THAT(plan_problem(decode(s), q.weights_bytes), Contains("bad batch range 33..32"));
  CHECK_THROWS_WITH(decode(b.substr(0, b.size() - 8)), Contains("the batch range"));
  q.batch_max = int64_t(1) << 40;
  CHECK_THAT(plan_problem(q, q.weights_bytes), Contains("bad batch range 1..1099511627776"));
  q = decode(b);
  q.outputs.push_back({"idx", 3});
  CHECK_THAT(plan_problem(q, q.weights_bytes), Contains("'idx' of a dynamic-batch plan has no batch dim"));
  CHECK(batch_stride(1) == 64);
  CHECK(batch_stride(128) == 128);
}
