// kiln::compile: the graph pipeline, from an imported module to kernels, plan and weights.
#include "kiln/compiler.h"

#include "kiln/autotune/apply_log.h"

#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "kiln/relay/lower_graph.h"
#include "kiln/relay/printer.h"
#include "kiln/relay/transforms.h"
#include "kiln/support/error.h"
#include "kiln/te/ops/lowering.h"

namespace kiln {

namespace {

const std::vector<std::string>& graph_stages() {
  static const std::vector<std::string> s = {"infer_types", "fold_constants", "fold_batch_norm", "simplify",
                                             "eliminate_common_subexpr", "remove_dead", "alter_layout",
                                             "fuse_ops", "plan_memory"};
  return s;
}
const std::vector<std::string>& kernel_stages() {  // codegen/driver.h
  static const std::vector<std::string> s = {"lower", "flatten_storage", "simplify", "vectorize_loops",
                                             "unroll_loops", "final"};
  return s;
}

// Prints the graph after the stage CompileOptions::dump_ir_stage names (or after all of them).
class Dumper {
 public:
  explicit Dumper(const CompileOptions& o) : stage_(o.dump_ir_stage), os_(o.dump_to ? o.dump_to : &std::cerr) {
    if (stage_.empty() || stage_ == "all") return;
    bool known = false;
    std::string all;
    for (const auto* list : {&graph_stages(), &kernel_stages()})
      for (const std::string& s : *list) {
        known = known || s == stage_;
        all += (all.empty() ? "" : ", ") + s;
      }
    KILN_USER_CHECK(known) << "unknown IR stage '" << stage_ << "' to dump; stages: " << all << ", all";
  }
  bool wants(const std::string& stage) const { return stage_ == "all" || stage_ == stage; }
  void operator()(const std::string& stage, const std::string& text) const {
    if (wants(stage)) *os_ << "// graph after " << stage << "\n" << text;
  }
  // Kernel-level stages go to the loop-level driver (one dump per kernel).
  std::string kernel_stage() const {
    for (const std::string& s : kernel_stages())
      if (stage_ == s && stage_ != "simplify") return s;
    return stage_ == "all" ? "all" : "";
  }
  std::ostream* stream() const { return os_; }

 private:
  std::string stage_;
  std::ostream* os_;
};

// Every op without a kernel lowering, with the nodes using it: one message for all of them.
void check_lowerings(const relay::FusedModule& m) {
  std::map<std::string, std::vector<std::string>> missing;
  for (const relay::FusedGroup& g : m.groups)
    for (const relay::Expr& e : g.calls) {
      const auto* c = e.as<relay::CallNode>();
      if (!c->op->has_lowering()) missing[c->op_name()].push_back(c->name.empty() ? "?" : c->name);
    }
  if (missing.empty()) return;
  std::string list;
  for (const auto& [op, nodes] : missing) {
    list += "\n  " + op + " (node" + (nodes.size() > 1 ? "s " : " ");
    for (size_t i = 0; i < nodes.size() && i < 5; ++i) list += (i ? ", " : "") + nodes[i];
    if (nodes.size() > 5) list += ", ... " + std::to_string(nodes.size()) + " in all";
    list += ")";
  }
  // Valid models using ops the library does not implement yet: "unsupported", not malformed.
  KILN_SUPPORTED(false) << "no kernel lowering for " << missing.size() << " op" << (missing.size() > 1 ? "s" : "")
                        << ":" << list;
}

}  // namespace

FusedProgram fuse_model(const relay::Module& module, const CompileOptions& options) {
  using namespace relay;
  te::ops::register_lowerings();
  register_layout_lowerings();  // the two ops alter_layout makes
  Dumper dump(options);
  auto stage = [&](const std::string& name, Module m) {
    dump(name, to_string(m));
    return m;
  };

  Module m = stage("infer_types", infer_types(module));
  m = stage("fold_constants", fold_constants(m));
  m = stage("fold_batch_norm", fold_batch_norm(m));
  m = stage("simplify", simplify(m));
  m = stage("eliminate_common_subexpr", eliminate_common_subexpr(m));
  m = stage("remove_dead", remove_dead(m));
  // Off by default (CompileOptions::alter_layout): the library's convs are NCHW kernels reading
  // prepacked weights; nn.conv2d_NCHWc has only a plain direct lowering so far.
  if (options.alter_layout) m = stage("alter_layout", alter_layout(m));

  FusedProgram out;
  out.fused = fuse_ops(m);
  dump("fuse_ops", to_string(out.fused));
  check_lowerings(out.fused);
  out.prepacked = prepack_weights(&out.fused, options.winograd);
  return out;
}

CompiledModel compile(const relay::Module& module, const CompileOptions& options) {
  using namespace relay;
  Dumper dump(options);
  CompiledModel out;
  out.notes.push_back("target: " + options.target.summary());
  FusedProgram program = fuse_model(module, options);
  FusedModule& fused = program.fused;
  MemoryPlan memory = plan_memory(fused);
  dump("plan_memory", memory.str());
  out.notes.push_back(memory.note());
  std::optional<autotune::LogSchedules> tuned;
  if (!options.tuning_log.empty()) tuned.emplace(options.tuning_log, options.target.str());

  codegen::PipelineOptions pipeline;
  pipeline.dump_ir_after = dump.kernel_stage();
  pipeline.dump_to = dump.stream();
  pipeline.notes = &out.notes;
  std::vector<std::string> names;
  for (size_t i = 0; i < fused.groups.size(); ++i) {
    names.push_back(kernel_name(fused.groups[i], static_cast<int>(i)));
    schedule::Config cfg;
    const bool use_log = tuned && tuned->config_for(fused.groups[i], program.prepacked, &cfg);
    out.kernels.push_back(lower_group(fused.groups[i], names.back(), pipeline, &program.prepacked, use_log ? &cfg : nullptr));
  }
  if (tuned) {
    std::vector<std::string> notes = tuned->notes();
    out.notes.insert(out.notes.end(), notes.begin(), notes.end());
  }
  out.plan = make_graph_plan(fused, memory, names, options.target.str(), &out.weights);
  return out;
}

}  // namespace kiln
