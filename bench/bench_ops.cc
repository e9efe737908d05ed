// The nn ops' default CPU schedules on the layers that cost resnet18 (and a few of mobilenet_v2,
// squeezenet1_1 and bert_mini), batch 1. Each op is a one-call graph with a constant weight,
// lowered exactly as the graph compiler does (fuse_model, the target's strategy and packed
// weight, group_to_te, schedule_group), compiled, and timed: median of repeated runs, each at
// least ~0.1 s of calls.
//
//   bench_ops [--target T] [--threads T] [--filter SUBSTRING] [--repeat R] [--knob NAME=INDEX]
//             [--layout blocked|nchw]
//
// Convolutions run in the layout given (default blocked: NCHW[x]c, as in a model's blocked
// regions; Winograd's 3x3 convs stay NCHW either way); the layer's own kernel is timed, not
// the layout transforms around it.
//
// Prints one line per layer: time, GFLOPS, percentage of the machine's fp32 peak (docs/performance.md, "Machines":
// about 320 GFLOPS on 2 threads, 210 on one), GFLOPS per process CPU-second (less sensitive to a
// loaded machine), and for convolutions and dense what repacking the weight on every call would
// add (the timed kernels take it packed at compile time, lower::prepack_weights).
// The machine is shared: the load average is printed first; compare only figures of one run.
#include <algorithm>
#include <any>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kiln/pipeline.h"
#include "kiln/compiler.h"
#include "kiln/runtime/kernel.h"
#include "kiln/runtime/ndarray.h"
#include "schedule/templates/anchor_cpu.h"
#include "kiln/te/ops/nn_conv.h"

using namespace kiln;

namespace {

int g_repeat = 5;

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct Timing {
  double wall = 0;  // median seconds per call
  double cpu = 0;   // median process CPU seconds per call (all threads, spinning included)
};

Timing median_per_call(const std::function<void()>& fn) {
  fn();
  std::vector<double> wall, cpu;
  for (int rep = 0; rep < g_repeat; ++rep) {
    int calls = 0;
    auto t0 = std::chrono::steady_clock::now();
    double c0 = process_cpu_seconds();
    double elapsed = 0;
    do {
      fn();
      ++calls;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } while (elapsed < 0.1);
    wall.push_back(elapsed / calls);
    cpu.push_back((process_cpu_seconds() - c0) / calls);
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

struct Layer {
  std::string name, op;
  std::vector<relay::Shape> inputs;
  relay::Attrs attrs;
  double flops;
};

relay::Attrs conv(int64_t s, int64_t p, int64_t groups = 1) {
  relay::Attrs a;
  a.set_ints("strides", {s, s}).set_ints("padding", {p, p, p, p}).set_ints("dilation", {1, 1}).set_int("groups", groups);
  return a;
}

Layer conv_layer(const std::string& name, int64_t c, int64_t hw, int64_t oc, int64_t k, int64_t s, int64_t p,
                 int64_t groups = 1) {
  int64_t o = (hw + 2 * p - k) / s + 1;
  double flops = 2.0 * oc * o * o * (c / groups) * k * k;
  return {name, "nn.conv2d", {{1, c, hw, hw}, {oc, c / groups, k, k}}, conv(s, p, groups), flops};
}

std::vector<Layer> layers() {
  std::vector<Layer> l = {
      conv_layer("resnet18 stem 7x7 s2 3->64 @224", 3, 224, 64, 7, 2, 3),
      conv_layer("resnet18 3x3 64->64 @56", 64, 56, 64, 3, 1, 1),
      conv_layer("resnet18 3x3 s2 64->128 @56", 64, 56, 128, 3, 2, 1),
      conv_layer("resnet18 1x1 s2 64->128 @56", 64, 56, 128, 1, 2, 0),
      conv_layer("resnet18 3x3 128->128 @28", 128, 28, 128, 3, 1, 1),
      conv_layer("resnet18 3x3 s2 128->256 @28", 128, 28, 256, 3, 2, 1),
      conv_layer("resnet18 1x1 s2 128->256 @28", 128, 28, 256, 1, 2, 0),
      conv_layer("resnet18 3x3 256->256 @14", 256, 14, 256, 3, 1, 1),
      conv_layer("resnet18 3x3 s2 256->512 @14", 256, 14, 512, 3, 2, 1),
      conv_layer("resnet18 1x1 s2 256->512 @14", 256, 14, 512, 1, 2, 0),
      conv_layer("resnet18 3x3 512->512 @7", 512, 7, 512, 3, 1, 1),
      conv_layer("mobilenet_v2 1x1 32->192 @56", 32, 56, 192, 1, 1, 0),
      conv_layer("mobilenet_v2 1x1 16->96 @112", 16, 112, 96, 1, 1, 0),
      conv_layer("mobilenet_v2 dw 3x3 144 @56", 144, 56, 144, 3, 1, 1, 144),
      conv_layer("mobilenet_v2 dw 3x3 s2 96 @112", 96, 112, 96, 3, 2, 1, 96),
      conv_layer("mobilenet_v2 dw 3x3 192 @28", 192, 28, 192, 3, 1, 1, 192),
      conv_layer("mobilenet_v2 dw 3x3 960 @7", 960, 7, 960, 3, 1, 1, 960),
      conv_layer("efficientnet_b0 dw 5x5 240 @28", 240, 28, 240, 5, 1, 2, 240),
      conv_layer("efficientnet_b0 dw 5x5 672 @14", 672, 14, 672, 5, 1, 2, 672),
      conv_layer("convnext_tiny dw 7x7 96 @56", 96, 56, 96, 7, 1, 3, 96),
      conv_layer("squeezenet 1x1 512->1000 @13", 512, 13, 1000, 1, 1, 0),
      conv_layer("squeezenet 3x3 64->256 @13", 64, 13, 256, 3, 1, 1),
  };
  l.push_back({"resnet18 fc dense 1x512->1000", "nn.dense", {{1, 512}, {1000, 512}}, {}, 2.0 * 512 * 1000});
  l.push_back({"bert_mini dense 128x256->1024", "nn.dense", {{128, 256}, {1024, 256}}, {}, 2.0 * 128 * 256 * 1024});
  l.push_back({"bert_mini matmul 1x128x256 x 256x256", "nn.matmul", {{1, 128, 256}, {256, 256}}, {},
               2.0 * 128 * 256 * 256});
  for (int64_t n : {256, 512, 1024})
    l.push_back({"sgemm " + std::to_string(n) + " (runtime A and B)", "nn.matmul", {{n, n}, {n, n}}, {}, 2.0 * n * n * n});
  l.push_back({"bert_mini attention 1x4x128x64 x 1x4x64x128", "nn.matmul", {{1, 4, 128, 64}, {1, 4, 64, 128}}, {},
               2.0 * 4 * 128 * 64 * 128});
  relay::Attrs mp;
  mp.set_ints("kernel", {3, 3}).set_ints("strides", {2, 2}).set_ints("padding", {1, 1, 1, 1});
  mp.set_ints("dilation", {1, 1}).set_int("ceil_mode", 0);
  l.push_back({"resnet18 max_pool 3x3 s2 @112", "nn.max_pool2d", {{1, 64, 112, 112}}, mp, 0});
  relay::Attrs mc;  // squeezenet1_1's: no padding, ceil mode
  mc.set_ints("kernel", {3, 3}).set_ints("strides", {2, 2}).set_ints("padding", {0, 0, 0, 0});
  mc.set_ints("dilation", {1, 1}).set_int("ceil_mode", 1);
  l.push_back({"squeezenet max_pool 3x3 s2 64@111", "nn.max_pool2d", {{1, 64, 111, 111}}, mc, 0});
  l.push_back({"squeezenet max_pool 3x3 s2 128@55", "nn.max_pool2d", {{1, 128, 55, 55}}, mc, 0});
  l.push_back({"squeezenet max_pool 3x3 s2 256@27", "nn.max_pool2d", {{1, 256, 27, 27}}, mc, 0});
  l.push_back({"bert_mini softmax 1x4x128x128", "nn.softmax", {{1, 4, 128, 128}}, relay::Attrs().set_int("axis", 3), 0});
  return l;
}

runtime::NDArray random_array(const std::vector<int64_t>& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  runtime::NDArray a = runtime::NDArray::empty(shape, runtime::dtype_f32());
  float* p = a.data<float>();
  for (int64_t i = 0; i < a.numel(); ++i) p[i] = d(rng);
  return a;
}

// Times `kernel`, whose parameters are `args` (inputs then outputs), on random data.
Timing time_kernel(const std::vector<te::Tensor>& args, const ir::PrimFunc& kernel, const Target& target) {
  codegen::Module mod = codegen::build({kernel}, target);
  kiln_kernel_fn fn = mod.get_function(kernel.name);
  std::vector<runtime::NDArray> arrays;
  for (size_t i = 0; i < args.size(); ++i) arrays.push_back(random_array(args[i].shape(), 7 + i));
  std::vector<void*> ptrs;
  for (auto& a : arrays) ptrs.push_back(a.raw_data());
  return median_per_call([&] { fn(ptrs.data(), static_cast<int32_t>(ptrs.size())); });
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  Target target = Target::host();
  std::string filter;
  CompileOptions::Layout layout = CompileOptions::Layout::kBlocked;
  std::map<std::string, size_t> knobs;  // --knob name=candidate_index: try a non-default config
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--knob") && i + 1 < argc) {
      std::string kv = argv[++i];
      size_t eq = kv.find('=');
      if (eq != std::string::npos) knobs[kv.substr(0, eq)] = std::stoul(kv.substr(eq + 1));
      continue;
    }
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
    else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) g_repeat = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--target") && i + 1 < argc) target = Target::parse(argv[++i]);
    else if (!std::strcmp(argv[i], "--layout") && i + 1 < argc) layout = parse_layout(argv[++i]);
  }
  kiln_set_num_threads(threads);
  double peak = threads >= 2 ? 320.0 : 210.0;
  std::printf("target: %s\nthreads: %d, fp32 peak ~%.0f GFLOPS (DESIGN.md's Xeon), load average at start: %s\n",
              target.summary().c_str(), threads, peak, load_average().c_str());
  double total_conv = 0;
  for (const Layer& layer : layers()) {
    if (!filter.empty() && layer.name.find(filter) == std::string::npos) continue;
    // The call as a model holds it: data an input, the weight (second input of a conv or dense) a
    // constant, which the strategy packs at compile time.
    std::vector<relay::Expr> args, params;
    for (size_t i = 0; i < layer.inputs.size(); ++i) {
      relay::Type t = relay::tensor_type(ir::DataType::f32(), layer.inputs[i]);
      bool weight = i == 1 && (layer.op == "nn.conv2d" || layer.op == "nn.dense");
      args.push_back(weight ? relay::make_constant(relay::HostTensor::zeros(ir::DataType::f32(), layer.inputs[i]))
                            : relay::make_var("in" + std::to_string(i), t));
      if (!weight) params.push_back(args.back());
    }
    CompileOptions copts;
    copts.target = target;
    copts.layout = layout;
    FusedProgram prog = fuse_model(relay::Module::make(params, {relay::make_call(layer.op, args, layer.attrs)}, {"y"}), copts);
    const relay::FusedGroup* found = nullptr;
    for (const relay::FusedGroup& g : prog.fused.groups)
      if (!found && g.label() != "layout_transform") found = &g;
    const relay::FusedGroup& group = *found;
    schedule::Config cfg = knobs.empty() ? schedule::Config() : schedule::Config::with_choices(knobs);
    GroupKnobs chosen;
    chosen.config = &cfg;
    LoweredGroup lowered = lower_group(group, "k", target, prog.strategy_options, prog.prepacked, chosen);
    const lower::Strategy& strategy = lowered.strategy;
    Timing tm = time_kernel(lowered.program.args(), lowered.kernel, target);
    double t = tm.wall;
    std::printf("%-44s %8.3f ms", (layer.name + (group.label().find("NCHWc") != std::string::npos ? " [c]" : "")).c_str(), t * 1e3);
    if (layer.flops > 0) {
      std::printf("  %6.1f GFLOPS %4.0f%% of peak", layer.flops / t * 1e-9, layer.flops / t * 1e-9 / peak * 100);
      // Per CPU-second of the process: less sensitive to a loaded machine (a lower bound with
      // several threads, whose waits count).
      std::printf("  (%5.1f GFLOPS/cpu-s)", layer.flops / tm.cpu * 1e-9);
    }
    // The weight repacking alone (the unpacked form's "<name>.wpack" stage), as its own kernel.
    if (prog.prepacked.count(group.anchor.get()) && strategy.lower) {
      const auto* call = group.anchor.as<relay::CallNode>();
      std::vector<te::Tensor> raw;
      for (size_t i = 0; i < call->args.size(); ++i)
        raw.push_back(te::placeholder(layer.inputs[i], ir::DataType::f32(), "in" + std::to_string(i)));
      te::Tensor pack;
      std::vector<te::Operation> todo = {strategy.lower(raw, call->attrs, call->type)[0].op()};
      while (!todo.empty() && !pack.defined()) {
        te::Operation op = todo.back();
        todo.pop_back();
        const std::string& n = op.name();
        if (n.size() > 6 && n.compare(n.size() - 6, 6, te::ops::kPackSuffix) == 0) pack = op.output(0);
        for (const te::Tensor& in : op.input_tensors()) todo.push_back(in.op());
      }
      if (pack.defined()) {
        schedule::Schedule ps = schedule::create({pack});
        schedule::schedule_loops_cpu(ps, pack, target.lanes(32));
        double tp = time_kernel({raw[1], pack}, loop_ir(ps, {raw[1], pack}, "k", target), target).wall;
        std::printf("  (+%.3f ms if repacked per call)", tp * 1e3);
      }
    }
    std::printf("   [%s]\n", cfg.str().c_str());
    if (layer.op == "nn.conv2d" && layer.name.rfind("resnet18", 0) == 0) total_conv += t;
  }
  if (filter.empty()) std::printf("resnet18 distinct conv layers, one of each: %.3f ms\n", total_conv * 1e3);
  std::printf("load average at end: %s\n", load_average().c_str());
  return 0;
}
