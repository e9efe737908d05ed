// Pooling lowerings (max / avg / lp, 1-D and 2-D, pads, ceil_mode, count_include_pad, dilation)
// and global pooling, naive and templated, against plain loops. Tolerances: rtol 1e-5,
// atol 1e-6 (sums of at most a few dozen terms; max is exact).
#include <catch2/catch.hpp>

#include "test_ops_b_ref.h"
#include "test_ops_b_util.h"

using namespace kiln;
using opsb_test::check_op;
using opsb_test::random_tensor;
using relay::Attrs;
using relay::HostTensor;

namespace {
const auto f32 = relay::DataType::f32();

Attrs pool_attrs(const opsb_ref::PoolSpec& s) {
  Attrs a;
  a.set_ints("kernel", s.kernel).set_ints("strides", s.strides).set_ints("padding", s.pads);
  a.set_ints("dilation", s.dil).set_int("ceil_mode", s.ceil_mode);
  a.set_int("count_include_pad", s.count_include_pad).set_int("p", s.p);
  return a;
}
}  // namespace

TEST_CASE("max/avg/lp pool 2-D: pads, strides, ceil_mode, count_include_pad, dilation", "[ops_b]") {
  std::vector<opsb_ref::PoolSpec> specs = {
      {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false, 2},   // resnet's max pool
      {{3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, false, 2},    // squeezenet's ceil_mode pool
      {{2, 3}, {1, 2}, {1, 0, 0, 2}, {1, 1}, true, true, 2},     // asymmetric pads, ceil, include pad
      {{3, 2}, {2, 1}, {1, 1, 1, 0}, {2, 1}, false, false, 3},   // dilation, p = 3
      {{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false, false, 1},
  };
  HostTensor x = random_tensor(f32, {2, 3, 11, 12}, 7);
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    INFO("spec " << i);
    CHECK(check_op("nn.max_pool2d", {x}, pool_attrs(s), {opsb_ref::pool(x, "max", s)}, 1e-5, 1e-6) == "");
    if (s.dil == std::vector<int64_t>{1, 1}) {
      CHECK(check_op("nn.avg_pool2d", {x}, pool_attrs(s), {opsb_ref::pool(x, "avg", s)}, 1e-5, 1e-6) == "");
    }
    CHECK(check_op("nn.lp_pool2d", {x}, pool_attrs(s), {opsb_ref::pool(x, "lp", s)}, 1e-5, 1e-6) == "");
  }
}

TEST_CASE("max/avg pool 1-D and global pools", "[ops_b]") {
  opsb_ref::PoolSpec s{{3}, {2}, {1, 1}, {1}, true, false, 2};
  HostTensor x1 = random_tensor(f32, {2, 3, 10}, 8);
  CHECK(check_op("nn.max_pool1d", {x1}, pool_attrs(s), {opsb_ref::pool(x1, "max", s)}, 1e-5, 1e-6) == "");
  CHECK(check_op("nn.avg_pool1d", {x1}, pool_attrs(s), {opsb_ref::pool(x1, "avg", s)}, 1e-5, 1e-6) == "");
  HostTensor x = random_tensor(f32, {2, 5, 7, 9}, 9);
  CHECK(check_op("nn.global_avg_pool", {x}, Attrs(), {opsb_ref::global_pool(x, false)}, 1e-5, 1e-6) == "");
  CHECK(check_op("nn.global_max_pool", {x}, Attrs(), {opsb_ref::global_pool(x, true)}, 1e-5, 1e-6) == "");
  HostTensor x3 = random_tensor(f32, {1, 4, 3, 5, 6}, 10);
  CHECK(check_op("nn.global_avg_pool", {x3}, Attrs(), {opsb_ref::global_pool(x3, false)}, 1e-5, 1e-6) == "");
  // Planes read in partial blocks of several vectors (te::ops::GlobalPartial): 16x16 fills
  // whole blocks at 8 and 16 lanes, 20x20 ends in a guarded block.
  for (int64_t hw : {16, 20}) {
    HostTensor xp = random_tensor(f32, {1, 3, hw, hw}, 11);
    INFO("plane " << hw << "x" << hw);
    CHECK(check_op("nn.global_avg_pool", {xp}, Attrs(), {opsb_ref::global_pool(xp, false)}, 1e-5, 1e-6) == "");
    CHECK(check_op("nn.global_max_pool", {xp}, Attrs(), {opsb_ref::global_pool(xp, true)}, 1e-5, 1e-6) == "");
  }
}

TEST_CASE("max pool of an integer tensor pads with the lowest value", "[ops_b]") {
  opsb_ref::PoolSpec s{{3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false, false, 2};
  HostTensor x = random_tensor(relay::DataType::i32(), {1, 2, 5, 5}, 11, -100, -50);
  CHECK(check_op("nn.max_pool2d", {x}, pool_attrs(s), {opsb_ref::pool(x, "max", s)}, 0, 0) == "");
}
