#include "backends/runtime/thread_pool.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>

#include "ir/error.h"

namespace tandem::backends {

namespace {

constexpr uint64_t kParticipantBits = 12;
constexpr uint64_t kParticipantMask = (uint64_t{1} << kParticipantBits) - 1;
static_assert(ThreadPool::kMaxThreads <= static_cast<int>(kParticipantMask));
// Iterations a worker (or the waiting dispatcher) polls before it sleeps on a futex: enough to
// catch back-to-back kernel launches, short enough not to burn a core between requests.
constexpr int kSpinIterations = 4096;

// True while this thread runs a chunk of a parallel loop (workers: always).
thread_local bool tls_in_parallel_region = false;
// True inside an OpenMPTeamScope.
thread_local bool tls_on_openmp_team = false;
// The first exception that tandem_parallel_for caught on this thread and nobody took yet.
thread_local std::exception_ptr tls_pending_error;

// Runs body(begin, end, closure) and rethrows an error that a parallel loop nested in it left
// pending on this thread (one that was pending before belongs to an earlier loop and stays).
void RunBody(ThreadPool::Body body, int64_t begin, int64_t end, void* closure) {
  bool pending_before = tls_pending_error != nullptr;
  body(begin, end, closure);
  if (!pending_before && tls_pending_error) std::rethrow_exception(TakeParallelForError());
}

// The pool Global() returns; never destroyed (worker threads may outlive static destruction,
// and after fork() a child replaces it without touching the old one).
std::atomic<ThreadPool*> global_pool{nullptr};

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// The chunk of participant `index` when `extent` iterations are shared by `participants`.
void ChunkOf(int64_t extent, int participants, int index, int64_t* begin, int64_t* end) {
  int64_t base = extent / participants;
  int64_t remainder = extent % participants;
  *begin = index * base + std::min<int64_t>(index, remainder);
  *end = *begin + base + (index < remainder ? 1 : 0);
}

void CheckThreadCount(int num_threads) {
  if (num_threads < 1 || num_threads > ThreadPool::kMaxThreads) {
    throw ir::Error(fmt::format("thread pool: the number of threads must be in [1, {}] but is {}",
                                ThreadPool::kMaxThreads, num_threads));
  }
}

int DefaultThreadCount() {
  unsigned hardware = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp<unsigned>(hardware, 1, ThreadPool::kMaxThreads));
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  CheckThreadCount(num_threads);
  num_threads_ = num_threads;
  StartWorkers();
}

ThreadPool::~ThreadPool() {
  StopWorkers();
}

ThreadPool& ThreadPool::Global() {
  ThreadPool* pool = global_pool.load(std::memory_order_acquire);
  if (pool) return *pool;
  // First use: the first thread to publish its pool wins; a losing one discards its own.
  auto* created = new ThreadPool(DefaultThreadCount());
  if (global_pool.compare_exchange_strong(pool, created, std::memory_order_acq_rel)) {
    return *created;
  }
  delete created;
  return *pool;
}

void ThreadPool::ResetGlobalAfterFork() {
  ThreadPool* old = global_pool.load(std::memory_order_acquire);
  int num_threads = old ? old->num_threads() : DefaultThreadCount();
  global_pool.store(new ThreadPool(num_threads), std::memory_order_release);
}

void ThreadPool::SetNumThreads(int num_threads) {
  CheckThreadCount(num_threads);
  std::lock_guard<std::mutex> lock(dispatch_mutex_);
  if (this == global_pool.load(std::memory_order_acquire)) omp_set_num_threads(num_threads);
  if (num_threads == num_threads_.load()) return;
  StopWorkers();
  num_threads_ = num_threads;
  StartWorkers();
}

void ThreadPool::StartWorkers() {
  stop_.store(false);
  uint64_t generation = generation_.load(std::memory_order_acquire);
  int workers = num_threads_.load() - 1;
  workers_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) {
    workers_.emplace_back([this, i, generation] { WorkerLoop(i, generation); });
  }
}

void ThreadPool::StopWorkers() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(uint64_t{1} << kParticipantBits, std::memory_order_acq_rel);
  generation_.notify_all();
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
}

void ThreadPool::WorkerLoop(int worker_index, uint64_t first_generation) {
  tls_in_parallel_region = true;  // parallel loops inside a chunk run serially
  uint64_t seen = first_generation;
  while (true) {
    uint64_t current = generation_.load(std::memory_order_acquire);
    for (int spin = 0; current == seen && spin < kSpinIterations; ++spin) {
      CpuRelax();
      current = generation_.load(std::memory_order_acquire);
    }
    while (current == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      current = generation_.load(std::memory_order_acquire);
    }
    seen = current;
    if (stop_.load(std::memory_order_acquire)) return;
    int chunks = static_cast<int>(current & kParticipantMask);
    // Workers beyond the number of chunks have nothing to claim.
    if (worker_index + 1 < chunks) {
      HelpWithJob(static_cast<uint32_t>(current >> kParticipantBits), chunks);
    }
  }
}

void ThreadPool::HelpWithJob(uint32_t job, int participants) {
  uint64_t claim = claim_.load(std::memory_order_acquire);
  while (true) {
    if (static_cast<uint32_t>(claim >> 32) != job) return;  // that job is over
    auto chunk = static_cast<uint32_t>(claim);
    if (chunk >= static_cast<uint32_t>(participants)) return;
    if (claim_.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
      RunChunk(static_cast<int>(chunk));
      if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == participants - 1) {
        done_.notify_one();
      }
      claim = claim_.load(std::memory_order_acquire);
    }
  }
}

void ThreadPool::RunChunk(int chunk) {
  int64_t begin, end;
  ChunkOf(extent_, participants_, chunk, &begin, &end);
  if (begin >= end) return;
  try {
    RunBody(body_, begin, end, closure_);
  } catch (...) {
    if (!has_error_.exchange(true, std::memory_order_acq_rel)) error_ = std::current_exception();
  }
}

void ThreadPool::ParallelFor(int64_t extent, Body body, void* closure) {
  if (extent <= 0) return;
  if (extent == 1 || tls_in_parallel_region || num_threads() == 1) {
    RunBody(body, 0, extent, closure);
    return;
  }
  if (tls_on_openmp_team) {
    ParallelForOnOpenMP(extent, body, closure);
    return;
  }
  std::unique_lock<std::mutex> lock(dispatch_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {  // another thread is using the pool: do not wait for it
    RunBody(body, 0, extent, closure);
    return;
  }
  int participants = static_cast<int>(std::min<int64_t>(num_threads_.load(), extent));
  body_ = body;
  closure_ = closure;
  extent_ = extent;
  participants_ = participants;
  has_error_.store(false, std::memory_order_relaxed);
  error_ = nullptr;
  done_.store(0, std::memory_order_relaxed);
  uint64_t counter = (generation_.load(std::memory_order_relaxed) >> kParticipantBits) + 1;
  auto job = static_cast<uint32_t>(counter);
  claim_.store((static_cast<uint64_t>(job) << 32) | 1, std::memory_order_release);
  generation_.store((counter << kParticipantBits) | static_cast<uint64_t>(participants),
                    std::memory_order_release);
  generation_.notify_all();

  tls_in_parallel_region = true;
  RunChunk(0);
  HelpWithJob(job, participants);
  tls_in_parallel_region = false;

  int32_t finished = done_.load(std::memory_order_acquire);
  for (int spin = 0; finished != participants - 1 && spin < kSpinIterations; ++spin) {
    CpuRelax();
    finished = done_.load(std::memory_order_acquire);
  }
  while (finished != participants - 1) {
    done_.wait(finished, std::memory_order_acquire);
    finished = done_.load(std::memory_order_acquire);
  }
  if (has_error_.load(std::memory_order_acquire)) {
    std::exception_ptr error = error_;
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

void ThreadPool::ParallelForOnOpenMP(int64_t extent, Body body, void* closure) {
  // ParallelFor has run the loops that stay serial (empty, one iteration, nested, one thread).
  if (omp_in_parallel()) {
    RunBody(body, 0, extent, closure);
    return;
  }
  int requested = static_cast<int>(std::min<int64_t>(num_threads_.load(), extent));
  std::exception_ptr error;
  std::atomic<bool> has_error{false};
#pragma omp parallel num_threads(requested)
  {
    // The runtime may give fewer threads than asked (a thread limit): chunk by the team's size.
    int64_t begin, end;
    ChunkOf(extent, omp_get_num_threads(), omp_get_thread_num(), &begin, &end);
    if (begin < end) {
      tls_in_parallel_region = true;
      try {
        RunBody(body, begin, end, closure);
      } catch (...) {
        if (!has_error.exchange(true, std::memory_order_acq_rel)) error = std::current_exception();
      }
      tls_in_parallel_region = false;
    }
  }
  if (has_error.load(std::memory_order_acquire)) std::rethrow_exception(error);
}

OpenMPTeamScope::OpenMPTeamScope(bool active) : previous_(tls_on_openmp_team) {
  tls_on_openmp_team = previous_ || active;
}

OpenMPTeamScope::~OpenMPTeamScope() {
  tls_on_openmp_team = previous_;
}

void ThreadPool::ParallelFor(int64_t extent, const std::function<void(int64_t, int64_t)>& body) {
  auto trampoline = [](int64_t begin, int64_t end, void* closure) {
    (*static_cast<const std::function<void(int64_t, int64_t)>*>(closure))(begin, end);
  };
  ParallelFor(extent, trampoline, const_cast<std::function<void(int64_t, int64_t)>*>(&body));
}

void RethrowParallelForError(std::exception_ptr error, const std::string& what,
                             const std::string& name, const std::string& op) {
  try {
    std::rethrow_exception(error);
  } catch (const ir::Error& e) {
    throw ir::Error(fmt::format("{} '{}' failed: {}", what, name, e.message()), e.where())
        .WithOp(op);
  } catch (const std::exception& e) {
    throw ir::Error(fmt::format("{} '{}' failed: {}", what, name, e.what()),
                    ir::ErrorLocation{.op = op});
  } catch (...) {
    throw ir::Error(fmt::format("{} '{}' failed in a parallel loop (an exception that is not a "
                                "std::exception)",
                                what, name),
                    ir::ErrorLocation{.op = op});
  }
}

std::exception_ptr TakeParallelForError() {
  return std::exchange(tls_pending_error, nullptr);
}

}  // namespace tandem::backends

extern "C" void tandem_index_error(int64_t bad, int64_t index, int64_t extent) {
  if (bad == 0 || tandem::backends::tls_pending_error) return;
  tandem::backends::tls_pending_error = std::make_exception_ptr(
      tandem::ir::Error(fmt::format("index {} is out of range [{}, {})", index, -extent, extent)));
}

extern "C" void tandem_parallel_for(int64_t extent, void (*body)(int64_t, int64_t, void*),
                                    void* closure) {
  try {
    tandem::backends::ThreadPool::Global().ParallelFor(extent, body, closure);
  } catch (...) {
    // Generated code has no unwind tables: an exception must not cross this frame. It waits on
    // this thread for the caller of the generated code (TakeParallelForError).
    if (!tandem::backends::tls_pending_error) {
      tandem::backends::tls_pending_error = std::current_exception();
    }
  }
}
