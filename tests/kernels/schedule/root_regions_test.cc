// The root block's read/write regions stay what the compute definition made them (none) under
// every schedule primitive: block-level primitives recompute the regions of the blocks they
// rewrite, and once did so for the root as well, leaving root regions in terms of the iterators
// of the blocks inside it (printed with a `free(...)` clause). Scheduled kernels print without
// such a clause and round-trip through the kernel text form.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <string>

#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_parser.h"
#include "ir/kernel/kernel_printer.h"
#include "ir/kernel/kernel_structural.h"
#include "kernels/schedule/schedule.h"
#include "tests/kernels/schedule_fuzzer.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem::kernels {
namespace {

using testing::CompareKernels;
using testing::Conv2d;
using testing::ConvBiasRelu;
using testing::Matmul;

const ir::BlockNode& Root(const ir::KernelFunction& fn) {
  return *ir::As<ir::BlockRealizeNode>(fn.body)->block;
}

// Variables mentioned by the root's regions.
std::vector<std::string> RootRegionVariables(const ir::KernelFunction& fn) {
  std::vector<std::string> names;
  const ir::BlockNode& root = Root(fn);
  for (const auto* regions : {&root.reads, &root.writes}) {
    for (const ir::BufferRegion& r : *regions) {
      for (const ir::Range& range : r.region) {
        for (const ir::Expr& e : {range.min, range.extent}) {
          ir::VisitExprTree(e, [&](const ir::Expr& x) {
            if (x->kind == ir::ExprKind::kVar) names.push_back(x->name);
          });
        }
      }
    }
  }
  return names;
}

// The root keeps no regions, the text has no free(...) clause, and the kernel round-trips.
void ExpectCleanRoot(const Schedule& s) {
  SCOPED_TRACE(s.trace().ToText());
  const ir::BlockNode& root = Root(s.function());
  EXPECT_EQ(root.name, "root");
  EXPECT_TRUE(RootRegionVariables(s.function()).empty())
      << "root regions mention "
      << fmt::format("{}", fmt::join(RootRegionVariables(s.function()), ", "));
  EXPECT_TRUE(root.reads.empty());
  EXPECT_TRUE(root.writes.empty());
  std::string text = ir::PrintKernel(s.function());
  EXPECT_EQ(text.find(" free("), std::string::npos) << text;
  ir::KernelFunction parsed = ir::ParseKernel(text);
  EXPECT_TRUE(ir::StructuralEqual(parsed, s.function()))
      << ir::StructuralDiff(parsed, s.function()) << "\n"
      << text;
  EXPECT_EQ(ir::PrintKernel(parsed), text);
  EXPECT_LT(CompareKernels(s.original(), s.function()), 1e-5);
}

TEST(RootRegions, MatmulSplitCacheWriteReverseComputeAt) {
  Schedule s(Matmul(8, 12, 6));
  BlockRV b = s.GetBlock("matmul");
  auto loops = s.GetLoops(b);
  auto i = s.Split(loops[0], {2, 4});
  BlockRV copy = s.CacheWrite(b, 0, "local");
  s.ReverseComputeAt(copy, i[0]);
  ExpectCleanRoot(s);
  s.DecomposeReduction(b, s.GetLoops(b)[1]);
  ExpectCleanRoot(s);
}

TEST(RootRegions, MatmulCacheReadComputeAtTransformLayout) {
  Schedule s(Matmul(8, 8, 8));
  BlockRV b = s.GetBlock("matmul");
  auto loops = s.GetLoops(b);
  auto j = s.Split(loops[1], {-1, 4});
  BlockRV copy = s.CacheRead(b, 1, "global");
  s.ComputeAt(copy, j[0]);
  ExpectCleanRoot(s);
  s.TransformLayout(copy, 0, true, "AB", "BA");
  ExpectCleanRoot(s);
}

TEST(RootRegions, MatmulRFactor) {
  Schedule s(Matmul(4, 4, 16));
  auto loops = s.GetLoops(s.GetBlock("matmul"));
  auto k = s.Split(loops[2], {4, 4});
  s.RFactor(k[1], 0);
  ExpectCleanRoot(s);
}

TEST(RootRegions, ConvComputeAtAndInline) {
  Schedule s(Conv2d(3, 4, 6, 1));
  BlockRV conv = s.GetBlock("conv2d");
  auto loops = s.GetLoops(conv);
  auto h = s.Split(loops[2], {3, 2});
  s.ComputeAt(s.GetBlock("pad"), h[0]);
  ExpectCleanRoot(s);
  BlockRV copy = s.CacheWrite(conv, 0, "local");
  s.ReverseComputeAt(copy, h[1]);
  ExpectCleanRoot(s);

  Schedule t(ConvBiasRelu(2, 3, 5));
  t.ComputeInline(t.GetBlock("pad"));
  t.ReverseComputeInline(t.GetBlock(t.BlockNames().back()));
  ExpectCleanRoot(t);
}

// Random schedules of the fuzzer: none leaves regions on the root.
TEST(RootRegions, RandomSchedules) {
  testing::FuzzCounts counts;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Schedule s(seed % 2 == 0 ? ConvBiasRelu(2, 3, 5) : Matmul(12, 10, 8), seed);
    testing::ScheduleFuzzer fuzzer(s, seed + 1000, counts);
    fuzzer.Run(12);
    SCOPED_TRACE(fmt::format("seed {}", seed));
    ExpectCleanRoot(s);
  }
  EXPECT_GT(counts.by_kind["cache_write"].applied, 0);
  EXPECT_GT(counts.by_kind["compute_at"].applied, 0);
}

}  // namespace
}  // namespace tandem::kernels
