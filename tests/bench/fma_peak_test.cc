// The FMA peak the benchmark tables divide by: a measurement is positive on a machine with a
// vector FMA unit, and measuring again over a run keeps the highest result and counts the
// measurements, which the table heading then names with the lowest.
#include "bench/fma_peak.h"

#include <gtest/gtest.h>

namespace tandem::bench {
namespace {

TEST(FmaPeak, RemeasuringKeepsTheHighestAndCountsTheMeasurements) {
  FmaPeak peak = MeasureFmaPeak(1, 8);
  if (peak.unit == "none") GTEST_SKIP() << "no AVX2 or AVX-512 FMA unit on this machine";
  EXPECT_GT(peak.gflops, 0);
  EXPECT_EQ(peak.measurements, 1);
  EXPECT_EQ(peak.lowest_gflops, peak.gflops);
  EXPECT_NE(peak.Describe(1).find("measured by this run"), std::string::npos);
  double first = peak.gflops;
  peak.Remeasure(1);
  peak.Remeasure(1);
  EXPECT_EQ(peak.measurements, 3);
  EXPECT_GE(peak.gflops, first);
  EXPECT_LE(peak.lowest_gflops, first);
  EXPECT_GT(peak.lowest_gflops, 0);
  std::string heading = peak.Describe(1);
  EXPECT_NE(heading.find("the highest of 3 measurements"), std::string::npos) << heading;
}

}  // namespace
}  // namespace tandem::bench
