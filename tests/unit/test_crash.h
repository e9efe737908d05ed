// Crashing on purpose, for the tests of crash isolation (candidates run in forked children).
#pragma once

namespace kiln_test {

// A store through a null pointer: the process dies of SIGSEGV, the signal the tests expect.
// Both volatile: the compiler can neither see the null (and trap) nor drop the store. UBSan's
// null check is off in this one function: in a -DKILN_SANITIZE=undefined build it would end
// the process with its own report (exit status 1) before the store faults.
__attribute__((noinline, no_sanitize("null"))) inline void segfault() {
  volatile int* volatile p = nullptr;
  *p = 42;
}

}  // namespace kiln_test
