// Hostile graphs and tensors in the graph IR (issue 11): tensors over the size limit are
// refused before any allocation; deep graphs must not overflow the stack (destroying
// a chain, fuse_ops walking a long skip connection: both recursed as deep as the graph), and a
// chain whose every op reads the previous value twice (2^n paths; a kernel inlines each op once
// per path) must be cut into groups before its expression explodes, while ordinary repeated
// reads (SiLU) still fuse. The CLI side is tests/hostile/ (kiln compile on such models).
#include <catch2/catch.hpp>

#include <string>

#include "test_graph_util.h"

using namespace kiln::graph_test;

namespace {
// y_i = y_{i-1} (op) y_{i-1}, n times, alternating add and multiply.
relay::Expr doubling_chain(relay::Expr x, int n) {
  for (int i = 0; i < n; ++i) x = call(i % 2 ? "add" : "multiply", {x, x}, {}, "n" + std::to_string(i));
  return x;
}
// n unary ops in a row after x.
relay::Expr unary_chain(relay::Expr x, int n) {
  for (int i = 0; i < n; ++i) x = call(i % 2 ? "neg" : "nn.relu", {x});
  return x;
}
}  // namespace

TEST_CASE("hostile: a 300000-node chain is destroyed without recursing", "[graph][hostile]") {
  // Released recursively, each node's destructor frame (48 bytes and more) would need some
  // 14 MB of stack, beyond the usual 8 MiB.
  relay::Expr x = var("x", {2});
  relay::Expr y = unary_chain(x, 300000);
  CHECK(y.type().str() == "float32[2]");
  y = relay::Expr();  // reaching here without a crash is the test
  SUCCEED();
}

TEST_CASE("hostile: fuse_ops follows a skip connection around 100000 nodes without recursing",
          "[graph][fuse][hostile]") {
  // s's post-dominator is the final add, 100000 nodes down the chain: the check of the paths
  // between them walked them recursively (about 300 bytes of stack per node).
  relay::Expr x = var("x", {4});
  relay::Expr s = call("nn.relu", {x});
  relay::Expr y = call("add", {unary_chain(s, 100000), s});
  FusedModule f = fuse_ops(Module::make({x}, {y}, {"y"}));
  size_t ops = 0;
  for (const FusedGroup& g : f.groups) ops += g.calls.size();
  CHECK(ops == 100002);
}

TEST_CASE("hostile: fuse_ops cuts a chain that reads each value twice before its kernels explode",
          "[graph][fuse][hostile]") {
  relay::Expr x = var("x", {4});
  FusedModule f = fuse_ops(Module::make({x}, {doubling_chain(x, 60)}, {"y"}));
  // Inlined, a group of k such ops applies 2^k - 1 of them: the cap (4096) allows 12 per group.
  size_t ops = 0;
  for (const FusedGroup& g : f.groups) {
    CHECK(g.calls.size() <= 12);
    ops += g.calls.size();
  }
  CHECK(ops == 60);
  CHECK(f.groups.size() == 5);
}

TEST_CASE("hostile: repeated reads that do not compound still fuse into one kernel", "[graph][fuse][hostile]") {
  // SiLU (x * sigmoid(x), reading x twice) and then 100 unary ops: 102 ops, one kernel.
  relay::Expr x = var("x", {4});
  relay::Expr y = call("multiply", {x, call("sigmoid", {x})});
  for (int i = 0; i < 100; ++i) y = call(i % 2 ? "exp" : "nn.relu", {y});
  FusedModule f = fuse_ops(Module::make({x}, {y}, {"y"}));
  REQUIRE(f.groups.size() == 1);
  CHECK(f.groups[0].calls.size() == 102);
}

TEST_CASE("hostile: tensors over 256 GiB are refused by name before anything is allocated", "[relay][hostile]") {
  using Catch::Matchers::Contains;
  const int64_t M = 1000000;
  REQUIRE_THROWS_WITH(tensor_type(DataType::f32(), {M, M}),
                      "tensor float32[1000000,1000000] has 1000000000000 elements, more bytes than the 256 GiB kiln "
                      "allows for one tensor");
  // Dims whose product overflows int64 are refused the same way, not wrapped.
  REQUIRE_THROWS_WITH(tensor_type(DataType::i8(), {M * M, M * M}), Contains("has more than 2^63 elements"));
  // A kiln::Error, not std::bad_alloc: the check comes before the allocation.
  REQUIRE_THROWS_AS(HostTensor::zeros(DataType::f32(), {M, M}), kiln::Error);
  // The limit itself is allowed (as a type: nothing is allocated).
  CHECK(tensor_type(DataType::u8(), {int64_t{1} << 38}).str() == "uint8[274877906944]");
  CHECK_THROWS_AS(tensor_type(DataType::u8(), {(int64_t{1} << 38) + 1}), kiln::Error);
}
