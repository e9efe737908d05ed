#include "kiln/codegen/driver.h"

#include <cstdlib>
#include <iostream>

#include "kiln/ir/printer.h"
#include "kiln/ir/transforms.h"
#include "kiln/ir/verify.h"
#include "kiln/schedule/lower.h"

namespace kiln::codegen {
namespace {

// Prints the function after a pass when asked to, by option or by KILN_DUMP_IR.
class IrDumper {
 public:
  explicit IrDumper(const PipelineOptions& o) : which_(o.dump_ir_after), os_(o.dump_to ? o.dump_to : &std::cerr) {
    if (which_.empty()) {
      if (const char* env = std::getenv("KILN_DUMP_IR")) which_ = env;
    }
  }
  void after(const std::string& pass, const ir::PrimFunc& f) const {
    if (which_ == "all" || which_ == pass) *os_ << "// IR after " << pass << "\n" << ir::to_string(f);
  }

 private:
  std::string which_;
  std::ostream* os_;
};

}  // namespace

ir::PrimFunc optimize_ir(const ir::PrimFunc& lowered, const PipelineOptions& options) {
  IrDumper dump(options);
  ir::PrimFunc f = ir::flatten_storage(lowered);
  dump.after("flatten_storage", f);
  f = ir::simplify(f);
  dump.after("simplify", f);
  f = ir::vectorize_loops(f, options.notes);
  dump.after("vectorize_loops", f);
  f = ir::unroll_loops(f);
  dump.after("unroll_loops", f);
  f = ir::simplify(f);
  dump.after("final", f);
  ir::verify(f);
  return f;
}

ir::PrimFunc lower_to_ir(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const std::string& name,
                         const PipelineOptions& options) {
  ir::PrimFunc f = schedule::lower(s, args, name);
  IrDumper(options).after("lower", f);
  return optimize_ir(f, options);
}

Module build(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const Target& target,
             const std::string& name, const PipelineOptions& options) {
  return build(std::vector<ir::PrimFunc>{lower_to_ir(s, args, name, options)}, target, options.build);
}

}  // namespace kiln::codegen
