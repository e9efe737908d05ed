// The constant evaluator against plain C++ loops: exact for integers, float math within 1e-6
// relative (double evaluation rounded to float32 at the end).
#include <catch2/catch.hpp>

#include <cmath>

#include "kiln/relay/evaluate.h"
#include "kiln/relay/op.h"

using namespace kiln::relay;
using kiln::ir::DataType;
using Catch::Matchers::Contains;

namespace {
HostTensor i64(Shape s, std::vector<int64_t> v) { return HostTensor::from_int64s(DataType::i64(), s, v); }
HostTensor f32(Shape s, std::vector<double> v) { return HostTensor::from_doubles(DataType::f32(), s, v); }
std::vector<double> iota(int64_t n, double start = 0) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + static_cast<double>(i);
  return v;
}
// Builds the call on constants and evaluates it.
HostTensor eval(const std::string& op, std::vector<HostTensor> args, Attrs attrs = {}) {
  std::vector<Expr> exprs;
  for (const auto& a : args) exprs.push_back(make_constant(a));
  Expr call = make_call(op, exprs, attrs);
  auto r = evaluate_call(*call.as<CallNode>(), args);
  REQUIRE(r.has_value());
  REQUIRE(r->type() == call.type());
  return *r;
}
}  // namespace

TEST_CASE("integer arithmetic is exact and follows ONNX division and modulo", "[relay]") {
  // 2^62 + 1 is not a double: a detour through floating point would lose the 1.
  int64_t big = (int64_t(1) << 62) + 1;
  CHECK(eval("add", {i64({2}, {big, -7}), i64({}, {1})}).to_int64s() == std::vector<int64_t>{big + 1, -6});
  CHECK(eval("divide", {i64({4}, {7, -7, 7, -7}), i64({4}, {2, 2, -2, -2})}).to_int64s() ==
        std::vector<int64_t>{3, -3, -3, 3});  // truncation
  CHECK(eval("mod", {i64({4}, {7, -7, 7, -7}), i64({4}, {3, 3, -3, -3})}).to_int64s() ==
        std::vector<int64_t>{1, 2, -2, -1});  // sign of the divisor
  CHECK(eval("mod", {i64({2}, {-7, 7}), i64({2}, {3, -3})}, Attrs().set_int("fmod", 1)).to_int64s() ==
        std::vector<int64_t>{-1, 1});  // sign of the dividend
  REQUIRE_THROWS_WITH(eval("divide", {i64({1}, {1}), i64({1}, {0})}), Contains("integer division by zero"));
  CHECK(eval("maximum", {i64({3}, {1, 5, -2}), i64({1}, {2})}).to_int64s() == std::vector<int64_t>{2, 5, 2});
  CHECK(eval("equal", {i64({3}, {1, 5, -2}), i64({}, {5})}).str() == "bool[3]{false, true, false}");
}

TEST_CASE("broadcast float math matches a reference loop", "[relay]") {
  HostTensor a = f32({2, 1, 3}, iota(6, -2)), b = f32({4, 1}, {0.5, 1.5, -2, 3});
  HostTensor r = eval("power", {a, b});
  REQUIRE(r.shape() == Shape{2, 4, 3});
  auto av = a.to_doubles(), bv = b.to_doubles(), rv = r.to_doubles();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) {
        double want = static_cast<float>(std::pow(av[i * 3 + k], bv[j]));
        double got = rv[(i * 4 + j) * 3 + k];
        INFO(i << "," << j << "," << k);
        if (std::isnan(want)) {
          CHECK(std::isnan(got));
        } else {
          CHECK(got == Approx(want).epsilon(1e-6));
        }
      }
  HostTensor e = eval("erf", {f32({3}, {-1, 0, 0.5})});
  CHECK(e.double_at(0) == Approx(std::erf(-1.0)).epsilon(1e-6));
  CHECK(e.double_at(2) == Approx(std::erf(0.5)).epsilon(1e-6));
  CHECK(eval("round", {f32({4}, {0.5, 1.5, 2.5, -0.5})}).to_doubles() == std::vector<double>{0, 2, 2, -0});
}

TEST_CASE("injective ops move elements as a reference index map does", "[relay]") {
  HostTensor x = f32({2, 3, 4}, iota(24));
  SECTION("transpose") {
    HostTensor t = eval("transpose", {x}, Attrs().set_ints("axes", {2, 0, 1}));
    REQUIRE(t.shape() == Shape{4, 2, 3});
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 2; ++b)
        for (int c = 0; c < 3; ++c) CHECK(t.double_at((a * 2 + b) * 3 + c) == x.double_at((b * 3 + c) * 4 + a));
  }
  SECTION("strided_slice with a negative stride") {
    HostTensor s = eval("strided_slice", {x},
                        Attrs().set_ints("begin", {1, 2, 3}).set_ints("end", {2, -1, 0}).set_ints("strides", {1, -2, -2}));
    REQUIRE(s.shape() == Shape{1, 2, 2});
    CHECK(s.to_doubles() == std::vector<double>{x.double_at(12 + 8 + 3), x.double_at(12 + 8 + 1), x.double_at(12 + 3),
                                                x.double_at(12 + 1)});
  }
  SECTION("take with negative indices") {
    HostTensor t = eval("take", {x, i64({2, 2}, {-1, 0, 1, 1})}, Attrs().set_int("axis", 1));
    REQUIRE(t.shape() == Shape{2, 2, 2, 4});
    int rows[] = {2, 0, 1, 1};
    for (int a = 0; a < 2; ++a)
      for (int q = 0; q < 4; ++q)
        for (int c = 0; c < 4; ++c) CHECK(t.double_at((a * 4 + q) * 4 + c) == x.double_at((a * 3 + rows[q]) * 4 + c));
    REQUIRE_THROWS_WITH(eval("take", {x, i64({1}, {3})}, Attrs().set_int("axis", 1)),
                        Contains("index 3 out of range for axis 1 of size 3"));
  }
  SECTION("concatenate, broadcast_to, tile, reshape") {
    HostTensor c = eval("concatenate", {i64({2, 1}, {1, 2}), i64({2, 2}, {3, 4, 5, 6})}, Attrs().set_int("axis", 1));
    CHECK(c.to_int64s() == std::vector<int64_t>{1, 3, 4, 2, 5, 6});
    CHECK(eval("broadcast_to", {i64({2, 1}, {7, 8})}, Attrs().set_ints("shape", {2, 3})).to_int64s() ==
          std::vector<int64_t>{7, 7, 7, 8, 8, 8});
    CHECK(eval("tile", {i64({2}, {1, 2})}, Attrs().set_ints("reps", {3})).to_int64s() ==
          std::vector<int64_t>{1, 2, 1, 2, 1, 2});
    CHECK(eval("reshape", {x}, Attrs().set_ints("newshape", {6, 4})).bitwise_equal(x.reshaped({6, 4})));
  }
}

TEST_CASE("reductions, casts, where, clip and full", "[relay]") {
  HostTensor x = f32({2, 3}, {1, -2, 3, 4, 5, -6});
  Attrs rows = Attrs().set_ints("axes", {1}).set_int("keepdims", 0);
  CHECK(eval("sum", {x}, rows).to_doubles() == std::vector<double>{2, 3});
  CHECK(eval("max", {x}, Attrs().set_ints("axes", {0, 1}).set_int("keepdims", 1)).to_doubles() == std::vector<double>{5});
  CHECK(eval("prod", {x}, Attrs().set_ints("axes", {0}).set_int("keepdims", 0)).to_doubles() ==
        std::vector<double>{4, -10, -18});
  CHECK(eval("mean", {i64({4}, {1, 2, 3, 5})}, Attrs().set_ints("axes", {0}).set_int("keepdims", 0)).to_int64s() ==
        std::vector<int64_t>{2});
  // Over an empty set: the identity (ONNX ReduceMax/ReduceMin of an empty axis give -inf/+inf).
  Attrs empty_axis = Attrs().set_ints("axes", {1}).set_int("keepdims", 0);
  CHECK(eval("max", {f32({2, 0}, {})}, empty_axis).to_doubles() == std::vector<double>{-INFINITY, -INFINITY});
  CHECK(eval("min", {f32({2, 0}, {})}, empty_axis).to_doubles() == std::vector<double>{INFINITY, INFINITY});
  CHECK(eval("sum", {f32({2, 0}, {})}, empty_axis).to_doubles() == std::vector<double>{0, 0});
  CHECK(eval("max", {HostTensor::from_int64s(DataType::i32(), {1, 0}, {})}, empty_axis).to_int64s() ==
        std::vector<int64_t>{INT32_MIN});
  CHECK(eval("cast", {f32({3}, {2.7, -2.7, 1e10})}, Attrs().set_str("dtype", "int32")).to_int64s() ==
        std::vector<int64_t>{2, -2, static_cast<int32_t>(static_cast<int64_t>(1e10))});
  CHECK(eval("cast", {i64({1}, {(int64_t(1) << 53) + 1})}, Attrs().set_str("dtype", "int64")).to_int64s()[0] ==
        (int64_t(1) << 53) + 1);
  HostTensor cond = HostTensor::from_int64s(DataType::boolean(), {2, 1}, {1, 0});
  CHECK(eval("where", {cond, f32({3}, {1, 2, 3}), f32({}, {-1})}).to_doubles() ==
        std::vector<double>{1, 2, 3, -1, -1, -1});
  CHECK(eval("clip", {i64({3}, {INT64_MIN, 5, INT64_MAX})}, Attrs().set_float("a_min", -1).set_float("a_max", 9.2233720368547758e18))
            .to_int64s() == std::vector<int64_t>{-1, 5, INT64_MAX});
  CHECK(eval("full", {}, Attrs().set_ints("shape", {2}).set_tensor("value", HostTensor::scalar(DataType::boolean(), 1)))
            .str() == "bool[2]{true, true}");
  // Ops the evaluator does not know are left alone.
  Expr conv_in = make_constant(f32({1, 1, 1, 1}, {1}));
  Expr conv = make_call("nn.conv2d", {conv_in, conv_in},
                        Attrs().set_ints("strides", {1, 1}).set_ints("padding", {0, 0, 0, 0}).set_ints("dilation", {1, 1}).set_int("groups", 1));
  CHECK(!can_evaluate(get_op("nn.conv2d")));
  CHECK(!evaluate_call(*conv.as<CallNode>(), {f32({1, 1, 1, 1}, {1}), f32({1, 1, 1, 1}, {1})}).has_value());
}
