// The runtime thread pool that runs the parallel loops of generated code.
//
// Built on the OpenMP runtime, the one oneDNN runs on: a module that mixes our kernels with
// oneDNN calls then has one team of threads, handed from one kernel to the next while they still
// spin. (With a pool of our own, OpenMP's threads went on spinning through our next kernel after
// every oneDNN call, and ours through oneDNN's: on 2 cores a placement alternating between the
// two ran 1.7x slower than either alone.) Static chunking of [0, extent) into one chunk per team
// member, no heap allocation per call.
//
// Guarantees of ParallelFor:
//   - every index of [0, extent) is passed to the body exactly once, in contiguous chunks
//     [begin, end) with begin < end; chunks are balanced (sizes differ by at most one);
//   - it returns only after every chunk has finished (memory written by the body is visible to
//     the caller);
//   - a call made while the calling thread is already inside a ParallelFor body (a nested
//     parallel loop), or while another thread is using the pool, runs serially on the calling
//     thread;
//   - an exception thrown by the body never escapes a team thread: ParallelFor rethrows the
//     first one in the caller once all chunks have finished (the C entry point
//     tandem_parallel_for swallows it instead, since generated code cannot unwind).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>

namespace tandem::backends {

class ThreadPool {
 public:
  // Runs iterations [begin, end) with the closure given to ParallelFor.
  using Body = void (*)(int64_t begin, int64_t end, void* closure);

  // The largest supported number of participants.
  static constexpr int kMaxThreads = 4095;

  // A pool of `num_threads` participants: the calling thread plus num_threads - 1 workers.
  // `num_threads` must be in [1, kMaxThreads] (Error otherwise).
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The process-wide pool used by generated code, with std::thread::hardware_concurrency
  // participants until SetNumThreads changes it (Tandem takes no configuration from the
  // environment; the `tandem` command has --threads).
  static ThreadPool& Global();

  // For a child process right after fork(), where only the forking thread exists: makes
  // Global() return a new pool with the same number of threads. The old pool (whose lock another
  // thread may have held) is left untouched and never destroyed. (The OpenMP team of the forking
  // thread must have been released before the fork: tuning/process_runner.cc.)
  static void ResetGlobalAfterFork();

  // Sets the number of participants of each loop (Error when < 1), and OpenMP's default for
  // the calling thread, so that oneDNN's calls from it use as many. Waits for a ParallelFor in
  // progress on another thread to finish first.
  void SetNumThreads(int num_threads);
  int num_threads() const { return num_threads_.load(std::memory_order_relaxed); }

  // Runs body(begin, end, closure) over chunks covering [0, extent); see the file comment.
  void ParallelFor(int64_t extent, Body body, void* closure);
  // The same for a C++ callable (convenience for runtime code and tests).
  void ParallelFor(int64_t extent, const std::function<void(int64_t, int64_t)>& body);

 private:
  std::atomic<int> num_threads_{1};
  std::mutex dispatch_mutex_;  // held by the thread whose loop is running
};

}  // namespace tandem::backends

extern "C" {
// The entry point generated code calls for a parallel loop: runs body over [0, extent) on
// ThreadPool::Global(). Never throws.
void tandem_parallel_for(int64_t extent, void (*body)(int64_t, int64_t, void*), void* closure);
}
