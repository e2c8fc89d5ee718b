#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include "ir/kernel/bound.h"
#include "ir/kernel/simplify.h"
#include "tests/ir/kernel_expr_testing.h"

namespace tandem::ir {
namespace {

using kernel_testing::Ranges;
using kernel_testing::SameExpr;
using kernel_testing::Str;

std::string S(const Expr& e, const VarRanges& ranges = {}) {
  Expr s = Simplify(e, ranges);
  EXPECT_EQ(s->dtype, e->dtype) << Str(e);
  EXPECT_TRUE(SameExpr(Simplify(s, ranges), s)) << "not idempotent: " << Str(s);
  return Str(s);
}

class KernelSimplify : public ::testing::Test {
 protected:
  Var x = MakeVar("x"), y = MakeVar("y"), i = MakeVar("i"), j = MakeVar("j");
  Var c = MakeVar("c", DataType::kBool);
  Var fx = MakeVar("fx", DataType::kFloat32);
  Expr f32(double v) { return FloatImm(v, DataType::kFloat32); }
  // i, j in [0, 8).
  VarRanges ij = Ranges({{i, {0, 7}}, {j, {0, 7}}});
};

// ---------------------------------------------------------------------------------------------
// Constant folding.

TEST_F(KernelSimplify, FoldsIntegerConstantsWithFloorSemantics) {
  EXPECT_EQ(S(Expr(3) + 4 * Expr(5)), "23");
  EXPECT_EQ(S(FloorDiv(-7, 2)), "-4");
  EXPECT_EQ(S(FloorMod(-7, 2)), "1");
  EXPECT_EQ(S(FloorDiv(7, -2)), "-4");
  EXPECT_EQ(S(FloorMod(7, -2)), "-1");
  EXPECT_EQ(S(FloorDiv(-8, 2)), "-4");
  EXPECT_EQ(S(Expr(-7) / 2), "-3");  // integer true division truncates
  EXPECT_EQ(S(Expr(7) / 0), "7/0");
  EXPECT_EQ(S(Min(3, -2) + Max(3, -2)), "1");
  EXPECT_EQ(S(Expr(3) < 4), "true");
  EXPECT_EQ(S(Expr(3) >= 4), "false");
  EXPECT_EQ(S((Expr(3) < 4) && (Expr(1) == 2)), "false");
  EXPECT_EQ(S((Expr(3) < 4) || (Expr(1) == 2)), "true");
  EXPECT_EQ(S(!(Expr(3) < 4)), "false");
  EXPECT_EQ(S(Select(Expr(2) > 1, 10, 20)), "10");
}

TEST_F(KernelSimplify, LeavesDivisionByZeroAndOverflowAlone) {
  EXPECT_EQ(S(FloorDiv(7, 0)), "floordiv(7, 0)");
  EXPECT_EQ(S(FloorMod(x, 0)), "floormod(x, 0)");
  EXPECT_EQ(S(FloorDiv(x, -2)), "floordiv(x, -2)");
  int64_t max = std::numeric_limits<int64_t>::max(), min = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(S(Expr(max) + 1), "9223372036854775807 + 1");
  EXPECT_EQ(S(FloorDiv(min, -1)), "floordiv(-9223372036854775808, -1)");
  EXPECT_EQ(S(FloorMod(min, -1)), "0");
  EXPECT_EQ(S(x * max * 2), "x*9223372036854775807*2");
}

TEST_F(KernelSimplify, NarrowIntegersWrap) {
  Expr e = IntImm(2147483647, DataType::kInt32) + IntImm(1, DataType::kInt32);
  EXPECT_EQ(S(e), "-2147483648i32");
  EXPECT_EQ(S(IntImm(200, DataType::kUInt8) + IntImm(100, DataType::kUInt8)), "44u8");
  Var a = MakeVar("a", DataType::kInt32);
  Expr three = IntImm(3, DataType::kInt32), two = IntImm(2, DataType::kInt32);
  EXPECT_EQ(S((a + three) * two - IntImm(6, DataType::kInt32)), "a*2i32");
  Var b = MakeVar("b", DataType::kInt8);
  EXPECT_EQ(S(b * IntImm(1, DataType::kInt8) + IntImm(0, DataType::kInt8)), "b");
  EXPECT_EQ(S(b - b), "0i8");
}

TEST_F(KernelSimplify, FoldsCastsOfConstants) {
  EXPECT_EQ(S(Cast(DataType::kFloat32, 3)), "3f");
  EXPECT_EQ(S(Cast(DataType::kInt32, FloatImm(-2.7))), "-2i32");
  EXPECT_EQ(S(Cast(DataType::kInt32, (int64_t{1} << 32) + 5)), "5i32");
  EXPECT_EQ(S(Cast(DataType::kBool, 7)), "true");
  EXPECT_EQ(S(Cast(DataType::kInt64, IntImm(1, DataType::kBool))), "1");
  EXPECT_EQ(S(Cast(DataType::kInt64, FloatImm(NAN))), "i64(nanf)");
  EXPECT_EQ(S(Cast(DataType::kInt64, FloatImm(1e30, DataType::kFloat64))), "i64(1e+30d)");
}

TEST_F(KernelSimplify, FoldsFloatConstantsInTheirPrecision) {
  EXPECT_EQ(S(f32(1.5) + f32(2.25)), "3.75f");
  Expr third = Simplify(f32(1.0) / f32(3.0));
  ASSERT_EQ(third->kind, ExprKind::kFloatImm);
  EXPECT_EQ(third->float_value, static_cast<double>(1.0f / 3.0f));
  EXPECT_EQ(S(f32(1.0) / f32(0.0)), "1f/0f");
  EXPECT_EQ(S(f32(1.0) < f32(2.0)), "true");
  EXPECT_EQ(S(Min(f32(NAN), f32(1.0))), "min(nanf, 1f)");
  EXPECT_EQ(S(FloorDiv(f32(7), f32(-2))), "-4f");
  EXPECT_EQ(S(FloorMod(f32(7), f32(-2))), "-1f");
  EXPECT_EQ(S(FloorMod(f32(7), f32(0))), "floormod(7f, 0f)");
  // An f32 constant holds an f32 value, whatever double it was built from.
  Expr widened = Simplify(Cast(DataType::kFloat64, f32(0.1)));
  ASSERT_EQ(widened->kind, ExprKind::kFloatImm);
  EXPECT_EQ(widened->float_value, static_cast<double>(0.1f));
  EXPECT_EQ(S(f32(0.1) == FloatImm(static_cast<float>(0.1), DataType::kFloat32)), "true");
  Expr half = FloatImm(1.0, DataType::kFloat16);
  EXPECT_EQ(S(half + half), "1h + 1h");  // f16 is not folded
}

// ---------------------------------------------------------------------------------------------
// Canonical affine form.

TEST_F(KernelSimplify, CollectsLikeTerms) {
  EXPECT_EQ(S((i * 4 + j) - j), "i*4");
  EXPECT_EQ(S(i * 2 + i * 3), "i*5");
  EXPECT_EQ(S((x + 3) * 2 - 6), "x*2");
  EXPECT_EQ(S(j + i * 4 - j + i), "i*5");
  Var outer = MakeVar("i_outer"), inner = MakeVar("i_inner");
  EXPECT_EQ(S((outer * 16 + inner) - (outer * 16)), "i_inner");
  EXPECT_EQ(S(x * y * 3 + y * x), "x*y*4");
  EXPECT_EQ(S((i + 1) * (i + 1) - i * i), "i*2 + 1");
  EXPECT_EQ(S((x + y) * 2 - x - y - x), "y");
}

TEST_F(KernelSimplify, IntegerIdentities) {
  EXPECT_EQ(S(x * 1), "x");
  EXPECT_EQ(S(1 * x), "x");
  EXPECT_EQ(S(x + 0), "x");
  EXPECT_EQ(S(0 + x), "x");
  EXPECT_EQ(S(x * 0), "0");
  EXPECT_EQ(S(x - x), "0");
  EXPECT_EQ(S(Load(MakeBuffer("A", DataType::kInt64, {4}), {x}) * 0), "0");
}

TEST_F(KernelSimplify, OrdersTermsByFirstAppearanceNotByPointer) {
  // `b` is created before `a`, so pointer order and appearance order may disagree.
  Var b = MakeVar("b"), a = MakeVar("a");
  EXPECT_EQ(S(b + a), "b + a");
  EXPECT_EQ(S(a + b), "a + b");
  EXPECT_EQ(S(a + b * 2 + a), "a*2 + b*2");
  EXPECT_EQ(S(5 - x), "5 - x");
  EXPECT_EQ(S(0 - x), "x*-1");
  EXPECT_EQ(S(0 - x - 3), "x*-1 - 3");
  EXPECT_EQ(S(y * -2 + x), "x - y*2");
  EXPECT_EQ(S(x - y + 2), "x - y + 2");
}

TEST_F(KernelSimplify, FloatIdentitiesAreConservative) {
  EXPECT_EQ(S(fx * f32(1.0)), "fx");
  EXPECT_EQ(S(f32(1.0) * fx), "fx");
  EXPECT_EQ(S(fx + f32(0.0)), "fx");
  EXPECT_EQ(S(fx - f32(0.0)), "fx");
  EXPECT_EQ(S(fx / f32(1.0)), "fx");
  EXPECT_EQ(S(fx * f32(0.0)), "fx*0f");  // NaN * 0 is NaN
  EXPECT_EQ(S(fx - fx), "fx - fx");      // inf - inf is NaN
  EXPECT_EQ(S((fx + f32(1.0)) + f32(2.0)), "fx + 1f + 2f");
}

// ---------------------------------------------------------------------------------------------
// floordiv / floormod.

TEST_F(KernelSimplify, DivisionUsesBounds) {
  Var i0 = MakeVar("i0"), i1 = MakeVar("i1"), f = MakeVar("f");
  VarRanges r = Ranges({{i0, {0, 3}}, {i1, {0, 7}}});
  EXPECT_EQ(S(FloorDiv(i0 * 8 + i1, 8), r), "i0");
  EXPECT_EQ(S(FloorMod(i0 * 8 + i1, 8), r), "i1");
  EXPECT_EQ(S(FloorDiv(i0 * 8 + i1, 8)), "i0 + floordiv(i1, 8)");
  EXPECT_EQ(S(FloorMod(i0 * 8 + i1, 8)), "floormod(i1, 8)");
  EXPECT_EQ(S(FloorMod(f, 32), Ranges({{f, {0, 31}}})), "f");
  EXPECT_EQ(S(FloorDiv(f, 32), Ranges({{f, {0, 31}}})), "0");
  EXPECT_EQ(S(FloorMod(f, 32), Ranges({{f, {0, 63}}})), "floormod(f, 32)");
  EXPECT_EQ(S(FloorMod(f, 32), Ranges({{f, {32, 63}}})), "f - 32");
  EXPECT_EQ(S(FloorDiv(f, 32), Ranges({{f, {32, 63}}})), "1");
  EXPECT_EQ(S(FloorDiv(f - 8, 32), Ranges({{f, {0, 7}}})), "-1");
}

TEST_F(KernelSimplify, DivisionAlgebra) {
  EXPECT_EQ(S(FloorDiv(FloorDiv(x, 4), 8)), "floordiv(x, 32)");
  EXPECT_EQ(S(FloorDiv(FloorDiv(x, 4) + 1, 8)), "floordiv(x + 4, 32)");
  EXPECT_EQ(S(FloorMod(FloorMod(x, 8), 4)), "floormod(x, 4)");
  EXPECT_EQ(S(FloorMod(FloorMod(x, 4), 8)), "floormod(x, 4)");
  EXPECT_EQ(S(FloorMod(FloorMod(x, 6), 4)), "floormod(floormod(x, 6), 4)");
  EXPECT_EQ(S(FloorDiv(x * 6, 3)), "x*2");
  EXPECT_EQ(S(FloorMod(x * 6, 3)), "0");
  EXPECT_EQ(S(FloorDiv(x * 6 + y * 3 + 7, 3)), "x*2 + y + 2");
  EXPECT_EQ(S(FloorDiv(x * 4 + y, 8), Ranges({{y, {0, 3}}})), "floordiv(x, 2)");
  EXPECT_EQ(S(FloorMod(x * 4 + y, 8), Ranges({{y, {0, 3}}})), "floormod(x, 2)*4 + y");
  EXPECT_EQ(S(FloorDiv(x * 2 + 1, 4)), "floordiv(x, 2)");
  EXPECT_EQ(S(FloorDiv(x * 3, 6)), "floordiv(x, 2)");
  EXPECT_EQ(S(FloorDiv(x + 9, 8)), "floordiv(x + 1, 8) + 1");
  EXPECT_EQ(S(FloorDiv(x - 1, 4)), "floordiv(x + 3, 4) - 1");
  EXPECT_EQ(S(FloorMod(x - 1, 4)), "floormod(x + 3, 4)");
  EXPECT_EQ(S(FloorDiv(x, 1)), "x");
  EXPECT_EQ(S(FloorMod(x, 1)), "0");
}

TEST_F(KernelSimplify, FuseSplitIdentity) {
  EXPECT_EQ(S(FloorDiv(x, 8) * 8 + FloorMod(x, 8)), "x");
  EXPECT_EQ(S(FloorMod(x, 8) + FloorDiv(x, 8) * 8), "x");
  EXPECT_EQ(S(FloorDiv(x, 8) * 16 + FloorMod(x, 8) * 2 + y), "x*2 + y");
  EXPECT_EQ(S(FloorDiv(i + j, 4) * 4 + FloorMod(j + i, 4)), "i + j");
  EXPECT_EQ(S(FloorDiv(x - 1, 4) * 4 + FloorMod(x - 1, 4)), "x - 1");
  EXPECT_EQ(S(x - FloorDiv(x, 4) * 4), "floormod(x, 4)");
  EXPECT_EQ(S(x + y - FloorDiv(x + y, 4) * 4), "floormod(x + y, 4)");
  EXPECT_EQ(S(FloorDiv(x, 8) * 4 + FloorMod(x, 8)), "floordiv(x, 8)*4 + floormod(x, 8)");
}

// ---------------------------------------------------------------------------------------------
// min/max, comparisons, logic, select, variables with a single value.

TEST_F(KernelSimplify, MinMax) {
  EXPECT_EQ(S(Min(x, x)), "x");
  EXPECT_EQ(S(Max(fx, fx)), "fx");
  EXPECT_EQ(S(Min(i, 10), ij), "i");
  EXPECT_EQ(S(Max(i, 10), ij), "10");
  EXPECT_EQ(S(Min(i + j, 14), ij), "i + j");
  EXPECT_EQ(S(Min(x, x + 1)), "x");
  EXPECT_EQ(S(Max(x, x - 2)), "x");
  EXPECT_EQ(S(Min(x, y)), "min(x, y)");
  EXPECT_EQ(S(Min(i, 5), ij), "min(i, 5)");
}

TEST_F(KernelSimplify, ComparisonsAndLogic) {
  EXPECT_EQ(S(i < 8, ij), "true");
  EXPECT_EQ(S(i >= 8, ij), "false");
  EXPECT_EQ(S(i + j < 15, ij), "true");
  EXPECT_EQ(S(i + j < 14, ij), "i + j < 14");
  EXPECT_EQ(S(i * 8 + j < 64, ij), "true");
  EXPECT_EQ(S(x == x), "true");
  EXPECT_EQ(S(x < x + 1), "true");
  EXPECT_EQ(S(x + 2 != x), "true");
  EXPECT_EQ(S(c && (i < 8), ij), "c");
  EXPECT_EQ(S((i < 8) || c, ij), "true");
  EXPECT_EQ(S(c && (i > 8), ij), "false");
  EXPECT_EQ(S(c && c), "c");
  EXPECT_EQ(S(!!c), "c");
  EXPECT_EQ(S(!(x < y)), "x >= y");
  EXPECT_EQ(S(fx < fx), "fx < fx");  // NaN
}

TEST_F(KernelSimplify, SelectAndSingleValuedVariables) {
  EXPECT_EQ(S(Select(i < 8, x, y), ij), "x");
  EXPECT_EQ(S(Select(i > 8, x, y), ij), "y");
  EXPECT_EQ(S(Select(c, x + 1, 1 + x)), "x + 1");
  EXPECT_EQ(S(Select(c, x, y)), "select(c, x, y)");
  // A variable with a single value is kept (it may be an extent-1 loop that feeds an
  // iterator), but bounds use its value.
  VarRanges single = Ranges({{i, {3, 3}}});
  EXPECT_EQ(S(i * 2 + j, single), "i*2 + j");
  EXPECT_EQ(S(i == 3, single), "true");
  EXPECT_EQ(S(FloorDiv(i, 4) + FloorMod(i, 2) + i, single), "i*2 - 2");
}

TEST_F(KernelSimplify, DtypeIsKept) {
  Var a = MakeVar("a", DataType::kInt32);
  EXPECT_EQ(Simplify(a * IntImm(0, DataType::kInt32))->dtype, DataType::kInt32);
  Var p = MakeVar("p", DataType::kInt64);
  // && of integers has a bool result: it must not be replaced by the i64 operand.
  Expr e = Binary(ExprKind::kAnd, p, IntImm(1));
  EXPECT_EQ(Simplify(e)->dtype, DataType::kBool);
  EXPECT_EQ(Simplify(Min(c, IntImm(1, DataType::kBool)))->dtype, DataType::kBool);
}

// ---------------------------------------------------------------------------------------------
// The index arithmetic of split and fuse, for many extents.

TEST(KernelSimplifySplitFuse, SplitRecoversOuterAndInner) {
  Var outer = MakeVar("o"), inner = MakeVar("n");
  for (int64_t extent = 1; extent <= 40; ++extent) {
    for (int64_t factor = 1; factor <= 12; ++factor) {
      VarRanges r =
          Ranges({{outer, {0, (extent + factor - 1) / factor - 1}}, {inner, {0, factor - 1}}});
      Expr index = outer * factor + inner;
      SCOPED_TRACE(fmt::format("extent {} factor {}", extent, factor));
      // Factor 1: the inner loop has extent 1 and `o + n` is the whole index.
      EXPECT_EQ(Str(Simplify(FloorDiv(index, factor), r)), factor == 1 ? "o + n" : "o");
      EXPECT_EQ(Str(Simplify(FloorMod(index, factor), r)), factor == 1 ? "0" : "n");
      EXPECT_TRUE(CanProve(index < (extent + factor - 1) / factor * factor, r));
    }
  }
}

TEST(KernelSimplifySplitFuse, FuseRecoversBothIterators) {
  Var a = MakeVar("a"), b = MakeVar("b"), fused = MakeVar("f");
  for (int64_t n = 2; n <= 12; ++n) {
    for (int64_t m = 2; m <= 12; ++m) {
      SCOPED_TRACE(fmt::format("{} x {}", n, m));
      VarRanges r = Ranges({{a, {0, n - 1}}, {b, {0, m - 1}}, {fused, {0, n * m - 1}}});
      EXPECT_EQ(Str(Simplify(FloorDiv(a * m + b, m), r)), "a");
      EXPECT_EQ(Str(Simplify(FloorMod(a * m + b, m), r)), "b");
      EXPECT_EQ(Str(Simplify(FloorDiv(fused, m) * m + FloorMod(fused, m), r)), "f");
      // Substituting the fused variable back gives the fused index.
      Expr back = FloorDiv(a * m + b, m) * m + FloorMod(a * m + b, m);
      EXPECT_EQ(Str(Simplify(back, r)), fmt::format("a*{} + b", m));
      EXPECT_EQ(Str(Simplify(back)), fmt::format("a*{} + b", m));
    }
  }
}

TEST(KernelSimplifySplitFuse, SplitOfFusedLoop) {
  Var fo = MakeVar("fo"), fi = MakeVar("fi");
  for (int64_t m : {2, 4, 8}) {
    for (int64_t factor : {2, 4, 8, 16, 32}) {
      SCOPED_TRACE(fmt::format("m {} factor {}", m, factor));
      VarRanges r = Ranges({{fo, {0, 64}}, {fi, {0, factor - 1}}});
      Expr index = fo * factor + fi;
      std::string div = Str(Simplify(FloorDiv(index, m), r));
      std::string mod = Str(Simplify(FloorMod(index, m), r));
      if (factor == m) {
        EXPECT_EQ(div, "fo");
        EXPECT_EQ(mod, "fi");
      } else if (factor % m == 0) {
        EXPECT_EQ(div, fmt::format("fo*{} + floordiv(fi, {})", factor / m, m));
        EXPECT_EQ(mod, fmt::format("floormod(fi, {})", m));
      } else {
        EXPECT_EQ(div, fmt::format("floordiv(fo, {})", m / factor));
        EXPECT_EQ(mod, fmt::format("floormod(fo, {})*{} + fi", m / factor, factor));
      }
    }
  }
}

TEST(KernelSimplifySplitFuse, NestedSplits) {
  Var a = MakeVar("a"), b = MakeVar("b"), d = MakeVar("d");
  for (int64_t f1 : {2, 3, 4}) {
    for (int64_t f2 : {2, 5}) {
      VarRanges r = Ranges({{a, {0, 9}}, {b, {0, f2 - 1}}, {d, {0, f1 - 1}}});
      Expr index = (a * f2 + b) * f1 + d;
      EXPECT_EQ(Str(Simplify(index, r)), fmt::format("a*{} + b*{} + d", f1 * f2, f1));
      EXPECT_EQ(Str(Simplify(FloorDiv(index, f1 * f2), r)), "a");
      EXPECT_EQ(Str(Simplify(FloorDiv(FloorMod(index, f1 * f2), f1), r)), "b");
      EXPECT_EQ(Str(Simplify(FloorDiv(FloorDiv(index, f1), f2), r)), "a");
      EXPECT_EQ(Str(Simplify(FloorMod(index, f1), r)), "d");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Statements.

class KernelSimplifyStmt : public KernelSimplify {
 protected:
  Buffer a = MakeBuffer("A", DataType::kFloat32, {64});
  Buffer b = MakeBuffer("B", DataType::kFloat32, {64});
  std::string Index(const Stmt& s) {
    const StoreNode* store = As<StoreNode>(s);
    EXPECT_NE(store, nullptr);
    return store ? Str(store->indices[0]) : "";
  }
};

TEST_F(KernelSimplifyStmt, LoopVariablesAreBoundedByTheirLoops) {
  Stmt store = MakeStore(a, {FloorMod(i * 4 + j, 32)}, Load(b, {FloorDiv(i * 4 + j, 4)}));
  Stmt loops = MakeFor(i, 8, ForKind::kSerial, MakeFor(j, 4, ForKind::kVectorized, store));
  Stmt s = Simplify(loops);
  const ForNode* outer = As<ForNode>(s);
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->extent, 8);
  const ForNode* inner = As<ForNode>(outer->body);
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(inner->for_kind, ForKind::kVectorized);
  const StoreNode* st = As<StoreNode>(inner->body);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(Str(st->indices[0]), "i*4 + j");
  EXPECT_EQ(Str(st->value), "B[i]");
  // Outside the loops nothing is known.
  EXPECT_EQ(Index(Simplify(store)), "floormod(i*4 + j, 32)");
}

TEST_F(KernelSimplifyStmt, KeepsLoopsAndIteratorsOfExtentOne) {
  Var k = MakeVar("k");
  Stmt s = Simplify(MakeFor(k, 1, ForKind::kSerial, MakeStore(a, {FloorMod(k, 4) + k}, f32(0))));
  const ForNode* loop = As<ForNode>(s);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->extent, 1);
  EXPECT_EQ(Index(loop->body), "k*2");
  // The loop still feeds the iterator, and the iterator of extent 1 still indexes what its
  // block writes (schedule primitives rely on both); bounds still know their value.
  Var n = MakeVar("n");
  auto block = std::make_shared<BlockNode>();
  block->name = "one";
  block->iter_vars = {IterVar{n, 1, IterKind::kSpatial}};
  block->writes = {BufferRegion{a, {Range{n, Expr(1)}}}};
  block->body = MakeStore(a, {n}, Load(b, {n + FloorDiv(n, 4)}));
  Stmt nest = Simplify(MakeFor(k, 1, ForKind::kSerial, MakeBlockRealize({k * 2}, Expr(), block)));
  const BlockRealizeNode* br = As<BlockRealizeNode>(As<ForNode>(nest)->body);
  ASSERT_NE(br, nullptr);
  EXPECT_EQ(Str(br->iter_values[0]), "k*2");
  EXPECT_EQ(Str(br->block->writes[0].region[0].min), "n");
  EXPECT_EQ(Index(br->block->body), "n");
  EXPECT_EQ(Str(As<StoreNode>(br->block->body)->value), "B[n]");
}

TEST_F(KernelSimplifyStmt, SharesUnchangedParts) {
  Stmt clean = MakeFor(i, 8, ForKind::kSerial, MakeStore(a, {i}, Load(b, {i})));
  EXPECT_EQ(Simplify(clean), clean);
}

TEST_F(KernelSimplifyStmt, FoldsProvableConditions) {
  Stmt store = MakeStore(a, {i}, f32(1));
  Stmt other = MakeStore(b, {i}, f32(2));
  auto in_loop = [&](Stmt body) {
    return As<ForNode>(Simplify(MakeFor(i, 8, ForKind::kSerial, body)))->body;
  };
  EXPECT_EQ(in_loop(MakeIfThenElse(i < 8, store)), store);
  EXPECT_EQ(in_loop(MakeIfThenElse(i >= 8, store, other)), other);
  Stmt folded = in_loop(MakeIfThenElse(i >= 8, store));  // kept alive: As returns a raw pointer
  const SeqNode* empty = As<SeqNode>(folded);
  ASSERT_NE(empty, nullptr);
  EXPECT_TRUE(empty->stmts.empty());
  Stmt seq = in_loop(MakeSeq({MakeIfThenElse(i > 9, store), other}));
  EXPECT_EQ(seq, other);
  Stmt kept = in_loop(MakeIfThenElse(i < 4, store));
  ASSERT_NE(As<IfThenElseNode>(kept), nullptr);
  EXPECT_EQ(Str(As<IfThenElseNode>(kept)->condition), "i < 4");
  // select folds too.
  Stmt sel = in_loop(MakeStore(a, {Select(i < 8, i, 0)}, f32(0)));
  EXPECT_EQ(Index(sel), "i");
}

TEST_F(KernelSimplifyStmt, IfConditionsNarrowRanges) {
  Stmt body =
      MakeIfThenElse((i < 4) && (j >= 2), MakeStore(a, {FloorDiv(i, 4) + FloorDiv(j, 2)}, f32(0)),
                     MakeStore(a, {FloorDiv(i, 4)}, f32(0)));
  Stmt s = Simplify(MakeFor(i, 16, ForKind::kSerial, MakeFor(j, 4, ForKind::kSerial, body)));
  const IfThenElseNode* guard = As<IfThenElseNode>(As<ForNode>(As<ForNode>(s)->body)->body);
  ASSERT_NE(guard, nullptr);
  EXPECT_EQ(Index(guard->then_case), "1");
  EXPECT_EQ(Index(guard->else_case), "floordiv(i, 4)");
  Stmt negated = MakeIfThenElse(!(i >= 12), MakeStore(a, {Min(i, 11)}, f32(0)),
                                MakeStore(a, {FloorDiv(i, 12)}, f32(0)));
  Stmt s2 = Simplify(MakeFor(i, 16, ForKind::kSerial, negated));
  const IfThenElseNode* g2 = As<IfThenElseNode>(As<ForNode>(s2)->body);
  ASSERT_NE(g2, nullptr);
  EXPECT_EQ(Str(g2->condition), "i < 12");
  EXPECT_EQ(Index(g2->then_case), "i");
  EXPECT_EQ(Index(g2->else_case), "1");
}

TEST_F(KernelSimplifyStmt, BlockIteratorsAreBoundedInsideTheirBlock) {
  Var v = MakeVar("v");
  auto block = std::make_shared<BlockNode>();
  block->name = "copy";
  block->iter_vars = {IterVar{v, 32, IterKind::kSpatial}};
  block->reads = {BufferRegion{b, {Range{FloorMod(v, 32), Expr(1)}}}};
  block->writes = {BufferRegion{a, {Range{v + 0, Expr(2) - 1}}}};
  block->body = MakeStore(a, {FloorMod(v, 32)}, Load(b, {FloorDiv(v, 32) + v}));
  Stmt realize = MakeBlockRealize({FloorDiv(i * 4 + j, 1)}, i < 8, block);
  Stmt s = Simplify(MakeFor(i, 8, ForKind::kSerial, MakeFor(j, 4, ForKind::kSerial, realize)));
  const BlockRealizeNode* br = As<BlockRealizeNode>(As<ForNode>(As<ForNode>(s)->body)->body);
  ASSERT_NE(br, nullptr);
  EXPECT_EQ(Str(br->iter_values[0]), "i*4 + j");
  EXPECT_EQ(Str(br->predicate), "true");
  EXPECT_EQ(Str(br->block->reads[0].region[0].min), "v");
  EXPECT_EQ(Str(br->block->writes[0].region[0].min), "v");
  EXPECT_EQ(Str(br->block->writes[0].region[0].extent), "1");
  const StoreNode* st = As<StoreNode>(br->block->body);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(Str(st->indices[0]), "v");
  EXPECT_EQ(Str(st->value), "B[v]");
}

}  // namespace
}  // namespace tandem::ir
