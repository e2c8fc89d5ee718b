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

constexpr uint64_t kParticipantBits = 12;  // of the generation word (see thread_pool.h)
constexpr uint64_t kParticipantMask = (uint64_t{1} << kParticipantBits) - 1;
static_assert(ThreadPool::kMaxThreads <= static_cast<int>(kParticipantMask));
// Iterations a worker (or the waiting dispatcher) polls before it sleeps on a futex: enough to
// catch back-to-back kernel launches, short enough not to burn a core between requests.
constexpr int kSpinIterations = 4096;

// A participant's range of unstarted chunks [front, back) of one job, in one word: bits 40..63 the
// job (low bits of its counter), bits 20..39 back, bits 0..19 front. The owner claims from the
// front, others from the back; a claim for another job fails on the job bits.
constexpr uint64_t kJobMask = (uint64_t{1} << 24) - 1;
constexpr uint64_t kFrontOne = 1;
constexpr uint64_t kBackOne = uint64_t{1} << 20;
static_assert(int64_t{ThreadPool::kMaxThreads} * ThreadPool::kChunksPerParticipant < (1 << 20));

uint64_t MakeRange(uint32_t job, int64_t front, int64_t back) {
  return (uint64_t{job} << 40) | (static_cast<uint64_t>(back) << 20) | static_cast<uint64_t>(front);
}
uint32_t RangeJob(uint64_t range) {
  return static_cast<uint32_t>(range >> 40);
}
constexpr uint64_t kBoundMask = (uint64_t{1} << 20) - 1;
uint64_t RangeBack(uint64_t range) {
  return (range >> 20) & kBoundMask;
}
uint64_t RangeFront(uint64_t range) {
  return range & kBoundMask;
}

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

// Part `index` of [0, extent) split into `parts` contiguous parts whose sizes differ by at most
// one (the chunks of a loop, and the block of chunks of each participant).
void ChunkOf(int64_t extent, int parts, int index, int64_t* begin, int64_t* end) {
  int64_t base = extent / parts;
  int64_t remainder = extent % parts;
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
  ranges_ = std::make_unique<Range[]>(static_cast<size_t>(num_threads_.load()));
  int workers = num_threads_.load() - 1;
  workers_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) {
    workers_.emplace_back([this, i, generation] { WorkerLoop(i, generation); });
  }
}

void ThreadPool::StopWorkers() {
  stop_.store(true, std::memory_order_release);
  last_job_ = (last_job_ + 1) & static_cast<uint32_t>(kJobMask);  // a new value to wake on
  generation_.store(uint64_t{last_job_} << kParticipantBits, std::memory_order_release);
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
    int participants = static_cast<int>(current & kParticipantMask);
    // Workers beyond the number of participants have nothing to claim.
    if (worker_index + 1 < participants) {
      HelpWithJob(static_cast<uint32_t>(current >> kParticipantBits), worker_index + 1,
                  participants);
    }
  }
}

bool ThreadPool::ClaimChunk(uint32_t job, int participant, int participants, int* chunk) {
  // 1. Own chunks, from the front of this participant's range, in order.
  std::atomic<uint64_t>& own = ranges_[static_cast<size_t>(participant)].bounds;
  uint64_t range = own.load(std::memory_order_acquire);
  while (RangeJob(range) == job && RangeFront(range) < RangeBack(range)) {
    if (own.compare_exchange_weak(range, range + kFrontOne, std::memory_order_acq_rel,
                                  std::memory_order_acquire)) {
      *chunk = static_cast<int>(RangeFront(range));
      return true;
    }
  }
  // 2. Then the last unstarted chunk of another participant, the next one's first.
  for (int step = 1; step < participants; ++step) {
    std::atomic<uint64_t>& other =
        ranges_[static_cast<size_t>((participant + step) % participants)].bounds;
    range = other.load(std::memory_order_acquire);
    while (RangeJob(range) == job && RangeFront(range) < RangeBack(range)) {
      if (other.compare_exchange_weak(range, range - kBackOne, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        *chunk = static_cast<int>(RangeBack(range) - 1);
        return true;
      }
    }
  }
  return false;
}

void ThreadPool::HelpWithJob(uint32_t job, int participant, int participants) {
  int chunk = 0;
  while (ClaimChunk(job, participant, participants, &chunk)) {
    RunChunk(chunk);
    // Read before this chunk counts as done: once all have, the dispatcher may start the next
    // job and change chunks_.
    int chunks = chunks_;
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) done_.notify_one();
  }
}

void ThreadPool::RunChunk(int chunk) {
  int64_t begin, end;
  ChunkOf(extent_, chunks_, chunk, &begin, &end);
  if (begin >= end) return;
  try {
    RunBody(body_, begin, end, closure_);
  } catch (...) {
    if (!has_error_.exchange(true, std::memory_order_acq_rel)) error_ = std::current_exception();
  }
}

void ThreadPool::ParallelFor(int64_t extent, Body body, void* closure) {
  if (extent <= 0) return;
  if (extent == 1 || tls_in_parallel_region || num_threads() == 1 ||
      (tls_on_openmp_team && omp_in_parallel())) {
    RunBody(body, 0, extent, closure);
    return;
  }
  std::unique_lock<std::mutex> lock(dispatch_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {  // another thread is using the pool: do not wait for it
    RunBody(body, 0, extent, closure);
    return;
  }
  int participants = static_cast<int>(std::min<int64_t>(num_threads_.load(), extent));
  uint32_t job = PrepareJob(extent, body, closure, participants);
  if (tls_on_openmp_team) {
    // OpenMP's team claims the chunks; its closing barrier waits for them all. Each thread
    // takes chunks until none is left anywhere, so a team smaller than asked (a thread limit)
    // also runs the chunks of the participants it lacks.
#pragma omp parallel num_threads(participants)
    {
      tls_in_parallel_region = true;
      HelpWithJob(job, omp_get_thread_num(), participants);
      tls_in_parallel_region = false;
    }
  } else {
    // 1. Publish the job (the release orders PrepareJob's writes before it); wake the workers.
    generation_.store((uint64_t{job} << kParticipantBits) | static_cast<uint64_t>(participants),
                      std::memory_order_release);
    generation_.notify_all();
    // 2. Run this thread's chunks, then help with the others'.
    tls_in_parallel_region = true;
    HelpWithJob(job, 0, participants);
    tls_in_parallel_region = false;
    // 3. Wait for the chunks that workers claimed.
    int32_t finished = done_.load(std::memory_order_acquire);
    for (int spin = 0; finished != chunks_ && spin < kSpinIterations; ++spin) {
      CpuRelax();
      finished = done_.load(std::memory_order_acquire);
    }
    while (finished != chunks_) {
      done_.wait(finished, std::memory_order_acquire);
      finished = done_.load(std::memory_order_acquire);
    }
  }
  if (has_error_.load(std::memory_order_acquire)) {
    std::exception_ptr error = error_;
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

uint32_t ThreadPool::PrepareJob(int64_t extent, Body body, void* closure, int participants) {
  // 1. Split [0, extent) into chunks; each participant owns a consecutive block of them.
  int chunks =
      static_cast<int>(std::min<int64_t>(extent, int64_t{participants} * kChunksPerParticipant));
  body_ = body;
  closure_ = closure;
  extent_ = extent;
  chunks_ = chunks;
  has_error_.store(false, std::memory_order_relaxed);
  error_ = nullptr;
  done_.store(0, std::memory_order_relaxed);
  // 2. A new job tag, so that a late worker's claims for an earlier job fail.
  last_job_ = (last_job_ + 1) & static_cast<uint32_t>(kJobMask);
  for (int p = 0; p < participants; ++p) {
    int64_t front, back;
    ChunkOf(chunks, participants, p, &front, &back);
    ranges_[static_cast<size_t>(p)].bounds.store(MakeRange(last_job_, front, back),
                                                 std::memory_order_release);
  }
  return last_job_;
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
