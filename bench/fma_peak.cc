#include "bench/fma_peak.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace tandem::bench {

namespace {

constexpr int kChains = 12;

// A vector of `N` f32 lanes (GCC vector extension): its arithmetic compiles to the instruction
// set of the function it is inlined into.
template <int N>
struct Lanes;
template <>
struct Lanes<16> {
  typedef float type __attribute__((vector_size(64)));
};
template <>
struct Lanes<8> {
  typedef float type __attribute__((vector_size(32)));
};

// Twelve independent chains a = a * x + y. The empty asm statements keep each accumulator in a
// register and stop the compiler from folding the chains; the sum is returned so that the loop
// is not removed. Inlined into the target-specific wrappers below, where a * x + y contracts
// to one FMA.
template <int N>
__attribute__((always_inline)) inline float FmaChains(int64_t iterations) {
  using V = typename Lanes<N>::type;
  // Named accumulators (an array would live in memory).
  V a0 = V{} + 1.0f, a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0,
    a9 = a0, a10 = a0, a11 = a0;
  const V x = V{} + 0.999999f, y = V{} + 1e-6f;
  for (int64_t n = 0; n < iterations; ++n) {
    a0 = a0 * x + y, a1 = a1 * x + y, a2 = a2 * x + y, a3 = a3 * x + y;
    a4 = a4 * x + y, a5 = a5 * x + y, a6 = a6 * x + y, a7 = a7 * x + y;
    a8 = a8 * x + y, a9 = a9 * x + y, a10 = a10 * x + y, a11 = a11 * x + y;
    asm volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
    asm volatile("" : "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
  }
  V sum = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + ((a8 + a9) + (a10 + a11));
  float total = 0;
  for (int l = 0; l < N; ++l) total += sum[l];
  return total;
}

__attribute__((target("avx512f"))) float FmaLoop512(int64_t iterations) {
  return FmaChains<16>(iterations);
}

__attribute__((target("avx2,fma"))) float FmaLoop256(int64_t iterations) {
  return FmaChains<8>(iterations);
}

}  // namespace

// Steps:
//   1. pick the unit (the one asked for when the CPU has it, else the widest it has);
//   2. run the loop on every thread at once, started together, five times;
//   3. the fastest run's FLOP over its wall time is the peak.
FmaPeak MeasureFmaPeak(int threads, int lanes) {
  // 1. The unit.
  __builtin_cpu_init();
  bool avx512 = __builtin_cpu_supports("avx512f");
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  FmaPeak peak;
  if (avx512 && (lanes >= 16 || !avx2)) {
    peak.unit = "AVX-512", peak.lanes = 16;
  } else if (avx2) {
    peak.unit = "AVX2", peak.lanes = 8;
  } else {
    peak.unit = "none";
    return peak;
  }
  // 2. The timed runs.
  threads = std::max(threads, 1);
  const int64_t iterations = peak.lanes == 16 ? 2000000 : 4000000;
  double best = 0;
  std::atomic<float> sink{0};
  for (int run = 0; run < 5; ++run) {
    std::atomic<int> ready{0};
    std::vector<double> seconds_of(static_cast<size_t>(threads), 0.0);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < threads) {
        }
        auto start = std::chrono::steady_clock::now();
        float result = peak.lanes == 16 ? FmaLoop512(iterations) : FmaLoop256(iterations);
        seconds_of[static_cast<size_t>(t)] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        sink.store(result);
      });
    }
    for (std::thread& worker : workers) worker.join();
    double seconds = *std::max_element(seconds_of.begin(), seconds_of.end());
    // 3. FLOP: threads x iterations x chains x lanes x 2.
    double flops =
        static_cast<double>(threads) * static_cast<double>(iterations) * kChains * peak.lanes * 2.0;
    best = std::max(best, flops / seconds / 1e9);
  }
  peak.gflops = best;
  peak.lowest_gflops = best;
  return peak;
}

void FmaPeak::Remeasure(int threads) {
  FmaPeak again = MeasureFmaPeak(threads, lanes);
  gflops = std::max(gflops, again.gflops);
  lowest_gflops = std::min(lowest_gflops, again.gflops);
  ++measurements;
}

std::string FmaPeak::Describe(int threads) const {
  if (measurements <= 1) {
    return fmt::format("{:.1f} GFLOP/s ({}, {} threads, measured by this run)", gflops, unit,
                       threads);
  }
  return fmt::format(
      "{:.1f} GFLOP/s ({}, {} threads; the highest of {} measurements over this run, before and "
      "after each workload; the lowest was {:.1f})",
      gflops, unit, threads, measurements, lowest_gflops);
}

}  // namespace tandem::bench
