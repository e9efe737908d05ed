// Isolated runs of candidates in forked children (see measure_process.h).
//
// One child per candidate, and one socket pair between it and the parent. The child builds,
// reports that it is built (or its error), then blocks, idle, until the parent says go, and
// runs. The parent lets up to build_jobs children build at once and, once every build of the
// batch is over, tells one built child at a time to run: builds overlap, runs never overlap one
// another or a build. A socket pair rather than pipes: the parent's "go" to a child that died
// meanwhile must fail with EPIPE (send with MSG_NOSIGNAL), not raise SIGPIPE in the tuner.
// A memory limit (RLIMIT_DATA) makes a candidate that allocates without bound fail at an
// allocation, in its own child, long before the machine runs out.
#include "kiln/autotune/measure_process.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "isolated_child.h"
#include "kiln/support/error.h"

namespace kiln::autotune {
namespace {

using isolated::ChildSetup;
using isolated::kHeader;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    // The batch kills only children past their deadline, and records those as timed out: a
    // SIGKILL from elsewhere is, nearly always, the kernel's OOM killer choosing this child.
    if (sig == SIGKILL)
      return fmt::format("crashed: signal {} ({}), not sent by the tuner: most likely the kernel's out-of-memory killer",
                         sig, ::strsignal(sig));
    return fmt::format("crashed: signal {} ({})", sig, ::strsignal(sig));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "";
}

// Decodes a complete message; empty error and values on success.
bool decode(const std::string& buf, IsolatedResult* r) {
  if (buf.size() < kHeader) return false;
  uint64_t n;
  std::memcpy(&n, buf.data() + 1, sizeof n);
  const char* payload = buf.data() + kHeader;
  const size_t avail = buf.size() - kHeader;
  if (buf[0] == 'V' && avail == n * sizeof(double)) {
    r->values.resize(n);
    if (n > 0) std::memcpy(r->values.data(), payload, avail);  // data() of an empty vector may be null
    return true;
  }
  if (buf[0] == 'E' && avail == n) {
    r->error.assign(payload, n);
    return true;
  }
  return false;
}

// Where a child is. Building and Running end at the child's message (or its exit); Exiting is
// a child that closed its socket and is waited for, bounded by the same deadline.
enum class Step { Building, Idle, Running, Exiting, Done };

struct Child {
  pid_t pid = -1;              // until reaped
  int fd = -1;                 // the parent's end of the socket pair, until EOF
  Step step = Step::Done;
  Clock::time_point started;   // of the current step
  Clock::time_point deadline;  // of the current step
  double worked_s = 0;         // building before the current step (the wait for "go" not counted)
  std::string buf;             // bytes received since the last complete message
};

// The children of one batch and their results. The destructor kills and reaps every child still
// there, so that none outlives an error of the parent (an exception out of run_isolated_batch).
class Batch {
 public:
  Batch(const std::vector<IsolatedBuild>& jobs, double timeout_s, const IsolationOptions& options)
      : jobs_(jobs), timeout_s_(timeout_s), on_result_(options.on_result), children_(jobs.size()), results_(jobs.size()) {
    setup_.memory_limit_bytes = memory_limit_enforced() ? options.memory_limit_bytes : 0;
    setup_.out_of_memory = isolated::out_of_memory_message(setup_.memory_limit_bytes);
  }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch() {
    for (Child& c : children_) {
      if (c.pid > 0) {
        ::kill(c.pid, SIGKILL);
        reap_blocking(c.pid);
      }
      if (c.fd >= 0) ::close(c.fd);
    }
  }

  Step step(size_t i) const { return children_[i].step; }
  std::vector<IsolatedResult> take_results() { return std::move(results_); }

  // Hands the results now final to on_result, in the order of the jobs.
  void report() {
    while (reported_ < children_.size() && children_[reported_].step == Step::Done) {
      const size_t i = reported_++;
      if (on_result_) on_result_(i, results_[i]);
    }
  }

  // Forks the child of job i, which starts building at once.
  void spawn(size_t i) {
    Child& c = children_[i];
    c.started = Clock::now();
    c.deadline = c.started + budget(timeout_s_);
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      fail(c, i, fmt::format("cannot create a socket pair: {}", std::strerror(errno)));
      return;
    }
    std::vector<int> inherited = {fds[0]};  // made here: the child should not allocate
    for (const Child& other : children_)
      if (other.fd >= 0) inherited.push_back(other.fd);
    const pid_t parent = ::getpid();
    std::fflush(nullptr);  // or the child's copy of unflushed stdio would be written twice
    pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      fail(c, i, fmt::format("cannot fork: {}", std::strerror(errno)));
      return;
    }
    if (pid == 0) isolated::child_main(fds[1], jobs_[i], inherited, parent, setup_);
    ::close(fds[1]);
    c.pid = pid;
    c.fd = fds[0];
    c.step = Step::Building;
  }

  // Tells built child i to run, with what its build left of the timeout.
  void go(size_t i) {
    Child& c = children_[i];
    c.step = Step::Running;
    c.started = Clock::now();
    c.deadline = c.started + budget(timeout_s_ - c.worked_s);
    const char g = 'G';
    // A child that died while idle makes this fail; its EOF then tells the rest.
    (void)::send(c.fd, &g, 1, MSG_NOSIGNAL);
  }

  // One round of waiting, at most until the earliest deadline of the children in `active`:
  // reads what they sent, reaps the ones that exited, kills the ones past their deadline.
  void pump(const std::vector<size_t>& active) {
    std::vector<pollfd> fds;
    std::vector<size_t> who;
    Clock::time_point wake = Clock::time_point::max();
    bool exiting = false;
    for (size_t i : active) {
      const Child& c = children_[i];
      if (c.step == Step::Building || c.step == Step::Running) {
        fds.push_back({c.fd, POLLIN, 0});
        who.push_back(i);
      }
      exiting = exiting || c.step == Step::Exiting;
      if (c.step != Step::Idle && c.step != Step::Done) wake = std::min(wake, c.deadline);
    }
    if (wake == Clock::time_point::max()) return;
    double wait_ms = std::max(0.0, std::chrono::duration<double, std::milli>(wake - Clock::now()).count());
    if (exiting) wait_ms = std::min(wait_ms, 0.2);  // an exiting child is polled for, briefly
    timespec ts{static_cast<time_t>(wait_ms / 1000), static_cast<long>(std::fmod(wait_ms, 1000.0) * 1e6)};
    if (::ppoll(fds.data(), fds.size(), &ts, nullptr) > 0) {
      for (size_t k = 0; k < fds.size(); ++k)
        if (fds[k].revents) receive(children_[who[k]]);
    }
    for (size_t i : active) {
      Child& c = children_[i];
      if (c.step == Step::Exiting) try_reap(c, i);
      const bool waiting = c.step == Step::Building || c.step == Step::Running || c.step == Step::Exiting;
      if (waiting && Clock::now() >= c.deadline) time_out(c, i);
    }
  }

 private:
  static Clock::duration budget(double seconds) {
    // Capped (at 30 years) so that a huge timeout does not overflow the clock's nanoseconds.
    const double s = std::min(std::max(0.0, seconds), 1e9);
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }

  static int reap_blocking(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
  }

  // Reads what child c sent. Read while waiting: a large result must not fill the socket and
  // block the child.
  void receive(Child& c) {
    char chunk[1 << 16];
    ssize_t n = ::read(c.fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {  // the child closed its end: it is exiting (or died)
      ::close(c.fd);
      c.fd = -1;
      c.step = Step::Exiting;
      return;
    }
    c.buf.append(chunk, static_cast<size_t>(n));
    if (c.step == Step::Building && c.buf.size() >= kHeader && c.buf[0] == 'B') {
      c.buf.erase(0, kHeader);
      c.worked_s += seconds_since(c.started);
      c.step = Step::Idle;
    }
  }

  // The child closed its socket; it may still be exiting (or hang after closing).
  void try_reap(Child& c, size_t i) {
    int status = 0;
    pid_t w = ::waitpid(c.pid, &status, WNOHANG);
    if (w == 0 || (w < 0 && errno == EINTR)) return;
    // w < 0 otherwise: reaped elsewhere (a SIGCHLD handler); what it sent is all there is.
    c.pid = -1;
    finish(c, i, w > 0 ? describe_status(status) : "");
  }

  void time_out(Child& c, size_t i) {
    if (c.pid > 0) {
      ::kill(c.pid, SIGKILL);
      reap_blocking(c.pid);
      c.pid = -1;
    }
    c.buf.clear();
    finish(c, i, fmt::format("timed out after {:.1f} s", timeout_s_));
  }

  void fail(Child& c, size_t i, const std::string& error) {
    c.buf.clear();
    finish(c, i, error);
  }

  // `died`: how the child ended when that is an error; otherwise its message is the result.
  void finish(Child& c, size_t i, const std::string& died) {
    if (c.fd >= 0) ::close(c.fd);
    c.fd = -1;
    c.step = Step::Done;
    IsolatedResult& r = results_[i];
    r.wall_seconds = c.worked_s + seconds_since(c.started);
    if (!died.empty()) r.error = died;
    else if (!decode(c.buf, &r)) r.error = "the child exited without a complete result";
    if (!r.ok()) r.values.clear();
  }

  const std::vector<IsolatedBuild>& jobs_;
  const double timeout_s_;
  const std::function<void(size_t, const IsolatedResult&)>& on_result_;
  ChildSetup setup_;
  std::vector<Child> children_;
  std::vector<IsolatedResult> results_;
  size_t reported_ = 0;  // results handed to on_result_: those of jobs [0, reported_)
};

}  // namespace

bool memory_limit_enforced() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(__SANITIZE_HWADDRESS__)
  return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer) || \
    __has_feature(hwaddress_sanitizer)
  return false;
#endif
#endif
  // This file built plainly, but the program under a sanitizer all the same (a sanitized test
  // binary linking this library): its runtime is there to be found.
  static const bool sanitized = ::dlsym(RTLD_DEFAULT, "__asan_init") || ::dlsym(RTLD_DEFAULT, "__tsan_init") ||
                                ::dlsym(RTLD_DEFAULT, "__msan_init") || ::dlsym(RTLD_DEFAULT, "__hwasan_init");
  return !sanitized;
}

std::vector<IsolatedResult> run_isolated_batch(const std::vector<IsolatedBuild>& jobs, int build_jobs, double timeout_s,
                                               const IsolationOptions& options) {
  KILN_USER_CHECK(build_jobs >= 1) << "build_jobs must be at least 1, got " << build_jobs;
  Batch batch(jobs, timeout_s, options);
  // Phase 1: every build, at most build_jobs at once; the next child starts as one finishes.
  // The phase ends when no child is building or exiting: nothing but idle children is left.
  size_t next = 0;
  for (;;) {
    std::vector<size_t> active;
    int building = 0;
    for (size_t i = 0; i < next; ++i) {
      const Step s = batch.step(i);
      if (s == Step::Building || s == Step::Exiting) active.push_back(i);
      building += s == Step::Building;
    }
    for (; building < build_jobs && next < jobs.size(); ++next) {
      batch.spawn(next);
      if (batch.step(next) == Step::Building) {
        active.push_back(next);
        ++building;
      }
    }
    if (active.empty()) break;
    batch.pump(active);
    batch.report();
  }
  // Phase 2: the runs, one at a time, in the batch's order, on an otherwise quiet machine.
  batch.report();
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (batch.step(i) != Step::Idle) continue;
    batch.go(i);
    while (batch.step(i) != Step::Done) batch.pump({i});
    batch.report();
  }
  batch.report();
  return batch.take_results();
}

IsolatedResult run_isolated(const IsolatedFn& fn, double timeout_s, const IsolationOptions& options) {
  return run_isolated_batch({[&fn] { return fn; }}, 1, timeout_s, options)[0];
}

}  // namespace kiln::autotune
