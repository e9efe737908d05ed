// The child's side of an isolated batch (see isolated_child.h): build, wait for the go, run,
// and say how each step ended; running out of memory is told apart from other failures.
#include "isolated_child.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <exception>
#include <new>
#include <stdexcept>
#include <system_error>

namespace kiln::autotune::isolated {
namespace {

void write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) ::_exit(120);  // the parent went away; nothing left to tell
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void send(int fd, char tag, const void* data, uint64_t count, size_t elem) {
  write_all(fd, &tag, 1);
  write_all(fd, &count, sizeof count);
  write_all(fd, data, count * elem);
}

// How a step of the child ended: returned (ok), threw (`error`: its message), or ran out of
// memory (`error`: what said so). The out-of-memory message proper is made before the fork
// (ChildSetup): little or nothing may be left to allocate one.
struct Outcome {
  bool out_of_memory = false;
  std::string error;
  bool ok() const { return !out_of_memory && error.empty(); }
};

// An outcome with a copy of `what`; out of memory when not even its bytes are left.
Outcome outcome(bool out_of_memory, const char* what) noexcept {
  try {
    return {out_of_memory, what};
  } catch (const std::bad_alloc&) {
    return {true, {}};
  }
}

// What an exception out of the candidate says. std::bad_alloc is running out of memory, and so
// is a thread that cannot start for want of resources (EAGAIN: pthread_create could not map
// its stack under the limit; the runtime's thread pool starts in the child).
Outcome outcome_of(std::exception_ptr e) noexcept {
  try {
    std::rethrow_exception(e);
  } catch (const std::bad_array_new_length& x) {  // a negative or overflowing size: a bug, not a lack of memory
    return outcome(false, x.what());
  } catch (const std::bad_alloc&) {
    return {true, "std::bad_alloc"};  // short enough for the string's inline buffer: no allocation
  } catch (const std::system_error& x) {
    const bool no_resources =
        x.code() == std::errc::resource_unavailable_try_again || x.code() == std::errc::not_enough_memory;
    if (!no_resources) return outcome(false, x.what());
    try {
      return {true, std::string("std::system_error: ") + x.what()};
    } catch (const std::bad_alloc&) {
      return {true, {}};
    }
  } catch (const std::exception& x) {
    return outcome(false, *x.what() ? x.what() : "exception without a message");
  } catch (...) {
    return outcome(false, "unknown exception");
  }
}

template <class F>
Outcome attempt(F&& f) {
  try {
    f();
    return {};
  } catch (...) {
    return outcome_of(std::current_exception());
  }
}

// Sends the error of a step that failed, and ends the child.
[[noreturn]] void fail_child(int fd, const Outcome& o, const ChildSetup& setup) {
  std::string with_cause;  // the out-of-memory message and what said so, if there are bytes for it
  if (o.out_of_memory && !o.error.empty()) {
    try {
      with_cause = setup.out_of_memory + " (" + o.error + ")";
    } catch (const std::bad_alloc&) {
    }
  }
  const std::string& error = !o.out_of_memory ? o.error : with_cause.empty() ? setup.out_of_memory : with_cause;
  send(fd, 'E', error.data(), error.size(), 1);
  ::_exit(0);  // _exit: the parent's atexit handlers and stdio buffers are not the child's to run
}

// The child's socket and setup, for its terminate handler (set in the child only).
int g_child_fd = -1;
const ChildSetup* g_child_setup = nullptr;

// An exception that nothing catches ends the program through std::terminate: one thrown through
// generated code (no unwind tables), out of a noexcept function or out of a thread. Its message
// is still the candidate's error, instead of a bare "crashed: signal 6 (Aborted)".
[[noreturn]] void report_uncaught() {
  if (std::exception_ptr e = std::current_exception()) {
    Outcome o = outcome_of(e);
    if (!o.out_of_memory) {
      try {
        o.error = "terminated by an uncaught exception: " + o.error;
      } catch (const std::bad_alloc&) {
        o = {true, {}};
      }
    }
    fail_child(g_child_fd, o, *g_child_setup);
  }
  std::abort();  // std::terminate called directly: a crash, as before
}

}  // namespace

[[noreturn]] void child_main(int fd, const IsolatedBuild& build, const std::vector<int>& inherited, pid_t parent,
                             const ChildSetup& setup) {
  // The candidate's crash must kill the child with its signal, not run the parent's handlers
  // (a test framework's, a crash reporter's) in the copy.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS}) ::signal(sig, SIG_DFL);
  sigset_t all;
  sigemptyset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  // A built child waits for the parent's go: if the parent dies instead, the child must not
  // wait (or run) forever. (The signal comes when the forking thread ends, which the batch
  // outlives: run_isolated_batch reaps every child before it returns.)
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(0);
  for (int other : inherited) ::close(other);
  // Both limits: the candidate has no business raising its own. A limit below what the child
  // already holds is allowed; it only makes every allocation fail.
  if (setup.memory_limit_bytes > 0) {
    rlimit data{setup.memory_limit_bytes, setup.memory_limit_bytes};
    ::setrlimit(RLIMIT_DATA, &data);
  }
  g_child_fd = fd;
  g_child_setup = &setup;
  std::set_terminate(report_uncaught);

  IsolatedFn run;
  Outcome outcome = attempt([&] {
    run = build();
    if (!run) throw std::runtime_error("the build gave nothing to run");
  });
  if (outcome.ok()) {
    send(fd, 'B', nullptr, 0, 1);
    char go = 0;
    ssize_t n;
    while ((n = ::read(fd, &go, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1 || go != 'G') ::_exit(0);  // the parent gave up on this candidate
    std::vector<double> v;
    outcome = attempt([&] { v = run(); });
    if (outcome.ok()) {
      send(fd, 'V', v.data(), v.size(), sizeof(double));
      ::_exit(0);
    }
  }
  fail_child(fd, outcome, setup);
}

std::string out_of_memory_message(size_t limit_bytes) {
  if (limit_bytes == 0) return "out of memory";
  // What the child started with counts too: a limit the tuner's own copy nearly fills is
  // worth knowing about.
  return fmt::format("out of memory: the candidate exceeded its memory limit of {} MiB, of which its copy of the "
                     "tuner took {} MiB at the start",
                     limit_bytes >> 20, data_segment_bytes() >> 20);
}

}  // namespace kiln::autotune::isolated
