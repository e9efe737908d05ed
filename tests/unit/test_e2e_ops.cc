// Operators compiled end to end (lower -> IR passes -> LLVM) and run, each under its naive
// schedule and under an optimized one, against plain-loop references. Tolerances: rtol 1e-5,
// atol 1e-5 (float32 kernels vs double-accumulated references).
#include <catch2/catch.hpp>

#include "kiln/ir/expr.h"
#include "test_te_fixtures.h"
#include "kiln/te/reduce.h"
#include "test_e2e_util.h"

using namespace kiln;
using ir::Var;
namespace {
const auto f32 = ir::DataType::f32();
}

TEST_CASE("matmul: naive and blocked schedules match the reference", "[e2e]") {
  const int m = 37, n = 48, k = 29;  // sizes that no tile divides
  auto a = te::placeholder({m, k}, f32, "A"), b = te::placeholder({k, n}, f32, "B");
  auto c = test_ops::matmul(a, b, "C");
  auto av = ref::random_floats(m * k, 1), bv = ref::random_floats(k * n, 2);
  auto want = ref::matmul(av, bv, m, n, k);
  auto naive = schedule::create({c});
  CHECK(e2e::close(e2e::run_f32(naive, {a, b, c}, {av, bv}), want));

  auto s = schedule::create({c});
  auto cl = s.cache_write(c, "local");
  auto t = s[c].tile(s[c].op_axis(0), s[c].op_axis(1), 8, 16);
  s[c].vectorize(t[3]);
  s[cl].compute_at(s[c], t[1]);
  auto [ko, ki] = s[cl].split(s[cl].reduce_axis(0), 4);
  s[cl].reorder({ko, ki, s[cl].op_axis(0), s[cl].op_axis(1)});
  s[cl].vectorize(s[cl].op_axis(1));
  s[cl].unroll(ki);
  s[c].parallel(t[0]);
  CHECK(e2e::close(e2e::run_f32(s, {a, b, c}, {av, bv}), want));
}

TEST_CASE("conv2d NCHW with padding, stride and dilation matches the reference", "[e2e]") {
  for (auto [stride, pad, dil] : {std::tuple{1, 1, 1}, std::tuple{2, 1, 1}, std::tuple{1, 2, 2}, std::tuple{2, 0, 1}}) {
    ref::Conv2dShape sh{2, 5, 11, 13, 6, 3, 3, stride, pad, dil, 1};
    auto x = te::placeholder({sh.n, sh.c, sh.h, sh.w}, f32, "x");
    auto w = te::placeholder({sh.oc, sh.c, sh.kh, sh.kw}, f32, "w");
    test_ops::Conv2dAttrs attrs;
    attrs.stride = {stride, stride};
    attrs.pad = {pad, pad, pad, pad};
    attrs.dilation = {dil, dil};
    auto y = test_ops::conv2d_nchw(x, w, attrs);
    auto xv = ref::random_floats(size_t(sh.n) * sh.c * sh.h * sh.w, 3);
    auto wv = ref::random_floats(size_t(sh.oc) * sh.c * sh.kh * sh.kw, 4);
    auto want = ref::conv2d_nchw(xv, wv, sh);
    INFO("stride " << stride << " pad " << pad << " dilation " << dil);
    CHECK(e2e::close(e2e::run_f32(schedule::create({y}), {x, w, y}, {xv, wv}), want));

    auto s = schedule::create({y});
    auto ax = s[y].op_axis();
    auto [owo, owi] = s[y].split(ax[3], 4);
    auto r = s[y].reduce_axis();
    s[y].reorder({ax[0], ax[1], ax[2], owo, r[0], r[1], r[2], owi});
    s[y].vectorize(owi);
    s[y].parallel(s[y].fuse(ax[0], ax[1]));
    if (pad) s[y.op().input_tensors()[0]].compute_inline();
    CHECK(e2e::close(e2e::run_f32(s, {x, w, y}, {xv, wv}), want));
  }
}

TEST_CASE("depthwise and grouped conv2d match the reference", "[e2e]") {
  for (int groups : {8, 2}) {
    ref::Conv2dShape sh{1, 8, 10, 10, 8, 3, 3, 1, 1, 1, groups};
    auto x = te::placeholder({sh.n, sh.c, sh.h, sh.w}, f32, "x");
    auto w = te::placeholder({sh.oc, sh.c / groups, sh.kh, sh.kw}, f32, "w");
    test_ops::Conv2dAttrs attrs;
    attrs.pad = {1, 1, 1, 1};
    attrs.groups = groups;
    auto y = test_ops::conv2d_nchw(x, w, attrs);
    auto xv = ref::random_floats(size_t(sh.c) * sh.h * sh.w, 5);
    auto wv = ref::random_floats(size_t(sh.oc) * (sh.c / groups) * 9, 6);
    auto want = ref::conv2d_nchw(xv, wv, sh);
    INFO("groups " << groups);
    CHECK(e2e::close(e2e::run_f32(schedule::create({y}), {x, w, y}, {xv, wv}), want));
    auto s = schedule::create({y});
    auto ax = s[y].op_axis();
    s[y].vectorize(ax[3]);  // kept serial by the vectorizer if reduce loops stay inside: still correct
    s[y].parallel(ax[1]);
    s[y.op().input_tensors()[0]].compute_at(s[y], ax[1]);
    CHECK(e2e::close(e2e::run_f32(s, {x, w, y}, {xv, wv}), want));
  }
}

TEST_CASE("max and average pooling match the reference", "[e2e]") {
  const int n = 2, c = 3, h = 9, w = 10;
  auto xv = ref::random_floats(size_t(n) * c * h * w, 7);
  for (bool is_max : {true, false}) {
    auto x = te::placeholder({n, c, h, w}, f32, "x");
    test_ops::Pool2dAttrs attrs;
    attrs.kernel = {3, 3};
    attrs.stride = {2, 2};
    attrs.pad = {1, 1, 1, 1};
    auto y = is_max ? test_ops::max_pool2d_nchw(x, attrs) : test_ops::avg_pool2d_nchw(x, attrs);
    auto want = ref::pool2d_nchw(xv, n, c, h, w, 3, 2, 1, is_max);
    INFO((is_max ? "max" : "avg"));
    CHECK(e2e::close(e2e::run_f32(schedule::create({y}), {x, y}, {xv}), want));
    auto s = schedule::create({y});
    auto nc = s[y].fuse(s[y].op_axis(0), s[y].op_axis(1));
    s[y].parallel(nc);
    for (auto st : s.stages()) {  // inline the padding; compute the window sums per channel
      auto* c = st->op.as<te::ComputeOpNode>();
      if (st->is_output || !c) continue;
      if (c->is_reduction()) st.compute_at(s[y], nc);
      else st.compute_inline();
    }
    CHECK(e2e::close(e2e::run_f32(s, {x, y}, {xv}), want));
  }
}

TEST_CASE("softmax matches the reference", "[e2e]") {
  const int rows = 7, cols = 33;
  auto x = te::placeholder({rows, cols}, f32, "x");
  auto y = test_ops::softmax_last_axis(x);
  auto xv = ref::random_floats(rows * cols, 8, -4.f, 4.f);
  auto want = ref::softmax_rows(xv, rows, cols);
  CHECK(e2e::close(e2e::run_f32(schedule::create({y}), {x, y}, {xv}), want));
  // Everything of one row computed inside the row loop, the row loop parallel.
  auto s = schedule::create({y});
  auto row = s[y].op_axis(0);
  for (auto st : s.stages()) {
    if (!st->is_output && st->op.as<te::ComputeOpNode>()) st.compute_at(s[y], row);
  }
  s[y].parallel(row);
  CHECK(e2e::close(e2e::run_f32(s, {x, y}, {xv}), want));
}

TEST_CASE("elementwise chain with intrinsics matches the reference", "[e2e]") {
  const int n = 1000;
  auto x = te::placeholder({n}, f32, "x"), z = te::placeholder({n}, f32, "z");
  auto t1 = te::compute({n}, [&](Var i) { return x(i) * 2.0f + z(i); }, "t1");
  auto t2 = te::compute({n}, [&](Var i) { return ir::max(t1(i), 0.0f); }, "relu");
  auto y = te::compute({n}, [&](Var i) { return ir::make_intrinsic("exp", {t2(i) * -1.0f}) + ir::make_intrinsic("tanh", {t1(i)}); }, "y");
  auto xv = ref::random_floats(n, 9), zv = ref::random_floats(n, 10);
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i) {
    double a = double(xv[i]) * 2 + zv[i];
    want[i] = float(std::exp(-std::max(a, 0.0)) + std::tanh(a));
  }
  CHECK(e2e::close(e2e::run_f32(schedule::create({y}), {x, z, y}, {xv, zv}), want));
  auto s = schedule::create({y});
  s[t1].compute_inline();
  s[t2].compute_inline();
  auto [o, i] = s[y].split(s[y].op_axis(0), 16);  // 1000 = 62*16 + 8: a guarded tail
  s[y].vectorize(i);
  s[y].parallel(o);
  CHECK(e2e::close(e2e::run_f32(s, {x, z, y}, {xv, zv}), want));
}

TEST_CASE("reductions over each axis match the reference", "[e2e]") {
  const int a0 = 6, a1 = 7, a2 = 9;
  auto xv = ref::random_floats(a0 * a1 * a2, 11);
  for (int axis = 0; axis < 3; ++axis) {
    auto x = te::placeholder({a0, a1, a2}, f32, "x");
    auto y = test_ops::reduce_sum(x, axis);
    const int dims[3] = {a0, a1, a2};
    int out_dims[2], q = 0;
    for (int d = 0; d < 3; ++d) if (d != axis) out_dims[q++] = dims[d];
    std::vector<double> acc(size_t(out_dims[0]) * out_dims[1], 0.0);
    for (int i = 0; i < a0; ++i)
      for (int j = 0; j < a1; ++j)
        for (int k = 0; k < a2; ++k) {
          int idx[3] = {i, j, k}, o[2], r = 0;
          for (int d = 0; d < 3; ++d) if (d != axis) o[r++] = idx[d];
          acc[size_t(o[0]) * out_dims[1] + o[1]] += xv[(size_t(i) * a1 + j) * a2 + k];
        }
    std::vector<float> want(acc.begin(), acc.end());
    INFO("axis " << axis);
    CHECK(e2e::close(e2e::run_f32(schedule::create({y}), {x, y}, {xv}), want));
    auto s = schedule::create({y});
    auto [ko, ki] = s[y].split(s[y].reduce_axis(0), 2);
    s[y].reorder({ko, s[y].op_axis(0), ki, s[y].op_axis(1)});
    s[y].unroll(ki);
    CHECK(e2e::close(e2e::run_f32(s, {x, y}, {xv}), want));
  }
}
