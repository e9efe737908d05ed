// The reference interpreter of lowered PrimFuncs (test_lower_interp.cc), for numerical tests
// of schedules before the LLVM backend exists.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/ir/stmt.h"

namespace kiln::testing {

// An element address passed to an extern function: element `offset` of `data`.
struct Pointer {
  std::vector<double>* data;
  int64_t offset;
};
// An extern function: its pointer arguments and its integer arguments, each in call order.
using ExternFn = std::function<void(const std::vector<Pointer>& ptrs, const std::vector<int64_t>& ints)>;

// Runs f with args[i] as the row-major contents of parameter i (in and out). Throws
// std::runtime_error on an out-of-bounds access or anything it cannot run.
void interpret(const ir::PrimFunc& f, std::vector<std::vector<double>>& args,
               const std::map<std::string, ExternFn>& externs = {});

}  // namespace kiln::testing
