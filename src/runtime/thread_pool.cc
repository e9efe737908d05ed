// The runtime's thread pool: kiln_parallel_for, kiln_get_num_threads, kiln_set_num_threads.
//
// Generated kernels fork/join many times per inference (one parallel loop per operator), so
// the cost that matters is the latency of waking the workers and of noticing they are done:
//  - workers are persistent; a job is published by bumping a generation counter;
//  - a worker that finishes spins briefly on that counter (back-to-back kernels find it awake),
//    then sleeps on a condition variable; the publisher only takes the mutex and notifies when
//    someone is actually asleep;
//  - the caller takes part (it runs task 0 first) and spins, then sleeps, until every task is
//    done;
//  - tasks are handed out through an atomic counter, so uneven tasks balance themselves.
// A nested call (from inside a task) runs its tasks serially on the calling thread: the pool is
// busy with the outer job, and waiting for it would deadlock.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/runtime/kernel.h"

namespace kiln::runtime {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// About 50-100 microseconds of pause instructions: long enough to bridge the gap between two
// consecutive parallel loops, short enough not to steal a shared core for long.
constexpr int kSpinIterations = 1 << 11;

thread_local bool t_inside_task = false;

int32_t default_num_threads() {
  if (const char* env = std::getenv("KILN_NUM_THREADS")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n > 0) return static_cast<int32_t>(std::min<long>(n, 1024));
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int32_t>(hw);
}

class ThreadPool {
 public:
  explicit ThreadPool(int32_t num_threads) { start(num_threads); }
  ~ThreadPool() { stop(); }

  int32_t num_threads() const { return num_threads_.load(std::memory_order_relaxed); }

  void resize(int32_t n) {
    std::lock_guard<std::mutex> job_lock(job_mutex_);
    stop();
    start(n);
  }

  int32_t run(kiln_parallel_body body, void* closure, int32_t num_tasks) {
    std::lock_guard<std::mutex> job_lock(job_mutex_);
    body_ = body;
    closure_ = closure;
    num_tasks_ = num_tasks;
    next_task_.store(1, std::memory_order_relaxed);  // task 0 is the caller's
    error_.store(0, std::memory_order_relaxed);
    // Every worker checks in once per generation, whether or not it finds a task, so that the
    // job fields are not overwritten by the next run while a late worker still reads them.
    pending_workers_.store(static_cast<int32_t>(workers_.size()), std::memory_order_relaxed);
    // seq_cst on the bump and on the sleepers_ read (and on the worker's side) rules out the
    // lost wake-up where we see no sleeper while a worker sees the old generation.
    generation_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(wake_mutex_);
      wake_cv_.notify_all();
    }

    run_task(0);
    drain_tasks();

    for (int i = 0; pending_workers_.load(std::memory_order_acquire) != 0; ++i) {
      if (i < kSpinIterations) {
        cpu_relax();
      } else {
        std::unique_lock<std::mutex> lock(done_mutex_);
        done_cv_.wait(lock, [&] { return pending_workers_.load(std::memory_order_acquire) == 0; });
      }
    }
    return error_.load(std::memory_order_relaxed);
  }

 private:
  void start(int32_t n) {
    n = std::max<int32_t>(1, n);
    num_threads_.store(n, std::memory_order_relaxed);
    stop_flag_.store(false);
    // The generation is read here, not in the new thread: a job published before the thread
    // gets to run must still count as new to it, or the caller would wait for it forever.
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int32_t i = 1; i < n; ++i) workers_.emplace_back([this, gen] { worker_loop(gen); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(wake_mutex_);
      stop_flag_.store(true);
      generation_.fetch_add(1, std::memory_order_release);
      wake_cv_.notify_all();
    }
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  void run_task(int32_t task) {
    bool was_inside = t_inside_task;
    t_inside_task = true;
    int32_t rc;
    try {
      rc = body_(task, num_tasks_, closure_);
    } catch (...) {
      // Bodies are C functions; a C++ body that throws must not take the worker down.
      rc = -1;
    }
    t_inside_task = was_inside;
    if (rc != 0) {
      int32_t expected = 0;
      error_.compare_exchange_strong(expected, rc, std::memory_order_relaxed);
    }
  }

  void drain_tasks() {
    for (;;) {
      int32_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
      if (task >= num_tasks_) return;
      run_task(task);
    }
  }

  void worker_loop(uint64_t seen) {
    for (;;) {
      // Wait for a new generation: spin first, then sleep.
      uint64_t gen = generation_.load(std::memory_order_acquire);
      for (int i = 0; gen == seen && i < kSpinIterations; ++i) {
        cpu_relax();
        gen = generation_.load(std::memory_order_acquire);
      }
      if (gen == seen) {
        std::unique_lock<std::mutex> lock(wake_mutex_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        wake_cv_.wait(lock, [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        gen = generation_.load(std::memory_order_acquire);
      }
      seen = gen;
      if (stop_flag_.load()) return;
      drain_tasks();
      if (pending_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        // Last one out wakes the caller if it went to sleep (the lock orders this with its wait).
        std::lock_guard<std::mutex> lock(done_mutex_);
        done_cv_.notify_one();
      }
    }
  }

  std::atomic<int32_t> num_threads_{1};
  std::vector<std::thread> workers_;
  std::mutex job_mutex_;  // one job at a time (concurrent callers queue up here)

  // The current job; written by the caller before the generation bump that publishes it.
  kiln_parallel_body body_ = nullptr;
  void* closure_ = nullptr;
  int32_t num_tasks_ = 0;
  std::atomic<int32_t> next_task_{0};
  std::atomic<int32_t> error_{0};
  std::atomic<int32_t> pending_workers_{0};

  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_flag_{false};
  std::atomic<int32_t> sleepers_{0};
  std::mutex wake_mutex_;
  std::condition_variable wake_cv_;
  std::mutex done_mutex_;
  std::condition_variable done_cv_;
};

std::mutex g_pool_mutex;  // guards creation and resizing of the pool
int32_t g_requested_threads = 0;

ThreadPool& pool() {
  static ThreadPool* p = [] {
    int32_t n = g_requested_threads > 0 ? g_requested_threads : default_num_threads();
    // Leaked on purpose: joining workers from a static destructor races with other static
    // destructors and with threads still running kernels at exit.
    return new ThreadPool(n);
  }();
  return *p;
}

}  // namespace
}  // namespace kiln::runtime

extern "C" {

int32_t kiln_parallel_for(kiln_parallel_body body, void* closure, int32_t num_tasks) {
  using namespace kiln::runtime;
  if (body == nullptr) return -1;
  if (num_tasks <= 0) num_tasks = t_inside_task ? 1 : kiln_get_num_threads();
  if (num_tasks == 1 || t_inside_task || kiln_get_num_threads() == 1) {
    // Serial: a single task, a nested call, or a one-thread pool.
    int32_t first_error = 0;
    bool was_inside = t_inside_task;
    t_inside_task = true;
    for (int32_t t = 0; t < num_tasks; ++t) {
      int32_t rc;
      try {
        rc = body(t, num_tasks, closure);
      } catch (...) {
        rc = -1;
      }
      if (rc != 0 && first_error == 0) first_error = rc;
    }
    t_inside_task = was_inside;
    return first_error;
  }
  return pool().run(body, closure, num_tasks);
}

int32_t kiln_get_num_threads(void) { return kiln::runtime::pool().num_threads(); }

void kiln_set_num_threads(int32_t n) {
  using namespace kiln::runtime;
  if (n <= 0) n = default_num_threads();
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  g_requested_threads = n;
  ThreadPool& p = pool();
  if (p.num_threads() != n) p.resize(n);
}

}  // extern "C"
