// Measurement isolation: a normal, a throwing, a crashing, an aborting, an exiting and a
// hanging candidate, each in its own child; the parent (this test) survives them all. And the
// timer's samples.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include <unistd.h>

#include "kiln/autotune/measure_process.h"
#include "kiln/support/error.h"
#include "test_crash.h"

using namespace kiln::autotune;

namespace {

void spin_for(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
  }
}

}  // namespace

TEST_CASE("measure: a normal candidate's values come back", "[autotune][measure]") {
  const pid_t parent = ::getpid();
  IsolatedResult r = run_isolated([&] { return std::vector<double>{1.5, 2.5, double(::getpid() != parent)}; }, 5.0);
  REQUIRE(r.ok());
  CHECK(r.values == std::vector<double>{1.5, 2.5, 1.0});  // it really ran in another process
  CHECK(r.wall_seconds < 5.0);

  // A result larger than the pipe buffer is read while the child writes it.
  IsolatedResult big = run_isolated([] { return std::vector<double>(1 << 20, 0.25); }, 10.0);
  REQUIRE(big.ok());
  REQUIRE(big.values.size() == size_t{1} << 20);
  CHECK(big.values.front() == 0.25);
  CHECK(big.values.back() == 0.25);

  IsolatedResult empty = run_isolated([] { return std::vector<double>{}; }, 5.0);
  CHECK(empty.ok());
  CHECK(empty.values.empty());
}

TEST_CASE("measure: crashes, aborts, exits and exceptions are recorded as errors", "[autotune][measure]") {
  IsolatedResult segv = run_isolated(
      [] {
        kiln_test::segfault();
        return std::vector<double>{1.0};
      },
      5.0);
  CHECK_FALSE(segv.ok());
  CHECK(segv.error == "crashed: signal 11 (Segmentation fault)");
  CHECK(segv.values.empty());

  IsolatedResult abrt = run_isolated([]() -> std::vector<double> { std::abort(); }, 5.0);
  CHECK(abrt.error == "crashed: signal 6 (Aborted)");

  IsolatedResult fpe = run_isolated([]() -> std::vector<double> { std::raise(SIGFPE); return {}; }, 5.0);
  CHECK(fpe.error == "crashed: signal 8 (Floating point exception)");

  IsolatedResult exited = run_isolated([]() -> std::vector<double> { ::_exit(3); }, 5.0);
  CHECK(exited.error == "exited with status 3");

  IsolatedResult wrong = run_isolated(
      []() -> std::vector<double> { throw kiln::Error("wrong result: max abs error 0.5 at C[17]"); }, 5.0);
  CHECK(wrong.error == "wrong result: max abs error 0.5 at C[17]");
  IsolatedResult other = run_isolated([]() -> std::vector<double> { throw 7; }, 5.0);
  CHECK(other.error == "unknown exception");
}

TEST_CASE("measure: a hanging candidate is killed at the timeout", "[autotune][measure]") {
  IsolatedResult hang = run_isolated(
      []() -> std::vector<double> {
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      },
      0.5);
  CHECK(hang.error == "timed out after 0.5 s");
  CHECK(hang.wall_seconds >= 0.5);
  CHECK(hang.wall_seconds < 2.0);
  // A busy hang too, and the tuner's parent process carries on afterwards.
  IsolatedResult busy = run_isolated([]() -> std::vector<double> { spin_for(60); return {}; }, 0.3);
  CHECK(busy.error == "timed out after 0.3 s");
  CHECK(run_isolated([] { return std::vector<double>{4.0}; }, 5.0).values == std::vector<double>{4.0});
}

TEST_CASE("measure: the timer's samples are sane", "[autotune][measure]") {
  TimerOptions o;
  o.repeat = 5;
  o.min_duration_s = 0.005;
  int calls = 0;
  TimingResult t = time_function([&] { ++calls; spin_for(250e-6); }, o);
  REQUIRE(t.samples.size() == 5);
  REQUIRE(t.calls.size() == 5);
  int timed_calls = 0;
  for (size_t i = 0; i < t.samples.size(); ++i) {
    CHECK(t.samples[i] >= 250e-6);                    // a call spins at least that long
    CHECK(t.samples[i] * t.calls[i] >= 0.005);        // each sample ran at least min_duration
    CHECK(t.calls[i] >= 2);
    timed_calls += t.calls[i];
  }
  CHECK(calls == timed_calls + o.warmup);
  CHECK(t.median >= *std::min_element(t.samples.begin(), t.samples.end()));
  CHECK(t.median <= *std::max_element(t.samples.begin(), t.samples.end()));
  // No upper bound on the times: on a shared machine a preempted spin takes any time (timing
  // belongs in benchmarks, not tests).

  // With the cache flushed before each sample (a small flush buffer keeps the test fast).
  o.flush_cache = true;
  o.flush_bytes = 1 << 20;
  o.min_duration_s = 0;
  TimingResult f = time_function([] { spin_for(100e-6); }, o);
  REQUIRE(f.samples.size() == 5);
  for (int c : f.calls) CHECK(c == 1);  // no minimum duration: one call per sample
  CHECK(last_level_cache_bytes() >= (size_t{256} << 10));

  o.repeat = 0;
  CHECK_THROWS_AS(time_function([] {}, o), kiln::Error);
}

TEST_CASE("measure: the timer's cap bounds a slow function's timing and keeps one sample", "[autotune][measure]") {
  // A call (warmup included) of 60 ms under a cap of 100 ms: after the warmup and one sample,
  // a second sample would end past the cap. A spin ends at its wall-clock deadline even when
  // preempted, so the bound holds on a loaded machine.
  using Clock = std::chrono::steady_clock;
  TimerOptions o;
  o.repeat = 5;
  o.max_total_s = 0.1;
  int calls = 0;
  auto t0 = Clock::now();
  TimingResult t = time_function([&] { ++calls; spin_for(0.06); }, o);
  double took = std::chrono::duration<double>(Clock::now() - t0).count();
  REQUIRE(t.samples.size() == 1);
  CHECK(t.calls[0] == 1);
  CHECK(calls == 2);
  CHECK(t.samples[0] >= 0.06);
  CHECK(t.median == t.samples[0]);
  CHECK(took < 0.1 + 0.06 + 0.05);  // the cap, overshot by at most the call that crossed it

  // A slower first call than the cap: still one timed sample.
  calls = 0;
  o.max_total_s = 0.01;
  CHECK(time_function([&] { ++calls; spin_for(0.02); }, o).samples.size() == 1);
  CHECK(calls == 2);

  // A fast call with a long min_duration: the sample stops repeating it at the cap.
  o.warmup = 0;
  o.max_total_s = 0.05;
  o.min_duration_s = 10;
  t0 = Clock::now();
  t = time_function([] { spin_for(0.002); }, o);
  took = std::chrono::duration<double>(Clock::now() - t0).count();
  REQUIRE(t.samples.size() == 1);
  CHECK(t.calls[0] >= 2);
  CHECK(t.samples[0] >= 0.002);
  CHECK(took < 0.05 + 0.05);

  o.max_total_s = -1;
  CHECK_THROWS_AS(time_function([] {}, o), kiln::Error);
}

TEST_CASE("measure: before_sample runs once before each sample, outside its timing", "[autotune][measure]") {
  TimerOptions o;
  o.warmup = 0;
  o.repeat = 4;
  o.min_duration_s = 0;
  int prepared = 0, calls = 0;
  o.before_sample = [&] {
    CHECK(prepared == calls);  // each sample's call comes after its own preparation
    ++prepared;
    spin_for(0.02);
  };
  TimingResult t = time_function([&] { ++calls; }, o);
  CHECK(prepared == 4);
  CHECK(calls == 4);
  for (double s : t.samples) CHECK(s < 0.01);  // the 20 ms of preparation are not timed
}

TEST_CASE("measure: demote_to_llc keeps the data", "[autotune][measure]") {
  std::vector<float> v(100003);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f;
  demote_to_llc(v.data(), v.size() * sizeof(float));
  demote_to_llc(v.data() + 1, 7);  // an unaligned range, shorter than a line
  size_t wrong = 0;
  for (size_t i = 0; i < v.size(); ++i) wrong += v[i] != static_cast<float>(i) * 0.5f;
  CHECK(wrong == 0);
}
