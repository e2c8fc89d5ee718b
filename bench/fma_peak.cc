#include "bench/fma_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace tandem::bench {

namespace {

constexpr int kChains = 12;

// The empty asm statements keep each accumulator in a register and stop the compiler from
// folding the chains; the result is returned so that the loop is not removed.
__attribute__((target("avx512f"))) float FmaLoop512(int64_t iterations) {
  __m512 a0 = _mm512_set1_ps(1.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0,
         a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-6f);
  for (int64_t n = 0; n < iterations; ++n) {
    a0 = _mm512_fmadd_ps(a0, x, y), a1 = _mm512_fmadd_ps(a1, x, y);
    a2 = _mm512_fmadd_ps(a2, x, y), a3 = _mm512_fmadd_ps(a3, x, y);
    a4 = _mm512_fmadd_ps(a4, x, y), a5 = _mm512_fmadd_ps(a5, x, y);
    a6 = _mm512_fmadd_ps(a6, x, y), a7 = _mm512_fmadd_ps(a7, x, y);
    a8 = _mm512_fmadd_ps(a8, x, y), a9 = _mm512_fmadd_ps(a9, x, y);
    a10 = _mm512_fmadd_ps(a10, x, y), a11 = _mm512_fmadd_ps(a11, x, y);
    asm volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
    asm volatile("" : "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
  }
  __m512 sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  sum = _mm512_add_ps(sum, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;
}

__attribute__((target("avx2,fma"))) float FmaLoop256(int64_t iterations) {
  __m256 a0 = _mm256_set1_ps(1.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0,
         a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-6f);
  for (int64_t n = 0; n < iterations; ++n) {
    a0 = _mm256_fmadd_ps(a0, x, y), a1 = _mm256_fmadd_ps(a1, x, y);
    a2 = _mm256_fmadd_ps(a2, x, y), a3 = _mm256_fmadd_ps(a3, x, y);
    a4 = _mm256_fmadd_ps(a4, x, y), a5 = _mm256_fmadd_ps(a5, x, y);
    a6 = _mm256_fmadd_ps(a6, x, y), a7 = _mm256_fmadd_ps(a7, x, y);
    a8 = _mm256_fmadd_ps(a8, x, y), a9 = _mm256_fmadd_ps(a9, x, y);
    a10 = _mm256_fmadd_ps(a10, x, y), a11 = _mm256_fmadd_ps(a11, x, y);
    asm volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5));
    asm volatile("" : "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));
  }
  __m256 sum = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  sum = _mm256_add_ps(sum, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;
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
  return peak;
}

}  // namespace tandem::bench
