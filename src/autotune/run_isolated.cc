// Isolated runs of candidates in forked children (see measure_process.h).
#include "kiln/autotune/measure_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <thread>

namespace kiln::autotune {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The child's message: 'V' <u64 n> <n doubles>, or 'E' <u64 n> <n bytes of error text>.
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

[[noreturn]] void child_main(int fd, const std::function<std::vector<double>()>& fn) {
  // The candidate's crash must kill the child with its signal, not run the parent's handlers
  // (a test framework's, a crash reporter's) in the copy.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS}) ::signal(sig, SIG_DFL);
  sigset_t all;
  sigemptyset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  std::string error;
  try {
    std::vector<double> v = fn();
    send(fd, 'V', v.data(), v.size(), sizeof(double));
    ::_exit(0);
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown exception";
  }
  if (error.empty()) error = "exception without a message";
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
  if (buf.size() < 1 + sizeof(uint64_t)) return false;
  uint64_t n;
  std::memcpy(&n, buf.data() + 1, sizeof n);
  const char* payload = buf.data() + 1 + sizeof n;
  const size_t avail = buf.size() - 1 - sizeof n;
  if (buf[0] == 'V' && avail == n * sizeof(double)) {
    r->values.resize(n);
    std::memcpy(r->values.data(), payload, avail);
    return true;
  }
  if (buf[0] == 'E' && avail == n) {
    r->error.assign(payload, n);
    return true;
  }
  return false;
}

}  // namespace

IsolatedResult run_isolated(const std::function<std::vector<double>()>& fn, double timeout_s) {
  IsolatedResult r;
  const auto t0 = Clock::now();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.error = fmt::format("cannot create a pipe: {}", std::strerror(errno));
    return r;
  }
  std::fflush(nullptr);  // or the child's copy of unflushed stdio would be written twice
  pid_t pid = ::fork();
  if (pid < 0) {
    r.error = fmt::format("cannot fork: {}", std::strerror(errno));
    ::close(fds[0]);
    ::close(fds[1]);
    return r;
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(fds[1], fn);
  }
  ::close(fds[1]);

  // Read while waiting: a large result must not fill the pipe and block the child.
  std::string buf;
  bool timed_out = false, eof = false;
  char chunk[1 << 16];
  while (!eof) {
    const double left = timeout_s - seconds_since(t0);
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::ceil(left * 1000)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) continue;  // timeout: the loop head decides
    ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) eof = true;
    else buf.append(chunk, static_cast<size_t>(n));
  }
  ::close(fds[0]);

  // The child closed its end; it may still be exiting (or hang after closing): wait, bounded.
  int status = 0;
  bool reaped = false;
  while (!timed_out && !reaped) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) reaped = true;
    else if (w < 0 && errno != EINTR) break;
    else if (seconds_since(t0) >= timeout_s) timed_out = true;
    else std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (!reaped) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  r.wall_seconds = seconds_since(t0);
  if (timed_out) {
    r.values.clear();
    r.error = fmt::format("timed out after {:.1f} s", timeout_s);
    return r;
  }
  std::string died = describe_status(status);
  if (!died.empty()) {
    r.error = died;
    return r;
  }
  if (!decode(buf, &r)) r.error = "the child exited without a complete result";
  return r;
}

}  // namespace kiln::autotune
