// Normalizations, softmax / log_softmax on every axis, LRN: naive and templated against
// plain loops in double. Tolerances: rtol 1e-4, atol 1e-5 (exp, rsqrt and pow in float32).
#include <catch2/catch.hpp>

#include "test_ops_b_ref2.h"
#include "test_ops_b_util.h"

using namespace kiln;
using opsb_test::check_op;
using opsb_test::random_tensor;
using relay::Attrs;
using relay::HostTensor;

namespace {
const auto f32 = relay::DataType::f32();
constexpr double kRtol = 1e-4, kAtol = 1e-5;
}  // namespace

TEST_CASE("nn.softmax and nn.log_softmax along every axis", "[ops_b]") {
  HostTensor x = random_tensor(f32, {2, 3, 5, 17}, 1, -4, 4);
  for (int64_t axis = 0; axis < 4; ++axis) {
    INFO("axis " << axis);
    Attrs a = Attrs().set_int("axis", axis);
    CHECK(check_op("nn.softmax", {x}, a, {opsb_ref::softmax(x, axis, false)}, kRtol, kAtol) == "");
    CHECK(check_op("nn.log_softmax", {x}, a, {opsb_ref::softmax(x, axis, true)}, kRtol, kAtol) == "");
  }
  HostTensor v = random_tensor(f32, {33}, 2, -4, 4);
  CHECK(check_op("nn.softmax", {v}, Attrs().set_int("axis", 0), {opsb_ref::softmax(v, 0, false)}, kRtol, kAtol) == "");
}

TEST_CASE("nn.batch_norm (inference) on axis 1 and on the last axis", "[ops_b]") {
  HostTensor x = random_tensor(f32, {2, 4, 3, 5}, 3);
  for (int64_t axis : {1, 3}) {
    int64_t c = x.shape()[axis];
    HostTensor g = random_tensor(f32, {c}, 4), b = random_tensor(f32, {c}, 5), m = random_tensor(f32, {c}, 6),
               v = random_tensor(f32, {c}, 7, 0.1, 2.0);
    Attrs a = Attrs().set_int("axis", axis).set_float("epsilon", 1e-5);
    INFO("axis " << axis);
    CHECK(check_op("nn.batch_norm", {x, g, b, m, v}, a, {opsb_ref::batch_norm(x, g, b, m, v, axis, 1e-5)}, kRtol,
                   kAtol) == "");
  }
}

TEST_CASE("nn.layer_norm: trailing dims, broadcast gamma, optional beta, offset rows", "[ops_b]") {
  // A large common offset: the two-pass variance keeps float32 accurate.
  HostTensor x = random_tensor(f32, {2, 6, 32}, 8, 99, 101);
  HostTensor g = random_tensor(f32, {32}, 9), b = random_tensor(f32, {32}, 10);
  Attrs a = Attrs().set_int("axis", 2).set_float("epsilon", 1e-5);
  CHECK(check_op("nn.layer_norm", {x, g, b}, a, {opsb_ref::layer_norm(x, g, &b, 2, 1e-5)}, kRtol, 1e-4) == "");
  HostTensor g2 = random_tensor(f32, {6, 1}, 11);
  Attrs a1 = Attrs().set_int("axis", 1).set_float("epsilon", 1e-3);
  CHECK(check_op("nn.layer_norm", {x, g2}, a1, {opsb_ref::layer_norm(x, g2, nullptr, 1, 1e-3)}, kRtol, 1e-4) == "");
}

TEST_CASE("nn.instance_norm and nn.group_norm", "[ops_b]") {
  HostTensor x = random_tensor(f32, {2, 6, 5, 7}, 12, -2, 3);
  HostTensor g = random_tensor(f32, {6}, 13), b = random_tensor(f32, {6}, 14);
  CHECK(check_op("nn.instance_norm", {x, g, b}, Attrs().set_float("epsilon", 1e-5),
                 {opsb_ref::group_norm(x, g, b, 6, 1e-5)}, kRtol, kAtol) == "");
  for (int64_t groups : {1, 2, 3}) {
    INFO("groups " << groups);
    CHECK(check_op("nn.group_norm", {x, g, b}, Attrs().set_int("num_groups", groups).set_float("epsilon", 1e-5),
                   {opsb_ref::group_norm(x, g, b, groups, 1e-5)}, kRtol, kAtol) == "");
  }
}

TEST_CASE("nn.lrn across channels, odd and even sizes", "[ops_b]") {
  HostTensor x = random_tensor(f32, {1, 7, 4, 5}, 15);
  for (int64_t size : {3, 4, 1}) {
    Attrs a;
    a.set_int("size", size).set_float("alpha", 1e-2).set_float("beta", 0.75).set_float("bias", 1.5);
    INFO("size " << size);
    CHECK(check_op("nn.lrn", {x}, a, {opsb_ref::lrn(x, size, 1e-2, 0.75, 1.5)}, kRtol, kAtol) == "");
  }
}
