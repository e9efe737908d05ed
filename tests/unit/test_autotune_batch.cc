// Batches of isolated candidates: builds in parallel (up to build_jobs at once), runs one at a
// time after every build; a build or a run that crashes, hangs or throws is that candidate's
// error; results come back in order; no child is left behind.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kiln/autotune/measure_process.h"
#include "kiln/support/error.h"
#include "test_crash.h"

using namespace kiln::autotune;

namespace {

[[noreturn]] void hang() {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

using kiln_test::segfault;

IsolatedBuild good(double value) {
  return [value] { return IsolatedFn([value] { return std::vector<double>{value}; }); };
}

// Every child of this process has been reaped.
bool no_children_left() { return ::waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD; }

// Intervals of the steady clock (CLOCK_MONOTONIC: one clock for every process), written by the
// children to a file, one line each: "B|R <start ns> <end ns>", B for a build and R for a run.
struct Interval {
  char kind;
  long long start, end;
  bool overlaps(const Interval& o) const { return start < o.end && o.start < end; }
};

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Runs in a child: a failure shows as a missing line.
void append_interval(const std::string& path, char kind, long long start) {
  char line[64];
  int n = std::snprintf(line, sizeof line, "%c %lld %lld\n", kind, start, now_ns());
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return;
  (void)!::write(fd, line, static_cast<size_t>(n));  // one short O_APPEND write: never torn
  ::close(fd);
}

// The most intervals of `kind` that were under way at one instant.
int most_at_once(const std::vector<Interval>& iv, char kind) {
  std::vector<std::pair<long long, int>> events;  // an end sorts before a start at the same instant
  for (const Interval& i : iv) {
    if (i.kind != kind) continue;
    events.emplace_back(i.start, 1);
    events.emplace_back(i.end, -1);
  }
  std::sort(events.begin(), events.end());
  int now = 0, most = 0;
  for (const auto& e : events) most = std::max(most, now += e.second);
  return most;
}

std::vector<Interval> read_intervals(const std::string& path) {
  std::vector<Interval> out;
  std::ifstream f(path);
  Interval i;
  while (f >> i.kind >> i.start >> i.end) out.push_back(i);
  return out;
}

// A candidate whose build sleeps `build_s` and whose run spins (busy, like a timed kernel) for
// a few milliseconds, each step logging its interval.
IsolatedBuild logged(const std::string& path, double build_s, double value) {
  return [=] {
    const long long b = now_ns();
    std::this_thread::sleep_for(std::chrono::duration<double>(build_s));
    append_interval(path, 'B', b);
    return IsolatedFn([=] {
      const long long r = now_ns();
      while (now_ns() - r < 5'000'000) {
      }
      append_interval(path, 'R', r);
      return std::vector<double>{value};
    });
  };
}

}  // namespace

TEST_CASE("batch: failing builds and runs are each their candidate's error, good ones keep their order",
          "[autotune][measure][batch]") {
  std::vector<IsolatedBuild> jobs = {
      good(1.0),
      [] { segfault(); return IsolatedFn(); },                                  // the build crashes
      []() -> IsolatedFn { hang(); },                                          // the build hangs
      [] { return IsolatedFn([]() -> std::vector<double> { segfault(); return {}; }); },  // the run crashes
      [] { return IsolatedFn([]() -> std::vector<double> { hang(); }); },      // the run hangs
      []() -> IsolatedFn { throw kiln::Error("codegen: no scalar fallback"); },  // the build throws
      [] { return IsolatedFn([]() -> std::vector<double> { throw kiln::Error("wrong result"); }); },
      [] { return IsolatedFn(); },                                             // the build gives nothing
      []() -> IsolatedFn { ::_exit(3); },                                      // the build exits
      good(2.0),
      // Dies of SIGALRM while built and waiting for its turn (the hanging build keeps the batch
      // building for the whole timeout): a child lost while idle is an error too.
      [] { ::ualarm(100'000, 0); return IsolatedFn([] { return std::vector<double>{0.0}; }); },
      good(3.0),
  };
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<IsolatedResult> r = run_isolated_batch(jobs, 2, 1.0);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(r.size() == jobs.size());
  CHECK(r[0].values == std::vector<double>{1.0});
  CHECK(r[1].error == "crashed: signal 11 (Segmentation fault)");
  CHECK(r[2].error == "timed out after 1.0 s");
  CHECK(r[3].error == "crashed: signal 11 (Segmentation fault)");
  CHECK(r[4].error == "timed out after 1.0 s");
  CHECK(r[5].error == "codegen: no scalar fallback");
  CHECK(r[6].error == "wrong result");
  CHECK(r[7].error == "the build gave nothing to run");
  CHECK(r[8].error == "exited with status 3");
  CHECK(r[9].values == std::vector<double>{2.0});
  CHECK(r[10].error == "crashed: signal 14 (Alarm clock)");
  CHECK(r[11].values == std::vector<double>{3.0});
  for (size_t i : {0, 9, 11}) CHECK(r[i].ok());
  for (size_t i = 1; i <= 8; ++i) CHECK(r[i].values.empty());
  // A hang is cut off at the timeout of its own build and run, not of the batch.
  for (size_t i : {2, 4}) {
    CHECK(r[i].wall_seconds >= 1.0);
    CHECK(r[i].wall_seconds < 2.0);
  }
  // The hanging build overlapped other builds, and the hanging run came after all of them:
  // one timeout each, two in all (a generous bound: this only checks that nothing waited more).
  CHECK(took < 4.0);
  CHECK(no_children_left());
}

TEST_CASE("batch: builds overlap up to build_jobs, no run overlaps a build or another run",
          "[autotune][measure][batch]") {
  for (int build_jobs : {1, 2}) {
    DYNAMIC_SECTION("build_jobs " << build_jobs) {
      const std::string path = "/tmp/kiln_test_batch_" + std::to_string(::getpid()) + ".txt";
      std::remove(path.c_str());
      std::vector<IsolatedBuild> jobs;
      for (int i = 0; i < 4; ++i) jobs.push_back(logged(path, 0.15, i));
      std::vector<IsolatedResult> r = run_isolated_batch(jobs, build_jobs, 10.0);
      for (int i = 0; i < 4; ++i) CHECK(r[i].values == std::vector<double>{double(i)});
      std::vector<Interval> iv = read_intervals(path);
      std::remove(path.c_str());
      REQUIRE(iv.size() == 8);
      int builds = 0;
      for (size_t a = 0; a < iv.size(); ++a) {
        builds += iv[a].kind == 'B';
        for (size_t b = a + 1; b < iv.size(); ++b) {
          if (!iv[a].overlaps(iv[b])) continue;
          INFO(iv[a].kind << " " << iv[a].start << ".." << iv[a].end << " and " << iv[b].kind << " " << iv[b].start
                          << ".." << iv[b].end);
          CHECK(iv[a].kind == 'B');  // only builds may overlap, and only each other
          CHECK(iv[b].kind == 'B');
        }
      }
      CHECK(builds == 4);
      // With 2 jobs, two children start building together and each sleeps 150 ms: they overlap
      // unless a fork takes that long. Never more than build_jobs at once.
      CHECK(most_at_once(iv, 'B') == build_jobs);
      CHECK(most_at_once(iv, 'R') == 1);
      CHECK(no_children_left());
    }
  }
}

TEST_CASE("batch: an empty batch, a batch of one, and build_jobs below 1", "[autotune][measure][batch]") {
  CHECK(run_isolated_batch({}, 2, 1.0).empty());
  std::vector<IsolatedResult> one = run_isolated_batch({good(7.0)}, 4, 1.0);
  REQUIRE(one.size() == 1);
  CHECK(one[0].values == std::vector<double>{7.0});
  CHECK_THROWS_WITH(run_isolated_batch({good(1.0)}, 0, 1.0), "build_jobs must be at least 1, got 0");
  CHECK(no_children_left());
}
