/* The sanitizers' default options, linked into every executable of a -DKILN_SANITIZE build
 * (cmake/sanitize.cmake). The runtimes call these hooks before main; an option given in
 * ASAN_OPTIONS, UBSAN_OPTIONS, LSAN_OPTIONS or TSAN_OPTIONS overrides the one here. They must be
 * defined in the executable itself: the dynamic sanitizer runtimes' own weak definitions come
 * before any shared library's. */
#define KILN_SANITIZER_HOOK __attribute__((visibility("default"), used))

/* Leak detection stays on (ASan's default on x86-64 Linux). Nothing of kiln's is suppressed: the
 * runtime's deliberately leaked thread pool stays reachable from a global (g_pool), which LSan
 * does not report, and forked children end with _exit, which skips the leak check. */
KILN_SANITIZER_HOOK const char* __asan_default_options(void) {
  return "detect_leaks=1:check_initialization_order=1";
}

/* The one exception: PoCL, the OpenCL driver the device layer loads in the OpenCL tests, leaves
 * its own allocations and its compiler's (LLVM 15's) behind at exit: their leaks, not kiln's
 * (runner.device_inputs_opencl: 16 bytes from libpocl, 590 KiB held by them from libLLVM-15). */
KILN_SANITIZER_HOOK const char* __lsan_default_suppressions(void) { return "leak:libpocl.so\nleak:libLLVM-15.so\n"; }

/* -fno-sanitize-recover=all already stops at the first report; halt_on_error says so for any
 * check built without it, and the stack shows where the undefined operation came from. */
KILN_SANITIZER_HOOK const char* __ubsan_default_options(void) { return "halt_on_error=1:print_stacktrace=1"; }

/* die_after_fork=0: the autotuner forks its measuring children from a process whose thread pool
 * is running, and a child starts a fresh pool (src/runtime/thread_pool.cc); TSan would otherwise
 * end any child of a multi-threaded process that starts a thread. */
KILN_SANITIZER_HOOK const char* __tsan_default_options(void) { return "second_deadlock_stack=1:die_after_fork=0"; }

/* Not suppressed, but to be avoided: XGBoost (the autotuner's cost model, uninstrumented) runs
 * OpenMP loops whose barriers TSan cannot see, so every buffer an OpenMP thread touches is
 * reported as a race inside XGBoost (262 reports in kiln_tests' [autotune] cases). Run TSan
 * builds with OMP_NUM_THREADS=1 (docs/reliability.md, "Sanitizers"): then none is reported. */
