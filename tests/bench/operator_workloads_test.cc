// The operator workloads the benchmarks time: names of any size parse, and each family's
// Tandem graph and oneDNN program compute the same result.
#include "bench/operator_workloads.h"

#include <gtest/gtest.h>

#include "backends/runtime/executable.h"
#include "ir/error.h"
#include "ir/tensor.h"

namespace tandem::bench {
namespace {

TEST(OperatorWorkloads, NamesOfAnySizeParse) {
  for (const std::string& name : WorkloadNames()) EXPECT_TRUE(IsWorkloadName(name)) << name;
  for (const char* name :
       {"MM-3x5x7", "PWL-3x4x5", "DWL-8x9-k3s1", "CVL-8x16x5-k3s2", "GCL-8x16x5-k3s2g4"}) {
    EXPECT_TRUE(IsWorkloadName(name)) << name;
  }
  for (const char* name : {"", "XYZ", "MM-3x5", "MM-3x5x7x9", "PWL-0x4x5", "PWL-3x4x5x",
                           "DWL-8x9-k3", "DWL-8x9-k3s1junk", "CVL-8x16x5-k3s", "CVL-8x16x5k3s1",
                           "CVL-8x16x5-k3s1-", "PWL-1234567x4x5", "CVL--8x16x5-k3s1",
                           "GCL-8x16x5-k3s2", "GCL-8x16x5-k3s2g3", "GCL-8x16x5-k3s2g0"}) {
    EXPECT_FALSE(IsWorkloadName(name)) << name;
  }
  OnednnContext context;
  EXPECT_THROW(MakeWorkload("PWL-3x4", context), ir::Error);
}

// Tandem's default build against the workload's first oneDNN program on the same inputs.
void ExpectAgrees(const std::string& name, double flops) {
  SCOPED_TRACE(name);
  OnednnContext context;
  Workload workload = MakeWorkload(name, context, /*seed=*/7);
  EXPECT_EQ(workload.name, name);
  EXPECT_DOUBLE_EQ(workload.flops, flops);
  std::vector<ir::Tensor> tandem = backends::Build(workload.module)->Run(workload.inputs);
  ASSERT_EQ(tandem.size(), 1u);
  ASSERT_FALSE(workload.onednn_programs.empty());
  workload.onednn_programs[0].Run(context.stream);
  ASSERT_EQ(tandem[0].shape(), workload.onednn_output.shape());
  EXPECT_LT(ir::RelativeError(tandem[0], workload.onednn_output), 1e-4);
}

TEST(OperatorWorkloads, SizedFamiliesMatchOnednn) {
  // Output 3x3 (stride 2, padding 1 over 5x5), 24 channels from 8 through 3x3 taps.
  ExpectAgrees("CVL-8x24x5-k3s2", 2.0 * 3 * 3 * 24 * 9 * 8);
  ExpectAgrees("PWL-16x8x5", 2.0 * 5 * 5 * 16 * 8);
  // Output 5x5 (stride 2, padding 2 over 9x9).
  ExpectAgrees("DWL-16x9-k5s2", 2.0 * 5 * 5 * 16 * 25);
  ExpectAgrees("MM-6x10x12", 2.0 * 6 * 10 * 12);
  // 4 groups of 4 input channels into 6 output channels each, output 3x3.
  ExpectAgrees("GCL-16x24x5-k3s2g4", 2.0 * 3 * 3 * 24 * 9 * 4);
}

}  // namespace
}  // namespace tandem::bench
