// The GPU kernel path without a device: GPU targets, the generic GPU schedule, verify_gpu,
// split_host_device (before/after) and the CUDA C / OpenCL C text.
#include <catch2/catch.hpp>

#include "kiln/pipeline.h"
#include "kiln/codegen/gpu_build.h"
#include "kiln/ir/printer.h"
#include "ir/shared_storage.h"
#include "kiln/ir/transforms.h"
#include "schedule/templates/generic_gpu.h"
#include "kiln/te/ops/nn_norm.h"
#include "kiln/te/operation.h"
#include "test_codegen_util.h"
#include "test_gpu_util.h"

using namespace kiln;
using Catch::Matchers::Contains;

namespace {

// relu(A + B) over [rows, cols], scheduled by the generic GPU template.
ir::PrimFunc add_relu(const Target& t, int64_t rows, int64_t cols) {
  te::Tensor a = te::placeholder({rows, cols}, ir::DataType::f32(), "A");
  te::Tensor b = te::placeholder({rows, cols}, ir::DataType::f32(), "B");
  te::Tensor sum = te::compute({rows, cols}, [&](ir::Var i, ir::Var j) { return a(i, j) + b(i, j); }, "sum");
  te::Tensor out = te::compute(
      {rows, cols}, [&](ir::Var i, ir::Var j) { return ir::max(sum(i, j), ir::make_zero(ir::DataType::f32())); }, "relu");
  schedule::Schedule s = schedule::create({out});
  schedule::Config cfg;
  schedule::schedule_generic_gpu(s, {out}, t, cfg);
  return kiln::loop_ir(s, {a, b, out}, "add_relu");
}

ir::PrimFunc softmax_rows(const Target& t, int64_t rows, int64_t cols) {
  te::Tensor x = te::placeholder({rows, cols}, ir::DataType::f32(), "X");
  te::Tensor y = te::ops::softmax(x, 1);
  schedule::Schedule s = schedule::create({y});
  schedule::Config cfg;
  schedule::schedule_generic_gpu(s, {y}, t, cfg);
  return kiln::loop_ir(s, {x, y}, "softmax");
}

}  // namespace

TEST_CASE("gpu targets parse with their facts and print back", "[gpu]") {
  Target h100 = Target::parse("cuda -arch=sm_90");
  CHECK(h100.kind == TargetKind::kCUDA);
  CHECK(h100.gpu.sm == 90);
  CHECK(h100.gpu.max_dynamic_shared_bytes == 227 * 1024);
  CHECK(h100.gpu.multiprocessors == 132);
  CHECK(h100.gpu.warp_size == 32);
  CHECK(Target::parse(h100.str()) == h100);
  CHECK(h100.isa() == "cuda -arch=sm_90");
  CHECK(h100.cuda_image_sms() == std::vector<int>{80, 90});
  CHECK_THAT(h100.summary(), Contains("sm_90") && Contains("PTX compute_90"));
  CHECK(Target::parse("cuda").gpu.sm == 80);
  CHECK(Target::parse("cuda -arch=sm_86").cuda_image_sms() == std::vector<int>{80, 86, 90});

  Target cl = Target::parse("opencl -max-threads-per-block=256");
  CHECK(cl.kind == TargetKind::kOpenCL);
  CHECK(cl.gpu.warp_size == 1);
  CHECK(cl.gpu.max_threads_per_block == 256);
  CHECK(Target::parse(cl.str()) == cl);
  CHECK(cl.isa() == "opencl");
  CHECK(Target::isa_of(cl.str()) == "opencl");
}

TEST_CASE("gpu target: sm_90a is sm_90 with its arch-specific features, and round-trips", "[gpu]") {
  const Target a = Target::parse("cuda -arch=sm_90a");
  CHECK(a.gpu.sm == 90);
  CHECK(a.gpu.arch_specific);
  CHECK(a.isa() == "cuda -arch=sm_90a");
  CHECK(Target::parse(a.str()) == a);
  CHECK_FALSE(a == Target::parse("cuda -arch=sm_90"));
  CHECK(a.gpu.max_dynamic_shared_bytes == 227 << 10);
}

TEST_CASE("gpu target errors name the culprit", "[gpu]") {
  CHECK_THROWS_WITH(Target::parse("cuda -arch=sm_70"), Contains("sm_70") && Contains("sm_75"));
  CHECK_THROWS_WITH(Target::parse("cuda -arch=90"), Contains("unknown -arch '90'"));
  CHECK_THROWS_WITH(Target::parse("cuda -arch=sm_80a"), Contains("unknown -arch 'sm_80a'") && Contains("sm_90a"));
  CHECK_THROWS_WITH(Target::parse("cuda -mcpu=x"), Contains("unknown option '-mcpu'"));
  CHECK_THROWS_WITH(Target::parse("opencl -arch=sm_80"), Contains("unknown option '-arch'"));
  CHECK_THROWS_WITH(Target::parse("opencl -max-threads-per-block=0"), Contains("positive count"));
  CHECK_THROWS_WITH(Target::parse("rocm"), Contains("unknown kind 'rocm'"));
}

TEST_CASE("generic gpu schedule binds blocks and threads, one kernel per kept stage", "[gpu]") {
  const Target t = Target::parse("opencl");
  codegen::GpuModule m = kiln::build_gpu({add_relu(t, 30, 50)}, t);
  REQUIRE(m.programs.size() == 1);
  const ir::DeviceProgram& p = m.programs[0];
  REQUIRE(p.kernels.size() == 1);
  // 1500 elements in blocks of 256 threads: 6 blocks, the last one guarded.
  CHECK(p.launches[0].grid == std::array<int64_t, 3>{6, 1, 1});
  CHECK(p.launches[0].block == std::array<int64_t, 3>{256, 1, 1});
  CHECK(p.launches[0].args == std::vector<int>{0, 1, 2});
  CHECK(p.workspace.empty());
  CHECK_THAT(m.source, Contains("__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void add_relu("));
  CHECK_THAT(m.source, Contains("__global const float* restrict A") && Contains("__global float* restrict relu"));
  CHECK_THAT(m.source, Contains("get_group_id(0)") && Contains("get_local_id(0)"));

  // Softmax: the max and the sum are reductions other stages read: kernels of their own,
  // writing workspace buffers.
  codegen::GpuModule sm = kiln::build_gpu({softmax_rows(t, 4, 1000)}, t);
  const ir::DeviceProgram& q = sm.programs[0];
  CHECK(q.kernels.size() >= 3);
  CHECK(q.workspace.size() + 1 == q.kernels.size());
  // The max over 1000 columns is a cross-thread reduction: a block of 256 threads per row, their
  // partials in shared memory.
  CHECK(q.launches[0].grid[0] == 4);
  CHECK(q.launches[0].block[0] == 256);
  CHECK_THAT(sm.source, Contains("__local float softmax_max_rf[256];"));
}

TEST_CASE("cuda text of the same schedule", "[gpu]") {
  const Target t = Target::parse("cuda -arch=sm_90");
  codegen::GpuModule m = kiln::build_gpu({add_relu(t, 30, 50)}, t, codegen::GpuBuildOptions{false});
  CHECK_THAT(m.source, Contains("extern \"C\" __global__ void __launch_bounds__(256) add_relu("));
  CHECK_THAT(m.source, Contains("const float* __restrict__ A") && Contains("blockIdx.x") && Contains("threadIdx.x"));
  CHECK_THAT(m.source, Contains("kiln_max_float32"));
}

TEST_CASE("split_host_device before and after", "[gpu]") {
  using namespace ir;
  Buffer x = test::flat_buffer("X", DataType::f32(), 64), y = test::flat_buffer("Y", DataType::f32(), 64);
  Buffer tmp = test::flat_buffer("T", DataType::f32(), 64);
  Var b0("b0"), t0("t0"), b1("b1"), t1("t1");
  Expr i0 = b0 * 32 + t0, i1 = b1 * 16 + t1;
  Stmt k0 = for_loop(b0, 0, 2, ForKind::ThreadBinding,
                     for_loop(t0, 0, 32, ForKind::ThreadBinding, buffer_store(tmp, buffer_load(x, {i0}) * 2.0f, {i0}),
                              "threadIdx.x"),
                     "blockIdx.x");
  Stmt k1 = for_loop(b1, 0, 4, ForKind::ThreadBinding,
                     for_loop(t1, 0, 16, ForKind::ThreadBinding, buffer_store(y, buffer_load(tmp, {i1}) + 1.0f, {i1}),
                              "threadIdx.x"),
                     "blockIdx.x");
  PrimFunc f = test::prim_func("f", {x, y}, allocate(tmp, seq({k0, k1})));
  verify_gpu(f, GpuLimits{});
  DeviceProgram p = split_host_device(f);
  REQUIRE(p.kernels.size() == 2);
  REQUIRE(p.workspace.size() == 1);
  CHECK(p.workspace[0]->name == "T");
  CHECK(p.kernels[0].name == "f_k0");
  CHECK(p.launches[0].grid[0] == 2);
  CHECK(p.launches[0].block[0] == 32);
  CHECK(p.launches[0].args == std::vector<int>{0, 2});  // X, then workspace T
  CHECK(p.launches[1].args == std::vector<int>{1, 2});  // Y, T
  CHECK(to_string(p.kernels[1]) == to_string(test::prim_func("f_k1", {y, tmp}, k1)));
}

TEST_CASE("verify_gpu refuses what a GPU cannot run", "[gpu]") {
  using namespace ir;
  Buffer x = test::flat_buffer("X", DataType::f32(), 4096);
  Var b("b"), t("t");
  auto store = [&](Expr idx) { return buffer_store(x, make_float(DataType::f32(), 1.0), {idx}); };
  GpuLimits limits;
  // 2048 threads per block.
  PrimFunc big = test::prim_func("big", {x}, for_loop(t, 0, 2048, ForKind::ThreadBinding, store(t), "threadIdx.x"));
  CHECK_THROWS_WITH(verify_gpu(big, limits), Contains("2048 threads per block") && Contains("'big'"));
  // A block axis inside a thread axis.
  PrimFunc inverted = test::prim_func(
      "inv", {x},
      for_loop(t, 0, 32, ForKind::ThreadBinding, for_loop(b, 0, 4, ForKind::ThreadBinding, store(b * 32 + t), "blockIdx.x"),
               "threadIdx.x"));
  CHECK_THROWS_WITH(verify_gpu(inverted, limits), Contains("inside a threadIdx loop"));
  // A store outside the bound loops of a kernel that has some.
  PrimFunc stray = test::prim_func(
      "stray", {x}, seq({store(0), for_loop(t, 0, 32, ForKind::ThreadBinding, store(t), "threadIdx.x")}));
  CHECK_NOTHROW(verify_gpu(stray, limits));  // two kernels: the first runs on one thread
  PrimFunc mixed = test::prim_func(
      "mixed", {x},
      for_loop(b, 0, 2, ForKind::ThreadBinding,
               seq({store(b), for_loop(t, 0, 32, ForKind::ThreadBinding, store(b * 32 + t), "threadIdx.x")}),
               "blockIdx.x"));
  CHECK_NOTHROW(verify_gpu(mixed, limits));  // inside the block loop: one store per block
  PrimFunc outside = test::prim_func(
      "outside", {x},
      if_then_else(make_const(DataType::boolean(), 1),
                   seq({store(0), for_loop(t, 0, 32, ForKind::ThreadBinding, store(t), "threadIdx.x")})));
  CHECK_THROWS_WITH(verify_gpu(outside, limits), Contains("outside any thread-bound loop") && Contains("'X'"));
  // Shared memory beyond the limit, and a global buffer inside a kernel.
  Buffer sh = test::flat_buffer("S", DataType::f32(), 16384, "shared");
  PrimFunc shared = test::prim_func(
      "sh", {x}, for_loop(t, 0, 32, ForKind::ThreadBinding, allocate(sh, buffer_store(sh, 1.0f, {t})), "threadIdx.x"));
  CHECK_THROWS_WITH(verify_gpu(shared, limits), Contains("65536 bytes of shared memory"));
  Buffer g = test::flat_buffer("G", DataType::f32(), 16);
  PrimFunc heap = test::prim_func(
      "heap", {x}, for_loop(t, 0, 32, ForKind::ThreadBinding, allocate(g, buffer_store(g, 1.0f, {Expr(0)})), "threadIdx.x"));
  CHECK_THROWS_WITH(verify_gpu(heap, limits), Contains("'G'") && Contains("scope shared or local"));
}

namespace {
// for (o, 0, 4) { S[t] = X[o*32 + t]; Y[o*32 + t] = S[31 - t] } with t bound to 32 threads.
ir::PrimFunc exchange_kernel(bool narrow, bool thread_condition) {
  using namespace ir;
  Buffer x = test::flat_buffer("X", DataType::f32(), 128), y = test::flat_buffer("Y", DataType::f32(), 128);
  Buffer sh = test::flat_buffer("S", DataType::f32(), 32, "shared");
  Var o("o"), t("t");
  Stmt write = buffer_store(sh, buffer_load(x, {o * 32 + t}), {t});
  Stmt read = buffer_store(y, buffer_load(sh, {31 - t}), {o * 32 + t});
  Stmt body = seq({write, read});
  if (thread_condition) body = if_then_else(t < 16, body);
  Stmt loop = for_loop(o, 0, 4, ForKind::Serial, body);
  return test::prim_func("exchange", {x, y},
                         for_loop(t, 0, narrow ? 16 : 32, ForKind::ThreadBinding, allocate(sh, loop), "threadIdx.x"));
}
}  // namespace

TEST_CASE("insert_thread_sync and hoist_device_allocations before and after", "[gpu]") {
  using namespace ir;
  const KernelLaunch launch = test::launch_of("exchange", 32);
  PrimFunc f = hoist_device_allocations(exchange_kernel(false, false));
  // The shared buffer moved outside the thread loop, to the kernel's top.
  REQUIRE(f.body.as<AllocateNode>() != nullptr);
  CHECK(f.body.as<AllocateNode>()->buffer->name == "S");
  PrimFunc synced = insert_thread_sync(f, launch);
  std::string text = to_string(synced);
  // One barrier between the write and the read (RAW), one at the end of the loop body for the
  // next iteration's write after this one's read (WAR across iterations).
  size_t first = text.find("kiln_barrier"), second = text.find("kiln_barrier", first + 1);
  REQUIRE(first != std::string::npos);
  REQUIRE(second != std::string::npos);
  CHECK(text.find("kiln_barrier", second + 1) == std::string::npos);
  INFO(text);
  // One barrier sits between the write and the read; the loop-carried one closes the loop
  // body, after the read.
  const size_t write = text.find("S[t] = X["), read = text.find("Y[o*32 + t] = S[");
  CHECK(write < first);
  CHECK(first < read);
  CHECK(read < second);
  // Idempotent: a synchronized kernel needs no more.
  CHECK(to_string(insert_thread_sync(synced, launch)) == text);
  // A barrier every thread must reach cannot go under a condition on the thread index, nor in
  // a thread loop narrower than the block (code generation guards it).
  CHECK_THROWS_WITH(insert_thread_sync(hoist_device_allocations(exchange_kernel(false, true)), launch),
                    Contains("'S'") && Contains("branch not every thread"));
  CHECK_THROWS_WITH(insert_thread_sync(hoist_device_allocations(exchange_kernel(true, false)), launch),
                    Contains("thread loop narrower"));
}

namespace {
// for (o, 0, 4) { S[t] = X[o*32 + t]; Y[o*32 + t] = S[31 - t] } then T[t] = X[t]; Y[t] = T[31 - t],
// t bound to 32 threads; with `t_before`, T is written once more before the loop too.
ir::PrimFunc two_exchanges(bool t_before) {
  using namespace ir;
  Buffer x = test::flat_buffer("X", DataType::f32(), 128), y = test::flat_buffer("Y", DataType::f32(), 128);
  Buffer s = test::flat_buffer("S", DataType::f32(), 32, "shared"), tb = test::flat_buffer("T", DataType::f32(), 32, "shared");
  Var o("o"), t("t");
  Stmt loop = for_loop(o, 0, 4, ForKind::Serial,
                       seq({buffer_store(s, buffer_load(x, {o * 32 + t}), {t}),
                            buffer_store(y, buffer_load(s, {31 - t}), {o * 32 + t})}));
  std::vector<Stmt> body = {loop, buffer_store(tb, buffer_load(x, {t}), {t}), buffer_store(y, buffer_load(tb, {31 - t}), {t})};
  if (t_before) body.insert(body.begin(), buffer_store(tb, 0.0f, {t}));
  return test::prim_func("two", {x, y},
                         for_loop(t, 0, 32, ForKind::ThreadBinding, allocate(s, allocate(tb, seq(body))), "threadIdx.x"));
}
}  // namespace

TEST_CASE("plan_shared_storage: a swizzled tile starts 1024-byte aligned, and so does the pool", "[gpu]") {
  using namespace ir;
  // A 48-byte buffer, then a [8, 64] float16 tile in wgmma's 128-byte swizzle (1024 bytes), both
  // live throughout: the tile at 1024, not at 48.
  const Buffer small = test::flat_buffer("P", DataType::f32(), 12, "shared");
  auto node = std::make_shared<BufferNode>(*Buffer::make("S", DataType::f16(), {8, 64}, "shared").get());
  node->layout = TileLayout::kSwizzle128B;
  const Buffer tile(std::move(node));
  const Buffer y = test::flat_buffer("Y", DataType::f32(), 1);
  Stmt body = allocate(small, allocate(tile, seq({buffer_store(small, make_zero(DataType::f32()), {0}),
                                                  buffer_store(tile, make_zero(DataType::f16()), {0, 0}),
                                                  buffer_store(y, cast(DataType::f32(), buffer_load(tile, {0, 1})) +
                                                                      buffer_load(small, {1}), {0})})));
  const SharedStorage plan = plan_shared_storage(body);
  REQUIRE(plan.buffers.size() == 2);
  CHECK(plan.buffers[0].second == 0);
  CHECK(plan.buffers[1].second == 1024);
  CHECK(plan.alignment == 1024);
  CHECK(plan.bytes == 2048);
}

TEST_CASE("plan_shared_storage: buffers live apart share bytes, and insert_thread_sync orders them", "[gpu]") {
  using namespace ir;
  const KernelLaunch launch = test::launch_of("two", 32);
  const PrimFunc apart = hoist_device_allocations(two_exchanges(false));
  const SharedStorage plan = plan_shared_storage(apart.body);
  REQUIRE(plan.buffers.size() == 2);
  // T is first touched after the loop that holds every access of S: both at offset 0.
  CHECK(plan.aliased);
  CHECK(plan.bytes == 128);
  CHECK(plan.buffers[0].second == 0);
  CHECK(plan.buffers[1].second == 0);
  CHECK(plan.overlap(plan.buffers[0].first->data.get(), plan.buffers[1].first->data.get()));
  // A barrier between the loop's last read of S and the first write of T (a write after a read
  // of the same bytes through another buffer), and the usual one between T's write and read.
  const std::string text = to_string(insert_thread_sync(apart, launch));
  INFO(text);
  const size_t loop_read = text.find("Y[o*32 + t] = S["), t_write = text.find("T[t] = X["), t_read = text.find("Y[t] = T[");
  REQUIRE(loop_read != std::string::npos);
  REQUIRE(t_write != std::string::npos);
  const size_t after_loop = text.find("kiln_barrier", text.find("kiln_barrier", loop_read) + 1);
  CHECK(after_loop < t_write);
  CHECK(text.find("kiln_barrier", t_write) < t_read);
  // The barrier is the bytes' alone: without the sharing, T's write follows the loop directly.
  const PrimFunc no_alias = hoist_device_allocations(two_exchanges(true));
  const SharedStorage apart_not = plan_shared_storage(no_alias.body);
  CHECK_FALSE(apart_not.aliased);
  CHECK(apart_not.bytes == 256);
  CHECK(apart_not.buffers[1].second == 128);
  // The printer carves both out of one array, at their offsets.
  codegen::GpuBuildOptions text_only;
  text_only.compile = false;
  const std::string cuda = kiln::build_gpu({two_exchanges(false)}, Target::parse("cuda -arch=sm_80"), text_only).source;
  INFO(cuda);
  CHECK_THAT(cuda, Contains("__shared__ __align__(16) unsigned char kiln_shared[128];"));
  CHECK_THAT(cuda, Contains("float* const S = reinterpret_cast<float*>(kiln_shared + 0);"));
  CHECK_THAT(cuda, Contains("float* const T = reinterpret_cast<float*>(kiln_shared + 0);"));
}
