// The runtime's thread pool: kiln_parallel_for, kiln_get_num_threads, kiln_set_num_threads.
//
// Generated kernels fork/join many times per inference (one parallel loop per operator), so
// the cost that matters is the latency of waking the workers and of noticing they are done:
//  - workers are persistent; a job is published by bumping a generation counter;
//  - a worker that finishes spins briefly on that counter (back-to-back kernels find it awake),
//    then sleeps on a condition variable; the publisher only takes the mutex and notifies when
//    someone is actually asleep;
//  - the caller takes part (it runs task 0 first, then claims more like a worker) and spins,
//    then sleeps, until every task has run; it never waits for a worker that has not claimed
//    a task, so a worker descheduled on a busy machine does not delay the job;
//  - tasks are claimed from an atomic ticket, so uneven tasks balance themselves.
// A nested call (from inside a task) runs its tasks serially on the calling thread: the pool is
// busy with the outer job, and waiting for it would deadlock.
#include <pthread.h>

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

// What num_tasks <= 0 becomes: this many tasks per pool thread. With one each, a thread the OS
// deschedules or slows (another tenant on a shared machine) holds up the whole loop; smaller
// chunks claimed from the ticket let the others take over its share. Measured on a shared
// 2-core AMD EPYC Zen 3 VM (medians of the fastest of 3-4 interleaved rounds, 2 threads):
// one task per thread -> four: resnet18_int8 28.3 -> 25.2 ms, bert_mini_int8 6.35 -> 5.42,
// resnet18 fp32 32.0 -> 30.0; sixteen measured no better than four.
constexpr int32_t kTasksPerThread = 4;

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
    body_.store(body, std::memory_order_relaxed);
    closure_.store(closure, std::memory_order_relaxed);
    num_tasks_.store(num_tasks, std::memory_order_relaxed);
    completed_.store(0, std::memory_order_relaxed);
    error_.store(0, std::memory_order_relaxed);
    uint64_t gen = ++generation_;
    // Publishing the ticket publishes the job (release); task 0 is the caller's. seq_cst on it
    // and on the sleepers_ read (and on the workers' side) rules out a lost wake-up.
    ticket_.store((gen << 32) | 1u, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(wake_mutex_);
      wake_cv_.notify_all();
    }

    run_task(body, closure, 0, num_tasks);
    drain_tasks(gen);

    // Done when every task has run, whether or not every worker woke up: a descheduled or
    // sleeping worker never delays the caller (it finds no task left when it gets to run).
    for (int i = 0; completed_.load(std::memory_order_acquire) != num_tasks; ++i) {
      if (i < kSpinIterations) {
        cpu_relax();
      } else {
        std::unique_lock<std::mutex> lock(done_mutex_);
        done_cv_.wait(lock, [&] { return completed_.load(std::memory_order_acquire) == num_tasks; });
      }
    }
    return error_.load(std::memory_order_relaxed);
  }

 private:
  void start(int32_t n) {
    n = std::max<int32_t>(1, n);
    stop_flag_.store(false);
    // The generation is read here, not in the new thread: a job published before the thread
    // gets to run must still count as new to it.
    uint64_t gen = generation_;
    int32_t started = 1;  // the caller of a job is its first thread
    try {
      workers_.reserve(static_cast<size_t>(n - 1));
      for (; started < n; ++started) workers_.emplace_back([this, gen] { worker_loop(gen); });
    } catch (const std::exception&) {
      // Out of threads or memory (a process at its limit, a tuning candidate under its memory
      // cap): the pool runs with the workers it got; with none, every loop is serial.
    }
    num_threads_.store(started, std::memory_order_relaxed);
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(wake_mutex_);
      stop_flag_.store(true);
      uint64_t gen = ++generation_;
      ticket_.store((gen << 32) | 0xffffffffu, std::memory_order_seq_cst);  // a job with no tasks left
      wake_cv_.notify_all();
    }
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  void run_task(kiln_parallel_body body, void* closure, int32_t task, int32_t num_tasks) {
    bool was_inside = t_inside_task;
    t_inside_task = true;
    int32_t rc;
    try {
      rc = body(task, num_tasks, closure);
    } catch (...) {
      // Bodies are C functions; a C++ body that throws must not take the worker down.
      rc = -1;
    }
    t_inside_task = was_inside;
    if (rc != 0) {
      int32_t expected = 0;
      error_.compare_exchange_strong(expected, rc, std::memory_order_relaxed);
    }
    if (completed_.fetch_add(1, std::memory_order_acq_rel) + 1 == num_tasks) {
      // The last task: wake the caller if it went to sleep (the lock orders this with its wait).
      std::lock_guard<std::mutex> lock(done_mutex_);
      done_cv_.notify_one();
    }
  }

  // Claims and runs tasks of job `gen` until none is left. The job's fields are read before
  // the claim and only trusted if the claim (a CAS on the ticket) succeeds: the next job can
  // only overwrite them once every task of this one has been claimed and run, and then the
  // ticket has moved on and the CAS fails.
  void drain_tasks(uint64_t gen) {
    for (;;) {
      uint64_t t = ticket_.load(std::memory_order_acquire);
      if ((t >> 32) != gen) return;
      kiln_parallel_body body = body_.load(std::memory_order_relaxed);
      void* closure = closure_.load(std::memory_order_relaxed);
      int32_t num_tasks = num_tasks_.load(std::memory_order_relaxed);
      uint32_t task = static_cast<uint32_t>(t);
      if (task >= static_cast<uint32_t>(num_tasks)) return;
      if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel)) continue;
      run_task(body, closure, static_cast<int32_t>(task), num_tasks);
    }
  }

  void worker_loop(uint64_t seen) {
    auto generation = [&] { return ticket_.load(std::memory_order_seq_cst) >> 32; };
    for (;;) {
      // Wait for a new job: spin first, then sleep.
      uint64_t gen = generation();
      for (int i = 0; gen == seen && i < kSpinIterations; ++i) {
        cpu_relax();
        gen = generation();
      }
      if (gen == seen) {
        std::unique_lock<std::mutex> lock(wake_mutex_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        wake_cv_.wait(lock, [&] { return generation() != seen; });
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        gen = generation();
      }
      seen = gen;
      if (stop_flag_.load()) return;
      drain_tasks(gen);
    }
  }

  std::atomic<int32_t> num_threads_{1};
  std::vector<std::thread> workers_;
  std::mutex job_mutex_;     // one job at a time (concurrent callers queue up here)
  uint64_t generation_ = 0;  // jobs published so far; written under job_mutex_ (or before workers)

  // The current job. `ticket_` is (generation << 32) | next task to claim.
  std::atomic<uint64_t> ticket_{0};
  std::atomic<kiln_parallel_body> body_{nullptr};
  std::atomic<void*> closure_{nullptr};
  std::atomic<int32_t> num_tasks_{0};
  std::atomic<int32_t> completed_{0};
  std::atomic<int32_t> error_{0};

  std::atomic<bool> stop_flag_{false};
  std::atomic<int32_t> sleepers_{0};
  std::mutex wake_mutex_;
  std::condition_variable wake_cv_;
  std::mutex done_mutex_;
  std::condition_variable done_cv_;
};

std::mutex g_pool_mutex;  // guards resizing of the pool
int32_t g_requested_threads = 0;
std::mutex g_create_mutex;  // guards creation of the pool
std::atomic<ThreadPool*> g_pool{nullptr};

// A forked child inherits the pool object but none of its worker threads (the autotuner
// measures candidates in forked children): the child starts a fresh pool on first use. The
// old one is leaked: its std::threads can be neither joined nor destroyed in the child.
void forget_pool_in_child() {
  g_pool.store(nullptr, std::memory_order_relaxed);
  new (&g_pool_mutex) std::mutex;
  new (&g_create_mutex) std::mutex;
}

ThreadPool& pool() {
  ThreadPool* p = g_pool.load(std::memory_order_acquire);
  if (p != nullptr) return *p;
  std::lock_guard<std::mutex> lock(g_create_mutex);
  p = g_pool.load(std::memory_order_relaxed);
  if (p == nullptr) {
    static bool registered = (pthread_atfork(nullptr, nullptr, forget_pool_in_child), true);
    (void)registered;
    int32_t n = g_requested_threads > 0 ? g_requested_threads : default_num_threads();
    // Leaked on purpose: joining workers from a static destructor races with other static
    // destructors and with threads still running kernels at exit.
    p = new ThreadPool(n);
    g_pool.store(p, std::memory_order_release);
  }
  return *p;
}

// The pool, or null when it cannot be made (no memory for it): the C entry points below must
// not throw, and run serially instead.
ThreadPool* pool_or_null() {
  try {
    return &pool();
  } catch (...) {
    return nullptr;
  }
}

int32_t run_serially(kiln_parallel_body body, void* closure, int32_t num_tasks) {
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

}  // namespace
}  // namespace kiln::runtime

extern "C" {

int32_t kiln_parallel_for(kiln_parallel_body body, void* closure, int32_t num_tasks) {
  using namespace kiln::runtime;
  if (body == nullptr) return -1;
  if (num_tasks <= 0) num_tasks = t_inside_task ? 1 : kiln_get_num_threads() * kTasksPerThread;
  ThreadPool* p = num_tasks == 1 || t_inside_task ? nullptr : pool_or_null();
  // Serial: a single task, a nested call, a one-thread pool or none.
  if (p == nullptr || p->num_threads() == 1) return run_serially(body, closure, num_tasks);
  return p->run(body, closure, num_tasks);
}

int32_t kiln_get_num_threads(void) {
  kiln::runtime::ThreadPool* p = kiln::runtime::pool_or_null();
  return p ? p->num_threads() : 1;
}

void kiln_set_num_threads(int32_t n) {
  using namespace kiln::runtime;
  // From inside a task the pool is busy running the job this task belongs to; resizing would
  // wait for that job to end, i.e. forever. Ignore the request.
  if (t_inside_task) return;
  if (n <= 0) n = default_num_threads();
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  g_requested_threads = n;
  ThreadPool* p = pool_or_null();
  if (p != nullptr && p->num_threads() != n) p->resize(n);
}

}  // extern "C"
