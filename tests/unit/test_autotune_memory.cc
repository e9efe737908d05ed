// Isolated candidates and memory: a build or a run that allocates without bound fails at the
// child's memory limit with an error naming it, while the batch's other candidates measure; so
// does a thread that cannot start, even when its exception is caught by nothing; a child killed
// from outside (the OOM killer's signal) says so; and each result reaches on_result in the
// jobs' order as soon as it is final.
#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kiln/autotune/measure_process.h"

using namespace kiln::autotune;

namespace {

// Allocates and touches 16 MiB blocks until an allocation fails (std::bad_alloc). Without an
// enforced limit this would take the machine: callers check memory_limit_enforced() first.
[[noreturn]] void hog_memory() {
  constexpr size_t kBlock = size_t{16} << 20;
  std::vector<std::unique_ptr<char[]>> held;
  for (;;) {
    held.emplace_back(new char[kBlock]);
    std::memset(held.back().get(), 1, kBlock);  // real pages, not only address space
  }
}

IsolatedBuild good(double value) {
  return [value] { return IsolatedFn([value] { return std::vector<double>{value}; }); };
}

bool no_children_left() { return ::waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD; }

// A limit this process's copy fits in with 256 MiB to spare.
size_t limit_with_headroom() { return data_segment_bytes() + (size_t{256} << 20); }

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST_CASE("memory: a build or run that allocates without bound is an out-of-memory error, the others measure",
          "[autotune][measure][memory]") {
  if (!memory_limit_enforced()) {
    WARN("skipped: the memory limit is not enforced under a sanitizer, and this test would exhaust the machine");
    return;
  }
  IsolationOptions o;
  o.memory_limit_bytes = limit_with_headroom();
  const std::string oom = "out of memory: the candidate exceeded its memory limit of " +
                          std::to_string(o.memory_limit_bytes >> 20) + " MiB";
  std::vector<IsolatedBuild> jobs = {
      good(1.0),
      [] { return IsolatedFn([]() -> std::vector<double> { hog_memory(); }); },  // the run
      []() -> IsolatedFn { hog_memory(); },                    // the build
      good(2.0),
      // One allocation far past the limit: refused outright.
      [] { return IsolatedFn([] { return std::vector<double>(size_t{1} << 30, 1.0); }); },
      good(3.0),
  };
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<IsolatedResult> r = run_isolated_batch(jobs, 2, 30.0, o);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(r.size() == jobs.size());
  CHECK(r[0].values == std::vector<double>{1.0});
  CHECK(r[3].values == std::vector<double>{2.0});
  CHECK(r[5].values == std::vector<double>{3.0});
  for (size_t i : {1, 2, 4}) {
    INFO("job " << i << ": " << r[i].error);
    CHECK(r[i].error.rfind(oom, 0) == 0);
    CHECK(r[i].error.find("of which its copy of the tuner took") != std::string::npos);
    CHECK(r[i].error.find("(std::bad_alloc)") != std::string::npos);
    CHECK(r[i].values.empty());
  }
  CHECK(took < 20.0);  // failing at the limit is fast: no swapping, no OOM killer
  CHECK(no_children_left());

  // Without a limit, a std::bad_alloc is still named for what it is (128 TiB: more than a
  // process's address space, so refused whatever the kernel's overcommit policy).
  IsolatedResult huge = run_isolated([] { return std::vector<double>(size_t{1} << 44, 1.0); }, 10.0);
  CHECK(huge.error == "out of memory (std::bad_alloc)");
}

TEST_CASE("memory: a limit below what the child starts with fails its first allocation, with the same error",
          "[autotune][measure][memory]") {
  if (!memory_limit_enforced()) {
    WARN("skipped: the memory limit is not enforced under a sanitizer");
    return;
  }
  IsolationOptions o;
  o.memory_limit_bytes = size_t{1} << 20;
  IsolatedResult r = run_isolated([] { return std::vector<double>(size_t{8} << 20, 1.0); }, 10.0, o);
  CHECK(r.error.rfind("out of memory: the candidate exceeded its memory limit of 1 MiB", 0) == 0);
}

TEST_CASE("memory: a thread that cannot start for want of memory is out of memory too, even uncaught",
          "[autotune][measure][memory]") {
  // What the runtime's thread pool throws when its threads' stacks cannot be mapped under the
  // limit, out of a thread here: an exception nothing catches (as one thrown through generated
  // code, which has no unwind tables) ends in std::terminate, whose handler still reports it.
  auto uncaught = [](std::exception_ptr e) {
    return [e] {
      return IsolatedFn([e]() -> std::vector<double> {
        std::thread([e] { std::rethrow_exception(e); }).join();
        return {1.0};
      });
    };
  };
  const std::exception_ptr no_thread =
      std::make_exception_ptr(std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again)));
  IsolationOptions o;
  o.memory_limit_bytes = limit_with_headroom();
  std::vector<IsolatedResult> r = run_isolated_batch(
      {uncaught(no_thread), uncaught(std::make_exception_ptr(std::runtime_error("boom"))), good(1.0)}, 1, 10.0, o);
  const std::string limit = memory_limit_enforced()
                                ? "out of memory: the candidate exceeded its memory limit of " +
                                      std::to_string(o.memory_limit_bytes >> 20) + " MiB"
                                : "out of memory";
  CHECK(r[0].error.rfind(limit, 0) == 0);
  CHECK(r[0].error.find("(std::system_error: Resource temporarily unavailable)") != std::string::npos);
  CHECK(r[1].error == "terminated by an uncaught exception: boom");
  CHECK(r[2].values == std::vector<double>{1.0});
}

TEST_CASE("memory: a child killed by SIGKILL from elsewhere is named as the OOM killer's likely victim",
          "[autotune][measure][memory]") {
  IsolatedResult r = run_isolated([]() -> std::vector<double> { ::raise(SIGKILL); return {}; }, 10.0);
  CHECK(r.error ==
        "crashed: signal 9 (Killed), not sent by the tuner: most likely the kernel's out-of-memory killer");
  // The batch's own kill at a timeout stays a timeout.
  IsolatedResult hung = run_isolated([]() -> std::vector<double> { ::pause(); return {}; }, 0.2);
  CHECK(hung.error == "timed out after 0.2 s");
}

TEST_CASE("memory: on_result hears of each result in order, before the next candidate runs",
          "[autotune][measure][batch]") {
  const std::string path = "/tmp/kiln_test_on_result_" + std::to_string(::getpid()) + ".txt";
  std::remove(path.c_str());
  // Each run appends the instant it starts; a build that fails (job 2) never runs.
  auto timed = [path](double value) -> IsolatedBuild {
    return [path, value] {
      return IsolatedFn([path, value] {
        std::ofstream(path, std::ios::app) << now_ns() << "\n";
        return std::vector<double>{value};
      });
    };
  };
  std::vector<IsolatedBuild> jobs = {timed(0), timed(1), []() -> IsolatedFn { throw std::runtime_error("no"); },
                                     timed(3)};
  std::vector<std::pair<size_t, long long>> heard;  // job, instant
  IsolationOptions o;
  o.on_result = [&](size_t job, const IsolatedResult& r) {
    heard.emplace_back(job, now_ns());
    CHECK(r.ok() == (job != 2));
  };
  std::vector<IsolatedResult> r = run_isolated_batch(jobs, 2, 10.0, o);
  std::vector<long long> run_starts;
  {
    std::ifstream f(path);
    for (long long t; f >> t;) run_starts.push_back(t);
  }
  std::remove(path.c_str());
  REQUIRE(heard.size() == 4);
  REQUIRE(run_starts.size() == 3);  // jobs 0, 1 and 3 ran
  for (size_t i = 0; i < 4; ++i) CHECK(heard[i].first == i);
  CHECK(heard[0].second < run_starts[1]);  // job 0 was heard of before job 1 ran
  CHECK(heard[1].second < run_starts[2]);  // jobs 1 and 2 before job 3 ran
  CHECK(heard[2].second < run_starts[2]);
  CHECK(r[3].values == std::vector<double>{3.0});

  // What on_result throws ends the batch, and no child outlives it.
  o.on_result = [](size_t job, const IsolatedResult&) {
    if (job == 1) throw std::runtime_error("cannot append to the tuning log");
  };
  CHECK_THROWS_WITH(run_isolated_batch(jobs, 2, 10.0, o), "cannot append to the tuning log");
  CHECK(no_children_left());
}
