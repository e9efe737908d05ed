// plan_memory: storage reuse in a chain, size matching (reuse, growth, the 16x limit), and the
// plan's invariants on a real model: no two live intermediates share storage, a kernel never
// writes where it reads, inputs and outputs own their storages.
#include <catch2/catch.hpp>

#include <fstream>

#include "kiln/relay/frontend/onnx.h"
#include "test_graph_util.h"

using namespace kiln::graph_test;

namespace {
relay::Expr dense(const relay::Expr& x, int64_t n) {
  int64_t k = x.tensor_type().shape[1];
  return call("nn.dense", {x, cst({n, k}, wave(n * k, 0.1, static_cast<double>(n)))});
}

// Every intermediate's [producer, last reader] interval, checked pairwise per storage.
void check_invariants(const FusedModule& f, const MemoryPlan& p) {
  using Kind = MemoryPlan::Entry::Kind;
  std::vector<int> def(p.entries.size(), -1), last(p.entries.size(), -1);
  for (size_t g = 0; g < f.groups.size(); ++g) {
    for (int e : p.entries_of.at(f.groups[g].root.get())) def[e] = last[e] = static_cast<int>(g);
    for (const relay::Expr& in : f.groups[g].inputs) {
      int e = p.entry_of(in);
      last[e] = std::max(last[e], static_cast<int>(g));
      // A kernel's inputs and outputs never share storage.
      for (int o : p.entries_of.at(f.groups[g].root.get()))
        if (p.entries[e].kind != Kind::Constant) CHECK(p.entries[e].storage != p.entries[o].storage);
    }
  }
  std::vector<int> owners(p.storage_bytes.size(), 0);
  for (size_t i = 0; i < p.entries.size(); ++i) {
    const auto& e = p.entries[i];
    if (e.kind == Kind::Constant) {
      CHECK(e.storage == -1);
      continue;
    }
    REQUIRE(e.storage >= 0);
    CHECK(p.storage_bytes[e.storage] >= e.offset + e.bytes());
    owners[e.storage]++;
    for (size_t j = 0; j < i; ++j) {
      const auto& o = p.entries[j];
      if (o.storage != e.storage || o.kind == Kind::Constant) continue;
      CHECK(e.kind == Kind::Intermediate);
      CHECK(o.kind == Kind::Intermediate);
      CHECK((def[i] > last[j] || def[j] > last[i]));
    }
  }
}
}  // namespace

TEST_CASE("plan_memory: a chain of kernels ping-pongs between two storages", "[graph][plan_memory]") {
  relay::Expr x = var("x", {1, 1024});
  relay::Expr y = x;
  for (int i = 0; i < 4; ++i) y = call("nn.softmax", {y}, Attrs().set_int("axis", 1));
  FusedModule f = fuse_ops(Module::make({x}, {y}, {"y"}));
  MemoryPlan p = plan_memory(f);
  CHECK(p.str() ==
        "e0 = %x : float32[1,1024]  input  storage 0 +0\n"
        "e1 = nn.softmax : float32[1,1024]  intermediate  storage 2 +0\n"
        "e2 = nn.softmax : float32[1,1024]  intermediate  storage 3 +0\n"
        "e3 = nn.softmax : float32[1,1024]  intermediate  storage 2 +0\n"
        "e4 = nn.softmax : float32[1,1024]  output  storage 1 +0\n"
        "storage 0: 4096 bytes\n"
        "storage 1: 4096 bytes\n"
        "storage 2: 4096 bytes\n"
        "storage 3: 4096 bytes\n"
        "plan_memory: 3 intermediate tensors, 12.0 KiB without reuse -> 8.0 KiB in 2 shared storages\n");
  CHECK(p.intermediate_bytes_unshared == 3 * 4096);
  CHECK(p.intermediate_bytes_shared == 2 * 4096);
  check_invariants(f, p);
}

TEST_CASE("plan_memory: storages are matched by size, grow, and are not wasted on tiny tensors", "[graph][plan_memory]") {
  relay::Expr x = var("x", {1, 64});
  SECTION("a released storage grows for a bigger tensor within 16x") {
    relay::Expr d1 = dense(x, 256), d2 = dense(d1, 16), d3 = dense(d2, 512), y = dense(d3, 8);
    FusedModule f = fuse_ops(Module::make({x}, {y}, {"y"}));
    MemoryPlan p = plan_memory(f);
    check_invariants(f, p);
    int e1 = p.entry_of(d1), e2 = p.entry_of(d2), e3 = p.entry_of(d3);
    CHECK(p.entries[e3].storage == p.entries[e1].storage);  // d1 is dead when d3 is made
    CHECK(p.entries[e2].storage != p.entries[e1].storage);  // d2 is made while d1 is read
    CHECK(p.storage_bytes[p.entries[e1].storage] == 2048);  // grown from 1 KiB to d3's 2 KiB
    CHECK(p.intermediate_bytes_unshared == 1024 + 64 + 2048);
    CHECK(p.intermediate_bytes_shared == 2048 + 64);
    // Constants live in the weights, inputs and outputs in storages of their own.
    CHECK(p.entries[p.entry_of(x)].kind == MemoryPlan::Entry::Kind::Input);
    CHECK(p.entries[p.entry_of(y)].kind == MemoryPlan::Entry::Kind::Output);
    CHECK(p.entries[p.entry_of(d1.as<CallNode>()->args[1])].storage == -1);
  }
  SECTION("a tensor 16x smaller than every free storage gets a new one") {
    relay::Expr d1 = dense(x, 1024), d2 = dense(d1, 4), d3 = dense(d2, 2), y = dense(d3, 8);
    FusedModule f = fuse_ops(Module::make({x}, {y}, {"y"}));
    MemoryPlan p = plan_memory(f);
    check_invariants(f, p);
    CHECK(p.entries[p.entry_of(d3)].storage != p.entries[p.entry_of(d1)].storage);
    CHECK(p.storage_bytes[p.entries[p.entry_of(d3)].storage] == 8);
  }
}

TEST_CASE("plan_memory: tuple-typed kernels get one entry per field, unread fields are freed", "[graph][plan_memory]") {
  relay::Expr x = var("x", {4, 6});
  relay::Expr sp = call("split", {call("nn.softmax", {x}, Attrs().set_int("axis", 1))},
                        Attrs().set_int("axis", 0).set_ints("sizes", {1, 3}));
  relay::Expr y = call("nn.softmax", {make_tuple_get_item(sp, 1)}, Attrs().set_int("axis", 1));
  FusedModule f = fuse_ops(Module::make({x}, {y}, {"y"}));
  MemoryPlan p = plan_memory(f);
  check_invariants(f, p);
  const auto& fields = p.entries_of.at(sp.get());
  REQUIRE(fields.size() == 2);
  CHECK(p.entries[fields[0]].shape == Shape{1, 6});
  CHECK(p.entries[fields[1]].shape == Shape{3, 6});
  CHECK(p.entry_of(make_tuple_get_item(sp, 1)) == fields[1]);
}

TEST_CASE("plan_memory on resnet18: invariants hold and reuse saves more than half the memory", "[graph][plan_memory][models]") {
  std::string path = "/work/shared/models/resnet18/model.onnx";
  if (!std::ifstream(path)) {
    WARN("skipped: " << path << " not found");
    return;
  }
  Module m = relay::from_onnx(path);
  m = remove_dead(eliminate_common_subexpr(simplify(fold_batch_norm(fold_constants(infer_types(m))))));
  FusedModule f = fuse_ops(m);
  MemoryPlan p = plan_memory(f);
  check_invariants(f, p);
  INFO(p.note());
  CHECK(p.intermediate_bytes_shared * 2 < p.intermediate_bytes_unshared);
}
