// kiln's compiler in one table (pipeline.h): the stages below run top to bottom, each on its
// unit, gated by the target and the options. compile(), fuse_model(), lower_group(),
// loop_ir() and build_gpu() run ranges of it; nothing else sequences passes.
#include "kiln/pipeline.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>

#include "kiln/compiler.h"
#include "kiln/ir/printer.h"
#include "ir/shared_storage.h"
#include "kiln/ir/transforms.h"
#include "kiln/ir/verify.h"
#include "lower/graph_plan.h"
#include "kiln/lower/op_lowering.h"
#include "kiln/relay/printer.h"
#include "kiln/relay/transforms.h"
#include "kiln/schedule/loop_nest.h"
#include "kiln/support/error.h"
#include "kiln/te/count_flops.h"
#include "support/grouped_names.h"

namespace kiln {
namespace {

// ---- what the stages transform --------------------------------------------------------------

// The graph half: the module through the graph passes, then its fused groups, their packed
// weights and the memory plan.
struct GraphWork {
  const CompileOptions& options;
  relay::Module module;
  FusedProgram program;
  relay::MemoryPlan memory;
  bool changed = true;  // false: the pass left the module as it was (no dump, no on_graph)
};

// One group (or, run from loop_ir / build_gpu, one function alone) through the group and
// loop stages.
struct GroupWork {
  const relay::FusedGroup* group = nullptr;
  std::string name;
  const lower::StrategyOptions* strategy_options = nullptr;
  const lower::PrepackedWeights* prepacked = nullptr;
  GroupKnobs knobs;
  schedule::Config defaults;
  std::vector<te::Tensor> args;  // the kernel's parameters (group_to_te's, or loop_ir's caller's)
  LoweredGroup lowered;
  std::optional<ir::DeviceProgram> device;  // split_host_device's
  std::vector<std::string>* notes = nullptr;
};

// One GPU kernel of a split function, with its launch record.
struct KernelWork {
  ir::PrimFunc kernel;
  ir::KernelLaunch& launch;
  const codegen::GpuBuildOptions& gpu;
  ir::SharedStorage planned;  // the shared buffers insert_thread_sync placed its barriers for
};

// Every kernel at once.
struct ModuleWork {
  const CompileOptions& options;
  const codegen::GpuBuildOptions& gpu;
  const relay::FusedModule* fused = nullptr;
  const relay::MemoryPlan* memory = nullptr;
  std::vector<double> flops;
  CompiledModel out;
};

using GraphPass = void (*)(GraphWork&, const Target&);
using GroupPass = void (*)(GroupWork&, const Target&);
using LoopPass = ir::PrimFunc (*)(const ir::PrimFunc&, const Target&, std::vector<std::string>* notes);
using KernelPass = void (*)(KernelWork&, const Target&);
using ModulePass = void (*)(ModuleWork&, const Target&);
using Gate = bool (*)(const Target&, const CompileOptions&);

struct Stage {
  PipelineStage info;
  Gate runs;
  // The pass, of the stage's unit: kGraph graph, kGroup group, kLoops loops (or group for a
  // pass that changes the unit: loop_nest, split_host_device), kKernel kernel, kModule module.
  GraphPass graph = nullptr;
  GroupPass group = nullptr;
  LoopPass loops = nullptr;
  KernelPass kernel = nullptr;
  ModulePass module = nullptr;
};

// The options of the entry points that take none (lower_group, loop_ir, build_gpu): only the
// target gates their stages.
const CompileOptions& no_options() {
  static const CompileOptions defaults;
  return defaults;
}

bool always(const Target&, const CompileOptions&) { return true; }
bool on_gpu(const Target& t, const CompileOptions&) { return t.is_gpu(); }
bool on_cpu(const Target& t, const CompileOptions&) { return !t.is_gpu(); }
bool on_cuda(const Target& t, const CompileOptions&) { return t.kind == TargetKind::kCUDA; }

// ---- graph passes ---------------------------------------------------------------------------

template <relay::Module (*Pass)(const relay::Module&)>
void graph_pass(GraphWork& w, const Target&) {
  w.module = Pass(w.module);
}

void combine_parallel(GraphWork& w, const Target&) {
  relay::CombineResult c = relay::combine_parallel(w.module, w.options.combine_branches);
  w.changed = c.groups > 0;
  if (!w.changed) return;
  w.module = c.module;
  w.program.notes.push_back("combine_parallel: " + std::to_string(c.groups) + " groups of parallel branches combined");
}

// 2-d convs in the blocked NCHW[x]c layout, x the target's float lanes, except those the
// target's strategy computes better in NCHW (Winograd); kept only where the layout transforms
// at the blocked regions' borders move at most 2.5x the elements the blocked convs write.
// Measured (1 thread, Zen 4; transformed / blocked elements: NCHW -> blocked ms, AVX-512 code
// and x86-64-v3 code): mobilenet_v2 (0.02) 9.0 -> 6.4, 11.0 -> 7.8; efficientnet_b0 (0.08)
// 14.7 -> 11.3, 21.6 -> 15.4; resnet50 (0.25) 74 -> 66, 94 -> 83; squeezenet1_1 (0.67) 6.7 ->
// 6.3, 8.1 -> 6.6; shufflenet_v2 (0.86) 4.2 -> 4.2, 4.9 -> 4.4; densenet121 (0.95) 58.5 ->
// 50.8, 74.8 -> 63.7; resnet18 (1.27) 24.7 -> 24.0; convnext_tiny (2.03) 94.3 -> 90.7. The one
// loss measured: densenet121 at 2.83 (before its batch norms after concatenations were folded
// and blocked) 59 -> 81.
void alter_layout(GraphWork& w, const Target& target) {
  const CompileOptions& o = w.options;
  relay::AlterLayoutOptions lo;
  lo.max_block = target.lanes(32);
  const lower::StrategyOptions so = o.strategy_options();
  lo.keep_plain = [&](const relay::CallNode& c) { return lower::conv_stays_nchw(c, target, so); };
  relay::Module blocked = relay::alter_layout(w.module, lo);
  relay::LayoutTraffic t = relay::layout_traffic(blocked);
  // Integer convs are cheaper per element written, and a residual add whose operands differ
  // in layout leaves the conv for a kernel of its own: with any, the transforms may move at
  // most half what the blocked convs write. Measured (2 threads, Zen 3, AVX2; kernel sums):
  // mobilenet_v2_int8 (0.0002) 7.8 -> 6.3 ms (its depthwise convs 1.7 -> 0.7 ms);
  // resnet18_int8 (1.14: its Winograd convs stay NCHW) 19.2 -> 21.0, so it stays NCHW.
  const bool pays = t.integer > 0 ? 2 * t.transformed <= t.blocked : 2 * t.transformed <= 5 * t.blocked;
  w.changed = t.blocked > 0 && (pays || o.layout == CompileOptions::Layout::kBlocked);
  if (w.changed) {
    w.module = blocked;
    w.program.notes.push_back("alter_layout: convs in blocked NCHW[x]c layout (transforms move " +
                              std::to_string(t.transformed) + " elements, blocked convs write " +
                              std::to_string(t.blocked) + ")");
  } else if (t.blocked > 0) {
    w.program.notes.push_back("alter_layout: convs kept in NCHW (transforms would move " +
                              std::to_string(t.transformed) + " elements, more than " +
                              (t.integer > 0 ? "0.5x" : "2.5x") + " the " + std::to_string(t.blocked) +
                              " blocked convs write)");
  }
}

// Every op without a kernel lowering, with the nodes using it: one message for all of them.
void check_lowerings(const relay::FusedModule& m) {
  std::map<std::string, std::vector<std::string>> missing;
  for (const relay::FusedGroup& g : m.groups)
    for (const relay::Expr& e : g.calls) {
      const auto* c = e.as<relay::CallNode>();
      if (!lower::find_op_lowering(c->op_name())) missing[c->op_name()].push_back(c->name.empty() ? "?" : c->name);
    }
  // Valid models using ops the library does not implement yet: "unsupported", not malformed.
  KILN_SUPPORTED(missing.empty()) << "no kernel lowering for " << missing.size() << " op"
                                  << (missing.size() > 1 ? "s" : "") << ":\n  "
                                  << support::grouped_names(missing, "node", "\n  ", "ops");
}

void fuse_ops(GraphWork& w, const Target& target) {
  w.program.target = target;
  w.program.strategy_options = w.options.strategy_options();
  w.program.fused = relay::fuse_ops(w.module);
}

// Constant weights packed into the layouts the target's kernels read.
void prepack_weights(GraphWork& w, const Target& target) {
  check_lowerings(w.program.fused);
  w.program.prepacked = lower::prepack_weights(&w.program.fused, target, w.program.strategy_options);
}

void plan_memory(GraphWork& w, const Target&) {
  w.memory = relay::plan_memory(w.program.fused);
  w.program.notes.push_back(w.memory.note());
}

// ---- group passes: lowering one fused group -------------------------------------------------

void select_strategy(GroupWork& w, const Target& target) {
  w.lowered.strategy = lower::select_strategy(*w.group, target, *w.strategy_options);
}

void group_to_te(GroupWork& w, const Target&) {
  w.lowered.program = lower::group_to_te(*w.group, w.lowered.strategy, w.prepacked);
  w.args = w.lowered.program.args();
}

// The knobs: a tuner's candidate, a tuning log's record, or the template's defaults.
void schedule_group(GroupWork& w, const Target& target) {
  schedule::Config* cfg = w.knobs.config ? w.knobs.config : &w.defaults;
  if (!w.knobs.config && w.knobs.chooser)
    w.knobs.chooser->config_for(*w.group, w.lowered.strategy, *w.prepacked, &w.defaults);
  w.lowered.schedule = lower::schedule_group(w.lowered.program, *w.group, w.lowered.strategy, target, *cfg);
}

void loop_nest(GroupWork& w, const Target&) {
  w.lowered.kernel = schedule::loop_nest(w.lowered.schedule, w.args, w.name);
}

// ---- loop passes ----------------------------------------------------------------------------

template <ir::PrimFunc (*Pass)(const ir::PrimFunc&)>
ir::PrimFunc loop_pass(const ir::PrimFunc& f, const Target&, std::vector<std::string>*) {
  return Pass(f);
}

ir::PrimFunc vectorize_loops(const ir::PrimFunc& f, const Target&, std::vector<std::string>* notes) {
  return ir::vectorize_loops(f, notes);
}

// A second simplification, then the verifier: a pass bug surfaces here as an InternalError.
ir::PrimFunc final_checks(const ir::PrimFunc& f, const Target&, std::vector<std::string>*) {
  ir::PrimFunc out = ir::simplify(f);
  ir::verify(out);
  return out;
}

ir::PrimFunc verify_gpu(const ir::PrimFunc& f, const Target& target, std::vector<std::string>*) {
  ir::verify_gpu(f, codegen::gpu_limits(target));
  return f;
}

void split_host_device(GroupWork& w, const Target&) { w.device = ir::split_host_device(w.lowered.kernel); }

// ---- GPU kernel passes ------------------------------------------------------------------------

void inject_double_buffer(KernelWork& w, const Target& target) {
  w.kernel = ir::inject_double_buffer(w.kernel, target.kind == TargetKind::kCUDA && target.gpu.async_copy());
}

void hoist_device_allocations(KernelWork& w, const Target&) { w.kernel = ir::hoist_device_allocations(w.kernel); }

void lower_cross_thread_reduction(KernelWork& w, const Target& target) {
  w.kernel = ir::lower_cross_thread_reduction(w.kernel, w.launch, target.gpu.warp_size);
}

void insert_thread_sync(KernelWork& w, const Target&) {
  w.planned = ir::plan_shared_storage(w.kernel.body);
  w.kernel = ir::insert_thread_sync(w.kernel, w.launch);
}

bool same_places(const ir::SharedStorage& a, const ir::SharedStorage& b) {
  if (a.buffers.size() != b.buffers.size() || a.bytes != b.bytes) return false;
  for (size_t i = 0; i < a.buffers.size(); ++i)
    if (!a.buffers[i].first.same_as(b.buffers[i].first) || a.buffers[i].second != b.buffers[i].second) return false;
  return true;
}

// insert_thread_sync placed its barriers for its plan of the shared bytes; the printer finds
// its own from the final body, which must be the same.
void hoist_invariant_guards(KernelWork& w, const Target&) {
  w.kernel = ir::hoist_invariant_guards(w.kernel);
  KILN_CHECK(same_places(w.planned, ir::plan_shared_storage(w.kernel.body)))
      << "kernel '" << w.kernel.name << "': the passes after insert_thread_sync moved its shared buffers";
  if (w.gpu.after_sync) w.kernel = w.gpu.after_sync(w.kernel);
}

void dynamic_shared(KernelWork& w, const Target& target) { codegen::set_dynamic_shared(w.kernel, target, &w.launch); }

// ---- module passes ------------------------------------------------------------------------------

// The plan of a compiled model (build_gpu's functions alone have none).
void make_graph_plan(ModuleWork& w, const Target& target) {
  if (!w.fused) return;
  std::vector<std::string> names;
  for (const ir::PrimFunc& k : w.out.kernels) names.push_back(k.name);
  w.out.plan = lower::make_graph_plan(*w.fused, *w.memory, names, w.flops, target, &w.out.weights);
}

// A dynamic-batch module (CompileOptions::batch_min/max): the batch-1 kernels loop over the
// samples, and the plan says the range; the runtime sizes the storages at batch_max samples.
void dynamic_batch(ModuleWork& w, const Target&) {
  const CompileOptions& o = w.options;
  runtime::GraphPlan& plan = w.out.plan;
  for (const runtime::GraphIO& io : plan.inputs) {
    const runtime::GraphEntry& e = plan.entries[io.entry];
    KILN_USER_CHECK(!e.shape.empty() && !e.is_constant) << "dynamic batch: input '" << io.name << "' has no batch dim";
  }
  for (const runtime::GraphIO& io : plan.outputs) {
    const runtime::GraphEntry& e = plan.entries[io.entry];
    KILN_SUPPORTED(!e.shape.empty() && !e.is_constant)
        << "dynamic batch: output '" << io.name << "' does not depend on the batch (a constant or a scalar)";
  }
  for (ir::PrimFunc& f : w.out.kernels) f.batch_loop = true;
  plan.batch_min = o.batch_min;
  plan.batch_max = o.batch_max;
  w.out.notes.push_back("dynamic batch " + std::to_string(o.batch_min) + ".." + std::to_string(o.batch_max) +
                        ": kernels compiled for one sample loop over the batch at run time");
}

void print_source(ModuleWork& w, const Target&) { codegen::print_gpu_source(&*w.out.device); }

void nvrtc(ModuleWork& w, const Target&) {
  if (w.gpu.compile) codegen::compile_gpu_source(&*w.out.device, w.gpu.image_sms);
}

void device_launches(ModuleWork& w, const Target& target) {
  if (!w.fused) return;  // build_gpu: no plan
  lower::add_device_launches(&w.out.plan, w.out.device->programs,
                             target.kind == TargetKind::kCUDA ? kDLCUDA : kDLOpenCL);
}

void llvm(ModuleWork& w, const Target& target) { w.out.cpu = codegen::build(w.out.kernels, target); }

bool float16(const Target&, const CompileOptions& o) { return o.float16; }
// Integer kernels only where a strategy tensorizes them (CPUs); GPUs keep the float ops on
// dequantized values.
bool int8_on_cpu(const Target& t, const CompileOptions& o) { return o.int8_kernels && t.kind == TargetKind::kLLVM; }
bool combine_asked(const Target&, const CompileOptions& o) { return o.combine_branches > 0; }
bool layout_not_nchw(const Target&, const CompileOptions& o) { return o.layout != CompileOptions::Layout::kNCHW; }
bool batch_range(const Target&, const CompileOptions& o) { return o.batch_max > 0; }

// ---- the table ---------------------------------------------------------------------------------

using U = StageUnit;
const std::vector<Stage>& stages() {
  static const std::vector<Stage> table = [] {
    std::vector<Stage> s;
    auto graph = [&](const char* name, const char* when, Gate gate, const char* does, GraphPass p) {
      s.push_back({{name, U::kGraph, when, does}, gate, p});
    };
    auto group = [&](const char* name, StageUnit unit, const char* when, Gate gate, const char* does, GroupPass p) {
      s.push_back({{name, unit, when, does}, gate, nullptr, p});
    };
    auto loops = [&](const char* name, const char* when, Gate gate, const char* does, LoopPass p) {
      s.push_back({{name, U::kLoops, when, does}, gate, nullptr, nullptr, p});
    };
    auto kernel = [&](const char* name, const char* does, KernelPass p) {
      s.push_back({{name, U::kKernel, "GPU targets", does}, on_gpu, nullptr, nullptr, nullptr, p});
    };
    auto module = [&](const char* name, const char* when, Gate gate, const char* does, ModulePass p) {
      s.push_back({{name, U::kModule, when, does}, gate, nullptr, nullptr, nullptr, nullptr, p});
    };
    graph("infer_types", "always", always, "types and shapes of every value", graph_pass<relay::infer_types>);
    graph("fold_constants", "always", always, "evaluates what depends on constants only", graph_pass<relay::fold_constants>);
    graph("fold_batch_norm", "always", always, "batch norms into the preceding conv's weights and bias",
          graph_pass<relay::fold_batch_norm>);
    graph("convert_to_float16", "--precision fp16", float16, "activations and weights stored in float16",
          graph_pass<relay::convert_to_float16>);
    graph("realize_integer_ops", "CPU targets (int8 kernels on)", int8_on_cpu,
          "dequantize -> conv/dense as integer ops with int32 sums", graph_pass<relay::realize_integer_ops>);
    graph("simplify", "always", always, "algebraic simplification of the graph", graph_pass<relay::simplify>);
    graph("eliminate_common_subexpr", "always", always, "one value for equal computations",
          graph_pass<relay::eliminate_common_subexpr>);
    graph("sum_parallel_convs", "always", always, "convs whose outputs are added become one conv",
          graph_pass<relay::sum_parallel_convs>);
    graph("combine_parallel", "--combine-branches N", combine_asked,
          "parallel branches on one input as one wider op", combine_parallel);
    graph("remove_dead", "always", always, "drops values no output needs", graph_pass<relay::remove_dead>);
    graph("alter_layout", "layout auto or blocked", layout_not_nchw,
          "convs and the ops between them in NCHW[x]c where the transforms pay", alter_layout);
    graph("fuse_ops", "always", always, "calls partitioned into kernels (fused groups)", fuse_ops);
    graph("prepack_weights", "always", always, "constant weights packed for the target's kernels", prepack_weights);
    graph("plan_memory", "always", always, "intermediates placed in shared storages", plan_memory);
    group("select_strategy", U::kGroup, "always", always, "the target's template and compute for the group",
          select_strategy);
    group("group_to_te", U::kGroup, "always", always, "the group's te program", group_to_te);
    group("schedule_group", U::kGroup, "always", always, "the template's schedule, knobs from a tuning log or defaults",
          schedule_group);
    group("loop_nest", U::kLoops, "always", always, "the schedule's loop nest (ir::PrimFunc)", loop_nest);
    loops("flatten_storage", "always", always, "one flat index per access", loop_pass<ir::flatten_storage>);
    loops("loop_simplify", "always", always, "range-aware arithmetic simplification, guard removal",
          loop_pass<ir::simplify>);
    loops("vectorize_loops", "always", always, "vectorized loops into vector IR", vectorize_loops);
    loops("unroll_loops", "always", always, "unrolled loops into copies", loop_pass<ir::unroll_loops>);
    loops("final", "always", always, "simplified again and verified", final_checks);
    loops("lower_warp_buffers", "GPU targets", on_gpu, "each lane's part of the warps' fragments",
          loop_pass<ir::lower_warp_buffers>);
    loops("verify_gpu", "GPU targets", on_gpu, "thread binding and the target's limits", verify_gpu);
    group("split_host_device", U::kLoops, "GPU targets", on_gpu, "each top-level statement a kernel and a launch",
          split_host_device);
    kernel("inject_double_buffer", "doubled shared tiles, asynchronous copies on CUDA sm_80+", inject_double_buffer);
    kernel("hoist_device_allocations", "shared buffers at the kernel's top", hoist_device_allocations);
    kernel("lower_cross_thread_reduction", "cross-thread sums as shared-memory trees and warp shuffles",
           lower_cross_thread_reduction);
    kernel("insert_thread_sync", "barriers where threads exchange data through shared memory", insert_thread_sync);
    kernel("hoist_invariant_guards", "guards that do not change in a loop taken out of it", hoist_invariant_guards);
    kernel("dynamic_shared", "CUDA kernels past 48 KiB of shared memory take it dynamically", dynamic_shared);
    module("graph_plan", "always", always, "the runtime's plan: entries, one node per kernel, weights", make_graph_plan);
    module("dynamic_batch", "--input-shape NAME=MIN..MAX", batch_range, "kernels loop over the batch at run time",
           dynamic_batch);
    module("print_source", "GPU targets", on_gpu, "CUDA C or OpenCL C of every kernel", print_source);
    module("nvrtc", "CUDA targets", on_cuda, "cubins and PTX, ptxas's report in the notes", nvrtc);
    module("device_launches", "GPU targets", on_gpu, "one plan node per kernel launch", device_launches);
    module("llvm", "CPU targets", on_cpu, "LLVM: optimized machine code of every kernel", llvm);
    // Run by export_library() (compiler.h), which takes the path.
    s.push_back({{"export_library", U::kPackage, "always", "machine code or device images, plan and weights in one .so"},
                 always});
    return s;
  }();
  return table;
}

size_t index_of(const std::string& name) {
  const std::vector<Stage>& t = stages();
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i].info.name == name) return i;
  KILN_CHECK(false) << "no pipeline stage '" << name << "'";
  return 0;
}

// The dumper of the options' stage, which must name a stage of the table; KILN_DUMP_IR names
// one for the loop stages when the options name none.
StageDumper make_dumper(const std::string& stage, std::ostream* os, bool env) {
  if (stage.empty() && env) {
    const char* named = std::getenv("KILN_DUMP_IR");
    return StageDumper(named ? named : "", os);
  }
  if (!stage.empty() && stage != "all") {
    std::vector<std::string> all = pipeline_stages();
    std::string list;
    for (const std::string& s : all) list += (list.empty() ? "" : ", ") + s;
    KILN_USER_CHECK(std::find(all.begin(), all.end(), stage) != all.end())
        << "unknown IR stage '" << stage << "' to dump; stages: " << list;
  }
  return StageDumper(stage, os);
}

// What a group stage made, in a line: the strategy's template, the te program's outputs, the
// schedule's knobs.
std::string group_text(const std::string& stage, const GroupWork& w) {
  std::string text = w.name + ": ";
  if (stage == "select_strategy") return text + "template " + w.lowered.strategy.template_name + "\n";
  if (stage == "group_to_te") {
    for (const te::Tensor& t : w.lowered.program.outputs) {
      text += t.name() + " " + t.dtype().str() + "[";
      for (size_t i = 0; i < t.shape().size(); ++i) text += (i ? ", " : "") + std::to_string(t.shape()[i]);
      text += "] ";
    }
    return text + "\n";
  }
  const schedule::Config& cfg = w.knobs.config ? *w.knobs.config : w.defaults;
  return text + "knobs " + cfg.str() + "\n";
}

// Runs stages [first, last], group and loop stages, on one group's work (group stages are
// skipped for a function alone).
void run_group_stages(size_t first, size_t last, GroupWork& w, const Target& target, const CompileOptions& o,
                      const StageDumper& dump) {
  const std::vector<Stage>& t = stages();
  for (size_t i = first; i <= last; ++i) {
    const Stage& s = t[i];
    if (!s.runs(target, o) || (s.info.unit == StageUnit::kGroup && !w.group)) continue;
    if (s.loops) w.lowered.kernel = s.loops(w.lowered.kernel, target, w.notes);
    if (s.group) s.group(w, target);
    if (!dump.wants(s.info.name)) continue;
    if (s.info.unit == StageUnit::kGroup) dump("group", s.info.name, group_text(s.info.name, w));
    else if (w.lowered.kernel.body.defined()) dump("IR", s.info.name, ir::to_string(w.lowered.kernel));
  }
}

// What an error while lowering one group is about: "kernel fused_nn_relu_0 (nn.relu, node
// 'relu1')". Lowering checks limits no type relation sees (int32 loop extents, say), and its
// messages name only te placeholders: this names the kernel's ops and ONNX nodes.
std::string group_culprit(const relay::FusedGroup& g, const std::string& kernel) {
  std::vector<std::string> nodes;
  for (const relay::Expr& e : g.calls) {
    const std::string& n = e.as<relay::CallNode>()->name;
    if (!n.empty() && std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
  }
  std::string list;
  for (size_t i = 0; i < nodes.size() && i < 3; ++i) list += (i ? ", '" : "'") + nodes[i] + "'";
  if (nodes.size() > 3) list += ", ... " + std::to_string(nodes.size()) + " in all";
  if (!nodes.empty()) list = (nodes.size() > 1 ? ", nodes " : ", node ") + list;
  return "kernel " + kernel + " (" + g.label() + list + ")";
}

// The stages from `from` up to packaging: the GPU kernel stages, each kernel through all of them
// in turn, then the module stages.
void run_module_stages(size_t from, ModuleWork& w, const Target& target, const StageDumper& dump) {
  const std::vector<Stage>& t = stages();
  const size_t kernels_end = [&] {
    size_t e = from;
    while (e < t.size() && t[e].info.unit == StageUnit::kKernel) ++e;
    return e;
  }();
  if (kernels_end > from && w.out.device) {
    for (ir::DeviceProgram& p : w.out.device->programs)
      for (size_t k = 0; k < p.kernels.size(); ++k) {
        KernelWork kw{p.kernels[k], p.launches[k], w.gpu, {}};
        for (size_t j = from; j < kernels_end; ++j) {
          if (!t[j].runs(target, w.options)) continue;
          t[j].kernel(kw, target);
          if (dump.wants(t[j].info.name)) dump("IR", t[j].info.name, ir::to_string(kw.kernel));
        }
        p.kernels[k] = kw.kernel;
      }
  }
  for (size_t i = kernels_end; i < t.size() && t[i].info.unit == StageUnit::kModule; ++i) {
    if (!t[i].runs(target, w.options)) continue;
    t[i].module(w, target);
    if (dump.wants(t[i].info.name) && t[i].info.name == "print_source") dump("source", "print_source", w.out.device->source);
  }
}

// Runs stages [first, last] (group and loop stages) on one group, naming the group in an error.
void run_group(size_t first, size_t last, GroupWork& w, const Target& target, const CompileOptions& o,
               const StageDumper& dump) {
  try {
    run_group_stages(first, last, w, target, o, dump);
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(group_culprit(*w.group, w.name) + ": " + e.what());
  } catch (const Error& e) {
    throw Error(group_culprit(*w.group, w.name) + ": " + e.what());
  }
}

// The graph stages [first, last]: each one's dump, and on_graph for the relay graph stages.
void run_graph_stages(size_t first, size_t last, GraphWork& w, const StageDumper& dump) {
  const CompileOptions& o = w.options;
  const std::vector<Stage>& t = stages();
  for (size_t i = first; i <= last; ++i) {
    const Stage& s = t[i];
    if (!s.runs(o.target, o)) continue;
    w.changed = true;
    s.graph(w, o.target);
    if (!w.changed) continue;
    const std::string& name = s.info.name;
    const bool fused = name == "fuse_ops" || name == "prepack_weights";
    if (dump.wants(name))
      dump("graph", name, name == "plan_memory" ? w.memory.str()
                          : fused              ? relay::to_string(w.program.fused)
                                               : relay::to_string(w.module));
    if (o.on_graph && i <= index_of("fuse_ops"))
      o.on_graph(name, fused ? w.program.fused.module : w.module, fused ? &w.program.fused : nullptr);
  }
}

}  // namespace

// ---- the table, read ---------------------------------------------------------------------------

const char* stage_unit_name(StageUnit unit) {
  switch (unit) {
    case StageUnit::kGraph: return "graph";
    case StageUnit::kGroup: return "group";
    case StageUnit::kLoops: return "loop IR";
    case StageUnit::kKernel: return "GPU kernel";
    case StageUnit::kModule: return "module";
    case StageUnit::kPackage: return "package";
  }
  return "?";
}

const std::vector<PipelineStage>& pipeline_table() {
  static const std::vector<PipelineStage> table = [] {
    std::vector<PipelineStage> t;
    for (const Stage& s : stages()) t.push_back(s.info);
    return t;
  }();
  return table;
}

std::vector<std::string> pipeline_stages() {
  std::vector<std::string> names;
  for (const PipelineStage& s : pipeline_table()) names.push_back(s.name);
  names.push_back("all");
  return names;
}

std::vector<std::string> graph_stages() {
  std::vector<std::string> names;
  for (const PipelineStage& s : pipeline_table()) {
    if (s.unit != StageUnit::kGraph) break;
    names.push_back(s.name);
    if (s.name == "fuse_ops") break;
  }
  return names;
}

std::string pipeline_markdown() {
  std::string md = "| stage | unit | runs for | what it does |\n|---|---|---|---|\n";
  for (const PipelineStage& s : pipeline_table())
    md += "| `" + s.name + "` | " + stage_unit_name(s.unit) + " | " + s.when + " | " + s.does + " |\n";
  return md;
}

// ---- running it --------------------------------------------------------------------------------

FusedProgram fuse_model(const relay::Module& module, const CompileOptions& options) {
  GraphWork w{options, module, {}, {}};
  run_graph_stages(0, index_of("prepack_weights"), w, make_dumper(options.dump_ir_stage, options.dump_to, false));
  return std::move(w.program);
}

LoweredGroup lower_group(const relay::FusedGroup& group, const std::string& name, const Target& target,
                         const lower::StrategyOptions& strategy_options, const lower::PrepackedWeights& prepacked,
                         const GroupKnobs& knobs, const PipelineOptions& options) {
  GroupWork w;
  w.group = &group;
  w.name = name;
  w.strategy_options = &strategy_options;
  w.prepacked = &prepacked;
  w.knobs = knobs;
  w.notes = options.notes;
  run_group(index_of("select_strategy"), index_of("final"), w, target, no_options(),
            make_dumper(options.dump.stage(), options.dump.stream(), true));
  return std::move(w.lowered);
}

ir::PrimFunc loop_ir(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const std::string& name,
                     const Target& target, const PipelineOptions& options) {
  GroupWork w;
  w.name = name;
  w.args = args;
  w.lowered.schedule = s;
  w.notes = options.notes;
  run_group_stages(index_of("loop_nest"), index_of("final"), w, target, no_options(),
                   make_dumper(options.dump.stage(), options.dump.stream(), true));
  return w.lowered.kernel;
}

codegen::Module build(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const Target& target,
                      const std::string& name, const PipelineOptions& options) {
  return codegen::build({loop_ir(s, args, name, target, options)}, target, options.build);
}

codegen::GpuModule build_gpu(const std::vector<ir::PrimFunc>& funcs, const Target& target,
                             const codegen::GpuBuildOptions& gpu) {
  KILN_USER_CHECK(target.is_gpu()) << "build_gpu: target '" << target.str() << "' is not a GPU target";
  KILN_USER_CHECK(!gpu.race_check || target.kind == TargetKind::kOpenCL)
      << "build_gpu: race_check instruments OpenCL kernels only, not target '" << target.str() << "'";
  ModuleWork w{no_options(), gpu};
  w.out.device.emplace();
  w.out.device->target = target;
  w.out.device->race_check = gpu.race_check;
  const StageDumper dump = make_dumper("", nullptr, true);
  for (const ir::PrimFunc& f : funcs) {
    GroupWork g;
    g.lowered.kernel = f;
    run_group_stages(index_of("lower_warp_buffers"), index_of("split_host_device"), g, target, no_options(), dump);
    w.out.device->programs.push_back(std::move(*g.device));
  }
  run_module_stages(index_of("split_host_device") + 1, w, target, dump);
  return std::move(*w.out.device);
}

CompiledModel compile(const relay::Module& module, const CompileOptions& options) {
  const Target& target = options.target;
  if (options.batch_max > 0) {
    KILN_USER_CHECK(options.batch_min >= 1 && options.batch_max >= options.batch_min)
        << "dynamic batch: bad batch range " << options.batch_min << ".." << options.batch_max;
    KILN_SUPPORTED(!target.is_gpu()) << "dynamic batch is not supported for GPU targets yet (target '"
                                     << target.str() << "'): compile for a fixed batch (--input-shape NAME=N,...)";
  }
  StageDumper dump = make_dumper(options.dump_ir_stage, options.dump_to, false);
  const codegen::GpuBuildOptions gpu;
  ModuleWork w{options, gpu};
  w.out.target = target;
  w.out.notes.push_back("target: " + target.summary());

  // The graph stages.
  GraphWork graph{options, {}, fuse_model(module, options), {}};
  run_graph_stages(index_of("plan_memory"), index_of("plan_memory"), graph, dump);
  w.out.notes.insert(w.out.notes.end(), graph.program.notes.begin(), graph.program.notes.end());
  const relay::FusedModule& fused = graph.program.fused;

  // Per group: its lowering and the loop stages (on GPU targets, through split_host_device).
  const StageDumper loop_dump = dump.stage().empty() ? make_dumper("", options.dump_to, true) : dump;
  if (target.is_gpu()) {
    w.out.device.emplace();
    w.out.device->target = target;
  }
  for (size_t i = 0; i < fused.groups.size(); ++i) {
    GroupWork g;
    g.group = &fused.groups[i];
    g.name = lower::kernel_name(fused.groups[i], static_cast<int>(i));
    g.strategy_options = &graph.program.strategy_options;
    g.prepacked = &graph.program.prepacked;
    g.knobs.chooser = options.schedules;
    g.notes = &w.out.notes;
    run_group(index_of("select_strategy"), index_of("split_host_device"), g, target, options, loop_dump);
    w.flops.push_back(te::count_flops(g.lowered.program.outputs));
    w.out.kernels.push_back(g.lowered.kernel);
    if (g.device) w.out.device->programs.push_back(std::move(*g.device));
  }
  if (options.schedules) {
    std::vector<std::string> notes = options.schedules->notes();
    w.out.notes.insert(w.out.notes.end(), notes.begin(), notes.end());
  }

  // The GPU kernels' stages, then the module's: its plan, the GPU source and images, or the CPU
  // machine code.
  w.fused = &fused;
  w.memory = &graph.memory;
  run_module_stages(index_of("split_host_device") + 1, w, target, loop_dump);
  if (w.out.device) w.out.notes.insert(w.out.notes.end(), w.out.device->notes.begin(), w.out.device->notes.end());
  return std::move(w.out);
}

}  // namespace kiln
