// The text form of kernel IR (ir/kernel/kernel_printer.h, ir/kernel/kernel_parser.h): every
// expression and statement kind round-trips to a structurally equal kernel with the same hash
// and the same text; hand-written text means what it says (checked by structure and by running
// it); names are made unique and bind by scope; errors point at the line and column; and no
// input, however broken, crashes or hangs the parser.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "backends/reference/kernel_interpreter.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_parser.h"
#include "ir/kernel/kernel_printer.h"
#include "ir/kernel/kernel_structural.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/structural.h"

namespace tandem::ir {
namespace {

// parse(print(k)) is structurally equal to k with the same hash, and prints to the same text.
testing::AssertionResult RoundTrips(const KernelFunction& kernel, std::string* printed = nullptr) {
  std::string text = PrintKernel(kernel);
  if (printed) *printed = text;
  KernelFunction parsed;
  try {
    parsed = ParseKernel(text);
  } catch (const Error& e) {
    return testing::AssertionFailure() << "parse failed: " << e.what() << "\n" << text;
  }
  std::string diff = StructuralDiff(kernel, parsed);
  if (!diff.empty()) return testing::AssertionFailure() << diff << "\n" << text;
  if (StructuralHash(kernel) != StructuralHash(parsed)) {
    return testing::AssertionFailure() << "the hash changed\n" << text;
  }
  std::string again = PrintKernel(parsed);
  if (again != text) {
    return testing::AssertionFailure() << "reprinted text differs:\n" << text << "---\n" << again;
  }
  return testing::AssertionSuccess();
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Block MakeBlock(std::string name, std::vector<IterVar> iters, Stmt body, Stmt init = nullptr,
                std::vector<BufferRegion> reads = {}, std::vector<BufferRegion> writes = {},
                std::vector<Buffer> allocs = {}, Attrs annotations = {}) {
  auto block = std::make_shared<BlockNode>();
  block->name = std::move(name);
  block->iter_vars = std::move(iters);
  block->body = std::move(body);
  block->init = std::move(init);
  block->reads = std::move(reads);
  block->writes = std::move(writes);
  block->alloc_buffers = std::move(allocs);
  block->annotations = std::move(annotations);
  return block;
}

KernelFunction MakeKernel(std::string name, std::vector<Buffer> params, int num_outputs,
                          Stmt root_body, std::vector<Buffer> allocs = {}, Attrs attrs = {}) {
  KernelFunction kernel;
  kernel.name = std::move(name);
  kernel.params = std::move(params);
  kernel.num_outputs = num_outputs;
  kernel.body = MakeBlockRealize(
      {}, Expr(), MakeBlock("root", {}, std::move(root_body), nullptr, {}, {}, std::move(allocs)));
  kernel.attrs = std::move(attrs);
  return kernel;
}

// ---- expressions ----

TEST(KernelTextForm, ExpressionsPrintWithTheFewestParentheses) {
  Var a = MakeVar("a"), b = MakeVar("b"), c = MakeVar("c");
  EXPECT_EQ(PrintExpr(a + b * c), "%a + %b * %c");
  EXPECT_EQ(PrintExpr((a + b) * c), "(%a + %b) * %c");
  EXPECT_EQ(PrintExpr(a - b - c), "%a - %b - %c");
  EXPECT_EQ(PrintExpr(a - (b - c)), "%a - (%b - %c)");
  EXPECT_EQ(PrintExpr(a / (b / c)), "%a / (%b / %c)");
  EXPECT_EQ(PrintExpr((a < b) == (b < c)), "(%a < %b) == (%b < %c)");
  EXPECT_EQ(PrintExpr((a < b && b < c) || !(a == c)), "%a < %b && %b < %c || !(%a == %c)");
  EXPECT_EQ(PrintExpr(a < b && (b < c || a == c)), "%a < %b && (%b < %c || %a == %c)");
  EXPECT_EQ(PrintExpr(!!(a < b)), "!!(%a < %b)");
  EXPECT_EQ(PrintExpr(FloorDiv(a, 4) * 4 + FloorMod(a, 4)),
            "floordiv(%a, 4) * 4 + floormod(%a, 4)");
  EXPECT_EQ(PrintExpr(Min(a, Max(b, -3))), "min(%a, max(%b, -3))");
  EXPECT_EQ(PrintExpr(a - -1), "%a - -1");
  Var x = MakeVar("x", DataType::kFloat32);
  EXPECT_EQ(PrintExpr(Select(a < 3, Cast(DataType::kFloat32, a) * x, FloatImm(0.5))),
            "select(%a < 3, cast<f32>(%a) * %x, 0.5)");
  EXPECT_EQ(PrintExpr(Call("exp", {x}, DataType::kFloat32)), "exp(%x)");
  EXPECT_EQ(PrintExpr(Call("to_bits", {x}, DataType::kInt32)), "to_bits<i32>(%x)");
  EXPECT_EQ(PrintExpr(Call("min", {x, x}, DataType::kFloat32)), "\"min\"(%x, %x)");
  // Constants carry their type unless it is i64 or f32; floats read back bit-exactly.
  EXPECT_EQ(PrintExpr(IntImm(3, DataType::kInt32)), "3:i32");
  EXPECT_EQ(PrintExpr(FloatImm(1.5, DataType::kFloat64)), "1.5:f64");
  EXPECT_EQ(PrintExpr(FloatImm(2.0)), "2.0");
  EXPECT_EQ(PrintExpr(FloatImm(-0.0)), "-0.0");
  EXPECT_EQ(PrintExpr(FloatImm(0.1)), "0.1");
  EXPECT_EQ(PrintExpr(FloatImm(1e-30, DataType::kFloat16)), "1e-30:f16");
  EXPECT_EQ(PrintExpr(FloatImm(-std::numeric_limits<double>::infinity())), "-inf");
  EXPECT_EQ(PrintExpr(IntImm(1, DataType::kBool)), "true");
  EXPECT_EQ(PrintExpr(IntImm(2, DataType::kBool)), "2:bool");
  EXPECT_EQ(PrintExpr(FloatImm(std::bit_cast<double>(uint64_t{0x7ff0000000000123}))),
            "float_bits(9218868437227405603)");
}

// A kernel storing one expression of every kind (and many constants) into buffers of their
// dtypes; it must round-trip exactly.
KernelFunction EveryExpressionKind() {
  std::vector<DataType> dtypes = {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16,
                                  DataType::kInt8,    DataType::kUInt8,   DataType::kInt32,
                                  DataType::kInt64,   DataType::kBool};
  std::map<DataType, Buffer> out;
  std::vector<Buffer> params = {MakeBuffer("in", DataType::kFloat32, {4, 4})};
  for (DataType dtype : dtypes) {
    out[dtype] = MakeBuffer("out_" + ToString(dtype), dtype, {64});
    params.push_back(out[dtype]);
  }
  Var i = MakeVar("i", DataType::kInt32);
  Var j = MakeVar("j");
  Expr x = Load(params[0], {j, FloorMod(j + 1, 4)});
  std::vector<Expr> values = {
      i + IntImm(3, DataType::kInt32) * i - i / IntImm(2, DataType::kInt32),
      FloorDiv(j, 3) + FloorMod(j, -3) - Min(j, 2) * Max(j, IntImm(-7)),
      Select(j < 2 && (j >= 1 || !(j != 0)), x, FloatImm(-2.5)),
      Select(j == 3, IntImm(1, DataType::kBool), IntImm(0, DataType::kBool)),
      Cast(DataType::kFloat64, x) / FloatImm(3.0, DataType::kFloat64),
      Cast(DataType::kInt8, j) - IntImm(-128, DataType::kInt8),
      Cast(DataType::kUInt8, i) + IntImm(255, DataType::kUInt8),
      Cast(DataType::kFloat16, x) * FloatImm(0.25, DataType::kFloat16),
      Call("exp", {x}, DataType::kFloat32) + Call("pow", {x, FloatImm(2.0)}, DataType::kFloat32),
      Call("tanh", {Call("sigmoid", {x}, DataType::kFloat32)}, DataType::kFloat32),
      Call("weird name", {}, DataType::kInt64) + Call("select", {j}, DataType::kInt64),
      Call("f32", {j}, DataType::kFloat32),
      (j > 2) == (i <= IntImm(5, DataType::kInt32)),
      IntImm(std::numeric_limits<int64_t>::min()) + IntImm(std::numeric_limits<int64_t>::max()),
      FloatImm(0.1) + FloatImm(-0.0) + FloatImm(5e-324) + FloatImm(3.4028234663852886e38),
      FloatImm(std::numeric_limits<double>::infinity()) -
          FloatImm(-std::numeric_limits<double>::infinity()),
      FloatImm(std::numeric_limits<double>::quiet_NaN()) +
          FloatImm(-std::numeric_limits<double>::quiet_NaN()) +
          FloatImm(std::bit_cast<double>(uint64_t{0xfff0000000000001})),
      FloatImm(1e300, DataType::kFloat64) * FloatImm(0.1, DataType::kFloat64),
      IntImm(7, DataType::kFloat32) + FloatImm(1.5),
      FloatImm(2.5, DataType::kInt64) + j,
      Binary(ExprKind::kAnd, IntImm(2, DataType::kBool), IntImm(0, DataType::kBool)),
      !Cast(DataType::kBool, j),
  };
  // A cast to the operand's own type is a node of its own (the builder elides it).
  ExprNode same = *Cast(DataType::kFloat32, Cast(DataType::kInt32, x));
  same.operands = {x};
  values.push_back(Expr(std::make_shared<const ExprNode>(same)));
  std::vector<Stmt> stores;
  std::map<DataType, int64_t> next;
  for (const Expr& value : values) {
    stores.push_back(MakeStore(out[value->dtype], {next[value->dtype]++}, value));
  }
  Stmt body = MakeFor(i, 2, ForKind::kSerial, MakeFor(j, 4, ForKind::kSerial, MakeSeq(stores)));
  return MakeKernel("every_expression", params, static_cast<int>(dtypes.size()), body);
}

TEST(KernelTextForm, EveryExpressionKindRoundTrips) {
  KernelFunction kernel = EveryExpressionKind();
  std::set<ExprKind> kinds;
  VisitStmtExprs(kernel.body, [&](const Expr& top) {
    VisitExprTree(top, [&](const Expr& e) { kinds.insert(e->kind); });
  });
  EXPECT_EQ(kinds.size(), static_cast<size_t>(ExprKind::kCall) + 1);  // every kind occurs
  std::string text;
  EXPECT_TRUE(RoundTrips(kernel, &text));
  for (const char* part : {"for %i: i32 in 2 {",
                           "%i + 3:i32 * %i - %i / 2:i32",
                           "-128:i8",
                           "255:u8",
                           "0.25:f16",
                           "3.0:f64",
                           "cast<f64>(%in[%j",
                           "\"weird name\"<i64>()",
                           "\"select\"(%j)",
                           "\"f32\"<f32>(%j)",
                           "-9223372036854775808 + 9223372036854775807",
                           "5e-324",
                           "inf - -inf",
                           "nan + -nan + float_bits(-4503599627370495)",
                           "1e+300:f64",
                           "7:f32 + 1.5",
                           "2.5:i64 + %j",
                           "2:bool && false",
                           "!cast<bool>(%j)",
                           "cast<f32>(%in["}) {
    EXPECT_TRUE(Contains(text, part)) << part << "\n" << text;
  }
}

// Hand-written text parses to exactly the structure the builders make.
TEST(KernelTextForm, HandWrittenTextMeansWhatItSays) {
  KernelFunction parsed = ParseKernel(R"(
    kernel @k(%a: f32[8]) -> (%b: f32[8]) {
      block root() {
        for %i in 8 {
          // operator precedence, left associativity, a negative literal, a typed constant
          %b[%i -1 + 1 * 2 - (3 - %i)] = %a[min(%i, 7)] * 2.0 + -1.5 / %a[0] - cast<f32>((%i > 1) == true)
        }
      }
    })");
  Buffer a = MakeBuffer("a", DataType::kFloat32, {8});
  Buffer b = MakeBuffer("b", DataType::kFloat32, {8});
  Var i = MakeVar("i");
  Expr index = i - 1 + Expr(1) * 2 - (Expr(3) - i);
  Expr value = Load(a, {Min(i, 7)}) * FloatImm(2.0) + FloatImm(-1.5) / Load(a, {0}) -
               Cast(DataType::kFloat32, (i > 1) == IntImm(1, DataType::kBool));
  KernelFunction expected =
      MakeKernel("k", {a, b}, 1, MakeFor(i, 8, ForKind::kSerial, MakeStore(b, {index}, value)));
  EXPECT_EQ(StructuralDiff(parsed, expected), "");
}

// ---- statements ----

KernelFunction EveryStatementKind() {
  Buffer a = MakeBuffer("A", DataType::kFloat32, {8, 6});
  Buffer b = MakeBuffer("B", DataType::kFloat32, {6});
  Buffer out = MakeBuffer("out", DataType::kFloat32, {8});
  Buffer scalar = MakeBuffer("scalar", DataType::kInt32, {});
  Buffer local = MakeBuffer("acc", DataType::kFloat32, {8}, "local");
  Buffer odd_scope = MakeBuffer("scratch", DataType::kFloat32, {2, 3}, "shared memory");
  Var io = MakeVar("i"), ii = MakeVar("i"), k = MakeVar("k");
  Var vi = MakeVar("vi"), vk = MakeVar("vk");
  Expr row = io * 4 + ii;
  Block reduce =
      MakeBlock("matvec", {{vi, 8, IterKind::kSpatial}, {vk, 6, IterKind::kReduction}},
                MakeStore(local, {vi}, Load(local, {vi}) + Load(a, {vi, vk}) * Load(b, {vk})),
                MakeStore(local, {vi}, FloatImm(0.0)), {{a, {{vi, 1}, {0, 6}}}, {b, {{vk, 1}}}},
                {{local, {{vi, 1}}}}, {}, Attrs{{"meta_schedule.tiling", std::string("SSR")}});
  Stmt compute = MakeFor(io, 2, ForKind::kParallel,
                         MakeFor(ii, 4, ForKind::kVectorized,
                                 MakeFor(k, 6, ForKind::kUnrolled,
                                         MakeBlockRealize({row, k}, row < 7 || k == 0, reduce),
                                         Attrs{{"pragma_auto_unroll_max_step", int64_t{16}}})));
  Var j = MakeVar("j"), vj = MakeVar("vj");
  Block copy = MakeBlock("copy", {{vj, 8, IterKind::kSpatial}},
                         MakeIfThenElse(vj < 4, MakeStore(out, {vj}, Load(local, {vj})),
                                        MakeStore(out, {vj}, FloatImm(-1.0))),
                         nullptr, {{local, {{vj, 1}}}}, {{out, {{vj, 1}}}});
  // Seqs a plain statement list would not give back: empty, of one, nested.
  auto empty = std::make_shared<SeqNode>();
  auto single = std::make_shared<SeqNode>();
  single->stmts = {MakeStore(scalar, {}, IntImm(1, DataType::kInt32))};
  auto nested = std::make_shared<SeqNode>();
  nested->stmts = {single, MakeStore(scalar, {}, IntImm(2, DataType::kInt32))};
  Stmt then_only = MakeIfThenElse(Load(scalar, {}) == IntImm(2, DataType::kInt32), nested);
  std::vector<Stmt> body = {
      compute, MakeFor(j, 8, ForKind::kSerial, MakeBlockRealize({j}, IntImm(1), copy)), then_only,
      empty, MakeFor(MakeVar("unused"), 0, ForKind::kSerial, nullptr)};
  auto seq = std::make_shared<SeqNode>();
  seq->stmts = body;
  return MakeKernel("every statement", {a, b, out, scalar}, 2, seq, {local, odd_scope},
                    Attrs{{"target", std::string("llvm")}, {"tuned", int64_t{1}}});
}

TEST(KernelTextForm, EveryStatementKindRoundTrips) {
  std::string text;
  KernelFunction kernel = EveryStatementKind();
  EXPECT_TRUE(RoundTrips(kernel, &text));
  for (const char* part :
       {"kernel @\"every statement\"(%A: f32[8,6], %B: f32[6]) -> (%out: f32[8], %scalar: i32[]) "
        "attributes {target=\"llvm\", tuned=1} {",
        "alloc(%acc: f32[8] local, %scratch: f32[2,3] \"shared memory\")", "for %i in 2 parallel {",
        "for %i_1 in 4 vectorized {",
        "for %k in 6 unrolled annotations {pragma_auto_unroll_max_step=16} {",
        "block matvec(%vi: spatial 8 = %i * 4 + %i_1, %vk: reduce 6 = %k) where %i * 4 + %i_1 "
        "< 7 || %k == 0",
        "reads(%A[%vi, 0:6], %B[%vk])", "writes(%acc[%vi])",
        "annotations {meta_schedule.tiling=\"SSR\"} {", "init {",
        "block copy(%vj: spatial 8 = %j) where 1\n", "} else {", "seq {\n", "seq {\n    }",
        "%scalar[] = 1:i32", "for %unused in 0 {\n    }"}) {
    EXPECT_TRUE(Contains(text, part)) << part << "\n" << text;
  }
}

TEST(KernelTextForm, EmptyAndOddKernelsRoundTrip) {
  KernelFunction empty;
  empty.name = "nothing";
  empty.num_outputs = 0;
  std::string text;
  EXPECT_TRUE(RoundTrips(empty, &text));
  EXPECT_EQ(text, "kernel @nothing() -> () {\n}\n");
  KernelFunction no_body;
  no_body.name = "x";
  no_body.params = {MakeBuffer("", DataType::kBool, {0, 3})};
  EXPECT_TRUE(RoundTrips(no_body, &text));
  EXPECT_EQ(text, "kernel @x() -> (%buffer: bool[0,3]) {\n}\n");
}

// ---- names and scopes ----

TEST(KernelTextForm, NamesAreMadeUniqueAndBindByScope) {
  Buffer t1 = MakeBuffer("t", DataType::kFloat32, {4});
  Buffer t2 = MakeBuffer("t", DataType::kFloat32, {4});
  Var i1 = MakeVar("i"), i2 = MakeVar("i"), unnamed = MakeVar(""), spaced = MakeVar("a b");
  Stmt body = MakeSeq({
      MakeFor(i1, 4, ForKind::kSerial, MakeStore(t1, {i1}, FloatImm(1.0))),
      MakeFor(i2, 4, ForKind::kSerial, MakeStore(t2, {i2}, Load(t1, {i2}))),
      MakeFor(
          unnamed, 1, ForKind::kSerial,
          MakeFor(spaced, 1, ForKind::kSerial, MakeStore(t2, {unnamed + spaced}, FloatImm(4.0)))),
  });
  KernelFunction kernel = MakeKernel("names", {t1, t2}, 1, body);
  std::string text;
  ASSERT_TRUE(RoundTrips(kernel, &text));
  for (const char* part :
       {"(%t: f32[4]) -> (%t_1: f32[4])", "for %i in 4", "for %i_1 in 4", "%t_1[%i_1] = %t[%i_1]",
        "for %v in 1", "for %\"a b\" in 1", "%t_1[%v + %\"a b\"] = 4.0"}) {
    EXPECT_TRUE(Contains(text, part)) << part << "\n" << text;
  }
  // In hand-written text every binding is a new Var, and a use binds to the innermost one.
  KernelFunction parsed = ParseKernel(R"(
    kernel @k() -> (%b: f32[4]) {
      for %i in 4 { %b[%i] = 1.0 }
      for %i in 2 {
        for %i in 4 { %b[%i] = 2.0 }
      }
    })");
  const auto* seq = As<SeqNode>(parsed.body);
  ASSERT_NE(seq, nullptr);
  const ForNode* first = As<ForNode>(seq->stmts[0]);
  const ForNode* outer = As<ForNode>(seq->stmts[1]);
  const ForNode* inner = As<ForNode>(outer->body);
  EXPECT_FALSE(first->loop_var.same_as(outer->loop_var));
  EXPECT_FALSE(outer->loop_var.same_as(inner->loop_var));
  EXPECT_TRUE(As<StoreNode>(inner->body)->indices[0].same_as(inner->loop_var));
  EXPECT_TRUE(As<StoreNode>(first->body)->indices[0].same_as(first->loop_var));
  EXPECT_EQ(PrintKernel(parsed),
            "kernel @k() -> (%b: f32[4]) {\n"
            "  for %i in 4 {\n    %b[%i] = 1.0\n  }\n"
            "  for %i_1 in 2 {\n"
            "    for %i_2 in 4 {\n      %b[%i_2] = 2.0\n    }\n  }\n}\n");
}

// Hand-written text with a shadowed name and sibling loops of one name computes what scoping
// says: run it and compare with values worked out by hand.
TEST(KernelTextForm, ScopedNamesComputeTheRightValues) {
  KernelFunction kernel = ParseKernel(R"(
    kernel @scopes(%x: f32[3]) -> (%y: f32[2,3], %z: f32[3]) {
      block root() alloc(%tmp: f32[3] local) {
        for %i in 2 {
          for %j in 3 {
            block outer(%vi: spatial 2 = %i, %vj: spatial 3 = %j) reads(%x[%vj]) writes(%y[%vi, %vj]) {
              %y[%vi, %vj] = %x[%vj] * cast<f32>(%vi + 1) + cast<f32>(%j)
            }
          }
        }
        for %i in 3 { %tmp[%i] = %x[%i] + 10.0 }
        for %i in 3 {
          if %i == 1 { %z[%i] = 0.0 } else { %z[%i] = %tmp[2 - %i] }
        }
      }
    })");
  Tensor x(TensorType{{3}, DataType::kFloat32, ""});
  for (int64_t k = 0; k < 3; ++k) x.SetDouble(k, static_cast<double>(k) + 0.5);
  std::vector<Tensor> outputs = backends::RunKernelReference(kernel, {x}, true);
  // y[i, j] = x[j] * (i + 1) + j with x = [0.5, 1.5, 2.5]
  std::vector<double> y = {0.5, 2.5, 4.5, 1.0, 4.0, 7.0};
  for (int64_t k = 0; k < 6; ++k) EXPECT_EQ(outputs[0].GetDouble(k), y[k]) << k;
  // z = [tmp[2], 0, tmp[0]] with tmp = x + 10
  EXPECT_EQ(outputs[1].GetDouble(0), 12.5);
  EXPECT_EQ(outputs[1].GetDouble(1), 0.0);
  EXPECT_EQ(outputs[1].GetDouble(2), 10.5);
  EXPECT_TRUE(RoundTrips(kernel));
}

// Hand-built IR may use variables where nothing binds them (the schedule never makes such IR);
// they print in a free(...) clause and round-trip, whether the variable is defined later, never,
// or was defined before. The root block's regions cover whole buffers and mention none.
TEST(KernelTextForm, FreeVariablesRoundTrip) {
  Buffer out = MakeBuffer("out", DataType::kFloat32, {4});
  Var i = MakeVar("i"), v1 = MakeVar("v"), v2 = MakeVar("v"),
      never = MakeVar("n", DataType::kInt32);
  Var late = MakeVar("i");
  // b1 reads through v2 (defined later), b2 through i (defined before, out of scope) and n
  // (never defined).
  Block b1 = MakeBlock("b1", {{v1, 4, IterKind::kSpatial}}, MakeStore(out, {v1}, FloatImm(1.0)),
                       nullptr, {{out, {{Min(v1, v2), 4 - Min(v1, v2)}}}}, {{out, {{v1, 1}}}});
  Block b2 = MakeBlock("b2", {{v2, 4, IterKind::kSpatial}}, MakeStore(out, {v2}, FloatImm(2.0)),
                       nullptr, {{out, {{i, Cast(DataType::kInt64, never)}}}}, {{out, {{v2, 1}}}});
  Stmt body = MakeSeq(
      {MakeFor(i, 4, ForKind::kSerial, MakeBlockRealize({i}, IntImm(1, DataType::kBool), b1)),
       MakeFor(late, 4, ForKind::kSerial,
               MakeBlockRealize({late + i * 0}, IntImm(1, DataType::kBool), b2))});
  auto root = MakeBlock("root", {}, body, nullptr, {}, {{out, {{IntImm(0), IntImm(4)}}}});
  KernelFunction kernel = MakeKernel("free", {out}, 1, nullptr);
  kernel.body = MakeBlockRealize({}, Expr(), root);
  std::string text;
  ASSERT_TRUE(RoundTrips(kernel, &text));
  EXPECT_TRUE(Contains(text, "free(%v, %i, %n: i32)")) << text;
  EXPECT_TRUE(Contains(text, "reads(%out[min(%v_1, %v):4 - min(%v_1, %v)])")) << text;
  EXPECT_TRUE(Contains(text, "block root()\n      writes(%out[0:4]) {")) << text;
  // Without the clause, a variable nothing binds is an error.
  std::string unlisted = text;
  unlisted.replace(unlisted.find(" free("), unlisted.find(") {") + 1 - unlisted.find(" free("), "");
  EXPECT_THROW(ParseKernel(unlisted), Error);
}

// ---- errors ----

void ExpectKernelError(const std::string& text, int line, int column, const std::string& message) {
  SCOPED_TRACE(text);
  try {
    ParseKernel(text, "k.tir");
    ADD_FAILURE() << "expected a parse error";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().file, "k.tir");
    EXPECT_EQ(e.where().line, line) << e.what();
    EXPECT_EQ(e.where().column, column) << e.what();
    EXPECT_TRUE(Contains(e.message(), message)) << e.what();
  }
}

TEST(KernelTextForm, ErrorsNameWhatAndWhere) {
  const std::string head = "kernel @k(%a: f32[4,4], %s: i32[]) -> (%b: f32[4]) {\n";
  ExpectKernelError(head + "  for %i in 4 {\n    %b[%j] = 0.0\n  }\n}", 3, 8,
                    "unbound variable '%j'");
  ExpectKernelError(head + "  for %i in 4 { %b[%i] = %a[%i] }\n}", 2, 28,
                    "load of buffer '%a' of rank 2 with 1 indices");
  ExpectKernelError(head + "  for %i in 4 {\n    %b[%i] = %s[]\n  }\n}", 3, 5,
                    "store of a i32 value to buffer 'b' of f32");
  ExpectKernelError(head + "  for %i in 4 { %b[%i, 0] = 1.0 }\n}", 2, 19,
                    "store of buffer '%b' of rank 1 with 2 indices");
  ExpectKernelError(head + "  for %i in 4 { %b[%i] = %a[%i, 0] + 1 }\n}", 2, 36,
                    "operands of '+' have different types f32 and i64");
  ExpectKernelError(head + "  for %i in 4 { %c[%i] = 1.0 }\n}", 2, 17, "undeclared buffer '%c'");
  ExpectKernelError(head + "  for %i in 4 paralel { }\n}", 2, 15,
                    "expected a loop kind ('parallel', 'vectorized', 'unrolled', 'blockIdx.x', "
                    "'threadIdx.x', ...), 'annotations' or '{' but found 'paralel'");
  ExpectKernelError(head + "  for %i in -4 { }\n}", 2, 13, "extent -4 is negative");
  ExpectKernelError(head + "  for %i in 4 { %b[%i] = select(%i < 1 < 2, 1.0, 2.0) }\n}", 2, 40,
                    "comparisons do not chain");
  ExpectKernelError(head + "  for %i in 4 { %b[%i] = 1.0 + }\n}", 2, 32,
                    "expected an expression but found '}'");
  ExpectKernelError(head + "  %b[0] = 1.0:f99\n}", 2, 14, "expected a statement");
  ExpectKernelError(head + "  %b[0] = 99999999999999999999.0 + f32(1)\n}", 2, 36,
                    "found the data type 'f32'");
  ExpectKernelError(head + "  %b[0] = select(true, 1.0)\n}", 2, 17,
                    "select takes 3 operands but 2 were given");
  ExpectKernelError(head + "  block b(%v: spatial 4 = 0) reads(%a[%v]) { }\n}", 2, 38,
                    "region of buffer '%a' of rank 2 has 1 ranges");
  ExpectKernelError(head + "  block b(%v: spatial 4 = 0) writes(%b[%v]) reads(%a[%v, 0]) { }\n}", 2,
                    45,
                    "a block clause ('where', 'alloc', 'reads', 'writes', 'annotations') in "
                    "this order, or '{'");
  ExpectKernelError(head + "  block b(%v: sideways 4 = 0) { }\n}", 2, 15,
                    "expected an iterator kind ('spatial' or 'reduce')");
  ExpectKernelError(head + "  for %i in 4 { for %i: i32 in 2 { %b[0] = cast<f32>(%i + 1) } }\n}", 2,
                    57, "operands of '+' have different types i32 and i64");
  ExpectKernelError(head + "  block b() alloc(%a: f32[4] local) { }\n}", 2, 19,
                    "buffer '%a' is declared again as f32[4] local but was f32[4,4] global");
  ExpectKernelError("kernel @k() -> () free(%x, %x) { }", 1, 28, "listed twice");
  ExpectKernelError(
      "kernel @k() -> (%b: f32[4]) free(%i) {\n  block root() writes(%b[%i]) {\n"
      "    for %i in 4 { %b[%i] = 0.0 }\n  }\n}",
      2, 23, "the root block's region of buffer '%b' uses the variable '%i'");
  ExpectKernelError("kernel @k(%a: f32[4]) -> () free(%n) {\n  block root() reads(%a[0:%n]) { }\n}",
                    2, 22, "root regions cover whole buffers");
  ExpectKernelError(head + "  %b[0] = 1.0\n", 3, 1, "expected a statement");
  ExpectKernelError(head + "  %b[99999999999999999999] = 1.0\n}", 2, 6, "out of range");
  ExpectKernelError("kernel @k() -> (%b: f32[4611686018427387904,4]) { }", 1, 25,
                    "too many elements");
}

TEST(KernelTextForm, DeepNestingIsAnErrorNotACrash) {
  const std::string head = "kernel @k() -> (%b: f32[1]) {\n  %b[0] = ";
  for (const std::string& deep : {std::string(100000, '('), std::string(100000, '!')}) {
    EXPECT_THROW(ParseKernel(head + deep + "1.0"), Error);
  }
  std::string loops;
  for (int i = 0; i < 100000; ++i) loops += "seq { ";
  EXPECT_THROW(ParseKernel("kernel @k() -> () {\n" + loops), Error);
  std::string fine = head + std::string(150, '(') + "1.0" + std::string(150, ')') + "\n}";
  EXPECT_NO_THROW(ParseKernel(fine));
}

// `%a[0] + %a[0] + ...` with `terms` terms: a tree one level deeper per term.
std::string ChainKernel(int terms) {
  std::string text = "kernel @k(%a: f32[1]) -> (%b: f32[1]) {\n  %b[0] = %a[0]";
  for (int i = 1; i < terms; ++i) text += i % 2 ? " + %a[0]" : " - 1.0";
  return text + "\n}\n";
}

TEST(KernelTextForm, DeepNestingNamesTheLimitAndWhere) {
  const std::string head = "kernel @k() -> (%b: f32[1]) {\n  %b[0] = ";
  ExpectKernelError(head + std::string(100000, '(') + "1.0", 2, 211,
                    "expression nested deeper than 200 levels");
  std::string loops;
  for (int i = 0; i < 100000; ++i) loops += "seq { ";
  ExpectKernelError("kernel @k() -> () {\n" + loops, 2, 1207,
                    "statements nested deeper than 200 levels");
}

// A long chain parses in a loop; a tree deeper than the documented limit is an error at the term
// that passes it, and a chain within it parses, prints and reads back.
TEST(KernelTextForm, LongChainsParseToTheLimitAndFailClearlyPastIt) {
  try {
    ParseKernel(ChainKernel(50000), "k.tir");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().line, 2);
    EXPECT_TRUE(Contains(e.message(), "expression deeper than 2048 levels")) << e.what();
  }
  // 2047 terms: 2046 operators over a load of depth 2.
  KernelFunction kernel = ParseKernel(ChainKernel(2047));
  std::string printed;
  EXPECT_TRUE(RoundTrips(kernel, &printed));
  EXPECT_NE(printed.find("%a[0] - 1.0 + %a[0]"), std::string::npos);
  EXPECT_THROW(ParseKernel(ChainKernel(2048)), Error);
  // As part of a module, which is what `tandem show` prints.
  IRModule module = ParseModule("module {\n" + ChainKernel(2047) + "}\n");
  EXPECT_EQ(PrintModule(module), PrintModule(ParseModule(PrintModule(module))));
  EXPECT_THROW(ParseModule("module {\n" + ChainKernel(50000) + "}\n"), Error);
}

// Every prefix of a printed kernel, and random mutations of it, parse or throw Error.
TEST(KernelTextForm, PrefixesAndMutationsParseOrThrowError) {
  std::string text = PrintKernel(EveryStatementKind());
  int parsed = 0;
  for (size_t length = 0; length <= text.size(); ++length) {
    try {
      ParseKernel(text.substr(0, length));
      ++parsed;
    } catch (const Error&) {
    }
  }
  EXPECT_EQ(parsed, 2);  // the whole text, and the text without its final newline
  std::mt19937 rng(7);
  std::string both = PrintKernel(EveryStatementKind()) + "\n" + PrintKernel(EveryExpressionKind());
  const std::vector<std::string> pieces = {
      "%i",   "%A",   "[",     "]",     "(",       ")",   "{",    "}",      ",",    ":",
      "=",    "==",   "<",     ">",     "!",       "&&",  "||",   "+",      "-",    "*",
      "/",    "1",    "-1",    "2.5",   "nan",     "for", "in",   "block",  "seq",  "if",
      "else", "init", "where", "reads", "spatial", "f32", "cast", "select", "free", "\n"};
  int parsed_mutants = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string mutated = round % 2 ? text : both;
    for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
      size_t at = rng() % mutated.size();
      switch (rng() % 3) {
        case 0:
          mutated.erase(at, 1 + rng() % 8);
          break;
        case 1:
          mutated.insert(at, pieces[rng() % pieces.size()]);
          break;
        default:
          mutated[at] = static_cast<char>(rng() % 128);
          break;
      }
    }
    try {
      ParseModule("module {\n" + mutated + "}\n");
    } catch (const Error&) {
    }
    KernelFunction kernel;
    try {
      kernel = ParseKernel(mutated);
    } catch (const Error&) {
      continue;
    }
    ++parsed_mutants;
    // Whatever parses prints to text that reads back to the same kernel.
    EXPECT_TRUE(RoundTrips(kernel)) << mutated;
  }
  EXPECT_GT(parsed_mutants, 20);
}

// ---- modules ----

TEST(KernelTextForm, ModulesWithKernelsRoundTrip) {
  KernelFunction kernel = EveryStatementKind();
  GraphBuilder builder("main");
  ValueId a = builder.Input("a", TensorType{{8, 6}, DataType::kFloat32, ""});
  ValueId b = builder.Input("b", TensorType{{6}, DataType::kFloat32, ""});
  ValueId call = builder.CallKernel(kernel, {a, b}, "matvec");
  IRModule module;
  module.Add(builder.Finish(call));
  module.AddKernel(kernel);
  module.AddKernel(EveryExpressionKind());
  module.attrs().Set("stage", std::string("legalized"));
  std::string text = PrintModule(module);
  IRModule parsed = ParseModule(text);
  EXPECT_EQ(StructuralDiff(module, parsed), "") << text;
  EXPECT_EQ(StructuralHash(module), StructuralHash(parsed));
  EXPECT_EQ(PrintModule(parsed), text);
  EXPECT_NO_THROW(Verify(parsed));
  // Module equality looks into kernel bodies.
  IRModule changed = parsed;
  KernelFunction other = kernel;
  other.attrs.Set("tuned", int64_t{2});
  changed.AddKernel(other);
  EXPECT_FALSE(StructuralEqual(module, changed));
  EXPECT_NE(StructuralHash(module), StructuralHash(changed));
  EXPECT_TRUE(Contains(StructuralDiff(module, changed), "kernel @every statement"));
  // A kernel defined twice.
  std::string twice = "module {\n" + PrintKernel(kernel) + PrintKernel(kernel) + "}\n";
  try {
    ParseModule(twice, "m.tir");
    ADD_FAILURE() << "a kernel defined twice parsed";
  } catch (const Error& e) {
    EXPECT_TRUE(Contains(e.message(), "kernel '@\"every statement\"' is defined twice"))
        << e.what();
  }
}

// The kernel example of docs/text_form.md parses and prints back unchanged.
TEST(KernelTextForm, DocumentedExampleReadsBackUnchanged) {
  std::ifstream file(std::string(TANDEM_SOURCE_DIR) + "/docs/text_form.md");
  ASSERT_TRUE(file) << "docs/text_form.md is missing";
  std::stringstream buffer;
  buffer << file.rdbuf();
  std::string doc = buffer.str();
  size_t start = doc.find("```\nkernel @");
  ASSERT_NE(start, std::string::npos) << "no kernel example in docs/text_form.md";
  start += 4;
  std::string example = doc.substr(start, doc.find("```", start) - start);
  KernelFunction kernel = ParseKernel(example, "docs/text_form.md");
  EXPECT_EQ(PrintKernel(kernel), example);
  EXPECT_TRUE(RoundTrips(kernel));
}

}  // namespace
}  // namespace tandem::ir
