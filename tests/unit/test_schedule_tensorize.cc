// tensorize: a matmul's inner loops replaced by a gemv intrinsic (an extern call the reference
// interpreter runs as C++), checked on the printed nest, numerically, and for each mismatch.
#include <catch2/catch.hpp>

#include <cmath>

#include "testing/reference.h"
#include "kiln/support/error.h"
#include "test_lower_interp.h"
#include "test_schedule_fixtures.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Matchers::Contains;
using ir::Var;

namespace {

const auto i32 = ir::DataType::i32();

// c[j] (+)= sum_k a[k] * b[k, j], j < n, k < kk; b's rows are `stride` elements apart.
schedule::TensorIntrin gemv(int64_t n, int64_t kk, bool with_update = true) {
  auto a = te::placeholder({kk}, kF32, "a");
  auto b = te::placeholder({kk, n}, kF32, "b");
  auto k = te::reduce_axis(kk, "k");
  auto c = te::compute({n}, [&](Var j) { return te::sum(a(k) * b(k, j), {k}); }, "c", {"j"});
  auto emit = [](const char* fn) {
    return [fn](const std::vector<schedule::TensorIntrinBuffer>& in, const std::vector<schedule::TensorIntrinBuffer>& out) {
      return ir::evaluate(ir::call_extern(i32, fn, {out[0].address(), in[0].address(), in[1].address(),
                                                   ir::Expr(static_cast<int>(in[1].strides[0]))}));
    };
  };
  return {"gemv", c, emit("gemv"), with_update ? schedule::TensorIntrin::Emit(emit("gemv_update")) : nullptr};
}

// The C++ side of the intrinsic, for the interpreter: ints = {stride}; sizes fixed per test.
std::map<std::string, ExternFn> gemv_impl(int n, int kk) {
  auto run = [n, kk](bool accumulate) {
    return [=](const std::vector<Pointer>& p, const std::vector<int64_t>& ints) {
      for (int j = 0; j < n; ++j) {
        double acc = accumulate ? (*p[0].data)[p[0].offset + j] : 0.0;
        for (int k = 0; k < kk; ++k) {
          acc += (*p[1].data)[p[1].offset + k] * (*p[2].data)[p[2].offset + k * ints[0] + j];
        }
        (*p[0].data)[p[0].offset + j] = static_cast<float>(acc);
      }
    };
  };
  return {{"gemv", run(false)}, {"gemv_update", run(true)}};
}

double matmul_error(const schedule::Schedule& s, const Matmul& m, int M, int N, int K, int n, int kk) {
  auto a = ref::random_floats(M * K, 11), b = ref::random_floats(K * N, 12);
  std::vector<std::vector<double>> data{{a.begin(), a.end()}, {b.begin(), b.end()},
                                        std::vector<double>(M * N, std::nan(""))};
  interpret(schedule::loop_nest(s, m.args(), "f"), data, gemv_impl(n, kk));
  return ref::worst_error_ratio(std::vector<float>(data[2].begin(), data[2].end()), ref::matmul(a, b, M, N, K), 1e-5,
                                1e-5);
}

}  // namespace

TEST_CASE("tensorize with reduce loops outside: init loops, then the update call", "[schedule]") {
  const int M = 3, N = 32, K = 16;
  Matmul m(M, N, K);
  auto s = schedule::create({m.C});
  auto [jo, ji] = s[m.C].split(s[m.C].op_axis(1), 16);
  auto [ko, ki] = s[m.C].split(m.k, 8);
  s[m.C].reorder({s[m.C].op_axis(0), jo, ko, ji, ki});
  s[m.C].tensorize(ji, gemv(16, 8));
  CHECK(lowered_body(s, m.args()) ==
        "for (i, 0, 3) {\n"
        "  for (j.outer, 0, 2) {\n"
        "    for (j.inner.init, 0, 16) {\n"
        "      C[i, j.outer*16 + j.inner.init] = 0f\n"
        "    }\n"
        "    for (k.outer, 0, 2) {\n"
        "      extern gemv_update(address_of(C[i, j.outer*16]), address_of(A[i, k.outer*8]), "
        "address_of(B[k.outer*8, j.outer*16]), 32)\n"
        "    }\n"
        "  }\n"
        "}\n");
  CHECK(matmul_error(s, m, M, N, K, 16, 8) <= 1.0);
}

TEST_CASE("tensorize over the whole reduction uses the intrinsic's body", "[schedule]") {
  const int M = 5, N = 24, K = 12;
  Matmul m(M, N, K);
  auto s = schedule::create({m.C});
  auto [jo, ji] = s[m.C].split(s[m.C].op_axis(1), 8);
  s[m.C].tensorize(ji, gemv(8, 12, /*with_update=*/false));
  CHECK(lowered_body(s, m.args()) ==
        "for (i, 0, 5) {\n"
        "  for (j.outer, 0, 3) {\n"
        "    extern gemv(address_of(C[i, j.outer*8]), address_of(A[i, 0]), address_of(B[0, j.outer*8]), 24)\n"
        "  }\n"
        "}\n");
  CHECK(matmul_error(s, m, M, N, K, 8, 12) <= 1.0);
}

TEST_CASE("tensorize rejects nests that do not match the declaration", "[schedule]") {
  Matmul m(4, 32, 16);
  auto s = schedule::create({m.C});
  auto [jo, ji] = s[m.C].split(s[m.C].op_axis(1), 8);
  SECTION("an extent differs") {
    s[m.C].tensorize(ji, gemv(16, 16));
    REQUIRE_THROWS_WITH(schedule::loop_nest(s, m.args(), "f"),
                        Contains("tensorize: the loop nest under 'j.inner' of stage 'C' does not match intrinsic 'gemv': "
                                 "axis 'j' has extent 8 in the nest but 16 in the declaration"));
  }
  SECTION("the computation differs") {
    auto a = te::placeholder({16}, kF32, "a");
    auto b = te::placeholder({16, 8}, kF32, "b");
    auto k = te::reduce_axis(16, "k");
    auto c = te::compute({8}, [&](Var j) { return te::sum(a(k) + b(k, j), {k}); }, "c", {"j"});
    schedule::TensorIntrin add{"addv", c, gemv(8, 16).body, nullptr};
    s[m.C].tensorize(ji, add);
    REQUIRE_THROWS_WITH(schedule::loop_nest(s, m.args(), "f"), Contains("the nest computes") && Contains("intrinsic declares"));
  }
  SECTION("reduce loops stay outside but the intrinsic cannot accumulate") {
    auto [ko, ki] = s[m.C].split(m.k, 8);
    s[m.C].reorder({s[m.C].op_axis(0), jo, ko, ji, ki});
    s[m.C].tensorize(ji, gemv(8, 8, /*with_update=*/false));
    REQUIRE_THROWS_WITH(schedule::loop_nest(s, m.args(), "f"),
                        Contains("intrinsic 'gemv' has no update function, but reduce loops of stage 'C' remain outside"));
  }
  SECTION("the split overhangs the tensor") {
    Matmul odd(4, 30, 16);
    auto s2 = schedule::create({odd.C});
    auto [o, i] = s2[odd.C].split(s2[odd.C].op_axis(1), 8);
    s2[odd.C].tensorize(i, gemv(8, 16));
    REQUIRE_THROWS_WITH(schedule::loop_nest(s2, odd.args(), "f"), Contains("the nest overhangs axis 'j'"));
  }
  SECTION("a stage is attached inside the tensorized loops") {
    auto AL = s.cache_read(m.A, "local", {m.C});
    s[AL].compute_at(s[m.C], ji);
    s[m.C].tensorize(ji, gemv(8, 16));
    REQUIRE_THROWS_WITH(schedule::loop_nest(s, m.args(), "f"),
                        Contains("tensorize: stage 'A.local' is attached inside the tensorized loop 'j.inner'"));
  }
}
