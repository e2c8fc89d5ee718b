// The measured f32 FMA peak of this machine: what "percent of peak" in the benchmark tables
// divides by.
#pragma once

#include <string>

namespace tandem::bench {

struct FmaPeak {
  std::string unit;   // "AVX-512", "AVX2" or "none" (no FMA vector unit this program can use)
  int lanes = 0;      // f32 lanes per FMA
  double gflops = 0;  // GFLOP/s on all threads together (one FMA = 2 FLOP)
  // When measured more than once over a run (Remeasure): how often, and the lowest result.
  int measurements = 1;
  double lowest_gflops = 0;

  // Measures again and keeps the highest result. A host's clock moves with the load of other
  // cores and tenants; the highest measurement of a run is the peak its kernels could reach, so
  // a slow moment at one measurement does not inflate the run's percentages of peak.
  void Remeasure(int threads);
  // "X GFLOP/s (AVX-512, 2 threads, ...)": the value and how it was measured, for a table's
  // heading.
  std::string Describe(int threads) const;
};

// Times a loop of independent vector FMAs (twelve accumulator chains, enough to cover the FMA
// latency on two ports) on `threads` threads at once and returns the best of a few runs.
// `lanes` picks the unit: 16 AVX-512 (when the CPU has AVX-512F), 8 AVX2+FMA; the widest the
// CPU has when it lacks the one asked for. Takes about 0.2 s.
FmaPeak MeasureFmaPeak(int threads, int lanes);

}  // namespace tandem::bench
