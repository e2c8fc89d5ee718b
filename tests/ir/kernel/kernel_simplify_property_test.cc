// Bounds, proofs, and randomized property tests of the kernel-IR simplifier: simplified
// expressions must equal the originals for every assignment in range, and bounds must contain
// every value.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <random>
#include <string>
#include <vector>

#include "ir/kernel/bound.h"
#include "ir/kernel/simplify.h"
#include "tests/ir/kernel_expr_testing.h"

namespace tandem::ir {
namespace {

using kernel_testing::Eval;
using kernel_testing::Ranges;
using kernel_testing::SameExpr;
using kernel_testing::Str;
using kernel_testing::Values;

class KernelBound : public ::testing::Test {
 protected:
  Var x = MakeVar("x"), y = MakeVar("y"), i = MakeVar("i"), j = MakeVar("j");
  Var c = MakeVar("c", DataType::kBool);
  Var fx = MakeVar("fx", DataType::kFloat32);
  VarRanges ij = Ranges({{i, {0, 7}}, {j, {0, 7}}});
};

// ---------------------------------------------------------------------------------------------
// Bounds and proofs.

TEST_F(KernelBound, ConstIntBound) {
  VarRanges r = Ranges({{x, {-5, 9}}, {i, {0, 3}}, {j, {0, 3}}});
  EXPECT_EQ(ConstIntBound(i * 4 + j, r), (IntInterval{0, 15}));
  EXPECT_EQ(ConstIntBound(i - j, r), (IntInterval{-3, 3}));
  EXPECT_EQ(ConstIntBound(FloorDiv(x, 4), r), (IntInterval{-2, 2}));
  EXPECT_EQ(ConstIntBound(FloorDiv(x, -4), r), (IntInterval{-3, 1}));
  EXPECT_EQ(ConstIntBound(FloorMod(x, 4), r), (IntInterval{0, 3}));
  EXPECT_EQ(ConstIntBound(FloorMod(i + 4, 8), r), (IntInterval{4, 7}));
  EXPECT_EQ(ConstIntBound(FloorMod(x, -4), r), (IntInterval{-3, 0}));
  EXPECT_EQ(ConstIntBound(FloorDiv(x, i + 1), r), (IntInterval{-5, 9}));
  EXPECT_EQ(ConstIntBound(FloorDiv(x, i), r), IntInterval::Everything());
  EXPECT_EQ(ConstIntBound(Min(x, i) + Max(j, 2), r), (IntInterval{-3, 6}));
  EXPECT_EQ(ConstIntBound(Select(c, i, x), r), (IntInterval{-5, 9}));
  EXPECT_EQ(ConstIntBound(Select(i < 4, i, x), r), (IntInterval{0, 3}));
  EXPECT_EQ(ConstIntBound(i < 4, r), IntInterval::Single(1));
  EXPECT_EQ(ConstIntBound(x < 4, r), (IntInterval{0, 1}));
  EXPECT_EQ(ConstIntBound(y, r), IntInterval::Everything());
  EXPECT_EQ(ConstIntBound(y * 0 + 3, r), IntInterval::Single(3));
  EXPECT_EQ(ConstIntBound(FloorMod(y, 8), r), (IntInterval{0, 7}));
  EXPECT_EQ(ConstIntBound(FloorDiv(y, 8), r), IntInterval::Everything());
  EXPECT_EQ(ConstIntBound(Load(MakeBuffer("A", DataType::kInt64, {4}), {i}), r),
            IntInterval::Everything());
  EXPECT_EQ(ConstIntBound(Load(MakeBuffer("B", DataType::kUInt8, {4}), {i}), r),
            (IntInterval{0, 255}));
  EXPECT_EQ(ConstIntBound(c, r), (IntInterval{0, 1}));
  EXPECT_TRUE(IntInterval::Single(3).is_const());
  EXPECT_FALSE(IntInterval::Everything().is_const());
}

TEST_F(KernelBound, IsOverflowSafe) {
  int64_t big = int64_t{1} << 62;
  VarRanges r = Ranges({{x, {0, big}}, {y, {-big, big}}});
  EXPECT_EQ(ConstIntBound(x * x, r), (IntInterval{0, IntInterval::kPosInf}));
  EXPECT_EQ(ConstIntBound(x + x, r), (IntInterval{0, IntInterval::kPosInf}));
  EXPECT_EQ(ConstIntBound(y * 4, r), IntInterval::Everything());
  EXPECT_EQ(ConstIntBound(y - x * 2, r), (IntInterval{IntInterval::kNegInf, big}));
  // Unbounded sides stay unbounded through division.
  EXPECT_EQ(ConstIntBound(FloorDiv(y * 4, 1024), r), IntInterval::Everything());
  // i32 arithmetic that may wrap is bounded by the type only.
  Var a = MakeVar("a", DataType::kInt32);
  VarRanges ra = Ranges({{a, {0, 2000000000}}});
  EXPECT_EQ(ConstIntBound(a * IntImm(2, DataType::kInt32), ra), DataTypeRange(DataType::kInt32));
  EXPECT_EQ(ConstIntBound(a + IntImm(2, DataType::kInt32), ra), (IntInterval{2, 2000000002}));
}

TEST_F(KernelBound, CanProve) {
  EXPECT_TRUE(CanProve(i * 8 + j < 64, ij));
  EXPECT_FALSE(CanProve(i * 8 + j < 63, ij));
  EXPECT_TRUE(CanProve(FloorMod(x, 8) < 8, {}));
  EXPECT_TRUE(CanProve(FloorDiv(x, 8) * 8 <= x, {}));
  EXPECT_TRUE(CanProve(x + y == y + x, {}));
  EXPECT_TRUE(CanProve((i < 8) && (j >= 0), ij));
  EXPECT_FALSE(CanProve((i < 8) && (j >= 1), ij));
  EXPECT_FALSE(CanProve(x < y, {}));
  EXPECT_FALSE(CanProve(fx < FloatImm(1.0), {}));
  EXPECT_TRUE(CanProve(Expr(2), {}));
}

// ---------------------------------------------------------------------------------------------
// Randomized property test: simplified expressions equal the originals everywhere in range,
// and bounds contain every value.

class RandomExprs {
 public:
  // `vars` share one integer type, which every generated integer expression has.
  RandomExprs(uint32_t seed, std::vector<Var> vars)
      : rng_(seed), vars_(std::move(vars)), dtype_(vars_[0]->dtype) {}

  Expr Int(int depth) {
    if (depth == 0 || Pick(6) == 0) return Leaf();
    switch (Pick(13)) {
      case 0:
        return Int(depth - 1) + Int(depth - 1);
      case 1:
        return Int(depth - 1) - Int(depth - 1);
      case 2:
        return Int(depth - 1) * Const(-3, 4);
      case 3:
        return Int(depth - 1) * Int(depth - 2 < 0 ? 0 : depth - 2);
      case 4:
      case 5:
        return FloorDiv(Int(depth - 1), Const(1, 9));
      case 6:
      case 7:
        return FloorMod(Int(depth - 1), Const(1, 9));
      case 8:
        return Min(Int(depth - 1), Int(depth - 1));
      case 9:
        return Max(Int(depth - 1), Int(depth - 1));
      case 10:
        return Select(Bool(depth - 1), Int(depth - 1), Int(depth - 1));
      case 11:
        return Cast(dtype_, Bool(depth - 1));
      default:
        return Affine();
    }
  }

  Expr Bool(int depth) {
    static const ExprKind kComparisons[] = {ExprKind::kEQ, ExprKind::kNE, ExprKind::kLT,
                                            ExprKind::kLE, ExprKind::kGT, ExprKind::kGE};
    if (depth <= 0 || Pick(3) != 0) {
      return Binary(kComparisons[Pick(6)], Int(std::max(depth - 1, 0)),
                    Int(std::max(depth - 1, 0)));
    }
    switch (Pick(3)) {
      case 0:
        return Bool(depth - 1) && Bool(depth - 1);
      case 1:
        return Bool(depth - 1) || Bool(depth - 1);
      default:
        return !Bool(depth - 1);
    }
  }

 private:
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  Expr Const(int lo, int hi) { return IntImm(lo + Pick(hi - lo + 1), dtype_); }
  Expr Number(int64_t value) { return IntImm(value, dtype_); }
  Expr Leaf() { return Pick(3) == 0 ? Const(-4, 8) : vars_[Pick(static_cast<int>(vars_.size()))]; }
  // Index-like arithmetic: a*x + b*y + k, often divided by a divisor of a coefficient.
  Expr Affine() {
    static const int kCoefficients[] = {1, 2, 3, 4, 6, 8, 16};
    Expr e = Const(-6, 9);
    for (const Var& v : vars_) {
      if (Pick(3) != 0) e = v * Number(kCoefficients[Pick(7)]) + e;
    }
    switch (Pick(3)) {
      case 0:
        return FloorDiv(e, Number(kCoefficients[Pick(7)]));
      case 1:
        return FloorMod(e, Number(kCoefficients[Pick(7)]));
      default:
        return e;
    }
  }

  std::mt19937 rng_;
  std::vector<Var> vars_;
  DataType dtype_;
};

// Every assignment of `vars` within `ranges`.
std::vector<Values> Assignments(const std::vector<Var>& vars, const VarRanges& ranges) {
  std::vector<Values> all = {Values{}};
  for (const Var& v : vars) {
    std::vector<Values> next;
    const IntInterval& r = ranges.at(v.get());
    for (const Values& partial : all) {
      for (int64_t value = r.min; value <= r.max; ++value) {
        Values extended = partial;
        extended[v.get()] = value;
        next.push_back(std::move(extended));
      }
    }
    all = std::move(next);
  }
  return all;
}

void CheckRandom(const Expr& e, const std::vector<Var>& vars, const VarRanges& ranges) {
  std::vector<Values> assignments = Assignments(vars, ranges);
  Expr bounded = Simplify(e, ranges);
  Expr free = Simplify(e);
  ASSERT_EQ(bounded->dtype, e->dtype);
  ASSERT_EQ(free->dtype, e->dtype);
  ASSERT_TRUE(SameExpr(Simplify(bounded, ranges), bounded))
      << Str(e) << "\n -> " << Str(bounded) << "\n -> " << Str(Simplify(bounded, ranges));
  ASSERT_TRUE(SameExpr(Simplify(free), free)) << Str(e) << "\n -> " << Str(free);
  IntInterval bound = ConstIntBound(e, ranges);
  IntInterval bounded_bound = ConstIntBound(bounded, ranges);
  for (const Values& values : assignments) {
    std::optional<int64_t> expected = Eval(e, values);
    ASSERT_TRUE(expected.has_value());
    ASSERT_EQ(Eval(bounded, values), expected) << Str(e) << "\n -> " << Str(bounded);
    ASSERT_EQ(Eval(free, values), expected) << Str(e) << "\n -> " << Str(free);
    ASSERT_TRUE(bound.contains(*expected))
        << Str(e) << " = " << *expected << " outside [" << bound.min << ", " << bound.max << "]";
    ASSERT_TRUE(bounded_bound.contains(*expected)) << Str(bounded) << " = " << *expected;
  }
}

TEST(KernelSimplifyRandom, IntegerExpressionsKeepTheirValues) {
  Var x = MakeVar("x"), y = MakeVar("y"), z = MakeVar("z");
  std::vector<Var> vars = {x, y, z};
  VarRanges ranges = Ranges({{x, {-3, 4}}, {y, {0, 7}}, {z, {0, 2}}});
  for (uint32_t seed = 0; seed < 4; ++seed) {
    RandomExprs gen(seed, vars);
    for (int n = 0; n < 250; ++n) {
      Expr e = gen.Int(1 + n % 5);
      SCOPED_TRACE(fmt::format("seed {} #{}: {}", seed, n, Str(e)));
      CheckRandom(e, vars, ranges);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(KernelSimplifyRandom, BoolExpressionsKeepTheirValues) {
  Var x = MakeVar("x"), y = MakeVar("y");
  std::vector<Var> vars = {x, y};
  VarRanges ranges = Ranges({{x, {-4, 5}}, {y, {0, 9}}});
  for (uint32_t seed = 10; seed < 13; ++seed) {
    RandomExprs gen(seed, vars);
    for (int n = 0; n < 200; ++n) {
      Expr e = gen.Bool(1 + n % 4);
      SCOPED_TRACE(fmt::format("seed {} #{}: {}", seed, n, Str(e)));
      CheckRandom(e, vars, ranges);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(KernelSimplifyRandom, IndexArithmeticOfSchedulesKeepsItsValue) {
  // Tight ranges like loop extents after split/fuse: most divisions should fold away.
  Var a = MakeVar("a"), b = MakeVar("b"), d = MakeVar("d");
  std::vector<Var> vars = {a, b, d};
  VarRanges ranges = Ranges({{a, {0, 3}}, {b, {0, 7}}, {d, {0, 1}}});
  RandomExprs gen(99, vars);
  int divisions_left = 0;
  for (int n = 0; n < 300; ++n) {
    Expr e = gen.Int(2);
    SCOPED_TRACE(fmt::format("#{}: {}", n, Str(e)));
    CheckRandom(e, vars, ranges);
    if (HasFatalFailure()) return;
  }
  (void)divisions_left;
}

TEST(KernelSimplifyRandom, NarrowIntegerTypesKeepTheirValues) {
  // Small values never wrap, so evaluating in i64 is exact; i32 takes the canonical-form path
  // without the i64-only division rules, i8 only constant folding, identities and bounds.
  for (DataType dtype : {DataType::kInt32, DataType::kInt8}) {
    Var x = MakeVar("x", dtype), y = MakeVar("y", dtype);
    std::vector<Var> vars = {x, y};
    VarRanges ranges = Ranges({{x, {-3, 4}}, {y, {0, 7}}});
    RandomExprs gen(7, vars);
    for (int n = 0; n < 200; ++n) {
      Expr e = gen.Int(1 + n % 3);
      SCOPED_TRACE(fmt::format("{} #{}: {}", ToString(dtype), n, Str(e)));
      CheckRandom(e, vars, ranges);
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace tandem::ir
