#include "backends/runtime/thread_pool.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <exception>
#include <string>
#include <thread>

#include "ir/error.h"

namespace tandem::backends {

namespace {

// True while this thread runs a chunk of a parallel loop.
thread_local bool tls_in_parallel_region = false;

// The pool Global() returns; never destroyed (after fork() a child replaces it without touching
// the old one).
std::atomic<ThreadPool*> global_pool{nullptr};

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

// Runs the body over this team member's chunk with nested loops serial; the first exception of
// the team is kept in `error`.
void RunChunk(ThreadPool::Body body, void* closure, int64_t extent, int participants, int index,
              std::exception_ptr& error, std::atomic<bool>& has_error) {
  int64_t begin, end;
  ChunkOf(extent, participants, index, &begin, &end);
  if (begin >= end) return;
  bool outer = tls_in_parallel_region;
  tls_in_parallel_region = true;
  try {
    body(begin, end, closure);
  } catch (...) {
    if (!has_error.exchange(true, std::memory_order_acq_rel)) error = std::current_exception();
  }
  tls_in_parallel_region = outer;
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  CheckThreadCount(num_threads);
  num_threads_ = num_threads;
}

ThreadPool::~ThreadPool() = default;

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
  num_threads_ = num_threads;
  omp_set_num_threads(num_threads);
}

void ThreadPool::ParallelFor(int64_t extent, Body body, void* closure) {
  if (extent <= 0) return;
  if (extent == 1 || tls_in_parallel_region || omp_in_parallel() || num_threads() == 1) {
    body(0, extent, closure);
    return;
  }
  std::unique_lock<std::mutex> lock(dispatch_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {  // another thread is using the pool: do not wait for it
    body(0, extent, closure);
    return;
  }
  int requested = static_cast<int>(std::min<int64_t>(num_threads_.load(), extent));
  std::exception_ptr error;
  std::atomic<bool> has_error{false};
#pragma omp parallel num_threads(requested)
  {
    // The runtime may give fewer threads than asked (a thread limit): chunk by the team's size.
    RunChunk(body, closure, extent, omp_get_num_threads(), omp_get_thread_num(), error, has_error);
  }
  if (has_error.load(std::memory_order_acquire)) std::rethrow_exception(error);
}

void ThreadPool::ParallelFor(int64_t extent, const std::function<void(int64_t, int64_t)>& body) {
  auto trampoline = [](int64_t begin, int64_t end, void* closure) {
    (*static_cast<const std::function<void(int64_t, int64_t)>*>(closure))(begin, end);
  };
  ParallelFor(extent, trampoline, const_cast<std::function<void(int64_t, int64_t)>*>(&body));
}

}  // namespace tandem::backends

extern "C" void tandem_parallel_for(int64_t extent, void (*body)(int64_t, int64_t, void*),
                                    void* closure) {
  try {
    tandem::backends::ThreadPool::Global().ParallelFor(extent, body, closure);
  } catch (...) {
    // Generated code has no unwind tables: an exception must not cross this frame.
  }
}
