#include "backends/runtime/thread_pool.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ir/error.h"

namespace tandem::backends {
namespace {

// Runs ParallelFor over `extent` and expects every index exactly once, in non-empty chunks.
void ExpectEachIndexOnce(ThreadPool& pool, int64_t extent) {
  std::unique_ptr<std::atomic<int>[]> hits(new std::atomic<int>[static_cast<size_t>(extent) + 1]);
  for (int64_t i = 0; i < extent; ++i) hits[static_cast<size_t>(i)] = 0;
  std::atomic<int> empty_chunks{0};
  std::atomic<int> chunks{0};
  pool.ParallelFor(extent, [&](int64_t begin, int64_t end) {
    if (begin >= end || begin < 0 || end > extent) ++empty_chunks;
    ++chunks;
    for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
  });
  EXPECT_EQ(empty_chunks.load(), 0);
  EXPECT_LE(chunks.load(),
            std::max<int64_t>(1, std::min<int64_t>(extent, int64_t{pool.num_threads()} *
                                                               ThreadPool::kChunksPerParticipant)));
  for (int64_t i = 0; i < extent; ++i) {
    ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "index " << i << " of " << extent;
  }
}

TEST(ThreadPool, EveryIndexRunsExactlyOnce) {
  for (int threads : {1, 2, 3, 5, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t extent : {0, 1, 2, 3, 4, 7, 8, 9, 64, 1000, 100003}) {
      SCOPED_TRACE(::testing::Message() << threads << " threads, extent " << extent);
      ExpectEachIndexOnce(pool, extent);
    }
  }
}

TEST(ThreadPool, ChunksAreBalancedAndIndependentOfTiming) {
  ThreadPool pool(4);
  const int64_t extent = 100;
  for (int round = 0; round < 3; ++round) {
    std::mutex mutex;
    std::vector<std::pair<int64_t, int64_t>> chunks;
    pool.ParallelFor(extent, [&](int64_t begin, int64_t end) {
      std::lock_guard<std::mutex> lock(mutex);
      chunks.emplace_back(begin, end);
    });
    std::sort(chunks.begin(), chunks.end());
    ASSERT_EQ(chunks.size(), 4u * ThreadPool::kChunksPerParticipant);
    int64_t next = 0;
    for (auto [begin, end] : chunks) {
      EXPECT_EQ(begin, next);
      EXPECT_TRUE(end - begin == 3 || end - begin == 4) << end - begin;
      next = end;
    }
    EXPECT_EQ(next, extent);
  }
}

// A participant that is slowed loses the chunks it has not started to the others, instead of
// the loop waiting for it: here the calling thread sleeps in its first chunk.
TEST(ThreadPool, OthersTakeOverTheChunksOfASlowedThread) {
  ThreadPool pool(2);
  const int64_t extent = 2 * ThreadPool::kChunksPerParticipant;  // one iteration per chunk
  std::vector<std::atomic<int>> hits(static_cast<size_t>(extent));
  std::atomic<int> on_caller{0}, on_worker{0};
  std::thread::id caller = std::this_thread::get_id();
  pool.ParallelFor(extent, [&](int64_t begin, int64_t end) {
    bool is_caller = std::this_thread::get_id() == caller;
    if (is_caller && begin == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
    ++(is_caller ? on_caller : on_worker);
  });
  for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
  EXPECT_GT(on_worker.load(), ThreadPool::kChunksPerParticipant) << "caller ran " << on_caller;
}

// Under uneven chunk times (some chunks sleep, so their threads fall behind and others take
// over their chunks) every index still runs exactly once, call after call.
TEST(ThreadPool, UnevenChunksStillRunEveryIndexOnce) {
  ThreadPool pool(3);
  uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  for (int call = 0; call < 400; ++call) {
    int64_t extent = 1 + static_cast<int64_t>(next() % 300);
    int64_t slow = static_cast<int64_t>(next() % static_cast<uint64_t>(extent));
    std::vector<std::atomic<int>> hits(static_cast<size_t>(extent));
    pool.ParallelFor(extent, [&](int64_t begin, int64_t end) {
      if (begin <= slow && slow < end) std::this_thread::sleep_for(std::chrono::microseconds(200));
      for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
    });
    for (int64_t i = 0; i < extent; ++i) {
      ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "call " << call << ", index " << i;
    }
  }
}

TEST(ThreadPool, CEntryPointUsesTheGlobalPool) {
  std::vector<std::atomic<int>> hits(777);
  tandem_parallel_for(
      777,
      [](int64_t begin, int64_t end, void* closure) {
        auto* h = static_cast<std::vector<std::atomic<int>>*>(closure);
        for (int64_t i = begin; i < end; ++i) ++(*h)[static_cast<size_t>(i)];
      },
      &hits);
  for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(ThreadPool, NestedCallsRunSeriallyAndCompletely) {
  ThreadPool pool(3);
  const int64_t outer = 7, inner = 11;
  std::vector<std::atomic<int>> hits(outer * inner);
  pool.ParallelFor(outer, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      pool.ParallelFor(inner, [&](int64_t b, int64_t e) {
        for (int64_t j = b; j < e; ++j) ++hits[static_cast<size_t>(i * inner + j)];
      });
    }
  });
  for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(ThreadPool, ManySmallCallsComplete) {
  ThreadPool pool(std::max(2u, std::thread::hardware_concurrency()));
  std::atomic<int64_t> sum{0};
  for (int call = 0; call < 5000; ++call) {
    pool.ParallelFor(1 + call % 5, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sum += i + 1;
    });
  }
  int64_t expected = 0;
  for (int call = 0; call < 5000; ++call) {
    int64_t n = 1 + call % 5;
    expected += n * (n + 1) / 2;
  }
  EXPECT_EQ(sum.load(), expected);
}

TEST(ThreadPool, ConcurrentCallersBothFinish) {
  ThreadPool pool(3);
  std::atomic<int64_t> total{0};
  auto work = [&] {
    for (int round = 0; round < 500; ++round) {
      pool.ParallelFor(16, [&](int64_t begin, int64_t end) { total += end - begin; });
    }
  };
  std::thread other(work);
  work();
  other.join();
  EXPECT_EQ(total.load(), 2 * 500 * 16);
}

TEST(ThreadPool, ExceptionsDoNotEscapeWorkers) {
  ThreadPool pool(4);
  std::atomic<int> ran{0};
  // Chunks other than the caller's throw; the caller sees the exception after every chunk ran.
  EXPECT_THROW(pool.ParallelFor(40,
                                [&](int64_t begin, int64_t end) {
                                  ran += static_cast<int>(end - begin);
                                  if (begin != 0) throw std::runtime_error("chunk failed");
                                }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 40);
  // The pool keeps working afterwards.
  ExpectEachIndexOnce(pool, 1000);
  // The C entry point does not throw (generated code cannot unwind): the error waits on the
  // calling thread for whoever called the generated code.
  EXPECT_NO_THROW(tandem_parallel_for(
      8, [](int64_t, int64_t, void*) { throw std::runtime_error("from a body"); }, nullptr));
  std::exception_ptr error = TakeParallelForError();
  ASSERT_TRUE(error);
  EXPECT_THROW(std::rethrow_exception(error), std::runtime_error);
  EXPECT_FALSE(TakeParallelForError());  // taken once
  ExpectEachIndexOnce(ThreadPool::Global(), 100);
}

// The message of the error pending on this thread ("" when none), which it takes.
std::string TakenMessage() {
  std::exception_ptr error = TakeParallelForError();
  if (!error) return "";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  }
}

TEST(ThreadPool, CEntryPointKeepsTheFirstErrorForTheCaller) {
  auto throw_closure = [](int64_t, int64_t, void* closure) {
    throw std::runtime_error(static_cast<const char*>(closure));
  };
  tandem_parallel_for(5, throw_closure, const_cast<char*>("first"));
  tandem_parallel_for(5, throw_closure, const_cast<char*>("second"));
  EXPECT_EQ(TakenMessage(), "first");
  EXPECT_EQ(TakenMessage(), "");
  // Another thread's loops do not leave errors on this one.
  std::thread other([&] {
    tandem_parallel_for(3, throw_closure, const_cast<char*>("other thread"));
    EXPECT_EQ(TakenMessage(), "other thread");
  });
  other.join();
  EXPECT_EQ(TakenMessage(), "");
}

// A parallel loop nested in a body runs serially on whichever thread runs that chunk (a worker,
// an OpenMP thread or the caller); its error must still reach the thread of the outer loop.
TEST(ThreadPool, ErrorsOfNestedLoopsReachTheOuterCaller) {
  struct Closure {
    std::thread::id caller = std::this_thread::get_id();
    std::atomic<int> failed_off_caller{0};
  };
  auto outer = [](int64_t begin, int64_t end, void* closure) {
    auto* c = static_cast<Closure*>(closure);
    // The caller's first chunk waits, so that workers claim the others.
    if (begin == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    for (int64_t i = begin; i < end; ++i) {
      if (i != 5) continue;
      if (std::this_thread::get_id() != c->caller) ++c->failed_off_caller;
      tandem_parallel_for(
          4, [](int64_t, int64_t, void*) { throw std::runtime_error("from a nested body"); },
          nullptr);
    }
  };
  ThreadPool& pool = ThreadPool::Global();
  int threads_before = pool.num_threads();
  for (int threads : {1, 4}) {
    pool.SetNumThreads(threads);
    for (bool on_openmp : {false, true}) {
      OpenMPTeamScope team(on_openmp);
      int off_caller = 0;
      for (int repeat = 0; repeat < 20; ++repeat) {
        Closure closure;
        tandem_parallel_for(8, outer, &closure);
        EXPECT_EQ(TakenMessage(), "from a nested body")
            << threads << " threads" << (on_openmp ? ", on OpenMP's team" : "");
        off_caller += closure.failed_off_caller.load();
        // Nothing stays pending on the workers: the next loop leaves no error.
        tandem_parallel_for(
            8, [](int64_t, int64_t, void*) {}, nullptr);
        EXPECT_EQ(TakenMessage(), "");
      }
      // With several threads, the failing chunk ran on another thread at least once.
      if (threads > 1) {
        EXPECT_GT(off_caller, 0) << (on_openmp ? "on OpenMP's team" : "");
      }
    }
  }
  pool.SetNumThreads(threads_before);
}

TEST(ThreadPool, InsideAnOpenMPTeamScopeLoopsRunOnOpenMPsTeam) {
  ThreadPool pool(2);
  auto on_team = [&] {
    std::atomic<int> in_openmp{0}, chunks{0};
    pool.ParallelFor(64, [&](int64_t, int64_t) {
      ++chunks;
      if (omp_in_parallel()) ++in_openmp;
    });
    return in_openmp.load() > 0 && in_openmp.load() == chunks.load();
  };
  EXPECT_FALSE(on_team());
  {
    OpenMPTeamScope scope;
    EXPECT_TRUE(on_team());
    ExpectEachIndexOnce(pool, 100003);
    ExpectEachIndexOnce(pool, 7);
    {
      OpenMPTeamScope inactive(/*active=*/false);  // nested: stays on the team
      EXPECT_TRUE(on_team());
    }
    EXPECT_TRUE(on_team());
    // Nested loops run serially inside a chunk; exceptions reach the caller.
    std::vector<std::atomic<int>> hits(7 * 11);
    pool.ParallelFor(7, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        pool.ParallelFor(11, [&](int64_t b, int64_t e) {
          for (int64_t j = b; j < e; ++j) ++hits[static_cast<size_t>(i * 11 + j)];
        });
      }
    });
    for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
    EXPECT_THROW(pool.ParallelFor(8,
                                  [](int64_t begin, int64_t) {
                                    if (begin != 0) throw std::runtime_error("chunk failed");
                                  }),
                 std::runtime_error);
  }
  EXPECT_FALSE(on_team());
}

TEST(ThreadPool, SetNumThreads) {
  ThreadPool pool(2);
  pool.SetNumThreads(5);
  EXPECT_EQ(pool.num_threads(), 5);
  ExpectEachIndexOnce(pool, 333);
  pool.SetNumThreads(1);
  ExpectEachIndexOnce(pool, 333);
  EXPECT_THROW(pool.SetNumThreads(0), ir::Error);
  EXPECT_THROW(ThreadPool(-1), ir::Error);
  EXPECT_GE(ThreadPool::Global().num_threads(), 1);
}

}  // namespace
}  // namespace tandem::backends
