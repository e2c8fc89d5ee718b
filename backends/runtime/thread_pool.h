// The runtime thread pool that runs the parallel loops of generated code.
//
// Built for small kernels on few cores (batch-1 inference): a fixed set of worker threads that
// spin briefly and then sleep on a futex (C++20 atomic wait), and no heap allocation per call.
// [0, extent) is split into up to kChunksPerParticipant chunks per participant; each
// participant (the calling thread first) owns a consecutive block of them and runs it in order,
// then takes the last unstarted chunks of the others. When the cores run at one speed every
// thread runs its own block, as a static schedule would; when one is slowed (another process,
// a busy sibling hardware thread, a worker that wakes late) the others take over its tail
// instead of waiting for it.
//
// Guarantees of ParallelFor:
//   - every index of [0, extent) is passed to the body exactly once, in contiguous chunks
//     [begin, end) with begin < end; the chunks depend only on extent and the thread count
//     (not on timing), and their sizes differ by at most one;
//   - it returns only after every chunk has finished (memory written by the body is visible to
//     the caller);
//   - a call made while the calling thread is already inside a ParallelFor body (a nested
//     parallel loop), or while another thread is using the pool, runs serially on the calling
//     thread;
//   - an exception thrown by the body never escapes a worker thread: ParallelFor rethrows the
//     first one in the caller once all chunks have finished. The C entry point
//     tandem_parallel_for cannot throw (generated code cannot unwind): it keeps the first one as
//     the calling thread's pending error instead, which whoever called the generated code takes
//     with TakeParallelForError once the kernel has returned (Executable::RunInto does, after
//     every step). An error left pending by a parallel loop nested in a body (run serially, on
//     whichever thread runs that chunk) becomes the error of the enclosing loop, so it reaches
//     the thread that called the outermost loop.
//
// Inside an OpenMPTeamScope, the loops of the calling thread run on OpenMP's team instead (the
// same chunks and guarantees): the runtime oneDNN runs on, so that a module mixing our kernels
// with oneDNN calls hands one team of threads from kernel to kernel. With two pools, OpenMP's
// team goes on spinning through our next kernel after every oneDNN call, and ours through
// oneDNN's, so a mixed module can be slower than either all-own or all-oneDNN. Our own pool
// stays the default because a descheduled worker does not delay it (the others run the chunks
// it has not claimed, and nobody waits for it at a barrier), where OpenMP's closing barrier
// waits for every thread of its team: under another process's load a module of our kernels
// alone runs many times slower on OpenMP's team.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tandem::backends {

class ThreadPool {
 public:
  // Runs iterations [begin, end) with the closure given to ParallelFor.
  using Body = void (*)(int64_t begin, int64_t end, void* closure);

  // The largest supported number of participants.
  static constexpr int kMaxThreads = 4095;
  // Chunks per participant: enough that a slowed thread's tail is taken over in small pieces,
  // few enough that a chunk stays long against the cost of claiming it (one atomic operation).
  static constexpr int kChunksPerParticipant = 8;

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
  // Global() return a new pool with the same number of threads. The old pool (whose workers did
  // not survive the fork, and whose lock another thread may have held) is left untouched and
  // never destroyed.
  static void ResetGlobalAfterFork();

  // Restarts the workers so that `num_threads` participants share each loop (Error when < 1),
  // and, for the global pool, sets OpenMP's count for the calling thread to match, so that
  // oneDNN's calls use as many. Waits for a ParallelFor in progress on another thread first.
  void SetNumThreads(int num_threads);
  int num_threads() const { return num_threads_.load(std::memory_order_relaxed); }

  // Runs body(begin, end, closure) over chunks covering [0, extent); see the file comment.
  void ParallelFor(int64_t extent, Body body, void* closure);
  // The same for a C++ callable (convenience for runtime code and tests).
  void ParallelFor(int64_t extent, const std::function<void(int64_t, int64_t)>& body);

 private:
  // Sets up the job of a ParallelFor call (chunks, the participants' ranges, a new job tag) and
  // returns its tag; called with dispatch_mutex_ held.
  uint32_t PrepareJob(int64_t extent, Body body, void* closure, int participants);
  void StartWorkers();
  void StopWorkers();
  void WorkerLoop(int worker_index, uint64_t first_generation);
  // Takes the next chunk of job `job` for `participant`: its own next one, else another's last
  // unstarted one. False when no chunk of that job is left unstarted.
  bool ClaimChunk(uint32_t job, int participant, int participants, int* chunk);
  // Claims and runs chunks of job `job` until none is left.
  void HelpWithJob(uint32_t job, int participant, int participants);
  // Runs chunk `chunk` of the current job, catching exceptions.
  void RunChunk(int chunk);

  std::atomic<int> num_threads_{1};
  std::vector<std::thread> workers_;
  std::mutex dispatch_mutex_;  // held by the thread that dispatches a job

  // The current job; written by the dispatching thread before `generation_` is published, read
  // only by a thread that has claimed one of its chunks.
  Body body_ = nullptr;
  void* closure_ = nullptr;
  int64_t extent_ = 0;
  int chunks_ = 0;

  // Bits 0..11: number of participants of the current job; the bits above: its tag. Workers
  // wait on this word.
  std::atomic<uint64_t> generation_{0};
  uint32_t last_job_ = 0;  // tag of the last job (24 bits), under dispatch_mutex_
  // Per participant, its unstarted chunks of the current job (see thread_pool.cc), one cache
  // line each so that claims by different threads do not contend.
  struct alignas(64) Range {
    std::atomic<uint64_t> bounds{0};
  };
  std::unique_ptr<Range[]> ranges_;
  // Chunks of the current job that have finished; the dispatcher waits on it.
  std::atomic<int32_t> done_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> has_error_{false};
  std::exception_ptr error_;
};

// While alive, the parallel loops that the constructing thread runs through ThreadPool go to
// OpenMP's team (see the file comment). Scopes nest; each restores what it found.
class OpenMPTeamScope {
 public:
  explicit OpenMPTeamScope(bool active = true);
  ~OpenMPTeamScope();
  OpenMPTeamScope(const OpenMPTeamScope&) = delete;
  OpenMPTeamScope& operator=(const OpenMPTeamScope&) = delete;

 private:
  bool previous_;
};

// The first exception thrown by a loop body run through tandem_parallel_for on this thread (or
// by a loop nested in such a body, on any thread) since the last call, or null when none was;
// clears it. Callers of generated code call it after the code returns and rethrow what it gives.
std::exception_ptr TakeParallelForError();

// Throws `error` (one TakeParallelForError gave) as an ir::Error "<what> '<name>' failed: <its
// message>", keeping its location and adding `op`: what the callers of
// generated code (Executable, ArtifactModel) report for a step whose loop failed.
[[noreturn]] void RethrowParallelForError(std::exception_ptr error, const std::string& what,
                                          const std::string& name, const std::string& op);

}  // namespace tandem::backends

extern "C" {
// The entry point generated code calls for a parallel loop: runs body over [0, extent) on
// ThreadPool::Global(). Never throws: the first exception of the body becomes the calling
// thread's pending error (TakeParallelForError); later ones are dropped while one is pending.
void tandem_parallel_for(int64_t extent, void (*body)(int64_t, int64_t, void*), void* closure);
// What generated code calls for an index out of range (the kernel IR intrinsic checked_index):
// when `bad` is non-zero and no error is pending on this thread, the Error "index <index> is out
// of range [-extent, extent)" becomes its pending error (TakeParallelForError), which the caller
// of the generated code reports naming the step. Never throws.
void tandem_index_error(int64_t bad, int64_t index, int64_t extent);
}
