// Isolated runs of candidates in forked children (see measure_process.h).
//
// One child per candidate, and one socket pair between it and the parent. The child builds,
// reports that it is built (or its error), then blocks, idle, until the parent says go, and
// runs. The parent lets up to build_jobs children build at once and, once every build of the
// batch is over, tells one built child at a time to run: builds overlap, runs never overlap one
// another or a build. A socket pair rather than pipes: the parent's "go" to a child that died
// meanwhile must fail with EPIPE (send with MSG_NOSIGNAL), not raise SIGPIPE in the tuner.
#include "kiln/autotune/measure_process.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>

#include "kiln/support/error.h"

namespace kiln::autotune {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The child's messages: 'B' <u64 0> once built, then 'V' <u64 n> <n doubles> or 'E' <u64 n>
// <n bytes of error text>; or only the 'E' message when the build fails. The parent's: 'G'.
constexpr size_t kHeader = 1 + sizeof(uint64_t);

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

// The message of what `f` threw; empty when it returned.
template <class F>
std::string attempt(F&& f) {
  try {
    f();
    return "";
  } catch (const std::exception& e) {
    return *e.what() ? e.what() : "exception without a message";
  } catch (...) {
    return "unknown exception";
  }
}

// `inherited`: the parent's ends of the other children's sockets, which the fork copied; they
// are closed so that only the parent can talk to a child (and a child's exit is seen as EOF).
[[noreturn]] void child_main(int fd, const IsolatedBuild& build, const std::vector<int>& inherited, pid_t parent) {
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

  IsolatedFn run;
  std::string error = attempt([&] {
    run = build();
    if (!run) throw std::runtime_error("the build gave nothing to run");
  });
  if (error.empty()) {
    send(fd, 'B', nullptr, 0, 1);
    char go = 0;
    ssize_t n;
    while ((n = ::read(fd, &go, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1 || go != 'G') ::_exit(0);  // the parent gave up on this candidate
    std::vector<double> v;
    error = attempt([&] { v = run(); });
    if (error.empty()) {
      send(fd, 'V', v.data(), v.size(), sizeof(double));
      ::_exit(0);
    }
  }
  send(fd, 'E', error.data(), error.size(), 1);
  ::_exit(0);  // _exit: the parent's atexit handlers and stdio buffers are not the child's to run
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
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
  Batch(const std::vector<IsolatedBuild>& jobs, double timeout_s)
      : jobs_(jobs), timeout_s_(timeout_s), children_(jobs.size()), results_(jobs.size()) {}
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
    if (pid == 0) child_main(fds[1], jobs_[i], inherited, parent);
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
  std::vector<Child> children_;
  std::vector<IsolatedResult> results_;
};

}  // namespace

std::vector<IsolatedResult> run_isolated_batch(const std::vector<IsolatedBuild>& jobs, int build_jobs, double timeout_s) {
  KILN_USER_CHECK(build_jobs >= 1) << "build_jobs must be at least 1, got " << build_jobs;
  Batch batch(jobs, timeout_s);
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
  }
  // Phase 2: the runs, one at a time, in the batch's order, on an otherwise quiet machine.
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (batch.step(i) != Step::Idle) continue;
    batch.go(i);
    while (batch.step(i) != Step::Done) batch.pump({i});
  }
  return batch.take_results();
}

IsolatedResult run_isolated(const IsolatedFn& fn, double timeout_s) {
  return run_isolated_batch({[&fn] { return fn; }}, 1, timeout_s)[0];
}

}  // namespace kiln::autotune
