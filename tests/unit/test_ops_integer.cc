// int32 convolutions and products (what ConvInteger and MatMulInteger import to): the CPU
// strategy's own lowerings and templates (channel-blocked conv, depthwise, dense panels, the
// matmul template), with weights read in place and packed at compile time, against plain
// reference loops; exact results. Operands span the widened int8/uint8 range minus a zero
// point, [-255, 255]. The relations' errors for other integer types.
#include <catch2/catch.hpp>

#include "test_ops_b_ref.h"
#include "test_ops_b_util.h"

using namespace kiln;
using opsb_test::check_op;
using opsb_test::conv_attrs;
using opsb_test::random_tensor;
using relay::HostTensor;

namespace {
const auto i32 = relay::DataType::i32();
}  // namespace

TEST_CASE("int32 conv1d/conv2d (grouped, depthwise, strided, padded) through the CPU templates", "[ops_integer]") {
  struct C {
    relay::Shape x, w;
    std::vector<int64_t> strides, pads, dil;
    int64_t groups;
    const char* tmpl;
  };
  std::vector<C> cases = {{{1, 16, 9, 11}, {24, 16, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, "conv"},
                          {{2, 8, 10, 10}, {16, 4, 3, 3}, {2, 2}, {0, 1, 1, 0}, {1, 1}, 2, "conv"},
                          {{1, 6, 12, 12}, {6, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {2, 2}, 6, "depthwise"},
                          {{1, 5, 17}, {7, 5, 4}, {2}, {1, 2}, {1}, 1, "conv"}};
  for (size_t i = 0; i < cases.size(); ++i) {
    const C& c = cases[i];
    const std::string op = c.x.size() == 3 ? "nn.conv1d" : "nn.conv2d";
    relay::Attrs a = conv_attrs(c.strides, c.pads, c.dil, c.groups);
    HostTensor x = random_tensor(i32, c.x, 10 + i, -255, 255), w = random_tensor(i32, c.w, 20 + i, -255, 255);
    HostTensor want = opsb_ref::conv(x, w, c.strides, c.pads, c.dil, c.groups);
    INFO("case " << i);
    CHECK(opsb_test::lower_call(op, {x.type(), w.type()}, a).strategy.template_name == c.tmpl);
    CHECK(check_op(op, {x, w}, a, {want}, 0, 0) == "");
    if (std::string(c.tmpl) == "depthwise") continue;  // reads its weight as is
    HostTensor packed;
    opsb_test::Lowered l = opsb_test::lower_packed(op, x.type(), w, a, &packed);
    schedule::Config cfg;
    CHECK(opsb_test::compare(opsb_test::run(l.template_schedule(cfg), l, {x, packed})[0], want, 0, 0) == "");
  }
}

TEST_CASE("int32 dense and matmul through the CPU templates, weights in place and packed", "[ops_integer]") {
  HostTensor x = random_tensor(i32, {13, 40}, 30, -255, 255), w = random_tensor(i32, {19, 40}, 31, -255, 255);
  HostTensor want = opsb_ref::dense(x, w);
  CHECK(opsb_test::lower_call("nn.dense", {x.type(), w.type()}, {}).strategy.template_name == "dense");
  CHECK(check_op("nn.dense", {x, w}, {}, {want}, 0, 0) == "");
  HostTensor packed;
  opsb_test::Lowered l = opsb_test::lower_packed("nn.dense", x.type(), w, {}, &packed);
  schedule::Config cfg;
  CHECK(opsb_test::compare(opsb_test::run(l.template_schedule(cfg), l, {x, packed})[0], want, 0, 0) == "");

  // Batched, with a broadcast batch dim on the right operand.
  HostTensor a = random_tensor(i32, {3, 10, 24}, 32, -255, 255), b = random_tensor(i32, {1, 24, 17}, 33, -255, 255);
  CHECK(opsb_test::lower_call("nn.matmul", {a.type(), b.type()}, {}).strategy.template_name == "matmul");
  CHECK(check_op("nn.matmul", {a, b}, {}, {opsb_ref::matmul(a, b)}, 0, 0) == "");
}

TEST_CASE("convolutions take int32 but no other integer type, transposed ones floats only", "[ops_integer]") {
  using Catch::Contains;
  auto t = [](relay::DataType d, const relay::Shape& s) { return relay::tensor_type(d, s); };
  relay::Attrs a = conv_attrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
  const auto i8 = relay::DataType::i8();
  REQUIRE_THROWS_WITH(opsb_test::lower_call("nn.conv2d", {t(i8, {1, 2, 4, 4}), t(i8, {3, 2, 1, 1})}, a),
                      Contains("nn.conv2d") && Contains("data must be floating-point or int32, got int8"));
  relay::Attrs ta = a;
  ta.set_ints("output_padding", {0, 0});
  REQUIRE_THROWS_WITH(opsb_test::lower_call("nn.conv2d_transpose", {t(i32, {1, 2, 4, 4}), t(i32, {2, 3, 1, 1})}, ta),
                      Contains("nn.conv2d_transpose") && Contains("data must be floating-point, got int32"));
}
