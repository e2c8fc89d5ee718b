// CompactGuardedLoop (kernels/compact_guarded_loops.h): which guarded loops get a compacted
// numbering and what it is. That the compiled code runs them alike is checked in
// tests/backends/llvm/codegen_compacted_loops_test.cc.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_parser.h"
#include "ir/kernel/kernel_printer.h"
#include "kernels/compact_guarded_loops.h"

namespace tandem {
namespace {

// A kernel whose one loop fuses four loops (2, 3, 5, 4: f = a * 60 + b * 20 + c * 4 + d) and
// runs its body where `guard` holds.
ir::KernelFunction Guarded(const std::string& guard) {
  return ir::ParseKernel(R"(
kernel @marks(%limit: i64[1]) -> (%out: f32[2, 3, 5, 4]) {
  block root() {
    for %f in 120 parallel {
      if )" + guard + R"( {
        block mark(%a: spatial 2 = floordiv(%f, 60), %b: spatial 3 = floormod(floordiv(%f, 20), 3), %c: spatial 5 = floormod(floordiv(%f, 4), 5), %d: spatial 4 = floormod(%f, 4))
            writes(%out[%a, %b, %c, %d]) {
          %out[%a, %b, %c, %d] = 1.0
        }
      }
    }
  }
}
)");
}

std::optional<kernels::CompactedLoop> Compact(const ir::KernelFunction& kernel) {
  const ir::ForNode* loop = nullptr;
  ir::VisitStmtTree(kernel.body, [&](const ir::Stmt& s) {
    if (!loop) loop = ir::As<ir::ForNode>(s);
  });
  return kernels::CompactGuardedLoop(*loop);
}

TEST(CompactGuardedLoop, NumbersTheIterationsWhoseBoundedDigitsPass) {
  // d < limit - 1 and 2c + 1 < limit: d takes min(limit - 1, 4) values, c ceil((limit - 1) / 2)
  // up to 5; b and a, above them and unbounded, make one whole place of 6 values.
  std::optional<kernels::CompactedLoop> compacted =
      Compact(Guarded("floormod(floordiv(%f, 4), 5) * 2 + 1 < %limit[0] && floormod(%f, 4) < "
                      "%limit[0] - 1"));
  ASSERT_TRUE(compacted);
  EXPECT_EQ(ir::PrintExpr(compacted->count),
            "max(min(%limit[0] - 1, 4), 0) * max(min(floordiv(%limit[0], 2), 5), 0) * 6");
  const std::string d = "max(min(%limit[0] - 1, 4), 0)";
  const std::string c = "max(min(floordiv(%limit[0], 2), 5), 0)";
  const std::string g = compacted->active->name;
  EXPECT_EQ(ir::PrintExpr(compacted->original),
            "floormod(%" + g + ", " + d + ") + floormod(floordiv(%" + g + ", " + d + "), " + c +
                ") * 4 + floordiv(floordiv(%" + g + ", " + d + "), " + c + ") * 20");
  // Both conditions bound digits: the body is the block alone.
  EXPECT_NE(ir::As<ir::BlockRealizeNode>(compacted->body), nullptr);
}

TEST(CompactGuardedLoop, KeepsTheConditionsThatBoundNoDigit) {
  // A bound on f itself (a prefix) and a condition on a load stay conditions around the body.
  std::optional<kernels::CompactedLoop> compacted =
      Compact(Guarded("floormod(floordiv(%f, 4), 5) < %limit[0] && %f < %limit[0] * 7 && "
                      "%out[0, 0, 0, 0] < 2.0"));
  ASSERT_TRUE(compacted);
  // d below c is a whole place of 4 values, b and a above it one of 6.
  EXPECT_EQ(ir::PrintExpr(compacted->count), "4 * max(min(%limit[0], 5), 0) * 6");
  const auto* inner = ir::As<ir::IfThenElseNode>(compacted->body);
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(ir::PrintExpr(inner->condition), "%f < %limit[0] * 7 && %out[0, 0, 0, 0] < 2.0");
}

TEST(CompactGuardedLoop, TakesTheSmallerOfTwoBoundsOnOneDigit) {
  std::optional<kernels::CompactedLoop> compacted =
      Compact(Guarded("floormod(%f, 4) < %limit[0] && floormod(%f, 4) * 3 < 7"));
  ASSERT_TRUE(compacted);
  EXPECT_EQ(ir::PrintExpr(compacted->count), "max(min(%limit[0], 3), 0) * 30");
}

TEST(CompactGuardedLoop, LeavesOtherLoopsAlone) {
  // A bound on the outermost digit alone is a prefix (GuardLoops' trip count).
  EXPECT_FALSE(Compact(Guarded("floordiv(%f, 60) < %limit[0]")));
  // Digits that overlap (floormod(f, 4) and floormod(floordiv(f, 2), 5)) do not nest.
  EXPECT_FALSE(
      Compact(Guarded("floormod(%f, 4) < %limit[0] && floormod(floordiv(%f, 2), 5) < %limit[0]")));
  // f in two terms, a bound that depends on f, and no bound at all.
  EXPECT_FALSE(Compact(Guarded("floormod(%f, 4) + floormod(floordiv(%f, 4), 5) < %limit[0]")));
  EXPECT_FALSE(Compact(Guarded("floormod(%f, 4) < floordiv(%f, 60)")));
  EXPECT_FALSE(Compact(Guarded("%limit[0] > 3")));
  // A bound that loads what the body writes.
  EXPECT_FALSE(Compact(Guarded("floormod(%f, 4) < cast<i64>(%out[0, 0, 0, 0])")));
}

}  // namespace
}  // namespace tandem
