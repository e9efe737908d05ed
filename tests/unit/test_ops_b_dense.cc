// nn.dense, nn.matmul (batched, broadcast batch dims, 1-D operands) and einsum, naive and
// templated, against plain loops. Tolerances: rtol 1e-4, atol 1e-5.
#include <catch2/catch.hpp>

#include "kiln/te/ops/nn_dense.h"
#include "test_ops_b_ref.h"
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

TEST_CASE("nn.dense: GEMV, GEMM, sizes no panel divides", "[ops_b]") {
  for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{1, 64, 100}, {16, 48, 64}, {7, 33, 37}, {3, 5, 8}}) {
    HostTensor x = random_tensor(f32, {m, k}, 1), w = random_tensor(f32, {n, k}, 2);
    INFO(m << "x" << k << "x" << n);
    CHECK(check_op("nn.dense", {x, w}, Attrs(), {opsb_ref::dense(x, w)}, kRtol, kAtol) == "");
  }
}

TEST_CASE("nn.dense with a fused bias + gelu-like tail", "[ops_b]") {
  auto l = opsb_test::lower_call("nn.dense", {relay::tensor_type(f32, {8, 40}), relay::tensor_type(f32, {48, 40})}, {});
  te::Tensor d = l.outputs[0];
  te::Tensor bias = te::placeholder({48}, f32, "bias");
  te::Tensor out = te::compute(d.shape(), [&](ir::Var i, ir::Var j) {
    ir::Expr v = d(i, j) + bias(j);
    return v * ir::make_intrinsic("sigmoid", {v * ir::make_float(f32, 1.702)});
  }, "tail");
  schedule::Config cfg;
  auto s = l.strategy.schedule({out}, d, l.target, cfg);
  HostTensor x = random_tensor(f32, {8, 40}, 3), w = random_tensor(f32, {48, 40}, 4), b = random_tensor(f32, {48}, 5);
  opsb_test::Lowered run = l;
  run.inputs.push_back(bias);
  run.outputs = {out};
  auto got = opsb_test::run(s, run, {x, w, b});
  opsb_ref::Dense want(opsb_ref::dense(x, w));
  opsb_ref::for_each(want.shape, [&](const opsb_ref::Index& i) {
    double v = want.at(i) + b.double_at(i[1]);
    want.at(i) = v / (1 + std::exp(-1.702 * v));
  });
  CHECK(opsb_test::compare(got[0], want.to(f32), kRtol, kAtol) == "");
}

TEST_CASE("nn.matmul: batched, broadcast batch dims, 1-D operands", "[ops_b]") {
  std::vector<std::pair<relay::Shape, relay::Shape>> cases = {
      {{2, 4, 16, 8}, {2, 4, 8, 32}},  // attention scores
      {{1, 12, 20}, {20, 24}},         // a Linear exported as MatMul
      {{3, 1, 5, 6}, {4, 6, 7}},       // broadcast both ways
      {{6}, {2, 6, 5}},                // 1-D lhs
      {{3, 4, 6}, {6}},                // 1-D rhs
      {{9}, {9}},                      // dot product: a scalar, lowered as [1]
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    HostTensor a = random_tensor(f32, cases[i].first, 10 + i), b = random_tensor(f32, cases[i].second, 20 + i);
    HostTensor want = opsb_ref::matmul(a, b);
    // The reference keeps [1] for the dot product; the relay type is a scalar.
    relay::Shape rs = want.shape();
    if (cases[i].first.size() == 1 && cases[i].second.size() == 1) rs = {};
    INFO("case " << i);
    CHECK(check_op("nn.matmul", {a, b}, Attrs(), {want.reshaped(rs)}, kRtol, kAtol) == "");
  }
}

TEST_CASE("einsum: matmul-like equations, transposes, ellipsis, repeated labels are refused", "[ops_b]") {
  struct C {
    std::string eq;
    std::vector<relay::Shape> shapes;
  };
  std::vector<C> cases = {
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"bhqd,bhkd->bhqk", {{1, 2, 5, 4}, {1, 2, 6, 4}}},
      {"ij->ji", {{3, 7}}},
      {"ij,kj->ik", {{4, 6}, {5, 6}}},
      {"i,j->ij", {{3}, {4}}},
      {"ik,k->i", {{5, 6}, {6}}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<HostTensor> ins;
    for (size_t t = 0; t < cases[i].shapes.size(); ++t) ins.push_back(random_tensor(f32, cases[i].shapes[t], 30 + t));
    INFO(cases[i].eq);
    CHECK(check_op("einsum", ins, Attrs().set_str("equation", cases[i].eq), {opsb_ref::einsum(cases[i].eq, ins)}, kRtol,
                   kAtol) == "");
  }
  // Ellipsis: "...ij,...jk->...ik" is the batched matmul.
  HostTensor a = random_tensor(f32, {2, 3, 4}, 40), b = random_tensor(f32, {2, 4, 5}, 41);
  CHECK(check_op("einsum", {a, b}, Attrs().set_str("equation", "...ij,...jk->...ik"),
                 {opsb_ref::einsum("bij,bjk->bik", {a, b})}, kRtol, kAtol) == "");
  // Diagonals read one index twice; a repeated output label is refused, naming the equation.
  HostTensor sq = random_tensor(f32, {4, 4}, 42);
  opsb_ref::Dense sd(sq);
  std::vector<double> diag;
  for (int64_t i = 0; i < 4; ++i) diag.push_back(sd.at({i, i}));
  CHECK(check_op("einsum", {sq}, Attrs().set_str("equation", "ii->i"), {HostTensor::from_doubles(f32, {4}, diag)}, kRtol,
                 kAtol) == "");
  auto x = te::placeholder({3}, ir::DataType::f32(), "x");
  CHECK_THROWS_WITH(te::ops::einsum("i->ii", {x}), Catch::Contains("i->ii") && Catch::Contains("repeats"));
}

TEST_CASE("float16 matmul, dense and softmax accumulate in float32", "[ops_b]") {
  // A float16 running sum stops growing at 2048 (2048 + 1 rounds back to 2048): summing 4096
  // ones must still give 4096, as numpy and onnxruntime do (they accumulate in float32).
  const auto f16 = relay::DataType::f16();
  const int64_t k = 4096;
  HostTensor a = HostTensor::from_doubles(f16, {2, k}, std::vector<double>(2 * k, 1.0));
  HostTensor b = HostTensor::from_doubles(f16, {k, 8}, std::vector<double>(k * 8, 1.0));
  HostTensor want = HostTensor::from_doubles(f16, {2, 8}, std::vector<double>(16, double(k)));
  CHECK(check_op("nn.matmul", {a, b}, Attrs(), {want}, 0, 0) == "");
  HostTensor w = HostTensor::from_doubles(f16, {8, k}, std::vector<double>(k * 8, 1.0));
  CHECK(check_op("nn.dense", {a, w}, Attrs(), {want}, 0, 0) == "");
  // softmax of equal values is 1/k each: with a float16 sum it would be 1/2048.
  HostTensor z = HostTensor::from_doubles(f16, {2, k}, std::vector<double>(2 * k, 0.0));
  HostTensor uniform = HostTensor::from_doubles(f16, {2, k}, std::vector<double>(2 * k, 1.0 / k));
  CHECK(check_op("nn.softmax", {z}, Attrs().set_int("axis", 1), {uniform}, 0, 0) == "");
}
