// A schedule's loop nest: the loop-level IR function it describes (TVM's tvm.lower for te
// schedules), before the loop passes (kiln::loop_ir in pipeline.h runs them too).
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/stmt.h"
#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// The function computing the schedule's outputs. `args` are its parameters in order, each a
// global ir::Buffer of the tensor's shape: every input placeholder the program reads and every
// output must be among them (kiln::Error otherwise, as for an argument that is neither). A
// placeholder the program does not read is a parameter nothing loads.
//
// Each intermediate stage gets an ir::Allocate of its realized region (scope from cache_read /
// cache_write / set_scope), at the root or inside the loop it is attached at; inlined stages are
// substituted into their readers. Loads and stores keep one index per dimension (run
// ir::flatten_storage afterwards); index expressions are simplified.
ir::PrimFunc loop_nest(const Schedule& s, const std::vector<te::Tensor>& args, const std::string& name);

}  // namespace kiln::schedule
