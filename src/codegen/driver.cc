#include "kiln/codegen/driver.h"

#include <cstdlib>
#include <iostream>

#include "kiln/ir/printer.h"
#include "kiln/ir/transforms.h"
#include "kiln/ir/verify.h"
#include "kiln/schedule/lower.h"

namespace kiln::codegen {
namespace {

// The option's dumper, or one for KILN_DUMP_IR when the option names no stage.
StageDumper dumper(const PipelineOptions& o) {
  if (!o.dump.stage().empty()) return o.dump;
  const char* env = std::getenv("KILN_DUMP_IR");
  return StageDumper(env ? env : "", o.dump.stream());
}

void dump_after(const StageDumper& dump, const std::string& stage, const ir::PrimFunc& f) {
  if (dump.wants(stage)) dump("IR", stage, ir::to_string(f));
}

}  // namespace

const std::vector<std::string>& loop_stages() {
  static const std::vector<std::string> s = {"lower", "flatten_storage", "loop_simplify", "vectorize_loops",
                                             "unroll_loops", "final"};
  return s;
}

ir::PrimFunc optimize_ir(const ir::PrimFunc& lowered, const PipelineOptions& options) {
  StageDumper dump = dumper(options);
  ir::PrimFunc f = ir::flatten_storage(lowered);
  dump_after(dump, "flatten_storage", f);
  f = ir::simplify(f);
  dump_after(dump, "loop_simplify", f);
  f = ir::vectorize_loops(f, options.notes);
  dump_after(dump, "vectorize_loops", f);
  f = ir::unroll_loops(f);
  dump_after(dump, "unroll_loops", f);
  f = ir::simplify(f);
  dump_after(dump, "final", f);
  ir::verify(f);
  return f;
}

ir::PrimFunc lower_to_ir(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const std::string& name,
                         const PipelineOptions& options) {
  ir::PrimFunc f = schedule::lower(s, args, name);
  dump_after(dumper(options), "lower", f);
  return optimize_ir(f, options);
}

Module build(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const Target& target,
             const std::string& name, const PipelineOptions& options) {
  return build(std::vector<ir::PrimFunc>{lower_to_ir(s, args, name, options)}, target, options.build);
}

}  // namespace kiln::codegen
