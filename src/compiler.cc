// kiln::compile: the whole pipeline, from an imported module to kernels, plan and weights, read
// top to bottom: graph passes, lowering per group, loop passes, export.
#include "kiln/compiler.h"

#include <algorithm>
#include <map>

#include "kiln/codegen/driver.h"
#include "kiln/codegen/export_library.h"
#include "kiln/lower/op_lowering.h"
#include "kiln/relay/printer.h"
#include "kiln/relay/transforms.h"
#include "kiln/support/error.h"
#include "kiln/support/grouped_names.h"
#include "kiln/support/stage_dump.h"
#include "kiln/te/count_flops.h"

namespace kiln {

namespace {

// The dumper of CompileOptions::dump_ir_stage, which must name a stage of the pipeline.
StageDumper make_dumper(const CompileOptions& o) {
  if (!o.dump_ir_stage.empty() && o.dump_ir_stage != "all") {
    std::vector<std::string> all = pipeline_stages();
    bool known = std::find(all.begin(), all.end(), o.dump_ir_stage) != all.end();
    std::string list;
    for (const std::string& s : all) list += (list.empty() ? "" : ", ") + s;
    KILN_USER_CHECK(known) << "unknown IR stage '" << o.dump_ir_stage << "' to dump; stages: " << list << ", all";
  }
  return StageDumper(o.dump_ir_stage, o.dump_to);
}

// Every op without a kernel lowering, with the nodes using it: one message for all of them.
void check_lowerings(const relay::FusedModule& m) {
  std::map<std::string, std::vector<std::string>> missing;
  for (const relay::FusedGroup& g : m.groups)
    for (const relay::Expr& e : g.calls) {
      const auto* c = e.as<relay::CallNode>();
      if (!lower::find_op_lowering(c->op_name())) missing[c->op_name()].push_back(c->name.empty() ? "?" : c->name);
    }
  if (missing.empty()) return;
  // Valid models using ops the library does not implement yet: "unsupported", not malformed.
  KILN_SUPPORTED(false) << "no kernel lowering for " << missing.size() << " op" << (missing.size() > 1 ? "s" : "")
                        << ":\n  " << support::grouped_names(missing, "node", "\n  ", "ops");
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

// A dynamic-batch module (CompileOptions::batch_min/max): the batch-1 kernels loop over the
// samples, and the plan says the range; the runtime sizes the storages at batch_max samples.
void make_dynamic_batch(const CompileOptions& o, CompiledModel* out) {
  const runtime::GraphPlan& plan = out->plan;
  for (const runtime::GraphIO& io : plan.inputs) {
    const runtime::GraphEntry& e = plan.entries[io.entry];
    KILN_USER_CHECK(!e.shape.empty() && !e.is_constant) << "dynamic batch: input '" << io.name << "' has no batch dim";
  }
  for (const runtime::GraphIO& io : plan.outputs) {
    const runtime::GraphEntry& e = plan.entries[io.entry];
    KILN_SUPPORTED(!e.shape.empty() && !e.is_constant)
        << "dynamic batch: output '" << io.name << "' does not depend on the batch (a constant or a scalar)";
  }
  for (ir::PrimFunc& f : out->kernels) f.batch_loop = true;
  out->plan.batch_min = o.batch_min;
  out->plan.batch_max = o.batch_max;
  out->notes.push_back("dynamic batch " + std::to_string(o.batch_min) + ".." + std::to_string(o.batch_max) +
                       ": kernels compiled for one sample loop over the batch at run time");
}

}  // namespace

bool parse_precision(const std::string& name) {
  KILN_USER_CHECK(name == "fp32" || name == "fp16") << "--precision '" << name << "': expected fp32 or fp16";
  return name == "fp16";
}

CompileOptions::Layout parse_layout(const std::string& name) {
  if (name == "auto") return CompileOptions::Layout::kAuto;
  if (name == "nchw") return CompileOptions::Layout::kNCHW;
  KILN_USER_CHECK(name == "blocked") << "--layout '" << name << "': expected auto, nchw or blocked";
  return CompileOptions::Layout::kBlocked;
}

lower::StrategyOptions CompileOptions::strategy_options() const {
  lower::StrategyOptions o;
  o.winograd = winograd;
  return o;
}

std::vector<std::string> graph_stages() {
  return {"infer_types", "fold_constants", "fold_batch_norm", "convert_to_float16", "realize_integer_ops",
          "simplify", "eliminate_common_subexpr", "sum_parallel_convs", "combine_parallel", "remove_dead", "alter_layout", "fuse_ops"};
}

std::vector<std::string> pipeline_stages() {
  std::vector<std::string> s = graph_stages();
  s.push_back("plan_memory");
  for (const std::string& k : codegen::loop_stages()) s.push_back(k);
  return s;
}

FusedProgram fuse_model(const relay::Module& module, const CompileOptions& options) {
  using namespace relay;  // NOLINT(google-build-using-namespace)
  StageDumper dump = make_dumper(options);
  auto stage = [&](const std::string& name, Module m) {
    if (dump.wants(name)) dump("graph", name, to_string(m));
    if (options.on_graph) options.on_graph(name, m, nullptr);
    return m;
  };

  // Graph passes.
  Module m = stage("infer_types", infer_types(module));
  m = stage("fold_constants", fold_constants(m));
  m = stage("fold_batch_norm", fold_batch_norm(m));
  if (options.float16) m = stage("convert_to_float16", convert_to_float16(m));
  // Integer kernels only where a strategy tensorizes them (CPUs); GPUs keep the float ops on
  // dequantized values.
  if (options.int8_kernels && options.target.kind == TargetKind::kLLVM)
    m = stage("realize_integer_ops", realize_integer_ops(m));
  m = stage("simplify", simplify(m));
  m = stage("eliminate_common_subexpr", eliminate_common_subexpr(m));
  FusedProgram out;
  // Before combine_parallel, which would otherwise take summed convs as branches to slice.
  m = stage("sum_parallel_convs", sum_parallel_convs(m));
  if (options.combine_branches > 0) {
    CombineResult c = combine_parallel(m, options.combine_branches);
    if (c.groups > 0) {
      m = stage("combine_parallel", c.module);
      out.notes.push_back("combine_parallel: " + std::to_string(c.groups) + " groups of parallel branches combined");
    }
  }
  m = stage("remove_dead", remove_dead(m));
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
  if (options.layout != CompileOptions::Layout::kNCHW) {
    AlterLayoutOptions lo;
    lo.max_block = options.target.lanes(32);
    const lower::StrategyOptions so = options.strategy_options();
    lo.keep_plain = [&](const CallNode& c) { return lower::conv_stays_nchw(c, options.target, so); };
    Module blocked = alter_layout(m, lo);
    LayoutTraffic t = layout_traffic(blocked);
    // Integer convs are cheaper per element written, and a residual add whose operands differ
    // in layout leaves the conv for a kernel of its own: with any, the transforms may move at
    // most half what the blocked convs write. Measured (2 threads, Zen 3, AVX2; kernel sums):
    // mobilenet_v2_int8 (0.0002) 7.8 -> 6.3 ms (its depthwise convs 1.7 -> 0.7 ms);
    // resnet18_int8 (1.14: its Winograd convs stay NCHW) 19.2 -> 21.0, so it stays NCHW.
    const bool pays = t.integer > 0 ? 2 * t.transformed <= t.blocked : 2 * t.transformed <= 5 * t.blocked;
    if (t.blocked > 0 && (pays || options.layout == CompileOptions::Layout::kBlocked)) {
      m = stage("alter_layout", blocked);
      out.notes.push_back("alter_layout: convs in blocked NCHW[x]c layout (transforms move " +
                          std::to_string(t.transformed) + " elements, blocked convs write " +
                          std::to_string(t.blocked) + ")");
    } else if (t.blocked > 0) {
      out.notes.push_back("alter_layout: convs kept in NCHW (transforms would move " + std::to_string(t.transformed) +
                          " elements, more than " + (t.integer > 0 ? "0.5x" : "2.5x") + " the " +
                          std::to_string(t.blocked) + " blocked convs write)");
    }
  }

  out.target = options.target;
  out.strategy_options = options.strategy_options();
  out.fused = fuse_ops(m);
  if (dump.wants("fuse_ops")) dump("graph", "fuse_ops", to_string(out.fused));
  if (options.on_graph) options.on_graph("fuse_ops", out.fused.module, &out.fused);
  check_lowerings(out.fused);
  // Lowering starts: constant weights packed into the layouts the target's kernels read.
  out.prepacked = lower::prepack_weights(&out.fused, out.target, out.strategy_options);
  return out;
}

CompiledModel compile(const relay::Module& module, const CompileOptions& options) {
  if (options.batch_max > 0) {
    KILN_USER_CHECK(options.batch_min >= 1 && options.batch_max >= options.batch_min)
        << "dynamic batch: bad batch range " << options.batch_min << ".." << options.batch_max;
    KILN_SUPPORTED(!options.target.is_gpu()) << "dynamic batch is not supported for GPU targets yet (target '"
                                             << options.target.str() << "'): compile for a fixed batch (--input-shape NAME=N,...)";
  }
  StageDumper dump = make_dumper(options);
  CompiledModel out;
  out.notes.push_back("target: " + options.target.summary());
  FusedProgram program = fuse_model(module, options);
  out.notes.insert(out.notes.end(), program.notes.begin(), program.notes.end());
  relay::FusedModule& fused = program.fused;
  relay::MemoryPlan memory = relay::plan_memory(fused);
  if (dump.wants("plan_memory")) dump("graph", "plan_memory", memory.str());
  out.notes.push_back(memory.note());

  codegen::PipelineOptions pipeline;
  const std::vector<std::string>& loops = codegen::loop_stages();
  if (dump.stage() == "all" || std::find(loops.begin(), loops.end(), dump.stage()) != loops.end()) pipeline.dump = dump;
  pipeline.notes = &out.notes;
  std::vector<std::string> names;
  std::vector<double> flops;
  for (size_t i = 0; i < fused.groups.size(); ++i) {
    const relay::FusedGroup& group = fused.groups[i];
    names.push_back(lower::kernel_name(group, static_cast<int>(i)));
    try {
      // Lowering: the target's strategy, the group's te program, its schedule.
      lower::Strategy strategy = lower::select_strategy(group, options.target, program.strategy_options);
      lower::GroupProgram te_program = lower::group_to_te(group, strategy, &program.prepacked);
      flops.push_back(te::count_flops(te_program.outputs));
      schedule::Config cfg;
      if (options.schedules) options.schedules->config_for(group, strategy, program.prepacked, &cfg);
      schedule::Schedule s = lower::schedule_group(te_program, group, strategy, options.target, cfg);
      // Loop passes.
      out.kernels.push_back(codegen::lower_to_ir(s, te_program.args(), names.back(), pipeline));
    } catch (const UnsupportedError& e) {
      throw UnsupportedError(group_culprit(group, names.back()) + ": " + e.what());
    } catch (const Error& e) {
      throw Error(group_culprit(group, names.back()) + ": " + e.what());
    }
  }
  if (options.schedules) {
    std::vector<std::string> notes = options.schedules->notes();
    out.notes.insert(out.notes.end(), notes.begin(), notes.end());
  }
  out.plan = lower::make_graph_plan(fused, memory, names, flops, options.target, &out.weights);
  if (options.batch_max > 0) make_dynamic_batch(options, &out);
  if (options.target.is_gpu()) {
    out.device = codegen::build_gpu(out.kernels, options.target);
    out.notes.insert(out.notes.end(), out.device->notes.begin(), out.device->notes.end());
    lower::add_device_launches(&out.plan, out.device->programs,
                               options.target.kind == TargetKind::kCUDA ? kDLCUDA : kDLOpenCL);
  }
  return out;
}

void export_library(const CompiledModel& model, const std::string& path) {
  if (model.device) {
    codegen::export_device_library(model.plan, *model.device, model.weights, path);
    return;
  }
  codegen::export_library(model.plan, model.kernels, model.weights, path);
}

}  // namespace kiln
