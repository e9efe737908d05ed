// The child's side of an isolated batch (run_isolated.cc): what the parent gives a child, the
// messages it sends back, and its main function.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/autotune/measure_process.h"

namespace kiln::autotune::isolated {

// The child's messages: 'B' <u64 0> once built, then 'V' <u64 n> <n doubles> or 'E' <u64 n>
// <n bytes of error text>; or only the 'E' message when the build fails. The parent's: 'G'.
constexpr size_t kHeader = 1 + sizeof(uint64_t);

// What the child of a batch needs besides its job, made by the parent before the fork.
struct ChildSetup {
  size_t memory_limit_bytes = 0;  // 0: none
  std::string out_of_memory;      // the error of a job out of memory, before what said so
};

// The error of a child that ran out of memory under `limit_bytes` (0: no limit), before what
// said so; made by the parent, since the child may have nothing left to make it with.
std::string out_of_memory_message(size_t limit_bytes);

// The child: builds `build` on socket `fd`, waits for the go, runs, sends the result, exits.
// `inherited`: the parent's ends of the other children's sockets, which the fork copied; they
// are closed so that only the parent can talk to a child (and a child's exit is seen as EOF).
[[noreturn]] void child_main(int fd, const IsolatedBuild& build, const std::vector<int>& inherited, pid_t parent,
                             const ChildSetup& setup);

}  // namespace kiln::autotune::isolated
