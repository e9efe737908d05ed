// Measuring candidates without risking the tuner: each runs in a forked child process with a
// timeout, so a kernel that crashes (a bad schedule reading out of bounds) or hangs is recorded
// as an error and the tuner goes on. A batch of candidates is built in parallel and then run one
// at a time, so that timings are never taken next to another build or run. And the timer the
// child uses: repeated timed runs, each at least a minimum duration, with the CPU caches flushed
// between runs when asked.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace kiln::autotune {

struct IsolatedResult {
  std::vector<double> values;
  // Empty on success; otherwise what went wrong: the message of an exception thrown by the
  // candidate (e.g. a wrong result), "crashed: signal 11 (Segmentation fault)", "timed out
  // after 2.0 s", "exited with status 3", ...
  std::string error;
  // Seconds the child worked: from its fork to its result, less the time it waited, built, for
  // its turn to run.
  double wall_seconds = 0;
  bool ok() const { return error.empty(); }
};

// What a child runs; its values are sent back to the parent.
using IsolatedFn = std::function<std::vector<double>()>;
// A candidate in two steps: building it (code generation: slow, and it may hang or crash too)
// returns the step that runs (measures) it.
using IsolatedBuild = std::function<IsolatedFn()>;

// What a batch's children may use, and who hears of each result first.
struct IsolationOptions {
  // The most memory (bytes; 0: no limit) a child may hold in private writable mappings: its heap
  // and anonymous mmaps, the copy of the parent it starts as included (RLIMIT_DATA). A build or
  // run that allocates past it fails at that allocation, so a runaway candidate ends as
  // "out of memory: ..." instead of meeting the kernel's OOM killer (or taking the machine down
  // with it). Not enforced under AddressSanitizer or ThreadSanitizer (memory_limit_enforced()).
  size_t memory_limit_bytes = 0;
  // Called in the parent with each job's index and result, in the order of the jobs, as soon as
  // that job and every job before it are over: e.g. to log each measurement before the rest of
  // the batch runs, so that a tuner killed in mid-batch keeps what it measured. What it throws
  // ends the batch (its children are killed and reaped) and comes out of run_isolated_batch.
  std::function<void(size_t job, const IsolatedResult& result)> on_result;
};

// Builds and runs each job in its own forked child and returns their values or errors, in the
// order of `jobs`. Up to build_jobs children build at once; a built child then waits, idle,
// until every build of the batch is over, and the built ones run one at a time in order: no two
// runs overlap, and no run overlaps a build. Each child has timeout_s for its build and its run
// together (not counting its wait), as if it had run alone. A build that throws, crashes or
// hangs is that job's error, as for the run. Every child is reaped before this returns, or
// throws (only for build_jobs < 1 or the parent running out of memory).
//
// A child is a copy of the calling thread only: the jobs must not rely on other threads of the
// parent (a thread pool must be started inside the child). Core dumps are disabled in the child
// and its fatal-signal handlers reset, so a crash is the child's alone; the child is killed if
// the parent dies. Never throws for anything a child does. A child that runs out of memory
// (std::bad_alloc) reports "out of memory: ..." naming the limit; one killed by SIGKILL that
// the batch did not send (the kernel's OOM killer, usually) says so.
std::vector<IsolatedResult> run_isolated_batch(const std::vector<IsolatedBuild>& jobs, int build_jobs,
                                               double timeout_s, const IsolationOptions& options = {});

// Runs fn alone in a forked child (a batch of one with nothing to build): its values or its error.
IsolatedResult run_isolated(const IsolatedFn& fn, double timeout_s, const IsolationOptions& options = {});

// Whether IsolationOptions::memory_limit_bytes is enforced: false in builds under AddressSanitizer
// or ThreadSanitizer, whose shadow memory is terabytes of reserved mappings that any limit on a
// process's mappings would already exceed.
bool memory_limit_enforced();
// The memory this machine lets the process use: the physical memory, or the cgroup's limit when
// lower (a container). 0 when neither can be read.
size_t usable_memory_bytes();
// What the calling process holds in private writable mappings now (VmData): what a forked child
// starts with, counted against its memory limit. 0 when /proc cannot be read.
size_t data_segment_bytes();

struct TimerOptions {
  int warmup = 1;               // untimed calls before the samples
  int repeat = 5;               // samples
  double min_duration_s = 0.01; // each sample repeats the call until at least this long
  bool flush_cache = false;     // before each sample, write a buffer larger than the LLC
  size_t flush_bytes = 0;       // 0: twice last_level_cache_bytes()
  // A cap on the whole timing, warmup included (0: none). A slow candidate (a bad schedule at
  // seconds a call) would otherwise cost warmup + repeat calls, most of a tuner's time: once the
  // calls so far say the next sample would end past the cap, no more samples are taken (always
  // at least one), and a sample stops repeating the call toward min_duration_s at the cap. The
  // result is still the real time per call, from fewer samples: not an error.
  double max_total_s = 0;
  // Run before each sample, outside the timing: e.g. evicting a kernel's weights from the
  // private caches (demote_to_llc), so that the sample times what a model's call of it finds.
  std::function<void()> before_sample;
};

struct TimingResult {
  std::vector<double> samples;  // seconds per call, one per sample
  std::vector<int> calls;       // calls each sample made
  double median = 0;            // median of samples
};

// Times fn. A sample reads the clock after every call, which adds tens of nanoseconds per call:
// negligible for kernels, not for trivial functions.
TimingResult time_function(const std::function<void()>& fn, const TimerOptions& options = {});

// Size of the last-level CPU cache (sysconf, then sysfs, else 32 MiB).
size_t last_level_cache_bytes();
// Evicts the caches by writing and reading back `bytes` of memory (one static buffer: not for
// concurrent use; the tuner measures one candidate at a time).
void flush_cpu_cache(size_t bytes);
// Moves [data, data + bytes) out of this core's private caches into the shared last level
// (cldemote, a hint; a no-op on CPUs without it).
void demote_to_llc(const void* data, size_t bytes);

}  // namespace kiln::autotune
