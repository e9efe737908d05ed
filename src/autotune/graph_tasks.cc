// Tuning tasks of a model (see graph_tasks.h).
#include "kiln/autotune/graph_tasks.h"

#include <map>
#include <set>

#include "autotune/gpu_measure.h"
#include "kiln/pipeline.h"
#include "kiln/support/error.h"
#include "kiln/te/count_flops.h"

namespace kiln::autotune {
namespace {

using lower::PrepackedWeights;
using relay::FusedGroup;

std::string type_str(const relay::Expr& e) { return e->type.str(); }

// The key's argument list: a prepacked weight by its packed type (a different kernel).
std::string args_str(const relay::CallNode* c, const relay::Expr& call, const PrepackedWeights& prepacked) {
  auto packed = prepacked.find(call.get());
  std::string s;
  for (size_t i = 0; i < c->args.size(); ++i) {
    const bool is_packed = packed != prepacked.end() && packed->second.arg == i;
    s += (i ? "," : "") + type_str(is_packed ? packed->second.packed : c->args[i]);
  }
  return s;
}

std::string key_of(const FusedGroup& g, const PrepackedWeights& prepacked, const std::string& template_name) {
  const bool anchored = g.pattern >= relay::OpPattern::OutElementwiseFusable;
  std::string key = template_name + ":";
  // Anchored groups by the anchor call; others by every call (they are all the kernel).
  for (const relay::Expr& e : g.calls) {
    if (anchored && !e.same_as(g.anchor)) continue;
    const auto* c = e.as<relay::CallNode>();
    key += (key.back() == ':' ? "" : "+") + c->op_name() + "(" + args_str(c, e, prepacked);
    std::string attrs = c->attrs.str();
    key += (attrs.empty() ? "" : ";" + attrs) + ")";
  }
  return key + "->" + type_str(g.root);
}

// The smallest part of the prepacked map a task needs to keep: its group's calls.
PrepackedWeights prepacked_of(const FusedGroup& g, const PrepackedWeights& all) {
  PrepackedWeights out;
  for (const relay::Expr& e : g.calls) {
    auto it = all.find(e.get());
    if (it != all.end()) out.emplace(it->first, it->second);
  }
  return out;
}

ConfigSpace group_space(const FusedGroup& g, const lower::GroupProgram& p, const lower::Strategy& st,
                        const Target& target) {
  ConfigSpace space;
  Config recorder(&space);
  lower::schedule_group(p, g, st, target, recorder);
  return space;
}

}  // namespace

ConfigSpace group_config_space(const FusedGroup& group, const lower::Strategy& strategy,
                               const PrepackedWeights& prepacked, const Target& target) {
  return group_space(group, lower::group_to_te(group, strategy, &prepacked), strategy, target);
}

std::string workload_template(const std::string& workload_key) {
  return workload_key.substr(0, workload_key.find(':'));
}

std::string tunable_workload_key(const FusedGroup& group, const lower::Strategy& strategy,
                                 const PrepackedWeights& prepacked, const Target& target, bool all_groups) {
  const std::string& name = strategy.template_name;
  const bool anchored = group.pattern >= relay::OpPattern::OutElementwiseFusable;
  if (!all_groups && (!anchored || name == "generic")) return "";
  if (group_config_space(group, strategy, prepacked, target).size() <= 1) return "";
  return key_of(group, prepacked, name);
}

Task group_task(const FusedGroup& group, const lower::StrategyOptions& strategy_options,
                const PrepackedWeights& prepacked, const Target& target, const GraphTaskOptions& options) {
  // What the template and build hooks share: the group (its Exprs keep the calls alive that key
  // the prepacked map), and the reference, built once on first use.
  struct State {
    FusedGroup group;
    lower::StrategyOptions strategy_options;
    PrepackedWeights prepacked;
    Target target;
    GraphTaskOptions options;
    size_t num_outputs = 0;
    std::vector<size_t> cold_inputs;  // parameters holding the model's constants (weights)
    std::shared_ptr<const KernelReference> reference;

    // The kernel compile() would build with these knobs (the defaults without).
    ir::PrimFunc build_func(Config* cfg) const {
      GroupKnobs knobs;
      knobs.config = cfg;
      return lower_group(group, "tuned_kernel", target, strategy_options, prepacked, knobs).kernel;
    }
    std::shared_ptr<const KernelReference> get_reference() {
      if (!reference) {
        ir::PrimFunc f = build_func(nullptr);
        reference = target.is_gpu()
                        ? KernelReference::make(f, num_outputs, options.input_seed, run_gpu_on_host(build_device(f)))
                        : KernelReference::make(codegen::build({f}, target), f, num_outputs, options.input_seed);
      }
      return reference;
    }
    // A GPU kernel's module, with the cubin of the target's own sm only (and its PTX): the one
    // GPU it runs on.
    codegen::GpuModule build_device(const ir::PrimFunc& f) const {
      codegen::GpuBuildOptions o;
      if (target.kind == TargetKind::kCUDA) o.image_sms = {target.gpu.sm};
      return kiln::build_gpu({f}, target, o);
    }
    MeasureFn measure(const ir::PrimFunc& f, const std::shared_ptr<const KernelReference>& ref) const {
      if (target.is_gpu()) return measure_gpu_kernel(build_device(f), ref, options.timer, options.tolerance);
      return measure_kernel(codegen::build({f}, target), f, ref, options.timer, options.tolerance, cold_inputs);
    }
  };
  auto st = std::make_shared<State>();
  st->group = group;
  st->strategy_options = strategy_options;
  st->prepacked = prepacked_of(group, prepacked);
  const lower::Strategy strategy = lower::select_strategy(group, target, strategy_options);
  st->target = target;
  st->options = options;
  lower::GroupProgram p = lower::group_to_te(group, strategy, &st->prepacked);
  st->num_outputs = p.outputs.size();
  for (size_t i = 0; options.cold_weights && i < group.inputs.size(); ++i)
    if (group.inputs[i].as<relay::ConstantNode>()) st->cold_inputs.push_back(i);

  Task task;
  task.name = strategy.template_name;
  task.workload_key = key_of(group, st->prepacked, task.name);
  task.flops = te::count_flops(p.outputs);
  task.make = [st](Config& cfg) {
    Program prog;
    prog.func = st->build_func(&cfg);
    // The reference is made here, in the tuner's process, and shared by every candidate: the
    // build hook runs in the candidate's child process (tuner.cc), whose state does not last.
    prog.build = [st, f = prog.func, ref = st->get_reference()]() { return st->measure(f, ref); };
    // ptxas's registers and spills for the cost model (features.h), in the tuner's children.
    if (st->target.kind == TargetKind::kCUDA && codegen::cuda_codegen_available())
      prog.ptxas = [st, f = prog.func]() {
        const codegen::GpuModule m = st->build_device(f);
        return PtxasReport{m.max_registers, m.max_spill_bytes};
      };
    return prog;
  };
  return task;
}

std::vector<GraphTask> extract_tasks(const FusedProgram& program, const GraphTaskOptions& options) {
  std::vector<GraphTask> tasks;
  std::map<std::string, size_t> index;
  for (const FusedGroup& g : program.fused.groups) {
    lower::Strategy strategy = lower::select_strategy(g, program.target, program.strategy_options);
    std::string key = tunable_workload_key(g, strategy, program.prepacked, program.target, options.all_groups);
    if (key.empty()) continue;
    auto [it, fresh] = index.emplace(key, tasks.size());
    if (fresh) {
      GraphTask t;
      t.task = group_task(g, program.strategy_options, program.prepacked, program.target, options);
      KILN_CHECK(t.task.workload_key == key) << "task key '" << t.task.workload_key << "' differs from '" << key << "'";
      t.label = g.label();
      tasks.push_back(std::move(t));
    }
    ++tasks[it->second].occurrences;
  }
  return tasks;
}

std::vector<GraphTask> extract_tasks(const relay::Module& module, const CompileOptions& compile_options,
                                     const GraphTaskOptions& options) {
  return extract_tasks(fuse_model(module, compile_options), options);
}

}  // namespace kiln::autotune
