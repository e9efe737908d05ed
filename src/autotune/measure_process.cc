#include "kiln/autotune/measure_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <exception>
#include <fstream>
#include <thread>

#include "kiln/support/error.h"

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

size_t last_level_cache_bytes() {
  for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    long v = ::sysconf(name);
    if (v > 0) return static_cast<size_t>(v);
  }
  for (const char* index : {"index3", "index2"}) {
    std::ifstream f(std::string("/sys/devices/system/cpu/cpu0/cache/") + index + "/size");
    size_t kib = 0;
    char unit = 0;
    if (f >> kib >> unit && kib > 0) return unit == 'M' ? kib << 20 : kib << 10;
  }
  return size_t{32} << 20;
}

void flush_cpu_cache(size_t bytes) {
  static std::vector<char> buffer;
  if (buffer.size() < bytes) buffer.resize(bytes);
  // Writing every line evicts what was cached; reading back through a volatile sink keeps the
  // compiler from dropping the writes.
  static char round = 0;
  ++round;
  for (size_t i = 0; i < bytes; i += 64) buffer[i] = static_cast<char>(round + i);
  volatile char sink = 0;
  for (size_t i = 0; i < bytes; i += 4096) sink = sink + buffer[i];
}

void demote_to_llc(const void* data, size_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
  // cldemote is in the hint-NOP space: a no-op where the CPU lacks it.
  const char* p = static_cast<const char*>(data);
  for (size_t i = 0; i < bytes; i += 64) asm volatile(".byte 0x0f, 0x1c, 0x00" ::"a"(p + i) : "memory");
  __builtin_ia32_mfence();
#else
  (void)data;
  (void)bytes;
#endif
}

TimingResult time_function(const std::function<void()>& fn, const TimerOptions& o) {
  KILN_USER_CHECK(o.repeat >= 1) << "timer repeat must be at least 1, got " << o.repeat;
  KILN_USER_CHECK(o.min_duration_s >= 0) << "timer min_duration must not be negative";
  KILN_USER_CHECK(o.max_total_s >= 0) << "timer max_total must not be negative";
  const size_t flush_bytes = o.flush_bytes ? o.flush_bytes : 2 * last_level_cache_bytes();
  const auto start = Clock::now();
  for (int i = 0; i < o.warmup; ++i) fn();
  // Seconds a call takes: first from the warmup, then from the latest sample (warm caches).
  double per_call = o.warmup > 0 ? seconds_since(start) / o.warmup : 0;
  auto past_cap = [&](double more_s) { return o.max_total_s > 0 && seconds_since(start) + more_s > o.max_total_s; };
  TimingResult r;
  for (int s = 0; s < o.repeat; ++s) {
    if (s > 0 && past_cap(std::max(per_call, o.min_duration_s))) break;
    if (o.flush_cache) flush_cpu_cache(flush_bytes);
    if (o.before_sample) o.before_sample();
    const auto t0 = Clock::now();
    int calls = 0;
    double elapsed = 0;
    do {
      fn();
      ++calls;
      elapsed = seconds_since(t0);
    } while (elapsed < o.min_duration_s && !past_cap(elapsed / calls));
    per_call = elapsed / calls;
    r.samples.push_back(per_call);
    r.calls.push_back(calls);
  }
  std::vector<double> sorted = r.samples;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  r.median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  return r;
}

}  // namespace kiln::autotune
