// Every GPU schedule template over the corners of its knob space (docs/gpu.md, "Checked on every run
// without a GPU"): the default, every knob at its first and its last candidate with the others
// at their defaults, and all knobs at their first and all at their last candidates. Each corner
// of each template's representative ops
//  - compiles through NVRTC to sm_80 and sm_90 cubins (ptxas checks registers and shared
//    memory), one NVRTC program per op (one program of many kernels is several times faster
//    than a program per kernel);
//  - runs as OpenCL C on PoCL against kiln::ref, in a fresh process: this test binary run again
//    on a hidden test case (a forked copy would inherit a PoCL whose worker threads it lacks when
//    an earlier test case of the process opened the device; a crash in PoCL stays the child's).
// A corner the template refuses as exceeding the target's limits is counted, not run; each test
// case states how many it expects. Both targets are given 4 multiprocessors so that these small
// outputs still take the injective template's grid-stride loop at its smallest grid.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "kiln/pipeline.h"
#include "kiln/codegen/gpu_build.h"
#include "kiln/ir/transforms.h"
#include "schedule/templates/conv_direct_gpu.h"
#include "schedule/templates/depthwise_gpu.h"
#include "schedule/templates/generic_gpu.h"
#include "schedule/templates/injective_gpu.h"
#include "schedule/templates/matmul_gpu.h"
#include "schedule/templates/pool_gpu.h"
#include "kiln/te/ops/nn_conv.h"
#include "kiln/te/ops/nn_dense.h"
#include "kiln/te/ops/nn_norm.h"
#include "kiln/te/ops/nn_pool.h"
#include "testing/reference.h"
#include "test_gpu_util.h"

using namespace kiln;
using runtime::NDArray;

namespace {

const ir::DataType f32 = ir::DataType::f32();

Target cuda_target() { return Target::parse("cuda -arch=sm_90 -multiprocessors=4"); }
Target opencl_target() { return Target::parse("opencl -multiprocessors=4"); }

// One representative op of a template: its te program, how the template schedules it, inputs
// and the plain reference. Tolerance: |out - want| <= 1e-5 (1 + scale) elementwise, where scale
// is |want|, or for sums of products the same op computed on |inputs| (the rounding of float32
// sums grows with the sum of the magnitudes).
struct Op {
  std::string name;
  std::vector<te::Tensor> args;  // inputs, then the output
  std::function<schedule::Schedule(const Target&, schedule::Config&)> schedule;
  std::vector<std::vector<float>> inputs;
  std::vector<float> want, scale;
};

std::vector<float> abs_of(std::vector<float> v) {
  for (float& e : v) e = std::abs(e);
  return v;
}

std::function<schedule::Schedule(const Target&, schedule::Config&)> anchored(std::vector<te::Tensor> outs,
                                                                              te::Tensor anchor,
                                                                              schedule::GpuAnchorTemplate tmpl) {
  return [=](const Target& t, schedule::Config& cfg) {
    return schedule::schedule_anchor_gpu(outs, anchor, tmpl, t, cfg);
  };
}

// relu(conv + bias[c]) of a reference conv output [c, plane].
std::vector<float> bias_relu(std::vector<float> y, const std::vector<float>& bias, size_t plane) {
  for (size_t i = 0; i < y.size(); ++i) y[i] = std::max(y[i] + bias[i / plane], 0.f);
  return y;
}

Op softmax_op() {
  const int rows = 6, cols = 200;  // rows of 200: reduced across a block's threads
  te::Tensor x = te::placeholder({rows, cols}, f32, "X");
  te::Tensor y = te::ops::softmax(x, 1);
  Op op{"softmax 6x200", {x, y}, [y](const Target& t, schedule::Config& cfg) {
          schedule::Schedule s = schedule::create({y});
          schedule::schedule_generic_gpu(s, {y}, t, cfg);
          return s;
        }, {ref::random_floats(rows * cols, 1, -8.f, 8.f)}, {}, {}};
  op.want = ref::softmax_rows(op.inputs[0], rows, cols);
  op.scale = op.want;
  return op;
}

// relu(A + B[j]) * C[i] over [rows, cols]: B broadcast along the rows, C along the columns.
// 129 columns: no block or vector divides them (the vector elements of a thread lie threads
// apart); 128: a thread's elements are neighbours, read and written as float4 (B too).
Op add_relu_op(int cols) {
  const int rows = 37;
  te::Tensor a = te::placeholder({rows, cols}, f32, "A");
  te::Tensor b = te::placeholder({cols}, f32, "B");
  te::Tensor c = te::placeholder({rows}, f32, "C");
  te::Tensor sum = te::compute({rows, cols}, [&](ir::Var i, ir::Var j) { return a(i, j) + b(j); }, "add");
  te::Tensor y = te::compute(
      {rows, cols}, [&](ir::Var i, ir::Var j) { return ir::max(sum(i, j), ir::make_zero(f32)) * c(i); }, "relu");
  Op op{"relu(A + B) * C 37x" + std::to_string(cols), {a, b, c, y}, [y](const Target& t, schedule::Config& cfg) {
          schedule::Schedule s = schedule::create({y});
          schedule::schedule_injective_gpu(s, {y}, t, cfg);
          return s;
        }, {ref::random_floats(rows * cols, 2, -4.f, 4.f), ref::random_floats(cols, 3, -4.f, 4.f),
            ref::random_floats(rows, 4, -2.f, 2.f)}, {}, {}};
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j)
      op.want.push_back(std::max(op.inputs[0][i * cols + j] + op.inputs[1][j], 0.f) * op.inputs[2][i]);
  op.scale = op.want;
  return op;
}

// A 3x3 window, stride 2, padded by 1 on every side, over [1, 3, 15, 17] (output 8 x 9).
Op pool_op(bool is_max) {
  const int c = 3, h = 15, w = 17;
  te::ops::PoolNdAttrs a;
  a.kernel = {3, 3};
  a.strides = {2, 2};
  a.padding = {1, 1, 1, 1};
  a.dilation = {1, 1};
  te::Tensor x = te::placeholder({1, c, h, w}, f32, "X");
  te::Tensor y = is_max ? te::ops::max_pool_nd(x, a) : te::ops::avg_pool_nd(x, a);
  Op op{is_max ? "max_pool 3x3/2" : "avg_pool 3x3/2", {x, y}, anchored({y}, y, schedule::schedule_pool_gpu),
        {ref::random_floats(c * h * w, 4, -4.f, 4.f)}, {}, {}};
  op.want = ref::pool2d_nchw(op.inputs[0], 1, c, h, w, 3, 2, 1, is_max);
  op.scale = abs_of(op.want);
  return op;
}

// 3x3 depthwise over [1, c, h, w], padded by 1; with a bias + relu tail, or the conv alone.
Op depthwise_op(int c, int h, int w, int stride, bool tail) {
  te::ops::ConvNdAttrs a;
  a.strides = {stride, stride};
  a.padding = {1, 1, 1, 1};
  a.dilation = {1, 1};
  a.groups = c;
  te::Tensor x = te::placeholder({1, c, h, w}, f32, "X");
  te::Tensor wt = te::placeholder({c, 1, 3, 3}, f32, "W");
  te::Tensor bias = te::placeholder({c}, f32, "bias");
  te::Tensor conv = te::ops::depthwise_conv_nd(x, wt, a, 1, "dwconv2d");
  te::Tensor y = tail ? te::compute(conv.shape(), [&](const std::vector<ir::Var>& v) {
    return ir::max(conv(std::vector<ir::Expr>(v.begin(), v.end())) + bias(v[1]), ir::make_zero(f32));
  }, "relu") : conv;
  ref::Conv2dShape shape{1, c, h, w, c, 3, 3};
  shape.stride = stride, shape.pad = 1, shape.groups = c;
  Op op{"dwconv 3x3/" + std::to_string(stride) + (tail ? " + bias + relu" : ""), {x, wt, bias, y},
        anchored({y}, conv, schedule::schedule_depthwise_gpu),
        {ref::random_floats(c * h * w, 5, -4.f, 4.f), ref::random_floats(c * 9, 6, -4.f, 4.f),
         ref::random_floats(c, 7, -4.f, 4.f)}, {}, {}};
  const size_t plane = size_t(shape.out_h()) * shape.out_w();
  op.want = ref::conv2d_nchw(op.inputs[0], op.inputs[1], shape);
  op.scale = ref::conv2d_nchw(abs_of(op.inputs[0]), abs_of(op.inputs[1]), shape);
  if (tail) op.want = bias_relu(op.want, op.inputs[2], plane);
  return op;
}

// relu(X W^T + bias) over [33, 17] x [65, 17]: no tile divides the sizes.
Op dense_op() {
  const int m = 33, n = 65, k = 17;
  te::Tensor x = te::placeholder({m, k}, f32, "X");
  te::Tensor w = te::placeholder({n, k}, f32, "W");
  te::Tensor bias = te::placeholder({n}, f32, "bias");
  te::Tensor prod = te::ops::dense_plain(x, w);
  te::Tensor y = te::compute(
      {m, n}, [&](ir::Var i, ir::Var j) { return ir::max(prod(i, j) + bias(j), ir::make_zero(f32)); }, "relu");
  Op op{"dense 33x65x17 + bias + relu", {x, w, bias, y}, anchored({y}, prod, schedule::schedule_matmul_gpu),
        {ref::random_floats(m * k, 8, -4.f, 4.f), ref::random_floats(n * k, 9, -4.f, 4.f),
         ref::random_floats(n, 10, -4.f, 4.f)}, {}, {}};
  // ref::matmul multiplies [m, k] x [k, n]: the weight transposed.
  std::vector<float> wt(size_t(k) * n);
  for (int j = 0; j < n; ++j)
    for (int q = 0; q < k; ++q) wt[q * n + j] = op.inputs[1][j * k + q];
  op.want = ref::matmul(op.inputs[0], wt, m, n, k);
  op.scale = ref::matmul(abs_of(op.inputs[0]), abs_of(wt), m, n, k);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) op.want[i * n + j] = std::max(op.want[i * n + j] + op.inputs[2][j], 0.f);
  return op;
}

// A 3x3 conv padded by 1 of [1, 8, 9, 11] to 12 channels, as an implicit GEMM.
Op conv_gemm_op() {
  const int c = 8, h = 9, w = 11, oc = 12;
  te::ops::ConvNdAttrs a;
  a.strides = {1, 1};
  a.padding = {1, 1, 1, 1};
  a.dilation = {1, 1};
  te::Tensor x = te::placeholder({1, c, h, w}, f32, "X");
  te::Tensor wt = te::placeholder({oc, c, 3, 3}, f32, "W");
  te::Tensor y = te::ops::conv2d_gemm(x, wt, a);
  ref::Conv2dShape shape{1, c, h, w, oc, 3, 3};
  shape.pad = 1;
  Op op{"conv2d 3x3 8->12 as GEMM", {x, wt, y}, anchored({y}, y, schedule::schedule_conv_gemm_gpu),
        {ref::random_floats(c * h * w, 11, -4.f, 4.f), ref::random_floats(oc * c * 9, 12, -4.f, 4.f)}, {}, {}};
  op.want = ref::conv2d_nchw(op.inputs[0], op.inputs[1], shape);
  op.scale = ref::conv2d_nchw(abs_of(op.inputs[0]), abs_of(op.inputs[1]), shape);
  return op;
}

// relu(conv + bias[oc]) of a 3x3 conv of [1, 16, 9, 9] in 4 groups to 16 channels, stride 2,
// padded by 1 (output 5 x 5), directly on NCHW.
Op conv_direct_grouped_op() {
  const int c = 16, h = 9, w = 9, oc = 16, groups = 4;
  te::ops::ConvNdAttrs a;
  a.strides = {2, 2};
  a.padding = {1, 1, 1, 1};
  a.dilation = {1, 1};
  a.groups = groups;
  te::Tensor x = te::placeholder({1, c, h, w}, f32, "X");
  te::Tensor wt = te::placeholder({oc, c / groups, 3, 3}, f32, "W");
  te::Tensor bias = te::placeholder({oc}, f32, "bias");
  te::Tensor conv = te::ops::conv_nd_plain(x, wt, a, "conv2d");
  te::Tensor y = te::compute(conv.shape(), [&](const std::vector<ir::Var>& v) {
    return ir::max(conv(std::vector<ir::Expr>(v.begin(), v.end())) + bias(v[1]), ir::make_zero(f32));
  }, "relu");
  ref::Conv2dShape shape{1, c, h, w, oc, 3, 3};
  shape.stride = 2, shape.pad = 1, shape.groups = groups;
  Op op{"conv2d 3x3/2 16->16 in 4 groups + bias + relu", {x, wt, bias, y},
        anchored({y}, conv, schedule::schedule_conv_direct_gpu),
        {ref::random_floats(c * h * w, 13, -4.f, 4.f), ref::random_floats(oc * (c / groups) * 9, 14, -4.f, 4.f),
         ref::random_floats(oc, 15, -4.f, 4.f)}, {}, {}};
  op.want = bias_relu(ref::conv2d_nchw(op.inputs[0], op.inputs[1], shape), op.inputs[2],
                      size_t(shape.out_h()) * shape.out_w());
  op.scale = ref::conv2d_nchw(abs_of(op.inputs[0]), abs_of(op.inputs[1]), shape);
  return op;
}

// A float16 3x3 conv of one group, dilation 2, padded by 2, of [1, 6, 10, 7] to 12 channels:
// float32 data and weights cast to float16 (the casts computed inside the shared-memory copies),
// the sum rounded to float16 and read back as float32. The inputs are multiples of 1/2 in
// [-2, 2], so every sum is a multiple of 1/4 below 2048: exact in float16, as in the reference.
Op conv_direct_f16_op() {
  const int c = 6, h = 10, w = 7, oc = 12;
  const ir::DataType f16 = ir::DataType::f16();
  te::ops::ConvNdAttrs a;
  a.strides = {1, 1};
  a.padding = {2, 2, 2, 2};
  a.dilation = {2, 2};
  te::Tensor x = te::placeholder({1, c, h, w}, f32, "X");
  te::Tensor wt = te::placeholder({oc, c, 3, 3}, f32, "W");
  auto to_f16 = [&](const te::Tensor& t, const std::string& name) {
    return te::compute(t.shape(), [&](const std::vector<ir::Var>& v) {
      return ir::cast(f16, t(std::vector<ir::Expr>(v.begin(), v.end())));
    }, name);
  };
  te::Tensor conv = te::ops::conv_nd_plain(to_f16(x, "X.f16"), to_f16(wt, "W.f16"), a, "conv2d");
  te::Tensor y = te::compute(conv.shape(), [&](const std::vector<ir::Var>& v) {
    return ir::cast(f32, conv(std::vector<ir::Expr>(v.begin(), v.end())));
  }, "to_f32");
  auto halves = [](std::vector<float> v) {
    for (float& e : v) e = std::round(e * 2) / 2;
    return v;
  };
  ref::Conv2dShape shape{1, c, h, w, oc, 3, 3};
  shape.pad = 2, shape.dilation = 2;
  Op op{"float16 conv2d 3x3 dilated 2, 6->12", {x, wt, y}, anchored({y}, conv, schedule::schedule_conv_direct_gpu),
        {halves(ref::random_floats(c * h * w, 16, -2.f, 2.f)), halves(ref::random_floats(oc * c * 9, 17, -2.f, 2.f))},
        {}, {}};
  op.want = ref::conv2d_nchw(op.inputs[0], op.inputs[1], shape);
  op.scale = op.want;
  return op;
}

std::vector<Op> template_ops(const std::string& tmpl) {
  if (tmpl == "gpu_generic") return {softmax_op()};
  if (tmpl == "gpu_injective") return {add_relu_op(129), add_relu_op(128)};
  if (tmpl == "gpu_pool") return {pool_op(true), pool_op(false)};
  if (tmpl == "gpu_depthwise") return {depthwise_op(4, 13, 19, 1, true), depthwise_op(3, 17, 15, 2, false)};
  if (tmpl == "gpu_matmul") return {dense_op()};
  if (tmpl == "gpu_conv_gemm") return {conv_gemm_op()};
  if (tmpl == "gpu_conv_direct") return {conv_direct_grouped_op(), conv_direct_f16_op()};
  FAIL("no representative op for template " << tmpl);
  return {};
}

// The corners of the space the op's schedule defines on `t`: candidate indices per knob, each
// distinct point once, the default first.
std::vector<std::map<std::string, size_t>> corners(const Op& op, const Target& t) {
  schedule::ConfigSpace space;
  schedule::Config record(&space);
  op.schedule(t, record);
  std::vector<std::map<std::string, size_t>> points(3);
  for (const schedule::Knob& k : space.knobs()) {
    points[0][k.name] = k.default_index;
    points[1][k.name] = 0;
    points[2][k.name] = k.candidates.size() - 1;
  }
  for (const schedule::Knob& k : space.knobs())
    for (size_t end : {size_t{0}, k.candidates.size() - 1}) {
      points.push_back(points[0]);
      points.back()[k.name] = end;
    }
  std::vector<std::map<std::string, size_t>> distinct;
  std::set<std::map<std::string, size_t>> seen;
  for (const auto& p : points)
    if (seen.insert(p).second) distinct.push_back(p);
  return distinct;
}

// The op's corners lowered for `t`, each a function of its own ("corner<i>"); those refused as
// exceeding the target's limits (by the template, or by verify_gpu) only counted.
struct Corners {
  std::vector<ir::PrimFunc> funcs;
  std::vector<std::string> configs;  // Config::str() of each function
  int refused = 0;
};

Corners lower_corners(const Op& op, const Target& t) {
  Corners c;
  for (const auto& point : corners(op, t)) {
    schedule::Config cfg = schedule::Config::with_choices(point);
    try {
      schedule::Schedule s = op.schedule(t, cfg);
      ir::PrimFunc f = kiln::loop_ir(s, op.args, "corner" + std::to_string(c.funcs.size()));
      ir::verify_gpu(f, codegen::gpu_limits(t));
      c.funcs.push_back(f);
      c.configs.push_back(cfg.str());
    } catch (const Error& e) {
      const std::string what = e.what();
      const bool limits = what.find("exceeds the target's") != std::string::npos ||
                          what.find("more than the target's") != std::string::npos;
      if (!limits) throw;
      ++c.refused;
    }
  }
  return c;
}

// Runs every corner of `op` on `dev`: per corner, the worst |out - want| / (1e-5 (1 + scale))
// and the corner's config.
std::vector<std::pair<double, std::string>> run_corners(runtime::DeviceAPI& dev, const Op& op) {
  Corners c = lower_corners(op, opencl_target());
  codegen::GpuModule m = kiln::build_gpu(c.funcs, opencl_target());
  std::vector<std::pair<double, std::string>> worst;
  for (size_t i = 0; i < c.funcs.size(); ++i) {
    std::vector<NDArray> args;
    for (size_t a = 0; a < op.inputs.size(); ++a)
      args.push_back(NDArray::from_vector<float>(op.args[a].shape(), runtime::dtype_f32(), op.inputs[a]));
    const std::vector<float> nans(op.want.size(), std::numeric_limits<float>::quiet_NaN());
    args.push_back(NDArray::from_vector<float>(op.args.back().shape(), runtime::dtype_f32(), nans));
    test::run_on_device(dev, m, args, i);
    const float* out = args.back().data<float>();
    double w = 0;
    for (size_t e = 0; e < op.want.size(); ++e) {
      const double r = std::abs(double(out[e]) - op.want[e]) / (1e-5 * (1 + std::abs(op.scale[e])));
      if (!(r <= w)) w = std::isnan(r) ? std::numeric_limits<double>::infinity() : r;
    }
    worst.emplace_back(w, c.configs[i]);
  }
  return worst;
}

// The child's side: the template named by the environment, its results into the named file:
// "skip <why>", else a line "<ratio> <op>: <config>" per corner run, and "error <what>" if
// something threw.
constexpr const char* kChildTag = "[gpu_templates_child]";
constexpr const char* kTemplateVar = "KILN_GPU_TEMPLATE";
constexpr const char* kResultsVar = "KILN_GPU_TEMPLATE_RESULTS";

// The parent's side: runs the child on `tmpl` and returns the lines it wrote. A child that dies
// or hangs (2 minutes) fails the test case.
std::vector<std::string> run_child(const std::string& tmpl) {
  char results[] = "/tmp/kiln_gpu_templates_XXXXXX";
  const int fd = mkstemp(results);
  REQUIRE(fd >= 0);
  close(fd);
  // The environment, built before fork (only exec-safe calls after it): the template, the
  // results file, and a PoCL cache folder of this test case's own (opencl_device adds the
  // child's test name to it; CTest runs the six test cases as concurrent processes).
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string v = *e;
    if (v.rfind(std::string(kTemplateVar) + "=", 0) && v.rfind(std::string(kResultsVar) + "=", 0) &&
        v.rfind("POCL_CACHE_DIR=", 0))
      env.push_back(v);
  }
  env.push_back(std::string(kTemplateVar) + "=" + tmpl);
  env.push_back(std::string(kResultsVar) + "=" + results);
  if (const char* base = std::getenv("POCL_CACHE_DIR"); base && *base)
    env.push_back(std::string("POCL_CACHE_DIR=") + base + "/" + tmpl);
  std::vector<char*> envp;
  for (std::string& v : env) envp.push_back(v.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe", tag = kChildTag;
  char* argv[] = {exe.data(), tag.data(), nullptr};
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);  // Catch's report of the child: not ours to print
    if (null >= 0) dup2(null, STDOUT_FILENO);
    alarm(120);
    execve(exe.c_str(), argv, envp.data());
    _exit(127);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  std::ifstream in(results);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  unlink(results);
  INFO("child for " << tmpl << ": "
                    << (WIFSIGNALED(status) ? std::string("killed by ") + strsignal(WTERMSIG(status))
                                            : "exit status " + std::to_string(WEXITSTATUS(status))));
  REQUIRE(!lines.empty());
  return lines;
}

// Both checks of one template; `refused` is how many corners of all its ops it must refuse.
void check_template(const std::string& tmpl, int refused) {
  const std::vector<Op> ops = template_ops(tmpl);
  int refused_here = 0;
  for (const Op& op : ops) {
    Corners c = lower_corners(op, cuda_target());
    refused_here += c.refused;
    if (!codegen::cuda_codegen_available()) continue;
    INFO(tmpl << ": " << op.name << ", " << c.funcs.size() << " corners");
    codegen::GpuModule m = kiln::build_gpu(c.funcs, cuda_target());
    REQUIRE(m.images.size() == 3);  // sm_80 and sm_90 cubins, compute_90 PTX
    CHECK(m.images[0].sm == 80);
    CHECK(m.images[1].sm == 90);
  }
  if (!codegen::cuda_codegen_available())
    WARN("skipped the NVRTC half: kiln was built without the CUDA toolkit's NVRTC");
  CHECK(refused_here == refused);

  const std::vector<std::string> lines = run_child(tmpl);
  if (lines[0].rfind("skip ", 0) == 0) {
    WARN("skipped the OpenCL half: " << lines[0].substr(5));
    return;
  }
  size_t run = 0;
  for (const std::string& line : lines) {
    INFO(tmpl << ": " << line);
    REQUIRE(line.rfind("error ", 0) != 0);
    // "<ratio> <op>: <config>": the worst error in units of the tolerance 1e-5 (1 + scale)
    CHECK(std::stod(line) <= 1.0);
    ++run;
  }
  CHECK(run >= ops.size());
}

}  // namespace

TEST_CASE("gpu templates child process: one template's corners on the OpenCL device", "[.]" "[gpu_templates_child]") {
  const char* tmpl = std::getenv(kTemplateVar);
  const char* results = std::getenv(kResultsVar);
  if (!tmpl || !results) return;  // run by hand: nothing asked
  std::ofstream out(results);
  std::string why;
  runtime::DeviceAPI* dev = test::opencl_device(&why);
  if (!dev) {
    out << "skip no OpenCL device: " << why << "\n";
    return;
  }
  try {
    for (const Op& op : template_ops(tmpl))
      for (const auto& [worst, config] : run_corners(*dev, op))
        out << worst << " " << op.name << ": " << config << "\n";
  } catch (const std::exception& e) {
    std::string what = e.what();
    for (char& ch : what)
      if (ch == '\n') ch = ' ';
    out << "error " << what << "\n";
  }
}

TEST_CASE("gpu templates: gpu_generic over the corners of its knob space", "[gpu][gpu_templates][opencl]") {
  check_template("gpu_generic", 0);
}

TEST_CASE("gpu templates: gpu_injective over the corners of its knob space", "[gpu][gpu_templates][opencl]") {
  check_template("gpu_injective", 0);
  // The default: vector accesses where the columns divide by the vector (B's too), else scalar
  // ones. 4736 elements leave too few blocks for 4 floats a thread on 4 multiprocessors: float2.
  for (int cols : {128, 129}) {
    const Op op = add_relu_op(cols);
    schedule::Config cfg;
    codegen::GpuBuildOptions print_only;
    print_only.compile = false;
    const std::string cuda =
        kiln::build_gpu({kiln::loop_ir(op.schedule(cuda_target(), cfg), op.args, "relu")}, cuda_target(),
                           print_only)
            .source;
    INFO(cfg.str() << "\n" << cuda);
    if (cols == 128)
      CHECK_THAT(cuda, Catch::Contains("*reinterpret_cast<const float2*>(A + ") &&
                           Catch::Contains("*reinterpret_cast<const float2*>(B + ") &&
                           Catch::Contains("*reinterpret_cast<float2*>(relu + "));
    else
      CHECK_THAT(cuda, !Catch::Contains("reinterpret_cast"));
  }
}

TEST_CASE("gpu templates: gpu_pool over the corners of its knob space", "[gpu][gpu_templates][opencl]") {
  check_template("gpu_pool", 0);
}

TEST_CASE("gpu templates: gpu_depthwise over the corners of its knob space", "[gpu][gpu_templates][opencl]") {
  check_template("gpu_depthwise", 0);
}

TEST_CASE("gpu templates: gpu_matmul over the corners of its knob space", "[gpu][gpu_templates][opencl]") {
  // All knobs last: 32 x 32 threads of 8 x 8 outputs staging one K slice of 32 (K is 17), 72 KiB
  // of shared memory: past the static 48 KiB, so dynamic shared memory on sm_90 (build_gpu); the
  // OpenCL target's 48 KiB leaves it out of the PoCL half.
  check_template("gpu_matmul", 0);
}

TEST_CASE("gpu templates: gpu_conv_gemm over the corners of its knob space", "[gpu][gpu_templates][opencl]") {
  check_template("gpu_conv_gemm", 1);
}

TEST_CASE("gpu templates: gpu_conv_direct over the corners of its knob space", "[gpu][gpu_templates][opencl]") {
  check_template("gpu_conv_direct", 0);
}

TEST_CASE("gpu templates refuse what they do not take and say why", "[gpu][gpu_templates]") {
  const Target t = opencl_target();
  te::Tensor x = te::placeholder({4, 100}, f32, "X");
  te::Tensor y = te::ops::softmax(x, 1);
  schedule::Config cfg;
  schedule::Schedule s = schedule::create({y});
  CHECK_THROWS_WITH(schedule::schedule_injective_gpu(s, {y}, t, cfg),
                    Catch::Contains("injective_gpu: stage") && Catch::Contains("is a reduction"));
  te::Tensor r = te::compute({4, 100}, [&](ir::Var i, ir::Var j) { return x(i, j) * x(i, j); }, "square");
  CHECK_THROWS_WITH(schedule::schedule_anchor_gpu({r}, r, schedule::schedule_pool_gpu, t, cfg),
                    Catch::Contains("pool_gpu: 'square' is not a windowed pool"));
  CHECK_THROWS_WITH(schedule::schedule_anchor_gpu({r}, r, schedule::schedule_depthwise_gpu, t, cfg),
                    Catch::Contains("depthwise_gpu: 'square' is not a 2-d depthwise convolution"));
  // The default 8 x 32 tile of a 3x3 window reads 10 x 34 floats, clipped to the 15 x 21 padded
  // plane as lowering clips it: 10 x 21 floats, 840 bytes.
  const Op dw = depthwise_op(4, 13, 19, 1, true);
  CHECK_THROWS_WITH(dw.schedule(Target::parse("opencl -max-shared=512"), cfg),
                    Catch::Contains("tile staging 840 bytes of input exceeds the target's 512 shared bytes"));
  CHECK_THROWS_WITH(schedule::schedule_anchor_gpu({r}, r, schedule::schedule_conv_direct_gpu, t, cfg),
                    Catch::Contains("conv_direct_gpu: 'square' is not a 2-d convolution"));
  // A 4 x 32 x 32 tile of the grouped conv (stride 2) reads the whole padded 11 x 11 plane of
  // each of its group's 4 channels, and 4 x 4 x 3 x 3 weights: 2512 bytes.
  schedule::Config big = schedule::Config::with_choices({{"tile_oc", 2}, {"tile_h", 5}, {"tile_w", 5}, {"tile_rc", 5}});
  CHECK_THROWS_WITH(conv_direct_grouped_op().schedule(Target::parse("opencl -max-shared=1024"), big),
                    Catch::Contains("conv_direct_gpu: a 4 x 32 x 32 tile staging 2512 bytes per slice of 32 input "
                                    "channels exceeds the target's 1024 shared bytes"));
}
