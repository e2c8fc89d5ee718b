// LLVM code generation: every compiled kernel is checked against the kernel reference
// interpreter on random inputs.
#include "backends/llvm/codegen.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <thread>

#include "backends/runtime/thread_pool.h"
#include "backends/target/resolved_target.h"
#include "ir/error.h"
#include "tests/backends/kernel_test_util.h"

namespace tandem {
namespace {

using backends::CodegenOptions;
using ir::Buffer;
using ir::DataType;
using ir::Expr;
using ir::ForKind;
using ir::IterKind;
using ir::KernelFunction;
using ir::MakeBuffer;
using ir::MakeVar;
using ir::Stmt;
using ir::Var;
using testing::ExpectMatchesReference;
using testing::Kernel;
using testing::Loop;
using testing::MakeBlock;
using testing::Root;

constexpr IterKind kSpatial = IterKind::kSpatial;
constexpr IterKind kReduce = IterKind::kReduction;

Expr F(double v) {
  return ir::FloatImm(v);
}

// c[i, j] = a[i, j] + b[j]
KernelFunction AddBroadcast(ForKind outer, ForKind inner) {
  Buffer a = MakeBuffer("a", DataType::kFloat32, {5, 16});
  Buffer b = MakeBuffer("b", DataType::kFloat32, {16});
  Buffer c = MakeBuffer("c", DataType::kFloat32, {5, 16});
  Var i = MakeVar("i"), j = MakeVar("j"), vi = MakeVar("vi"), vj = MakeVar("vj");
  Stmt body = ir::MakeStore(c, {vi, vj}, ir::Load(a, {vi, vj}) + ir::Load(b, {vj}));
  Stmt block = MakeBlock("add", {{vi, 5, kSpatial, i}, {vj, 16, kSpatial, j}}, body);
  return Kernel("add_broadcast", {a, b, c}, Root(Loop(i, 5, Loop(j, 16, block, inner), outer)));
}

TEST(Codegen, ElementwiseAddWithBroadcast) {
  for (ForKind outer : {ForKind::kSerial, ForKind::kParallel}) {
    for (ForKind inner :
         {ForKind::kSerial, ForKind::kVectorized, ForKind::kUnrolled, ForKind::kParallel}) {
      SCOPED_TRACE(ir::ToString(outer) + "/" + ir::ToString(inner));
      ExpectMatchesReference(AddBroadcast(outer, inner));
    }
  }
}

// c[i, j] = sum_k a[i, k] * b[k, j], with an init statement.
KernelFunction Matmul(int64_t m, int64_t n, int64_t k, ForKind i_kind, ForKind j_kind,
                      ForKind k_kind = ForKind::kSerial) {
  Buffer a = MakeBuffer("a", DataType::kFloat32, {m, k});
  Buffer b = MakeBuffer("b", DataType::kFloat32, {k, n});
  Buffer c = MakeBuffer("c", DataType::kFloat32, {m, n});
  Var i = MakeVar("i"), j = MakeVar("j"), r = MakeVar("k");
  Var vi = MakeVar("vi"), vj = MakeVar("vj"), vk = MakeVar("vk");
  Stmt body = ir::MakeStore(c, {vi, vj},
                            ir::Load(c, {vi, vj}) + ir::Load(a, {vi, vk}) * ir::Load(b, {vk, vj}));
  Stmt init = ir::MakeStore(c, {vi, vj}, F(0));
  Stmt block = MakeBlock(
      "matmul", {{vi, m, kSpatial, i}, {vj, n, kSpatial, j}, {vk, k, kReduce, r}}, body, init);
  return Kernel("matmul", {a, b, c},
                Root(Loop(i, m, Loop(j, n, Loop(r, k, block, k_kind), j_kind), i_kind)));
}

TEST(Codegen, MatmulReductionWithInit) {
  ExpectMatchesReference(Matmul(13, 17, 19, ForKind::kSerial, ForKind::kSerial));
}

TEST(Codegen, ParallelOuterLoop) {
  backends::ThreadPool& pool = backends::ThreadPool::Global();
  int original = pool.num_threads();
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(threads);
    pool.SetNumThreads(threads);
    ExpectMatchesReference(Matmul(21, 9, 11, ForKind::kParallel, ForKind::kSerial));
    ExpectMatchesReference(Matmul(2, 9, 11, ForKind::kParallel, ForKind::kParallel));
  }
  pool.SetNumThreads(original);
}

TEST(Codegen, VectorizedLoopWithInnerSerialReduction) {
  // j vectorized outside the k reduction: the vector body contains a serial loop.
  Buffer a = MakeBuffer("a", DataType::kFloat32, {6, 10});
  Buffer b = MakeBuffer("b", DataType::kFloat32, {10, 16});
  Buffer c = MakeBuffer("c", DataType::kFloat32, {6, 16});
  Var i = MakeVar("i"), j = MakeVar("j"), r = MakeVar("k");
  Var vi = MakeVar("vi"), vj = MakeVar("vj"), vk = MakeVar("vk");
  Stmt body = ir::MakeStore(c, {vi, vj},
                            ir::Load(c, {vi, vj}) + ir::Load(a, {vi, vk}) * ir::Load(b, {vk, vj}));
  Stmt block =
      MakeBlock("matmul", {{vi, 6, kSpatial, i}, {vj, 16, kSpatial, j}, {vk, 10, kReduce, r}}, body,
                ir::MakeStore(c, {vi, vj}, F(0)));
  KernelFunction kernel =
      Kernel("matmul_vec", {a, b, c},
             Root(Loop(i, 6, Loop(j, 16, Loop(r, 10, block), ForKind::kVectorized))));
  ExpectMatchesReference(kernel);
  EXPECT_NE(backends::EmitLlvmIr({kernel}).find("<16 x float>"), std::string::npos);
}

TEST(Codegen, TiledMatmulWithSplitIndices) {
  // i = io * 8 + ii, j = jo * 16 + ji; io parallel, ji vectorized, reduction k in between.
  const int64_t m = 32, n = 32, k = 24;
  Buffer a = MakeBuffer("a", DataType::kFloat32, {m, k});
  Buffer b = MakeBuffer("b", DataType::kFloat32, {k, n});
  Buffer c = MakeBuffer("c", DataType::kFloat32, {m, n});
  Var io = MakeVar("io"), ii = MakeVar("ii"), jo = MakeVar("jo"), ji = MakeVar("ji"),
      r = MakeVar("k");
  Var vi = MakeVar("vi"), vj = MakeVar("vj"), vk = MakeVar("vk");
  Stmt body = ir::MakeStore(c, {vi, vj},
                            ir::Load(c, {vi, vj}) + ir::Load(a, {vi, vk}) * ir::Load(b, {vk, vj}));
  Stmt block = MakeBlock(
      "matmul",
      {{vi, m, kSpatial, io * 8 + ii}, {vj, n, kSpatial, jo * 16 + ji}, {vk, k, kReduce, r}}, body,
      ir::MakeStore(c, {vi, vj}, F(0)));
  Stmt nest =
      Loop(io, 4, Loop(jo, 2, Loop(r, k, Loop(ii, 8, Loop(ji, 16, block, ForKind::kVectorized)))),
           ForKind::kParallel);
  KernelFunction kernel = Kernel("tiled_matmul", {a, b, c}, Root(nest));
  ExpectMatchesReference(kernel);
  CodegenOptions options;
  options.opt_level = 0;
  ExpectMatchesReference(kernel, options);
}

TEST(Codegen, VectorizedLoadsStrideOneBroadcastAndGather) {
  // out[i, j] = a[i, j] + b[i] * t[j, i] with j vectorized: a vector load, a broadcast and a
  // gather (stride 8).
  Buffer a = MakeBuffer("a", DataType::kFloat32, {8, 16});
  Buffer b = MakeBuffer("b", DataType::kFloat32, {8});
  Buffer t = MakeBuffer("t", DataType::kFloat32, {16, 8});
  Buffer out = MakeBuffer("out", DataType::kFloat32, {8, 16});
  Var i = MakeVar("i"), j = MakeVar("j"), vi = MakeVar("vi"), vj = MakeVar("vj");
  Stmt body = ir::MakeStore(out, {vi, vj},
                            ir::Load(a, {vi, vj}) + ir::Load(b, {vi}) * ir::Load(t, {vj, vi}));
  Stmt block = MakeBlock("mix", {{vi, 8, kSpatial, i}, {vj, 16, kSpatial, j}}, body);
  KernelFunction kernel = Kernel("strided_loads", {a, b, t, out},
                                 Root(Loop(i, 8, Loop(j, 16, block, ForKind::kVectorized))));
  ExpectMatchesReference(kernel);
  std::string ir_text = backends::EmitLlvmIr({kernel});
  EXPECT_NE(ir_text.find("<16 x float>"), std::string::npos) << ir_text;
  EXPECT_NE(ir_text.find("llvm.masked.gather"), std::string::npos) << ir_text;
}

TEST(Codegen, VectorizedScatterStore) {
  // out[j, i] = a[i, j] with j vectorized: the store has stride 8.
  Buffer a = MakeBuffer("a", DataType::kFloat32, {8, 16});
  Buffer out = MakeBuffer("out", DataType::kFloat32, {16, 8});
  Var i = MakeVar("i"), j = MakeVar("j"), vi = MakeVar("vi"), vj = MakeVar("vj");
  Stmt block = MakeBlock("transpose", {{vi, 8, kSpatial, i}, {vj, 16, kSpatial, j}},
                         ir::MakeStore(out, {vj, vi}, ir::Load(a, {vi, vj})));
  ExpectMatchesReference(
      Kernel("transpose", {a, out}, Root(Loop(i, 8, Loop(j, 16, block, ForKind::kVectorized)))));
}

TEST(Codegen, LongVectorizedLoopsRunInChunks) {
  for (int64_t n : {2, 3, 64, 100, 200}) {
    SCOPED_TRACE(n);
    Buffer a = MakeBuffer("a", DataType::kFloat32, {n});
    Buffer out = MakeBuffer("out", DataType::kFloat32, {n});
    Var i = MakeVar("i"), vi = MakeVar("vi");
    Stmt block = MakeBlock("scale", {{vi, n, kSpatial, i}},
                           ir::MakeStore(out, {vi}, ir::Load(a, {vi}) * F(3) - F(1)));
    ExpectMatchesReference(
        Kernel("scale", {a, out}, Root(Loop(i, n, block, ForKind::kVectorized))));
  }
}

TEST(Codegen, VectorizedReductionAxisFallsBackToSerialCode) {
  // out[i] = sum_j a[i, j] with the reduction axis j marked vectorized: all lanes write out[i],
  // so the loop must not become vector code.
  Buffer a = MakeBuffer("a", DataType::kFloat32, {4, 16});
  Buffer out = MakeBuffer("out", DataType::kFloat32, {4});
  Var i = MakeVar("i"), j = MakeVar("j"), vi = MakeVar("vi"), vj = MakeVar("vj");
  Stmt block = MakeBlock("sum", {{vi, 4, kSpatial, i}, {vj, 16, kReduce, j}},
                         ir::MakeStore(out, {vi}, ir::Load(out, {vi}) + ir::Load(a, {vi, vj})),
                         ir::MakeStore(out, {vi}, F(0)));
  ExpectMatchesReference(
      Kernel("row_sum", {a, out}, Root(Loop(i, 4, Loop(j, 16, block, ForKind::kVectorized)))));
}

TEST(Codegen, UnrolledReductionLoop) {
  Buffer a = MakeBuffer("a", DataType::kFloat32, {6, 4});
  Buffer out = MakeBuffer("out", DataType::kFloat32, {6});
  Var i = MakeVar("i"), k = MakeVar("k"), vi = MakeVar("vi"), vk = MakeVar("vk");
  Stmt block = MakeBlock("sum", {{vi, 6, kSpatial, i}, {vk, 4, kReduce, k}},
                         ir::MakeStore(out, {vi}, ir::Load(out, {vi}) + ir::Load(a, {vi, vk})),
                         ir::MakeStore(out, {vi}, F(0.5)));
  ExpectMatchesReference(
      Kernel("unrolled_sum", {a, out}, Root(Loop(i, 6, Loop(k, 4, block, ForKind::kUnrolled)))));
  // Beyond the replication limit the loop stays a loop with an unroll hint.
  Buffer wide = MakeBuffer("wide", DataType::kFloat32, {2, 100});
  Buffer sums = MakeBuffer("sums", DataType::kFloat32, {2});
  Stmt long_block =
      MakeBlock("sum", {{vi, 2, kSpatial, i}, {vk, 100, kReduce, k}},
                ir::MakeStore(sums, {vi}, ir::Load(sums, {vi}) + ir::Load(wide, {vi, vk})),
                ir::MakeStore(sums, {vi}, F(0)));
  ExpectMatchesReference(Kernel("long_unrolled_sum", {wide, sums},
                                Root(Loop(i, 2, Loop(k, 100, long_block, ForKind::kUnrolled)))));
}

TEST(Codegen, LocalScratchBufferInsideParallelLoop) {
  // cache_write style: accumulate a row in a "local" buffer allocated at the root, then copy it
  // out. The buffer is used only inside the parallel loop, so each thread gets its own.
  const int64_t m = 12, n = 16, k = 7;
  Buffer a = MakeBuffer("a", DataType::kFloat32, {m, k});
  Buffer b = MakeBuffer("b", DataType::kFloat32, {k, n});
  Buffer c = MakeBuffer("c", DataType::kFloat32, {m, n});
  Buffer local = MakeBuffer("c_local", DataType::kFloat32, {n}, "local");
  Var i = MakeVar("i"), j = MakeVar("j"), r = MakeVar("k"), j2 = MakeVar("j2");
  Var vi = MakeVar("vi"), vj = MakeVar("vj"), vk = MakeVar("vk");
  Stmt update = MakeBlock(
      "update", {{vi, m, kSpatial, i}, {vj, n, kSpatial, j}, {vk, k, kReduce, r}},
      ir::MakeStore(local, {vj},
                    ir::Load(local, {vj}) + ir::Load(a, {vi, vk}) * ir::Load(b, {vk, vj})),
      ir::MakeStore(local, {vj}, F(0)));
  Var wi = MakeVar("wi"), wj = MakeVar("wj");
  Stmt copy = MakeBlock("copy", {{wi, m, kSpatial, i}, {wj, n, kSpatial, j2}},
                        ir::MakeStore(c, {wi, wj}, ir::Load(local, {wj})));
  Stmt nest = Loop(i, m,
                   ir::MakeSeq({Loop(r, k, Loop(j, n, update, ForKind::kVectorized)),
                                Loop(j2, n, copy, ForKind::kVectorized)}),
                   ForKind::kParallel);
  KernelFunction kernel = Kernel("cache_write", {a, b, c}, Root(nest, {local}));
  backends::ThreadPool& pool = backends::ThreadPool::Global();
  int original = pool.num_threads();
  pool.SetNumThreads(3);
  ExpectMatchesReference(kernel);
  pool.SetNumThreads(original);
}

TEST(Codegen, GlobalIntermediateBetweenTwoBlocks) {
  Buffer a = MakeBuffer("a", DataType::kFloat32, {4, 8});
  Buffer out = MakeBuffer("out", DataType::kFloat32, {4, 8});
  Buffer tmp = MakeBuffer("tmp", DataType::kFloat32, {4, 8});
  Var i = MakeVar("i"), j = MakeVar("j"), vi = MakeVar("vi"), vj = MakeVar("vj");
  Var i2 = MakeVar("i2"), j2 = MakeVar("j2"), wi = MakeVar("wi"), wj = MakeVar("wj");
  Stmt produce = MakeBlock("produce", {{vi, 4, kSpatial, i}, {vj, 8, kSpatial, j}},
                           ir::MakeStore(tmp, {vi, vj}, ir::Load(a, {vi, vj}) * F(2)));
  // The consumer reads a neighbour (j + 1 wrapped) so it needs the whole intermediate.
  Stmt consume = MakeBlock(
      "consume", {{wi, 4, kSpatial, i2}, {wj, 8, kSpatial, j2}},
      ir::MakeStore(out, {wi, wj},
                    ir::Load(tmp, {wi, ir::FloorMod(wj + 1, 8)}) + ir::Load(tmp, {wi, wj})));
  Stmt body =
      ir::MakeSeq({Loop(i, 4, Loop(j, 8, produce, ForKind::kVectorized)),
                   Loop(i2, 4, Loop(j2, 8, consume, ForKind::kVectorized), ForKind::kParallel)});
  ExpectMatchesReference(Kernel("two_blocks", {a, out}, Root(body, {tmp})));
}

// out[vi] = a[vi] * 2 + 1 for vi = outer * inner_extent + inner < 10, with a predicate.
KernelFunction PredicatedSplit(int64_t outer_extent, int64_t inner_extent, ForKind inner_kind) {
  Buffer a = MakeBuffer("a", DataType::kFloat32, {10});
  Buffer out = MakeBuffer("out", DataType::kFloat32, {12});  // 10, 11 must stay untouched
  Var o = MakeVar("o"), in = MakeVar("in"), vi = MakeVar("vi");
  Expr index = o * inner_extent + in;
  Stmt block =
      MakeBlock("scale", {{vi, 10, kSpatial, index}},
                ir::MakeStore(out, {vi}, ir::Load(a, {vi}) * F(2) + F(1)), nullptr, {}, index < 10);
  return Kernel("predicated", {a, out},
                Root(Loop(o, outer_extent, Loop(in, inner_extent, block, inner_kind))));
}

TEST(Codegen, BlockPredicate) {
  ExpectMatchesReference(PredicatedSplit(4, 3, ForKind::kSerial));
  ExpectMatchesReference(PredicatedSplit(4, 3, ForKind::kVectorized));
  ExpectMatchesReference(PredicatedSplit(3, 4, ForKind::kVectorized));  // masked lanes
  ExpectMatchesReference(PredicatedSplit(1, 12, ForKind::kVectorized));
}

TEST(Codegen, LaneDependentIfThenElse) {
  Buffer a = MakeBuffer("a", DataType::kFloat32, {3, 16});
  Buffer out = MakeBuffer("out", DataType::kFloat32, {3, 16});
  Var i = MakeVar("i"), j = MakeVar("j"), vi = MakeVar("vi"), vj = MakeVar("vj");
  Stmt body = ir::MakeIfThenElse(ir::FloorMod(vj, 3) == 0,
                                 ir::MakeStore(out, {vi, vj}, ir::Load(a, {vi, vj}) + F(10)),
                                 ir::MakeStore(out, {vi, vj}, ir::Load(a, {vi, vj}) * F(-1)));
  Stmt block = MakeBlock("branch", {{vi, 3, kSpatial, i}, {vj, 16, kSpatial, j}}, body);
  for (ForKind kind : {ForKind::kSerial, ForKind::kVectorized}) {
    ExpectMatchesReference(Kernel("branch", {a, out}, Root(Loop(i, 3, Loop(j, 16, block, kind)))));
  }
}

TEST(Codegen, SelectWithLoadsOnlyWhereSelected) {
  // Padding: out[i] = a[i - 1] inside, -7 on the border; a[-1] and a[n] must never be read.
  const int64_t n = 30;
  Buffer a = MakeBuffer("a", DataType::kFloat32, {n});
  Buffer out = MakeBuffer("out", DataType::kFloat32, {n + 2});
  Var i = MakeVar("i"), vi = MakeVar("vi");
  Expr value = ir::Select(vi >= 1 && vi <= n, ir::Load(a, {vi - 1}), F(-7));
  Stmt block = MakeBlock("pad", {{vi, n + 2, kSpatial, i}}, ir::MakeStore(out, {vi}, value));
  for (ForKind kind : {ForKind::kSerial, ForKind::kVectorized}) {
    ExpectMatchesReference(Kernel("pad", {a, out}, Root(Loop(i, n + 2, block, kind))));
  }
  // A select without loads: leaky relu.
  Buffer x = MakeBuffer("x", DataType::kFloat32, {n});
  Buffer y = MakeBuffer("y", DataType::kFloat32, {n});
  Expr load = ir::Load(x, {vi});
  Stmt relu = MakeBlock("relu", {{vi, n, kSpatial, i}},
                        ir::MakeStore(y, {vi}, ir::Select(load > F(0), load, load * F(0.1))));
  for (ForKind kind : {ForKind::kSerial, ForKind::kVectorized}) {
    ExpectMatchesReference(Kernel("leaky_relu", {x, y}, Root(Loop(i, n, relu, kind))));
  }
}

// out[i] = f(g(a[i])) where g maps [-1, 1) into a meaningful domain for f.
KernelFunction Intrinsic(const std::string& name, ForKind kind,
                         DataType dtype = DataType::kFloat32) {
  const int64_t n = 96;
  Buffer a = MakeBuffer("a", dtype, {n});
  Buffer out = MakeBuffer("out", dtype, {n});
  Var i = MakeVar("i"), vi = MakeVar("vi");
  Expr x = ir::Load(a, {vi});
  auto c = [&](double v) { return ir::FloatImm(v, dtype); };
  Expr positive = ir::Call("abs", {x}, dtype) + c(0.25);
  Expr value;
  if (name == "log" || name == "sqrt") {
    value = ir::Call(name, {positive}, dtype);
  } else if (name == "pow") {
    value = ir::Call("pow", {positive, x * c(3)}, dtype);
  } else if (name == "exp") {
    value = ir::Call("exp", {x * c(8)}, dtype);
  } else if (name == "floor" || name == "ceil" || name == "round") {
    value = ir::Call(name, {x * c(5)}, dtype);
  } else {
    value = ir::Call(name, {x * c(6)}, dtype);
  }
  Stmt block = MakeBlock("apply", {{vi, n, kSpatial, i}}, ir::MakeStore(out, {vi}, value));
  return Kernel("intrinsic_" + name, {a, out}, Root(Loop(i, n, block, kind)));
}

TEST(Codegen, EveryIntrinsic) {
  for (const char* name :
       {"exp", "log", "sqrt", "erf", "tanh", "sigmoid", "pow", "abs", "floor", "ceil", "round"}) {
    for (ForKind kind : {ForKind::kSerial, ForKind::kVectorized}) {
      for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
        SCOPED_TRACE(std::string(name) + " " + ir::ToString(kind) + " " + ir::ToString(dtype));
        ExpectMatchesReference(Intrinsic(name, kind, dtype));
      }
    }
  }
}

TEST(Codegen, HalfAndDoublePrecision) {
  for (DataType dtype : {DataType::kFloat16, DataType::kFloat64}) {
    Buffer a = MakeBuffer("a", dtype, {40});
    Buffer b = MakeBuffer("b", dtype, {40});
    Buffer out = MakeBuffer("out", dtype, {40});
    Var i = MakeVar("i"), vi = MakeVar("vi");
    Expr x = ir::Load(a, {vi}), y = ir::Load(b, {vi});
    Expr value = ir::Max(x * y + x, y) -
                 ir::Min(x, y) / (ir::Call("abs", {y}, dtype) + ir::FloatImm(1, dtype));
    Stmt block = MakeBlock("mix", {{vi, 40, kSpatial, i}}, ir::MakeStore(out, {vi}, value));
    for (ForKind kind : {ForKind::kSerial, ForKind::kVectorized}) {
      SCOPED_TRACE(ir::ToString(dtype) + " " + ir::ToString(kind));
      // f16 rounds after every operation; fused multiply-adds may round once less.
      ExpectMatchesReference(Kernel("precision", {a, b, out}, Root(Loop(i, 40, block, kind))), {},
                             dtype == DataType::kFloat16 ? 2e-3 : 1e-12);
    }
  }
}

TEST(Codegen, IntegerArithmeticAndCasts) {
  const int64_t n = 48;
  Buffer a = MakeBuffer("a", DataType::kInt32, {n});
  Buffer b = MakeBuffer("b", DataType::kInt32, {n});
  Buffer x = MakeBuffer("x", DataType::kFloat32, {n});
  Buffer out_int = MakeBuffer("out_int", DataType::kInt32, {n});
  Buffer out_i8 = MakeBuffer("out_i8", DataType::kInt8, {n});
  Buffer out_u8 = MakeBuffer("out_u8", DataType::kUInt8, {n});
  Buffer out_bool = MakeBuffer("out_bool", DataType::kBool, {n});
  Buffer out_f = MakeBuffer("out_f", DataType::kFloat32, {n});
  Buffer out_i64 = MakeBuffer("out_i64", DataType::kInt64, {n});
  Var i = MakeVar("i"), vi = MakeVar("vi");
  Expr va = ir::Load(a, {vi}), vb = ir::Load(b, {vi}), vx = ir::Load(x, {vi});
  auto i32 = [](int64_t v) { return ir::IntImm(v, DataType::kInt32); };
  auto u8 = [](int64_t v) { return ir::IntImm(v, DataType::kUInt8); };
  Expr divisor = ir::Select(vb == i32(0), i32(7), vb);
  Expr int_value = ir::FloorDiv(va, divisor) + ir::FloorMod(va, divisor) * ir::Min(va, vb) -
                   ir::Max(va, i32(3)) + ir::FloorDiv(va, i32(4)) * i32(100) +
                   ir::FloorMod(va, i32(-3)) * i32(1000) + (va / i32(5)) * i32(10000) +
                   ir::FloorDiv(va, i32(-6)) + ir::Call("abs", {va}, DataType::kInt32);
  Expr u8_value = ir::Cast(DataType::kUInt8, va) + u8(200);  // wraps modulo 256
  Expr bool_value = (ir::Cast(DataType::kUInt8, va) < u8(128) && va != vb) || !(va > i32(10));
  Expr float_value =
      ir::Cast(DataType::kFloat32, va) * vx +
      ir::Cast(DataType::kFloat32, ir::Cast(DataType::kBool, vx * ir::FloatImm(2))) +
      ir::Cast(DataType::kFloat32, ir::Cast(DataType::kUInt8, vx * ir::FloatImm(300)));
  // 2^40 and 2^33 (constants exact in f32): beyond the range of i32, within that of i64.
  Expr i64_value =
      ir::Cast(DataType::kInt64, vx * ir::FloatImm(1099511627776.0)) +
      ir::Cast(DataType::kInt64, ir::Cast(DataType::kInt32, vx * ir::FloatImm(8589934592.0)));
  Stmt body = ir::MakeSeq({
      ir::MakeStore(out_int, {vi}, int_value),
      ir::MakeStore(out_i8, {vi}, ir::Cast(DataType::kInt8, va * i32(10))),
      ir::MakeStore(out_u8, {vi}, u8_value),
      ir::MakeStore(out_bool, {vi}, bool_value),
      ir::MakeStore(out_f, {vi}, float_value),
      ir::MakeStore(out_i64, {vi}, i64_value),
  });
  Stmt block = MakeBlock("ints", {{vi, n, kSpatial, i}}, body);
  for (ForKind kind : {ForKind::kSerial, ForKind::kVectorized}) {
    SCOPED_TRACE(ir::ToString(kind));
    KernelFunction kernel =
        Kernel("integers", {a, b, x, out_int, out_i8, out_u8, out_bool, out_f, out_i64},
               Root(Loop(i, n, block, kind)), 6);
    ExpectMatchesReference(kernel, {}, 1e-12);
  }
}

TEST(Codegen, SeveralKernelsInOneModule) {
  KernelFunction add = AddBroadcast(ForKind::kSerial, ForKind::kVectorized);
  KernelFunction matmul = Matmul(4, 4, 4, ForKind::kSerial, ForKind::kSerial);
  auto module = backends::CompileKernels({add, matmul});
  EXPECT_EQ(module->kernel_names(), (std::vector<std::string>{"add_broadcast", "matmul"}));
  EXPECT_NE(module->Lookup("matmul"), nullptr);
  // The raw entry: one pointer per parameter.
  ir::Tensor a = ir::Tensor::Random({{4, 4}, DataType::kFloat32, ""}, 3);
  ir::Tensor b = ir::Tensor::Random({{4, 4}, DataType::kFloat32, ""}, 4);
  ir::Tensor c({4, 4}, DataType::kFloat32);
  void* buffers[] = {a.raw_data(), b.raw_data(), c.raw_data()};
  module->Lookup("matmul")(buffers);
  std::vector<ir::Tensor> expected = backends::RunKernelReference(matmul, {a, b}, true);
  EXPECT_LT(ir::RelativeError(c, expected[0]), 1e-6);
  std::vector<ir::Tensor> outputs = module->Run("matmul", {a, b}, true);
  EXPECT_LT(ir::RelativeError(outputs[0], expected[0]), 1e-6);
}

TEST(Codegen, CompilesFromSeveralThreadsAtOnce) {
  std::vector<std::thread> threads;
  std::vector<double> errors(3, 1.0);
  for (size_t t = 0; t < errors.size(); ++t) {
    threads.emplace_back([&errors, t] {
      KernelFunction kernel =
          Matmul(5 + static_cast<int64_t>(t), 16, 7, ForKind::kParallel, ForKind::kVectorized);
      ir::Tensor a = ir::Tensor::Random({kernel.params[0]->shape, DataType::kFloat32, ""}, t);
      ir::Tensor b = ir::Tensor::Random({kernel.params[1]->shape, DataType::kFloat32, ""}, t + 9);
      std::vector<ir::Tensor> got = backends::CompileKernels({kernel})->Run("matmul", {a, b}, true);
      std::vector<ir::Tensor> want = backends::RunKernelReference(kernel, {a, b}, true);
      errors[t] = ir::RelativeError(got[0], want[0]);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (double error : errors) EXPECT_LT(error, 1e-5);
}

TEST(Codegen, EmitObjectFileWritesElf) {
  std::string path = ::testing::TempDir() + "/tandem_codegen_test.o";
  backends::EmitObjectFile({Matmul(8, 8, 8, ForKind::kParallel, ForKind::kVectorized)}, path);
  std::ifstream file(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 64u);
  EXPECT_EQ(bytes.substr(0, 4), std::string("\x7f"
                                            "ELF"));
  std::remove(path.c_str());
  EXPECT_THROW(backends::EmitObjectFile({Matmul(2, 2, 2, ForKind::kSerial, ForKind::kSerial)},
                                        "/nonexistent-directory/x.o"),
               ir::Error);
}

TEST(Codegen, AssemblyUsesZmmRegistersWhenPreferred) {
  // The code is compiled for the target `host` (which a TANDEM_HOST_TARGET build makes another
  // CPU, one this machine runs).
  if (!backends::TargetHasFeatures(ir::Target{}, "+avx512f")) {
    GTEST_SKIP() << "the host target (" << backends::GetHostCpu().name << ") lacks avx512f";
  }
  Buffer a = MakeBuffer("a", DataType::kFloat32, {64});
  Buffer out = MakeBuffer("out", DataType::kFloat32, {64});
  Var i = MakeVar("i"), j = MakeVar("j"), vi = MakeVar("vi");
  Stmt block = MakeBlock("scale", {{vi, 64, kSpatial, i * 16 + j}},
                         ir::MakeStore(out, {vi}, ir::Load(a, {vi}) * F(1.5)));
  KernelFunction kernel =
      Kernel("scale512", {a, out}, Root(Loop(i, 4, Loop(j, 16, block, ForKind::kVectorized))));
  CodegenOptions options;
  options.prefer_vector_width = 512;
  std::string assembly = backends::EmitAssembly({kernel}, options);
  EXPECT_NE(assembly.find("zmm"), std::string::npos) << assembly;
  ExpectMatchesReference(kernel, options);
  options.prefer_vector_width = 256;
  EXPECT_EQ(backends::EmitAssembly({kernel}, options).find("zmm"), std::string::npos);
}

TEST(Codegen, NamedCpuTargets) {
  CodegenOptions options;
  options.cpu = "x86-64";
  ExpectMatchesReference(Matmul(5, 16, 3, ForKind::kSerial, ForKind::kVectorized), options);
  options.cpu = "skylake-avx512";
  EXPECT_NE(backends::DescribeTarget(options).find("skylake-avx512"), std::string::npos);
  EXPECT_FALSE(
      backends::EmitAssembly({Matmul(4, 16, 4, ForKind::kSerial, ForKind::kVectorized)}, options)
          .empty());
}

TEST(Codegen, VectorUnitsOfNamedCpus) {
  backends::VectorUnit zen4 = backends::TargetVectorUnit("znver4");
  EXPECT_EQ(zen4.f32_lanes, 16);
  EXPECT_EQ(zen4.registers, 32);
  // Zen 4 splits a 512-bit FMA into two 256-bit halves: one per cycle where AVX2 starts two.
  EXPECT_EQ(zen4.core.fma_per_cycle, 1);
  // Narrower vectors than the widest (a target's vector_bits) leave the FMA rate unknown.
  EXPECT_EQ(zen4.CoreAt(16).fma_per_cycle, 1);
  EXPECT_EQ(zen4.CoreAt(8).fma_per_cycle, 0);
  EXPECT_EQ(backends::TargetVectorUnit("sapphirerapids").core.fma_per_cycle, 2);
  EXPECT_EQ(backends::TargetVectorUnit("skylake-avx512").core.fma_per_cycle, 2);
  backends::VectorUnit avx2 = backends::TargetVectorUnit("x86-64-v3");
  EXPECT_EQ(avx2.f32_lanes, 8);
  EXPECT_EQ(avx2.core.fma_per_cycle, 2);
  // The caches are known for the host only: a named CPU's are left unknown.
  EXPECT_EQ(zen4.core.l1_data_ways, 0);
  EXPECT_EQ(avx2.core.l1_data_bytes, 0);
  EXPECT_EQ(zen4.core.l2_bytes, 0);
  backends::VectorUnit host = backends::TargetVectorUnit("host");
  EXPECT_GE(host.core.l1_data_ways, 0);
  if (host.core.l1_data_ways > 0) EXPECT_GE(host.core.l1_data_bytes, 16 << 10);
  // Where sysfs describes the host's L2, it is larger than its L1 and has ways.
  if (host.core.l2_bytes > 0) {
    EXPECT_GT(host.core.l2_ways, 0);
    if (host.core.l1_data_bytes > 0) EXPECT_GT(host.core.l2_bytes, host.core.l1_data_bytes);
  }
}

// The message of the Error `fn` throws (empty when it does not throw).
template <typename Fn>
std::string ErrorOf(Fn fn) {
  try {
    fn();
  } catch (const ir::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Codegen, ErrorsNameTheKernelAndNeverCrash) {
  Buffer a = MakeBuffer("a", DataType::kFloat32, {4});
  Buffer out = MakeBuffer("out", DataType::kFloat32, {4});
  Var i = MakeVar("i"), vi = MakeVar("vi");
  auto with_value = [&](const std::string& name, Expr value) {
    Stmt block = MakeBlock("b", {{vi, 4, kSpatial, i}}, ir::MakeStore(out, {vi}, value));
    return Kernel(name, {a, out}, Root(Loop(i, 4, block)));
  };
  std::string message = ErrorOf([&] {
    backends::CompileKernels(
        {with_value("bad_call", ir::Call("gelu", {ir::Load(a, {vi})}, DataType::kFloat32))});
  });
  EXPECT_NE(message.find("bad_call"), std::string::npos) << message;
  EXPECT_NE(message.find("gelu"), std::string::npos) << message;

  Var stray = MakeVar("stray");
  message =
      ErrorOf([&] { backends::CompileKernels({with_value("unbound", ir::Load(a, {stray}))}); });
  EXPECT_NE(message.find("unbound"), std::string::npos) << message;
  EXPECT_NE(message.find("stray"), std::string::npos) << message;

  Buffer unknown = MakeBuffer("mystery", DataType::kFloat32, {4});
  message = ErrorOf(
      [&] { backends::CompileKernels({with_value("unknown_buffer", ir::Load(unknown, {vi}))}); });
  EXPECT_NE(message.find("unknown_buffer"), std::string::npos) << message;
  EXPECT_NE(message.find("mystery"), std::string::npos) << message;

  message = ErrorOf([&] {
    backends::CompileKernels(
        {with_value("arity", ir::Call("pow", {ir::Load(a, {vi})}, DataType::kFloat32))});
  });
  EXPECT_NE(message.find("pow"), std::string::npos) << message;

  KernelFunction good = with_value("good", ir::Load(a, {vi}));
  EXPECT_THROW(backends::CompileKernels({good, good}), ir::Error);
  CodegenOptions options;
  options.cpu = "not-a-cpu";
  EXPECT_NE(ErrorOf([&] { backends::CompileKernels({good}, options); }).find("not-a-cpu"),
            std::string::npos);
  options = {};
  options.features = "+no-such-feature";
  EXPECT_THROW(backends::CompileKernels({good}, options), ir::Error);
  options = {};
  options.prefer_vector_width = 384;
  EXPECT_THROW(backends::CompileKernels({good}, options), ir::Error);
  options = {};
  options.opt_level = 7;
  EXPECT_THROW(backends::CompileKernels({good}, options), ir::Error);
}

TEST(Codegen, RunChecksArguments) {
  KernelFunction matmul = Matmul(4, 4, 4, ForKind::kSerial, ForKind::kSerial);
  auto module = backends::CompileKernels({matmul});
  ir::Tensor x({4, 4}, DataType::kFloat32), y({4, 4}, DataType::kFloat32);
  ir::Tensor z({4, 4}, DataType::kFloat32), wrong({4, 5}, DataType::kFloat32);
  EXPECT_THROW(module->Lookup("missing"), ir::Error);
  EXPECT_THROW(module->Run("missing", {x, y, z}), ir::Error);
  EXPECT_THROW(module->Run("matmul", {x, y}), ir::Error);
  EXPECT_THROW(module->Run("matmul", {x, y, wrong}), ir::Error);
  EXPECT_THROW(module->Run("matmul", {x, y, ir::Tensor({4, 4}, DataType::kFloat64)}), ir::Error);
  EXPECT_THROW(module->Run("matmul", {x, y, x}), ir::Error);  // output aliases an input
  EXPECT_NO_THROW(module->Run("matmul", {x, x, z}));          // inputs may alias each other
}

}  // namespace
}  // namespace tandem
