// The default CPU schedule templates of injective and reduction groups: the loop structure they
// build (printed IR after the loop passes) and that the scheduled programs still compute the
// same values (checked exactly against the naive schedule's result, or against the relay
// evaluator at rtol 1e-5).
#include <catch2/catch.hpp>

#include "kiln/ir/printer.h"
#include "kiln/te/ops/elemwise.h"
#include "kiln/te/ops/reduce.h"
#include "kiln/te/ops/transform.h"
#include "test_ops_a_util.h"

using namespace kiln;
using namespace kiln::opsa;
using relay::Attrs;

namespace {
const DataType f32 = DataType::f32();
// The loop structures asserted below are an AVX-512 target's (64-byte vectors), whatever the host.
const Target kAvx512 = Target::parse("llvm -mcpu=x86-64-v4");

std::string final_ir(const schedule::Schedule& s, const std::vector<te::Tensor>& args) {
  return ir::to_string(kiln::loop_ir(s, args, "k"));
}

te::Tensor add_exp(const te::Tensor& a, const te::Tensor& b) {
  auto sum = te::ops::elementwise({a, b}, te::ops::broadcast_shape(a.shape(), b.shape()),
                                  [](const std::vector<ir::Expr>& v) { return v[0] + v[1]; }, "add");
  return te::ops::elementwise({sum}, sum.shape(),
                              [](const std::vector<ir::Expr>& v) { return ir::make_intrinsic("exp", {v[0]}); }, "exp");
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }
}  // namespace

TEST_CASE("injective_cpu: inlines producers, vectorizes the inner axis, parallel when big", "[ops_a]") {
  auto a = te::placeholder({64, 512}, f32, "a"), b = te::placeholder({512}, f32, "b");
  auto y = add_exp(a, b);
  auto s = schedule::create({y});
  schedule::Config cfg;
  schedule::injective_cpu(s, {y}, kAvx512, cfg);
  std::string ir = final_ir(s, {a, b, y});
  INFO(ir);
  CHECK(contains(ir, "parallel for"));
  CHECK(contains(ir, "ramp("));
  CHECK(contains(ir, ", 16)]"));   // 64-byte vectors of float32
  CHECK_FALSE(contains(ir, "add["));  // the producer is inlined: no buffer of its own
  CHECK(cfg.str() == "parallel_min=8192 vector_bytes=64");
  // On an AVX2 target: 32-byte vectors, 8 lanes.
  auto sv3 = schedule::create({y});
  schedule::Config cfg3;
  schedule::injective_cpu(sv3, {y}, Target::parse("llvm -mcpu=x86-64-v3"), cfg3);
  CHECK(contains(final_ir(sv3, {a, b, y}), ", 8)]"));
  CHECK(cfg3.str() == "parallel_min=8192 vector_bytes=32");

  HostTensor av = random_tensor(f32, {64, 512}, 1), bv = random_tensor(f32, {512}, 2);
  auto want = build_and_run({a, b}, {y}, {av, bv}, {relay::tensor_type(f32, {64, 512})}, Sched::Naive)[0];
  auto got = build_and_run({a, b}, {y}, {av, bv}, {relay::tensor_type(f32, {64, 512})}, Sched::Default)[0];
  CHECK(mismatch(got, want, 0, 0) == "");
}

TEST_CASE("injective_cpu: small outputs stay serial, odd inner extents stay scalar, knobs apply", "[ops_a]") {
  auto a = te::placeholder({4, 8}, f32, "a"), b = te::placeholder({8}, f32, "b");
  auto y = add_exp(a, b);
  auto s = schedule::create({y});
  schedule::Config cfg;
  schedule::injective_cpu(s, {y}, kAvx512, cfg);
  std::string ir = final_ir(s, {a, b, y});
  CHECK_FALSE(contains(ir, "parallel"));
  CHECK(contains(ir, ", 8)]"));  // the whole inner axis of 8 is one vector

  auto c = te::placeholder({5, 7}, f32, "c");
  auto z = te::ops::transpose(c, {1, 0});
  auto s2 = schedule::create({z});
  schedule::injective_cpu(s2, {z}, kAvx512, cfg);
  CHECK_FALSE(contains(final_ir(s2, {c, z}), "ramp("));

  // Trailing dims of 1 do not stop the vectorization of the axis before them.
  auto u = te::placeholder({64, 32, 1, 1}, f32, "u");
  auto w = te::ops::elementwise({u}, u.shape(), [](const std::vector<ir::Expr>& v) { return v[0] * v[0]; }, "sq");
  auto s5 = schedule::create({w});
  schedule::injective_cpu(s5, {w}, kAvx512, cfg);
  CHECK(contains(final_ir(s5, {u, w}), "u[ramp("));

  // vector_bytes=32 (candidate 0: half a register): 8 float32 lanes; parallel_min=0: always parallel.
  auto s3 = schedule::create({y});
  auto chosen = schedule::Config::with_choices({{"vector_bytes", 0}, {"parallel_min", 0}});
  schedule::injective_cpu(s3, {y}, kAvx512, chosen);
  std::string ir3 = final_ir(s3, {a, b, y});
  CHECK(contains(ir3, ", 8)]"));
  CHECK(contains(ir3, "parallel for"));

  schedule::ConfigSpace space;
  schedule::Config rec(&space);
  auto s4 = schedule::create({y});
  schedule::injective_cpu(s4, {y}, kAvx512, rec);
  CHECK(space.size() == 18);
}

TEST_CASE("injective_cpu: a short row fuses with the row above into one vectorized run", "[ops_a]") {
  // [1, 32, 14, 14]: a row of 14 gives 2 lanes; the 196 of a plane give 14 (AVX-512) or 4 (AVX2).
  auto a = te::placeholder({1, 32, 14, 14}, f32, "a"), b = te::placeholder({1, 32, 14, 14}, f32, "b");
  auto y = add_exp(a, b);
  for (auto [target, lanes] : {std::pair<Target, int>{kAvx512, 14}, {Target::parse("llvm -mcpu=x86-64-v3"), 4}}) {
    auto s = schedule::create({y});
    schedule::Config cfg;
    schedule::injective_cpu(s, {y}, target, cfg);
    std::string ir = final_ir(s, {a, b, y});
    INFO(ir);
    CHECK(contains(ir, ", 1, " + std::to_string(lanes) + ")]"));
  }
  // A row broadcast along the plane (b [14]) cannot fuse: it stays 2 lanes of a row.
  auto r = te::placeholder({14}, f32, "r");
  auto z = add_exp(a, r);
  auto s = schedule::create({z});
  schedule::Config cfg;
  schedule::injective_cpu(s, {z}, kAvx512, cfg);
  CHECK(contains(final_ir(s, {a, r, z}), ", 1, 2)]"));
  HostTensor av = random_tensor(f32, {1, 32, 14, 14}, 8), bv = random_tensor(f32, {1, 32, 14, 14}, 9);
  std::vector<relay::Type> types{relay::tensor_type(f32, {1, 32, 14, 14})};
  CHECK(mismatch(build_and_run({a, b}, {y}, {av, bv}, types, Sched::Default)[0],
                 build_and_run({a, b}, {y}, {av, bv}, types, Sched::Naive)[0], 0, 0) == "");
}

TEST_CASE("injective_cpu: a channel shuffle's planes fuse through its reshapes", "[ops_a]") {
  // shufflenet_v2: concat([1, 58, 28, 28] x 2) -> [1, 2, 58, 28, 28] -> transpose(0, 2, 1, 3, 4)
  // -> [1, 116, 28, 28]. Its loads index the planes through flattened, unflattened indices
  // (not as their last two indices), yet each 784-element plane is one contiguous run of a
  // source: 16 lanes, not 4 of a 28 row.
  auto a = te::placeholder({1, 58, 28, 28}, f32, "a"), b = te::placeholder({1, 58, 28, 28}, f32, "b");
  auto cat = te::ops::concatenate({a, b}, 1);
  auto y = te::ops::reshape(te::ops::transpose(te::ops::reshape(cat, {1, 2, 58, 28, 28}), {0, 2, 1, 3, 4}),
                            {1, 116, 28, 28});
  auto s = schedule::create({y});
  schedule::Config cfg;
  schedule::injective_cpu(s, {y}, kAvx512, cfg);
  std::string ir = final_ir(s, {a, b, y});
  INFO(ir);
  CHECK(contains(ir, ", 1, 16)]"));
  HostTensor av = random_tensor(f32, {1, 58, 28, 28}, 10), bv = random_tensor(f32, {1, 58, 28, 28}, 11);
  std::vector<relay::Type> types{relay::tensor_type(f32, {1, 116, 28, 28})};
  CHECK(mismatch(build_and_run({a, b}, {y}, {av, bv}, types, Sched::Default)[0],
                 build_and_run({a, b}, {y}, {av, bv}, types, Sched::Naive)[0], 0, 0) == "");
}

TEST_CASE("reduction_cpu: a reduction over an outer axis vectorizes the kept inner axis", "[ops_a]") {
  auto x = te::placeholder({64, 32, 64}, f32, "x");
  auto sq = te::ops::elementwise({x}, x.shape(), [](const std::vector<ir::Expr>& v) { return v[0] * v[0]; }, "square");
  auto y = te::ops::reduce(sq, te::ops::ReduceKind::Mean, {1}, false, "mean");
  auto s = schedule::create({y});
  schedule::Config cfg;
  schedule::reduction_cpu(s, {y}, kAvx512, cfg);
  std::string ir = final_ir(s, {x, y});
  INFO(ir);
  CHECK(contains(ir, "parallel for"));
  CHECK(contains(ir, "x[ramp("));       // contiguous vector loads of x along the kept axis
  CHECK_FALSE(contains(ir, "square["));  // inlined into the reduction
  CHECK(contains(cfg.str(), "reduce_vector_bytes=64"));

  HostTensor xv = random_tensor(f32, {64, 32, 64}, 3);
  std::vector<relay::Type> types{relay::tensor_type(f32, {64, 64})};
  auto want = build_and_run({x}, {y}, {xv}, types, Sched::Naive)[0];
  auto got = build_and_run({x}, {y}, {xv}, types, Sched::Default)[0];
  CHECK(mismatch(got, want, 1e-6, 0) == "");
}

TEST_CASE("reduction_cpu: a reduction over the inner axis runs parallel over the kept axes", "[ops_a]") {
  auto x = te::placeholder({256, 300}, f32, "x");
  auto y = te::ops::reduce(x, te::ops::ReduceKind::Max, {1}, true, "max");
  auto s = schedule::create({y});
  schedule::Config cfg;
  schedule::reduction_cpu(s, {y}, kAvx512, cfg);
  std::string ir = final_ir(s, {x, y});
  INFO(ir);
  CHECK(contains(ir, "parallel for"));
  CHECK(contains(ir, "for (k1, 0, 300)"));

  auto arg = te::ops::arg_reduce(x, 0, false, false, false, "argmax");
  auto s2 = schedule::create({arg});
  schedule::reduction_cpu(s2, {arg}, kAvx512, cfg);
  HostTensor xv = random_tensor(f32, {256, 300}, 4);
  std::vector<relay::Type> types{relay::tensor_type(DataType::i64(), {300})};
  auto want = build_and_run({x}, {arg}, {xv}, types, Sched::Naive)[0];
  auto got = build_and_run({x}, {arg}, {xv}, types, Sched::Default)[0];
  CHECK(mismatch(got, want, 0, 0) == "");

  auto s3 = schedule::create({arg});
  CHECK_THROWS_WITH(schedule::injective_cpu(s3, {arg}, kAvx512, cfg), Catch::Contains("reduction_cpu"));
}

TEST_CASE("templates: odd inner extents stay plain inner loops under a parallel outer loop", "[ops_a]") {
  // squeezenet's concat: [1, 64, 55, 55] twice along channels; 55 has no power-of-two factor.
  auto a = te::placeholder({1, 64, 55, 55}, f32, "a"), b = te::placeholder({1, 64, 55, 55}, f32, "b");
  auto y = te::ops::concatenate({a, b}, 1);
  auto s = schedule::create({y});
  schedule::Config cfg;
  schedule::injective_cpu(s, {y}, kAvx512, cfg);
  std::string ir = final_ir(s, {a, b, y});
  INFO(ir);
  CHECK(contains(ir, "parallel for (i0.i1.fused, 0, 128)"));  // enough for the threads; the rows nest
  CHECK(contains(ir, "for (i3, 0, 55)"));
  HostTensor av = random_tensor(f32, {1, 64, 55, 55}, 5), bv = random_tensor(f32, {1, 64, 55, 55}, 6);
  std::vector<relay::Type> types{relay::tensor_type(f32, {1, 128, 55, 55})};
  CHECK(mismatch(build_and_run({a, b}, {y}, {av, bv}, types, Sched::Default)[0],
                 build_and_run({a, b}, {y}, {av, bv}, types, Sched::Naive)[0], 0, 0) == "");

  // A sum over channels of [16, 64, 55]: the kept odd axis runs inside the reduce loop.
  auto x = te::placeholder({16, 64, 55}, f32, "x");
  auto r = te::ops::reduce(x, te::ops::ReduceKind::Sum, {1}, false, "sum");
  auto s2 = schedule::create({r});
  schedule::reduction_cpu(s2, {r}, kAvx512, cfg);
  std::string ir2 = final_ir(s2, {x, r});
  INFO(ir2);
  CHECK(contains(ir2, "parallel for (i0, 0, 16)"));
  CHECK(ir2.find("for (k1, 0, 64)") < ir2.find("for (i1, 0, 55)"));
  HostTensor xv = random_tensor(f32, {16, 64, 55}, 7);
  std::vector<relay::Type> types2{relay::tensor_type(f32, {16, 55})};
  CHECK(mismatch(build_and_run({x}, {r}, {xv}, types2, Sched::Default)[0],
                 build_and_run({x}, {r}, {xv}, types2, Sched::Naive)[0], 1e-6, 0) == "");
}
