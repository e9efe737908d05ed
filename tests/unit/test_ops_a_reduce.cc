// Reduction lowerings (op library part A) compiled end to end, naive schedule and the default
// reduction template, against relay::evaluate_call (sum mean prod max min) and a plain
// reference here (argmax, argmin). Tolerances: integers exact; float32 rtol 1e-5 with atol
// 1e-6 * (reduced element count), since the float32 accumulation order differs from the
// double-precision reference; float16 rtol 2e-3.
#include <catch2/catch.hpp>

#include "test_ops_a_util.h"

using namespace kiln;
using namespace kiln::opsa;
using relay::Attrs;

namespace {
const DataType f32 = DataType::f32();

int64_t count_of(const Shape& s, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (int64_t a : axes) n *= s[a];
  return n;
}
}  // namespace

TEST_CASE("ops_a: sum, mean, prod, max, min over axes with and without keepdims", "[ops_a]") {
  const Shape shape{3, 4, 16};
  const std::vector<std::vector<int64_t>> axes_list = {{2}, {1}, {0, 2}, {0, 1, 2}, {}, {0}};
  unsigned seed = 1;
  for (DataType t : {f32, DataType::f64(), DataType::i32(), DataType::i64(), DataType::f16()}) {
    for (const char* op : {"sum", "mean", "prod", "max", "min"}) {
      for (size_t ai = 0; ai < axes_list.size(); ++ai) {
        const auto& axes = axes_list[ai];
        // float32 sees every axes set; the other types two of them (keeps the test fast).
        if (t != f32 && ai != 1 && ai != 2) continue;
        {
          int keep = static_cast<int>((ai + seed) % 2);
          bool prod = std::string(op) == "prod";
          // prod over many elements: values near 1 keep it in range
          HostTensor x = random_tensor(t, shape, seed++, prod ? (t.is_floating() ? 0.8 : 1) : -9,
                                       prod ? (t.is_floating() ? 1.25 : 1) : 9);
          Attrs a = Attrs().set_ints("axes", axes).set_int("keepdims", keep);
          Sched m = (seed % 3 == 0) ? Sched::Naive : Sched::Default;
          CallResult r = run_call(op, {x}, a, m);
          double n = static_cast<double>(count_of(shape, axes));
          double rtol = t.is_floating() ? (t.bits == 16 ? 2e-3 : 1e-5) : 0;
          double atol = t.is_floating() ? (t.bits == 16 ? 2e-3 * n : 1e-6 * n) : 0;
          INFO(op << " " << a.str() << " on " << t.str() << (m == Sched::Naive ? " (naive)" : ""));
          CHECK(mismatch(r.outputs[0], evaluate(r.call, {x}), rtol, atol) == "");
        }
      }
    }
  }
  // bool max/min (any/all), and a relay scalar reduced over no axes.
  HostTensor b = random_tensor(DataType::boolean(), {4, 8}, 77);
  for (const char* op : {"max", "min"}) {
    CallResult r = run_call(op, {b}, Attrs().set_ints("axes", {1}).set_int("keepdims", 0), Sched::Default);
    auto v = b.to_int64s();
    std::vector<int64_t> want;
    for (int i = 0; i < 4; ++i) {
      int64_t acc = v[i * 8];
      for (int j = 1; j < 8; ++j) acc = std::string(op) == "max" ? std::max(acc, v[i * 8 + j]) : std::min(acc, v[i * 8 + j]);
      want.push_back(acc);
    }
    CHECK(r.outputs[0].to_int64s() == want);
  }
  // An int8 mean of values whose sum leaves int8 divides the exact sum.
  HostTensor i8 = HostTensor::from_int64s(DataType::i8(), {2, 4}, {100, 120, 90, 110, -100, -128, -3, 7});
  CallResult m = run_call("mean", {i8}, Attrs().set_ints("axes", {1}).set_int("keepdims", 0), Sched::Default);
  CHECK(m.outputs[0].to_int64s() == std::vector<int64_t>{105, -56});

  HostTensor s = HostTensor::scalar(f32, 3.5);
  CallResult r = run_call("sum", {s}, Attrs().set_ints("axes", {}).set_int("keepdims", 0), Sched::Default);
  CHECK(r.outputs[0].to_doubles() == std::vector<double>{3.5});
}

namespace {
HostTensor arg_ref(const HostTensor& x, int64_t axis, bool keep, bool is_min, bool last) {
  auto v = x.to_doubles();
  Shape out = x.shape();
  out[axis] = 1;
  std::vector<int64_t> res;
  for_each_index(out, [&](int64_t, const std::vector<int64_t>& c) {
    std::vector<int64_t> cc = c;
    int64_t best = 0;
    for (int64_t k = 0; k < x.shape()[axis]; ++k) {
      cc[axis] = k;
      double a = v[flat_index(x.shape(), cc)];
      cc[axis] = best;
      double b = v[flat_index(x.shape(), cc)];
      bool better = is_min ? a < b : a > b;
      if (better || (a == b && last)) best = k;
    }
    res.push_back(best);
  });
  if (!keep) out.erase(out.begin() + axis);
  return HostTensor::from_int64s(DataType::i64(), out, res);
}
}  // namespace

TEST_CASE("ops_a: argmax and argmin with keepdims and select_last_index", "[ops_a]") {
  unsigned seed = 200;
  for (DataType t : {f32, DataType::i32(), DataType::u8(), DataType::f64()}) {
    // Few distinct values, so ties are common and the tie rule is exercised.
    HostTensor x = random_tensor(t, {3, 5, 16}, seed++, t.is_uint() ? 0 : -3, 3);
    if (t.is_floating()) {
      auto v = x.to_doubles();
      for (double& e : v) e = std::round(e * 2) / 2;
      x = HostTensor::from_doubles(t, x.shape(), v);
    }
    for (const char* op : {"argmax", "argmin"}) {
      for (int64_t axis : {0, 1, 2}) {
        {
          int keep = static_cast<int>(axis % 2);
          for (int last : {0, 1}) {
            Attrs a = Attrs().set_int("axis", axis).set_int("keepdims", keep).set_int("select_last_index", last);
            Sched m = (seed++ % 4 == 0) ? Sched::Naive : Sched::Default;
            CallResult r = run_call(op, {x}, a, m);
            INFO(op << " " << a.str() << " on " << t.str());
            CHECK(mismatch(r.outputs[0], arg_ref(x, axis, keep, std::string(op) == "argmin", last), 0, 0) == "");
          }
        }
      }
    }
  }
  // All -inf: the identity of the reducer must not leak out as the index.
  HostTensor ninf = HostTensor::from_doubles(f32, {2, 3}, std::vector<double>(6, -INFINITY));
  CallResult r = run_call("argmax", {ninf}, Attrs().set_int("axis", 1).set_int("keepdims", 0).set_int("select_last_index", 0),
                          Sched::Default);
  CHECK(r.outputs[0].to_int64s() == std::vector<int64_t>{0, 0});
}

TEST_CASE("ops_a: reductions of many points to one value run as vector partials and stay exact", "[ops_a]") {
  // The reduction template factors them (Schedule::rfactor into a vector of partials): max/min
  // exact whatever the order, sums within the float32 tolerance above.
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {{{64, 200}, {0, 1}}, {{3, 4, 1000}, {0, 1, 2}},
                                                                    {{1, 128, 256}, {1, 2}}};
  unsigned seed = 40;
  for (DataType t : {f32, DataType::i32()}) {
    for (const auto& [shape, axes] : cases) {
      for (const char* op : {"max", "min", "sum"}) {
        HostTensor x = random_tensor(t, shape, seed++, -9, 9);
        Attrs a = Attrs().set_ints("axes", axes).set_int("keepdims", static_cast<int>(seed % 2));
        CallResult r = run_call(op, {x}, a, Sched::Default);
        double n = static_cast<double>(count_of(shape, axes));
        INFO(op << " " << a.str() << " on " << t.str());
        CHECK(mismatch(r.outputs[0], evaluate(r.call, {x}), t.is_floating() ? 1e-5 : 0, t.is_floating() ? 1e-6 * n : 0) == "");
      }
    }
  }
  // The schedule: a partial stage of the target's lanes, vectorized.
  te::Tensor x = te::placeholder({64, 200}, f32, "x");
  te::Tensor m = lowering_of("max")({x}, Attrs().set_ints("axes", {0, 1}).set_int("keepdims", 0),
                                    relay::tensor_type(f32, {}))[0];
  schedule::Schedule s = schedule::create({m});
  schedule::Config cfg;
  schedule::reduction_cpu(s, {m}, kiln::Target::host(), cfg);
  bool factored = false;
  for (const schedule::Stage& st : s.stages()) factored = factored || st.name().find(".rf") != std::string::npos;
  CHECK(factored);
}
