// Thread pool: kiln_parallel_for covers every task exactly once, reports the first error,
// survives repeated and nested use, and follows kiln_set_num_threads.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "kiln/runtime/kernel.h"

namespace {

struct Counts {
  std::vector<std::atomic<int>> hits;
  std::atomic<int> reported_num_tasks{-1};
  explicit Counts(int n) : hits(n) {
    for (auto& h : hits) h = 0;
  }
};

int32_t count_task(int32_t task, int32_t num_tasks, void* closure) {
  auto* c = static_cast<Counts*>(closure);
  c->hits[task].fetch_add(1);
  c->reported_num_tasks = num_tasks;
  return 0;
}

struct RestoreThreads {
  int32_t saved = kiln_get_num_threads();
  ~RestoreThreads() { kiln_set_num_threads(saved); }
};

}  // namespace

TEST_CASE("parallel_for runs every task exactly once", "[runtime]") {
  RestoreThreads restore;
  for (int threads : {1, 2, 3, 5}) {
    kiln_set_num_threads(threads);
    REQUIRE(kiln_get_num_threads() == threads);
    for (int tasks : {1, 2, 7, 64, 1000}) {
      Counts c(tasks);
      REQUIRE(kiln_parallel_for(count_task, &c, tasks) == 0);
      CAPTURE(threads, tasks);
      for (int t = 0; t < tasks; ++t) REQUIRE(c.hits[t].load() == 1);
      REQUIRE(c.reported_num_tasks.load() == tasks);
    }
  }
}

TEST_CASE("parallel_for with num_tasks <= 0 uses four tasks per thread", "[runtime]") {
  RestoreThreads restore;
  kiln_set_num_threads(3);
  Counts c(12);
  REQUIRE(kiln_parallel_for(count_task, &c, 0) == 0);
  REQUIRE(c.reported_num_tasks.load() == 12);
  for (int t = 0; t < 12; ++t) REQUIRE(c.hits[t].load() == 1);
}

TEST_CASE("parallel_for uses several threads and the caller runs task 0", "[runtime]") {
  RestoreThreads restore;
  kiln_set_num_threads(4);
  struct Ids {
    std::vector<std::thread::id> ids = std::vector<std::thread::id>(4);
    std::atomic<int> arrived{0};
  } ids;
  auto body = [](int32_t task, int32_t, void* cl) -> int32_t {
    auto* s = static_cast<Ids*>(cl);
    s->ids[task] = std::this_thread::get_id();
    // Wait (bounded) until all four tasks have started, so each must run on its own thread.
    s->arrived.fetch_add(1);
    for (int i = 0; i < 200000000 && s->arrived.load() < 4; ++i) {
    }
    return 0;
  };
  REQUIRE(kiln_parallel_for(body, &ids, 4) == 0);
  REQUIRE(ids.ids[0] == std::this_thread::get_id());
  REQUIRE(ids.arrived.load() == 4);
  for (int a = 0; a < 4; ++a)
    for (int b = a + 1; b < 4; ++b) REQUIRE(ids.ids[a] != ids.ids[b]);
}

TEST_CASE("parallel_for returns the first non-zero task result", "[runtime]") {
  RestoreThreads restore;
  kiln_set_num_threads(2);
  auto body = [](int32_t task, int32_t, void* cl) -> int32_t {
    static_cast<std::atomic<int>*>(cl)->fetch_add(1);
    return task == 5 ? 42 : (task == 9 ? 7 : 0);
  };
  std::atomic<int> ran{0};
  // In parallel, "first" is the first error recorded: either failing task may win.
  int32_t rc = kiln_parallel_for(body, &ran, 16);
  REQUIRE((rc == 42 || rc == 7));
  REQUIRE(ran.load() == 16);  // the other tasks still ran
  // The one-thread (serial) path runs tasks in order: task 5 fails first.
  kiln_set_num_threads(1);
  ran = 0;
  REQUIRE(kiln_parallel_for(body, &ran, 16) == 42);
  REQUIRE(ran.load() == 16);
  REQUIRE(kiln_parallel_for(nullptr, nullptr, 4) != 0);
}

TEST_CASE("parallel_for works when called many times in a row", "[runtime]") {
  RestoreThreads restore;
  kiln_set_num_threads(3);
  auto body = [](int32_t task, int32_t, void* cl) -> int32_t {
    static_cast<std::atomic<int64_t>*>(cl)->fetch_add(task + 1);
    return 0;
  };
  std::atomic<int64_t> sum{0};
  const int rounds = 5000;
  for (int r = 0; r < rounds; ++r) REQUIRE(kiln_parallel_for(body, &sum, 5) == 0);
  REQUIRE(sum.load() == int64_t(rounds) * 15);
}

TEST_CASE("nested parallel_for runs inner tasks serially and completes", "[runtime]") {
  RestoreThreads restore;
  kiln_set_num_threads(3);
  struct Grid {
    std::atomic<int> cells[6][7];
    std::atomic<int> inner_num_tasks{0};
  } grid;
  for (auto& row : grid.cells)
    for (auto& c : row) c = 0;
  struct Inner {
    Grid* g;
    int row;
  };
  // Each of 6 outer tasks runs a nested parallel_for over 7 inner tasks.
  auto outer = [](int32_t task, int32_t, void* cl) -> int32_t {
    Inner in{static_cast<Grid*>(cl), task};
    auto inner = [](int32_t t, int32_t n, void* c) -> int32_t {
      auto* i = static_cast<Inner*>(c);
      i->g->cells[i->row][t].fetch_add(1);
      i->g->inner_num_tasks = n;
      return 0;
    };
    return kiln_parallel_for(inner, &in, 7);
  };
  REQUIRE(kiln_parallel_for(outer, &grid, 6) == 0);
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 7; ++c) REQUIRE(grid.cells[r][c].load() == 1);
  REQUIRE(grid.inner_num_tasks.load() == 7);
}

TEST_CASE("parallel_for from several application threads at once", "[runtime]") {
  RestoreThreads restore;
  kiln_set_num_threads(2);
  auto body = [](int32_t, int32_t, void* cl) -> int32_t {
    static_cast<std::atomic<int>*>(cl)->fetch_add(1);
    return 0;
  };
  std::atomic<int> total{0};
  std::vector<std::thread> apps;
  for (int a = 0; a < 3; ++a)
    apps.emplace_back([&] {
      for (int r = 0; r < 500; ++r) kiln_parallel_for(body, &total, 4);
    });
  for (auto& t : apps) t.join();
  REQUIRE(total.load() == 3 * 500 * 4);
}

TEST_CASE("kiln_set_num_threads from inside a task is ignored instead of deadlocking", "[runtime]") {
  RestoreThreads restore;
  kiln_set_num_threads(2);
  auto body = [](int32_t, int32_t, void*) -> int32_t {
    kiln_set_num_threads(5);
    return 0;
  };
  REQUIRE(kiln_parallel_for(body, nullptr, 4) == 0);
  REQUIRE(kiln_get_num_threads() == 2);
}

namespace {
// Each task sleeps 1 ms and records its thread: a pool without live workers would run all of
// them on the caller.
struct ThreadLog {
  std::mutex mutex;
  std::set<std::thread::id> ids;
};
int32_t log_thread(int32_t, int32_t, void* closure) {
  auto* log = static_cast<ThreadLog*>(closure);
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::lock_guard<std::mutex> lock(log->mutex);
  log->ids.insert(std::this_thread::get_id());
  return 0;
}
}  // namespace

TEST_CASE("a forked child gets a working pool with live threads", "[runtime]") {
  // The autotuner measures candidates in forked children while the parent's pool is running;
  // the child inherits the pool object but not its threads, and must not time kernels on one.
  RestoreThreads restore;
  kiln_set_num_threads(2);
  ThreadLog warm;
  REQUIRE(kiln_parallel_for(log_thread, &warm, 16) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(10);  // a hang ends the child, not the test
    ThreadLog log;
    int32_t rc = kiln_parallel_for(log_thread, &log, 32);
    _exit(rc == 0 && log.ids.size() == 2 && kiln_get_num_threads() == 2 ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

#if !defined(KILN_SANITIZED)
TEST_CASE("a pool that cannot start its threads runs every loop with the threads it got", "[runtime]") {
  // A process at its limits (a tuning candidate under its memory cap): creating the workers
  // fails. The pool must neither throw out of the C API nor terminate: it runs with fewer
  // threads, at worst serially. A forked child with an address-space limit just above what it
  // maps has no room for an 8 MiB thread stack. (Not in sanitized builds: their shadow memory
  // needs far more address space than any such limit.)
  RestoreThreads restore;
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(10);
    long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    rlimit cap{static_cast<rlim_t>(pages) * 4096 + (4u << 20), static_cast<rlim_t>(pages) * 4096 + (4u << 20)};
    if (pages == 0 || setrlimit(RLIMIT_AS, &cap) != 0) _exit(2);
    kiln_set_num_threads(16);  // no room for 15 stacks of 8 MiB
    int32_t got = kiln_get_num_threads();
    std::atomic<int> tasks{0};
    auto count = [](int32_t, int32_t, void* c) -> int32_t {
      static_cast<std::atomic<int>*>(c)->fetch_add(1);
      return 0;
    };
    int32_t rc = kiln_parallel_for(count, &tasks, 64);
    _exit(rc == 0 && got >= 1 && got < 16 && tasks.load() == 64 ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO("child status " << status);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
#endif
