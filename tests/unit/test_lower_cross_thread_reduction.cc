// ir::lower_cross_thread_reduction: the serial combine of a cross-thread reduction's partials
// becomes a tree in shared memory (warp shuffles on CUDA). Before/after IR on a hand-built
// kernel, barrier counts after insert_thread_sync, the generic GPU schedule's reductions (sum,
// max, min, product, argmax/argmin, a layer norm) on the OpenCL device (PoCL) against plain
// references, the race-checking build with and without each of the tree's barriers, and the
// CUDA text through NVRTC for sm_80 and sm_90.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "kiln/pipeline.h"
#include "kiln/codegen/gpu_build.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/transforms.h"
#include "schedule/templates/generic_gpu.h"
#include "kiln/te/ops/nn_norm.h"
#include "kiln/te/ops/reduce.h"
#include "kiln/te/operation.h"
#include "testing/reference.h"
#include "test_codegen_util.h"
#include "test_gpu_util.h"

using namespace kiln;
using Catch::Matchers::Contains;
using runtime::NDArray;

namespace {

ir::Stmt barrier() { return ir::evaluate(ir::make_intrinsic(ir::DataType::i32(), "kiln_barrier", {})); }

// Row sums Y[b] = sum_c X[b, c] as the generic schedule lowers a cross-thread reduction over
// `threads` threads (flattened): partials P[rf] in shared memory, then the marked serial combine
// into a local accumulator.
struct RowSums {
  ir::Buffer x, y, p, acc;
  ir::Var b{"b"}, rf{"rf"}, k{"k"}, j{"j"};
  ir::Stmt fill;
  ir::PrimFunc f;
  int64_t rows, cols, threads;

  RowSums(int64_t rows, int64_t cols, int64_t threads) : rows(rows), cols(cols), threads(threads) {
    using namespace ir;
    const DataType t = DataType::f32();
    x = test::flat_buffer("X", t, rows * cols);
    y = test::flat_buffer("Y", t, rows);
    p = test::flat_buffer("P", t, threads, "shared");
    acc = test::flat_buffer("acc", t, 1, "local");
    const int n = static_cast<int>(threads), c = static_cast<int>(cols);
    Expr col = k * n + rf;
    fill = for_loop(rf, 0, n, ForKind::ThreadBinding,
                    seq({buffer_store(p, make_zero(t), {rf}),
                         for_loop(k, 0, (c + n - 1) / n, ForKind::Serial,
                                  if_then_else(col < c, buffer_store(p, buffer_load(p, {rf}) + buffer_load(x, {b * c + col}),
                                                                     {rf})))}),
                    "threadIdx.x");
    f = test::prim_func("row_sums", {x, y},
                        body(attr_stmt("pragma_" + std::string(kCrossThreadReductionPragma), j, 1, combine_loop())));
  }

  // The kernel around the combine (or what replaced it).
  ir::Stmt body(const ir::Stmt& combine) const {
    using namespace ir;
    Stmt rest = seq({buffer_store(acc, make_zero(DataType::f32()), {Expr(0)}), combine,
                     buffer_store(y, buffer_load(acc, {Expr(0)}), {b})});
    return for_loop(b, 0, static_cast<int>(rows), ForKind::ThreadBinding, allocate(p, seq({fill, allocate(acc, rest)})),
                    "blockIdx.x");
  }

  // The serial combine, unmarked.
  ir::Stmt combine_loop() const {
    using namespace ir;
    return for_loop(j, 0, static_cast<int>(threads), ForKind::Serial,
                    buffer_store(acc, buffer_load(acc, {Expr(0)}) + buffer_load(p, {j}), {Expr(0)}));
  }

  ir::KernelLaunch launch() const {
    ir::KernelLaunch l;
    l.kernel = f.name;
    l.grid = {rows, 1, 1};
    l.block = {threads, 1, 1};
    return l;
  }
};

// The generic GPU schedule of `outs` over `args` at threads choice `threads` (64 << choice).
codegen::GpuModule build_generic(const std::vector<te::Tensor>& args, const std::vector<te::Tensor>& outs,
                                 const Target& target, size_t threads, codegen::GpuBuildOptions opt = {}) {
  schedule::Schedule s = schedule::create(outs);
  schedule::Config cfg = schedule::Config::with_choices({{"threads", threads}});
  schedule::schedule_generic_gpu(s, outs, target, cfg);
  return kiln::build_gpu({kiln::loop_ir(s, args, "f")}, target, opt);
}

// Float32 inputs in, one output of `out_type` and `out_elems` elements back.
template <typename T>
std::vector<T> run(runtime::DeviceAPI& dev, const codegen::GpuModule& m, const std::vector<std::vector<float>>& inputs,
                   const std::vector<te::Tensor>& placeholders, int64_t out_elems, DLDataType out_type,
                   test::RaceReport* races = nullptr) {
  std::vector<NDArray> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<int64_t> shape = placeholders[i].shape();
    args.push_back(NDArray::from_vector<float>(shape, runtime::dtype_f32(), inputs[i]));
  }
  args.push_back(NDArray::zeros({out_elems}, out_type));
  test::run_on_device(dev, m, args, 0, races);
  const T* out = args.back().data<T>();
  return std::vector<T>(out, out + out_elems);
}

// A tie-rich input: integers 0..4 as floats, so arg reductions must break ties by index.
std::vector<float> ties(size_t n, uint32_t seed) {
  std::vector<float> v = ref::random_floats(n, seed, 0.f, 5.f);
  for (float& e : v) e = std::floor(e);
  return v;
}

}  // namespace

TEST_CASE("lower_cross_thread_reduction before and after (shared tree)", "[gpu]") {
  using namespace ir;
  RowSums k(3, 50, 4);
  PrimFunc after = lower_cross_thread_reduction(k.f, k.launch(), /*warp_size=*/1);
  // for (j, 0, 4) acc += P[j] -> two halving steps, a barrier after each, then acc += P[0], under
  // a thread loop of the block's width.
  Var tx("tx");
  auto step = [&](int active, int s) {
    return if_then_else(tx < active, buffer_store(k.p, buffer_load(k.p, {tx}) + buffer_load(k.p, {tx + Expr(s)}), {tx}));
  };
  Stmt last = buffer_store(k.acc, buffer_load(k.acc, {Expr(0)}) + buffer_load(k.p, {Expr(0)}), {Expr(0)});
  Stmt tree = for_loop(tx, 0, 4, ForKind::ThreadBinding, seq({step(2, 2), barrier(), step(1, 1), barrier(), last}),
                       "threadIdx.x");
  CHECK(to_string(after) == to_string(test::prim_func("row_sums", {k.x, k.y}, k.body(tree))));
  // Nothing marked, nothing changed.
  PrimFunc plain = k.f;
  plain.body = k.body(k.combine_loop());
  CHECK(lower_cross_thread_reduction(plain, k.launch(), 32).body.same_as(plain.body));
  // After insert_thread_sync: one barrier more, between the partials' writes and the tree.
  const std::string synced = to_string(insert_thread_sync(after, k.launch()));
  CHECK(test::occurrences(synced, "kiln_barrier()") == 3);
  CHECK(synced.find("kiln_barrier()") < synced.find("for (tx"));
  CHECK(synced.find("kiln_barrier()") > synced.find("thread_binding(\"threadIdx.x\") for (rf"));
}

TEST_CASE("lower_cross_thread_reduction folds the tail of a count that is not a power of two", "[gpu]") {
  // 6 partials: 6 -> 3 (tx < 3 adds tx + 3), 3 -> 2 (tx < 1 adds tx + 2), 2 -> 1 (tx < 1 adds tx + 1).
  RowSums k(2, 40, 6);
  const std::string after = ir::to_string(ir::lower_cross_thread_reduction(k.f, k.launch(), 1));
  CHECK_THAT(after, Contains("if (tx < 3) {\n        P[tx] = P[tx] + P[tx + 3]") &&
                        Contains("if (tx < 1) {\n        P[tx] = P[tx] + P[tx + 2]") &&
                        Contains("if (tx < 1) {\n        P[tx] = P[tx] + P[tx + 1]"));
  CHECK(test::occurrences(after, "kiln_barrier()") == 3);
  CHECK(test::occurrences(after, "pragma_") == 0);
}

TEST_CASE("lower_cross_thread_reduction on a 32-lane warp: the last steps as shuffles", "[gpu]") {
  // 128 partials: one shared step (128 -> 64), then the first warp folds 64 -> 32 in registers
  // and shuffles 16, 8, 4, 2, 1; lane 0 publishes partial[0] behind one barrier.
  RowSums k(2, 1000, 128);
  const std::string warp = ir::to_string(ir::lower_cross_thread_reduction(k.f, k.launch(), 32));
  INFO(warp);
  CHECK(test::occurrences(warp, "kiln_barrier()") == 2);
  CHECK(test::occurrences(warp, "kiln_shuffle_down(") == 5);
  for (int s : {16, 8, 4, 2, 1}) CHECK(test::occurrences(warp, ", " + std::to_string(s) + ")") >= 1);
  CHECK_THAT(warp, Contains("if (tx < 64)") && Contains("P[tx + 64]") && Contains("if (tx < 32)") &&
                       Contains("P[tx + 32]") && Contains("if (tx == 0)") && Contains("P[0] = "));
  // Without warps (OpenCL): the whole tree in shared memory, 7 steps.
  const std::string shared = ir::to_string(ir::lower_cross_thread_reduction(k.f, k.launch(), 1));
  CHECK(test::occurrences(shared, "kiln_barrier()") == 7);
  CHECK(test::occurrences(shared, "kiln_shuffle_down(") == 0);
  // 32 partials: the warp alone, from partial[tx].
  RowSums w(2, 100, 32);
  const std::string one = ir::to_string(ir::lower_cross_thread_reduction(w.f, w.launch(), 32));
  CHECK(test::occurrences(one, "kiln_barrier()") == 1);
  CHECK(test::occurrences(one, "kiln_shuffle_down(") == 5);
  CHECK(test::occurrences(one, "P[tx + ") == 0);
}

TEST_CASE("lower_cross_thread_reduction refuses a combine it cannot give every thread", "[gpu]") {
  using namespace ir;
  RowSums k(2, 100, 64);
  KernelLaunch two_d = k.launch();
  two_d.block = {32, 2, 1};
  CHECK_THROWS_WITH(lower_cross_thread_reduction(k.f, two_d, 1), Contains("row_sums") && Contains("threadIdx.x"));
  // The combine inside a thread loop.
  Var t("t");
  PrimFunc inside = k.f;
  inside.body = for_loop(t, 0, 64, ForKind::ThreadBinding, k.f.body, "threadIdx.y");
  CHECK_THROWS_WITH(lower_cross_thread_reduction(inside, k.launch(), 1), Contains("inside a threadIdx loop"));
}

TEST_CASE("opencl: hand-built trees of 4, 6, 32 and 64 partials sum rows exactly", "[gpu][opencl]") {
  REQUIRE_OPENCL(dev);
  const Target t = Target::parse("opencl");
  for (int64_t threads : {4, 6, 32, 64}) {
    RowSums k(5, 300, threads);
    codegen::GpuBuildOptions opt;
    opt.race_check = true;
    codegen::GpuModule m = kiln::build_gpu({k.f}, t, opt);
    // Small integers: every order of summation gives the same float.
    std::vector<float> xv = ties(size_t(k.rows * k.cols), 7);
    std::vector<NDArray> args = {NDArray::from_vector<float>({k.rows * k.cols}, runtime::dtype_f32(), xv),
                                 NDArray::zeros({k.rows}, runtime::dtype_f32())};
    test::RaceReport races;
    test::run_on_device(*dev, m, args, 0, &races);
    INFO(threads << " partials, first race " << races.first << "\n" << m.source);
    CHECK(races.count == 0);
    for (int64_t r = 0; r < k.rows; ++r) {
      double want = 0;
      for (int64_t c = 0; c < k.cols; ++c) want += xv[size_t(r * k.cols + c)];
      CHECK(args[1].data<float>()[r] == want);
    }
  }
}

namespace {

// The reductions of the generic GPU schedule, each over rows of `cols` columns: its te program,
// inputs and the plain reference (double precision; arg reductions exactly).
struct Reduction {
  std::string name;
  std::vector<te::Tensor> inputs;
  te::Tensor out;
  std::vector<std::vector<float>> values;
  std::vector<double> want;
  double tol;  // |out - want| <= tol (1 + |want|)
};

Reduction row_reduction(const std::string& name, int64_t rows, int64_t cols) {
  const ir::DataType f32 = ir::DataType::f32();
  te::Tensor x = te::placeholder({rows, cols}, f32, "X");
  Reduction r{name, {x}, te::Tensor(), {}, {}, 1e-5};
  std::vector<float> xv = name == "prod" ? ref::random_floats(size_t(rows * cols), 5, 0.98f, 1.02f)
                        : name.rfind("arg", 0) == 0 ? ties(size_t(rows * cols), 6)
                                                    : ref::random_floats(size_t(rows * cols), 4, -4.f, 4.f);
  r.values = {xv};
  using Kind = te::ops::ReduceKind;
  const std::map<std::string, Kind> kinds = {{"sum", Kind::Sum}, {"max", Kind::Max}, {"min", Kind::Min}, {"prod", Kind::Prod}};
  if (kinds.count(name)) r.out = te::ops::reduce(x, kinds.at(name), {1}, false, name);
  // argmax, first index of a tie; argmin, last index.
  if (name == "argmax") r.out = te::ops::arg_reduce(x, 1, false, false, false, name);
  if (name == "argmin") r.out = te::ops::arg_reduce(x, 1, false, true, true, name);
  if (name == "layer_norm") {
    te::Tensor g = te::placeholder({cols}, f32, "gamma"), b = te::placeholder({cols}, f32, "beta");
    r.inputs = {x, g, b};
    r.values = {xv, ref::random_floats(size_t(cols), 8, 0.5f, 2.f), ref::random_floats(size_t(cols), 9, -1.f, 1.f)};
    r.out = te::ops::layer_norm(x, g, b, 1, 1e-5, name);
  }
  if (name == "softmax") r.out = te::ops::softmax(x, 1, name);
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = xv.data() + i * cols;
    double acc = name == "prod" ? 1 : name == "max" ? -INFINITY : name == "min" ? INFINITY : 0;
    int64_t at = 0;
    for (int64_t c = 0; c < cols; ++c) {
      if (name == "sum") acc += row[c];
      if (name == "prod") acc *= row[c];
      if (name == "max") acc = std::max(acc, double(row[c]));
      if (name == "min") acc = std::min(acc, double(row[c]));
      if (name == "argmax" && row[c] > row[at]) at = c;
      if (name == "argmin" && row[c] <= row[at]) at = c;
    }
    if (name.rfind("arg", 0) == 0) acc = double(at);
    if (kinds.count(name) || name.rfind("arg", 0) == 0) r.want.push_back(acc);
    if (name == "softmax") {
      std::vector<float> y = ref::softmax_rows(std::vector<float>(row, row + cols), 1, int(cols));
      r.want.insert(r.want.end(), y.begin(), y.end());
    }
    if (name == "layer_norm") {
      double mean = 0, var = 0;
      for (int64_t c = 0; c < cols; ++c) mean += row[c];
      mean /= double(cols);
      for (int64_t c = 0; c < cols; ++c) var += (row[c] - mean) * (row[c] - mean);
      var /= double(cols);
      for (int64_t c = 0; c < cols; ++c)
        r.want.push_back((row[c] - mean) / std::sqrt(var + 1e-5) * r.values[1][c] + r.values[2][c]);
    }
  }
  if (name == "layer_norm") r.tol = 1e-4;
  return r;
}

std::vector<te::Tensor> all_args(const Reduction& r) {
  std::vector<te::Tensor> a = r.inputs;
  a.push_back(r.out);
  return a;
}

// Runs `r` on the OpenCL device; returns the outputs as doubles.
std::vector<double> run_reduction(runtime::DeviceAPI& dev, const Reduction& r, const codegen::GpuModule& m,
                                  test::RaceReport* races = nullptr) {
  const int64_t n = static_cast<int64_t>(r.want.size());
  if (r.out.dtype() == ir::DataType::i64()) {
    std::vector<int64_t> out = run<int64_t>(dev, m, r.values, r.inputs, n, runtime::make_dtype(kDLInt, 64), races);
    return std::vector<double>(out.begin(), out.end());
  }
  std::vector<float> out = run<float>(dev, m, r.values, r.inputs, n, runtime::dtype_f32(), races);
  return std::vector<double>(out.begin(), out.end());
}

const std::vector<std::string> kReductions = {"sum", "max", "min", "prod", "argmax", "argmin", "softmax", "layer_norm"};

}  // namespace

TEST_CASE("opencl: the generic schedule's reductions as trees match plain references", "[gpu][opencl]") {
  REQUIRE_OPENCL(dev);
  const Target t = Target::parse("opencl");
  // Row lengths against block widths (64 << choice): fewer columns than threads, a multiple,
  // neither; the widest block.
  struct Shape {
    int64_t rows, cols;
    size_t threads;
  };
  for (const Shape& sh : {Shape{3, 77, 2}, Shape{4, 256, 2}, Shape{2, 1000, 0}, Shape{2, 700, 4}}) {
    for (const std::string& name : kReductions) {
      Reduction r = row_reduction(name, sh.rows, sh.cols);
      codegen::GpuModule m = build_generic(all_args(r), {r.out}, t, sh.threads);
      INFO(name << " over " << sh.rows << " x " << sh.cols << ", threads choice " << sh.threads);
      REQUIRE(test::occurrences(m.source, "for (int j_rf") == 0);  // no serial combine left
      std::vector<double> got = run_reduction(*dev, r, m);
      for (size_t i = 0; i < got.size(); ++i) {
        INFO("at " << i << ": " << got[i] << " want " << r.want[i]);
        REQUIRE(std::abs(got[i] - r.want[i]) <= r.tol * (1 + std::abs(r.want[i])));
      }
    }
  }
}

TEST_CASE("race check: the trees report no races, and races without any one of their barriers", "[gpu][opencl]") {
  REQUIRE_OPENCL(dev);
  const Target t = Target::parse("opencl");
  for (const char* name : {"softmax", "layer_norm", "argmax"}) {
    Reduction r = row_reduction(name, 3, 300);
    codegen::GpuBuildOptions opt;
    opt.race_check = true;
    codegen::GpuModule m = build_generic(all_args(r), {r.out}, t, 2, opt);  // 256 threads
    test::RaceReport races;
    std::vector<double> got = run_reduction(*dev, r, m, &races);
    INFO(name << ": " << races.count << " races, first " << races.first);
    CHECK(races.count == 0);
    for (size_t i = 0; i < got.size(); ++i) REQUIRE(std::abs(got[i] - r.want[i]) <= r.tol * (1 + std::abs(r.want[i])));
  }
  // A row max over 256 threads: barrier 0 is insert_thread_sync's, before the tree (dropping it
  // is test_gpu_racecheck's case); 1..8 end the tree's steps (256 -> 128 -> ... -> 1), the last
  // before partial[0] is read.
  Reduction r = row_reduction("max", 3, 300);
  for (int drop = 1; drop <= 8; ++drop) {
    codegen::GpuBuildOptions opt;
    opt.race_check = true;
    int barriers = 0;
    opt.after_sync = [&](const ir::PrimFunc& k) {
      test::DropBarrier d(drop);
      ir::PrimFunc out = k;
      out.body = d.mutate_stmt(k.body);
      barriers = d.barriers;
      return out;
    };
    codegen::GpuModule m = build_generic(all_args(r), {r.out}, t, 2, opt);
    REQUIRE(barriers == 9);
    test::RaceReport races;
    run_reduction(*dev, r, m, &races);
    INFO("without barrier " << drop << ": " << races.count << " races, first " << races.first);
    CHECK(races.count > 0);
    CHECK_THAT(races.first, Contains("f.max_rf["));
  }
}

TEST_CASE("barriers of the generic schedule's trees after insert_thread_sync", "[gpu]") {
  // Softmax over 1000 columns, 256 threads: per reduction kernel, insert_thread_sync's barrier
  // before the tree and the tree's own: 8 in OpenCL, 2 + 1 on CUDA (128, 64 in shared memory,
  // then the first warp).
  te::Tensor x = te::placeholder({4, 1000}, ir::DataType::f32(), "X");
  te::Tensor y = te::ops::softmax(x, 1);
  codegen::GpuBuildOptions no_nvrtc;
  no_nvrtc.compile = false;
  for (const char* target : {"opencl", "cuda -arch=sm_90"}) {
    const Target t = Target::parse(target);
    codegen::GpuModule m = build_generic({x, y}, {y}, t, 2, no_nvrtc);
    const ir::DeviceProgram& p = m.programs[0];
    REQUIRE(p.kernels.size() == 3);
    const bool cuda = t.kind == TargetKind::kCUDA;
    for (int k : {0, 1}) {
      const std::string ir_text = ir::to_string(p.kernels[k]);
      INFO(target << "\n" << ir_text);
      CHECK(test::occurrences(ir_text, "kiln_barrier()") == (cuda ? 4 : 9));
      CHECK(test::occurrences(ir_text, "kiln_shuffle_down(") == (cuda ? 5 : 0));
      CHECK(test::occurrences(ir_text, "pragma_") == 0);
      // No barrier under a condition on the thread: each follows a closed `if` at the thread
      // loop's level (the printer indents it as the `if`).
      CHECK(test::occurrences(ir_text, "}\n      kiln_barrier()") == (cuda ? 3 : 8));
    }
    CHECK(test::occurrences(m.source, cuda ? "__shfl_down_sync(0xffffffffu, " : "__shfl") == (cuda ? 10 : 0));
  }
}

TEST_CASE("cuda: the trees compile through nvrtc for sm_80 and sm_90", "[gpu][nvrtc]") {
  if (!codegen::cuda_codegen_available()) {
    WARN("skipped: kiln was built without the CUDA toolkit's NVRTC");
    return;
  }
  const Target t = Target::parse("cuda -arch=sm_90");
  // One program for all: float shuffles, int64 + float (argmax's two slots), 64 and 1024 threads.
  std::vector<ir::PrimFunc> funcs;
  int i = 0;
  for (const std::string& name : kReductions)
    for (size_t threads : {0, 4}) {
      Reduction r = row_reduction(name, 4, 2000);
      schedule::Schedule s = schedule::create({r.out});
      schedule::Config cfg = schedule::Config::with_choices({{"threads", threads}});
      schedule::schedule_generic_gpu(s, {r.out}, t, cfg);
      funcs.push_back(kiln::loop_ir(s, all_args(r), name + "_" + std::to_string(i++)));
    }
  codegen::GpuModule m = kiln::build_gpu(funcs, t);
  INFO(m.source);
  CHECK(test::occurrences(m.source, "__shfl_down_sync(0xffffffffu, ") >= 5 * int64_t(funcs.size()));
  CHECK_THAT(m.source, Contains("const long long other") && Contains("const float other"));
  REQUIRE(m.images.size() == 3);  // sm_80, sm_90 cubins, compute_90 PTX
  CHECK(m.images[0].sm == 80);
  CHECK(m.images[1].sm == 90);
}
