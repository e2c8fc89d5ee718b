// The measured f32 FMA peak of this machine: what "percent of peak" in the benchmark tables
// divides by.
#pragma once

#include <string>

namespace tandem::bench {

struct FmaPeak {
  std::string unit;   // "AVX-512", "AVX2" or "none" (no FMA vector unit this program can use)
  int lanes = 0;      // f32 lanes per FMA
  double gflops = 0;  // GFLOP/s on all threads together (one FMA = 2 FLOP)
};

// Times a loop of independent vector FMAs (twelve accumulator chains, enough to cover the FMA
// latency on two ports) on `threads` threads at once and returns the best of a few runs.
// `lanes` picks the unit: 16 AVX-512 (when the CPU has AVX-512F), 8 AVX2+FMA; the widest the
// CPU has when it lacks the one asked for. Takes about 0.2 s.
FmaPeak MeasureFmaPeak(int threads, int lanes);

}  // namespace tandem::bench
