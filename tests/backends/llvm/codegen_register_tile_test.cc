// Properties of the code generated for register-tiled schedules (what makes them fast), each
// checked on the LLVM IR or the assembly, plus the results against the reference interpreter:
//   - a "local" accumulator tile staged by cache_write is compacted to the tile and promoted to
//     registers (no accumulator loads or stores in the reduction loop, fma instructions);
//   - explicit 16-lane vectors stay 512 bits wide where the target prefers 256;
//   - small-stride vector loads are a span load and a shuffle, not a gather;
//   - vectorized loops of odd widths become power-of-two pieces;
//   - floordiv/floormod of a vectorized index by a tile size (packed layouts) stay contiguous.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>

#include "backends/llvm/codegen.h"
#include "ir/kernel/kernel_printer.h"
#include "ir/op_registry.h"
#include "kernels/compute/lower.h"
#include "kernels/default_schedule.h"
#include "kernels/schedule/schedule.h"
#include "tests/backends/kernel_test_util.h"
#include "tests/backends/llvm/register_tiled_matmul.h"

namespace tandem {
namespace {

using ir::Buffer;
using ir::DataType;
using ir::Expr;
using ir::ForKind;
using ir::IterKind;
using ir::KernelFunction;
using ir::Var;
using kernels::BlockRV;
using kernels::LoopRV;
using kernels::Schedule;
using testing::Count;
using testing::ExpectMatchesReference;
using testing::F32;
using testing::RegisterTiledMatmul;

bool HostHasAvx512() {
  return backends::DescribeTarget().find("+avx512f") != std::string::npos;
}

// The body of the innermost loop (label .. backward branch to it, no label inside) of
// `assembly` with the most fma instructions.
std::string HottestLoop(const std::string& assembly) {
  std::vector<std::string> lines;
  std::istringstream stream(assembly);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  std::string best;
  size_t best_fmas = 0;
  std::regex label(R"(^(\.LBB[0-9_]+):)");
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_search(lines[i], m, label)) continue;
    std::string name = m[1];
    for (size_t j = i + 1; j < lines.size(); ++j) {
      if (lines[j].find('j') != std::string::npos &&
          lines[j].find("\t" + name) != std::string::npos &&
          lines[j].find(name + "_") == std::string::npos) {
        std::string body;
        size_t fmas = 0;
        bool nested = false;  // an inner loop: only innermost loops count
        for (size_t k = i + 1; k < j; ++k) nested = nested || std::regex_search(lines[k], label);
        if (nested) break;
        for (size_t k = i; k <= j; ++k) {
          body += lines[k] + "\n";
          fmas += lines[k].find("vfmadd") != std::string::npos;
        }
        if (fmas > best_fmas) {
          best_fmas = fmas;
          best = body;
        }
        break;
      }
    }
  }
  return best;
}

// Stores to memory in an AT&T assembly body: a vector move whose last operand is an address.
size_t VectorStores(const std::string& body) {
  std::regex store(R"(\tvmov\w+\s+%[xyz]mm\d+, [^%\n]*\()");
  return static_cast<size_t>(
      std::distance(std::sregex_iterator(body.begin(), body.end(), store), std::sregex_iterator()));
}

TEST(CodegenRegisterTile, MatmulAccumulatorsStayInRegisters) {
  KernelFunction kernel = RegisterTiledMatmul(32, 128, 64);
  ExpectMatchesReference(kernel);
  std::string ir = backends::EmitLlvmIr({kernel});
  // The full-shape local buffer is gone: no heap block, no stack array left (only the
  // closure of the parallel loop is an alloca).
  EXPECT_EQ(Count(ir, "aligned_alloc"), 0u);
  EXPECT_EQ(Count(ir, "alloca ["), 0u) << ir;
  if (!HostHasAvx512()) GTEST_SKIP() << "the assembly checks assume AVX-512";
  std::string loop = HottestLoop(backends::EmitAssembly({kernel}));
  ASSERT_FALSE(loop.empty());
  EXPECT_EQ(Count(loop, "vfmadd"), 16u) << loop;  // 4 rows x 4 vectors of 16 lanes
  EXPECT_EQ(VectorStores(loop), 0u) << loop;      // no accumulator stores in the k loop
  EXPECT_GE(Count(loop, "zmm"), 16u) << loop;     // 512-bit vectors
}

TEST(CodegenRegisterTile, TailTilesStayInRegisters) {
  // 40 columns in a 64-column tile: the last lanes are masked off by the split's predicate.
  // The accumulators (a stack array) are read and blended whole, the weights (uniform under
  // the mask) loaded once, so neither masked stack accesses nor gathers remain.
  KernelFunction kernel = RegisterTiledMatmul(8, 40, 32);
  ExpectMatchesReference(kernel);
  std::string ir = backends::EmitLlvmIr({kernel});
  EXPECT_EQ(Count(ir, "alloca ["), 0u) << ir;
  EXPECT_EQ(Count(ir, "llvm.masked.gather"), 0u) << ir;
}

TEST(CodegenRegisterTile, DefaultScheduleOfMatmulKeepsItsTileInRegisters) {
  KernelFunction kernel =
      kernels::LowerOpCall("mm", "matmul", {}, {F32({64, 96}), F32({96, 128})}, F32({64, 128}));
  Schedule s = kernels::ApplyDefaultSchedule(
      kernel, kernels::DefaultScheduleOptions{.parallel_min_work = 64, .num_threads = 2});
  ExpectMatchesReference(s.function());
  if (!HostHasAvx512()) GTEST_SKIP() << "the assembly checks assume AVX-512";
  std::string loop = HottestLoop(backends::EmitAssembly({s.function()}));
  EXPECT_GE(Count(loop, "vfmadd"), 8u) << s.trace().ToText() << loop;
  EXPECT_EQ(VectorStores(loop), 0u) << loop;
}

TEST(CodegenRegisterTile, ExplicitVectorsKeepTheirWidthOnTargetsPreferring256Bits) {
  if (!HostHasAvx512()) GTEST_SKIP() << "needs AVX-512";
  // skylake-avx512 prefers 256-bit vectors for LLVM's own vectorizers.
  backends::CodegenOptions options;
  options.cpu = "skylake-avx512";
  KernelFunction kernel = RegisterTiledMatmul(16, 64, 32);
  std::string assembly = backends::EmitAssembly({kernel}, options);
  EXPECT_GT(Count(assembly, "zmm"), 0u);
  // An explicit preference still caps them.
  options.prefer_vector_width = 256;
  assembly = backends::EmitAssembly({kernel}, options);
  EXPECT_EQ(Count(assembly, "zmm"), 0u);
  EXPECT_GT(Count(assembly, "ymm"), 0u);
}

TEST(CodegenRegisterTile, OverlappingTilesAreNotCompacted) {
  // t[i + 1] = t[i] + x[i] under a loop over i: the element read in iteration i was written
  // in iteration i - 1, so the buffer must keep its values across iterations.
  Buffer x = ir::MakeBuffer("x", DataType::kFloat32, {16});
  Buffer out = ir::MakeBuffer("out", DataType::kFloat32, {16});
  Buffer t = ir::MakeBuffer("t", DataType::kFloat32, {17}, "local");
  Var i = ir::MakeVar("i"), vi = ir::MakeVar("vi"), j = ir::MakeVar("j"), vj = ir::MakeVar("vj");
  ir::Stmt step =
      testing::MakeBlock("step", {{vi, 16, IterKind::kSpatial, i}},
                         ir::MakeStore(t, {vi + 1}, ir::Load(t, {vi}) + ir::Load(x, {vi})));
  ir::Stmt copy = testing::MakeBlock("copy", {{vj, 16, IterKind::kSpatial, j}},
                                     ir::MakeStore(out, {vj}, ir::Load(t, {vj + 1})));
  KernelFunction kernel = testing::Kernel(
      "prefix", {x, out},
      testing::Root(ir::MakeSeq({testing::Loop(i, 16, step), testing::Loop(j, 16, copy)}), {t}));
  ExpectMatchesReference(kernel);
  // The same accumulation with each iteration's pair of elements moving by one (tiles of 2
  // that overlap): still one buffer, results still right.
  ir::Stmt pair = testing::MakeBlock(
      "pair", {{vi, 16, IterKind::kSpatial, i}},
      ir::MakeSeq({ir::MakeStore(t, {vi + 1}, ir::Load(t, {vi}) + ir::Load(x, {vi})),
                   ir::MakeStore(out, {vi}, ir::Load(t, {vi + 1}))}));
  kernel = testing::Kernel("pairs", {x, out}, testing::Root(testing::Loop(i, 16, pair), {t}));
  ExpectMatchesReference(kernel);
}

TEST(CodegenRegisterTile, StridedLoadsAreSpanLoadsNotGathers) {
  // out[i] = x[2 * i] + x[2 * i + 1], vectorized by 16, with and without a lane mask.
  Buffer x = ir::MakeBuffer("x", DataType::kFloat32, {64});
  Buffer out = ir::MakeBuffer("out", DataType::kFloat32, {32});
  Var i = ir::MakeVar("i"), vi = ir::MakeVar("vi");
  for (bool masked : {false, true}) {
    Expr value = ir::Load(x, {vi * 2}) + ir::Load(x, {vi * 2 + 1});
    ir::Stmt store = masked ? ir::MakeIfThenElse(vi < 27, ir::MakeStore(out, {vi}, value))
                            : ir::MakeStore(out, {vi}, value);
    ir::Stmt block = testing::MakeBlock("pairs", {{vi, 32, IterKind::kSpatial, i}}, store);
    KernelFunction kernel = testing::Kernel(
        "pairs", {x, out}, testing::Root(testing::Loop(i, 32, block, ForKind::kVectorized)));
    SCOPED_TRACE(masked ? "masked" : "unmasked");
    ExpectMatchesReference(kernel);
    std::string ir = backends::EmitLlvmIr({kernel});
    EXPECT_EQ(Count(ir, "llvm.masked.gather"), 0u) << ir;
    EXPECT_GT(Count(ir, "llvm.masked.load"), 0u) << ir;
  }
  // The last lane's span ends at the last element of the buffer: nothing past it is read
  // (the mask), so a buffer ending at a page boundary is safe; the result is checked above.
}

TEST(CodegenRegisterTile, OddVectorWidthsArePowerOfTwoPieces) {
  Buffer a = ir::MakeBuffer("a", DataType::kFloat32, {3, 56});
  Buffer out = ir::MakeBuffer("out", DataType::kFloat32, {3, 56});
  Var i = ir::MakeVar("i"), j = ir::MakeVar("j"), vi = ir::MakeVar("vi"), vj = ir::MakeVar("vj");
  ir::Stmt block =
      testing::MakeBlock("scale", {{vi, 3, IterKind::kSpatial, i}, {vj, 56, IterKind::kSpatial, j}},
                         ir::MakeStore(out, {vi, vj}, ir::Load(a, {vi, vj}) * ir::FloatImm(3.0)));
  KernelFunction kernel = testing::Kernel(
      "scale", {a, out},
      testing::Root(testing::Loop(i, 3, testing::Loop(j, 56, block, ForKind::kVectorized))));
  ExpectMatchesReference(kernel);
  std::string ir = backends::EmitLlvmIr({kernel}, backends::CodegenOptions{.opt_level = 0});
  EXPECT_EQ(Count(ir, "<56 x float>"), 0u);
  EXPECT_GT(Count(ir, "<32 x float>"), 0u);
  EXPECT_GT(Count(ir, "<16 x float>"), 0u);
  EXPECT_GT(Count(ir, "<8 x float>"), 0u);
}

TEST(CodegenRegisterTile, PackedPanelIndicesStayContiguous) {
  // The default schedule packs B of a 1024-wide matmul with a 128-row panel (more lines than
  // the 16 L2 sets its rows map to keep) into [j / 64, k, j % 64] panels; the packing copy and
  // the matmul index it with floordiv/floormod of vectorized indices.
  KernelFunction kernel =
      kernels::LowerOpCall("mm", "matmul", {}, {F32({8, 128}), F32({128, 1024})}, F32({8, 1024}));
  Schedule s = kernels::ApplyDefaultSchedule(
      kernel, kernels::DefaultScheduleOptions{.parallel_min_work = 64, .num_threads = 2});
  ASSERT_NE(s.trace().ToText().find("transform_layout"), std::string::npos) << s.trace().ToText();
  ExpectMatchesReference(s.function());
  std::string ir = backends::EmitLlvmIr({s.function()});
  EXPECT_EQ(Count(ir, "llvm.masked.scatter"), 0u) << ir;
  EXPECT_EQ(Count(ir, "llvm.masked.gather"), 0u) << ir;
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

// BERT's 128-row GEMMs on AVX2: the 12-accumulator 6x16 tile does not divide the rows, so the
// split guards its blocks; RelaxLocalPredicates drops the guards of the blocks that only write
// the local tile (init and update), pads the tile's buffer and clamps the row index of the
// input, and the write-back keeps its guard.
TEST(CodegenRegisterTile, PaddedRowTilesKeepNoGuardInTheReductionLoop) {
  KernelFunction kernel =
      kernels::LowerOpCall("mm", "matmul", {}, {F32({128, 64}), F32({64, 48})}, F32({128, 48}));
  Schedule s = kernels::ApplyDefaultSchedule(
      kernel,
      kernels::DefaultScheduleOptions{
          .vector_lanes = 8, .vector_registers = 16, .parallel_min_work = 64, .num_threads = 2});
  std::string scheduled = ir::PrintKernel(s.function());
  ASSERT_NE(scheduled.find("in 6 unrolled"), std::string::npos) << scheduled;
  ASSERT_NE(scheduled.find(" < 128"), std::string::npos) << scheduled;

  ir::KernelFunction relaxed = backends::RelaxLocalPredicates(s.function());
  std::string text = ir::PrintKernel(relaxed);
  EXPECT_NE(text.find("f32[132,48] local"), std::string::npos) << text;  // 22 tiles of 6 rows
  EXPECT_NE(text.find(", 127)"), std::string::npos) << text;             // clamped input row
  size_t guards = 0;
  for (size_t at = text.find(" where "); at != std::string::npos;
       at = text.find(" where ", at + 1)) {
    ++guards;
  }
  EXPECT_EQ(guards, 1u) << text;  // the write-back only
  ExpectMatchesReference(s.function());
  ExpectMatchesReference(relaxed);
  std::string loop = HottestLoop(backends::EmitAssembly({s.function()}));
  EXPECT_GE(Count(loop, "vfmadd"), 6u) << loop;
  EXPECT_EQ(VectorStores(loop), 0u) << loop;
}

// A guard that other instances of the block depend on stays: here the local buffer is indexed
// by `i + 1` (not the iterator itself), so an out-of-range instance could land on a valid
// position.
TEST(CodegenRegisterTile, GuardsOfShiftedLocalAccessesStay) {
  Buffer x = ir::MakeBuffer("x", DataType::kFloat32, {10});
  Buffer out = ir::MakeBuffer("out", DataType::kFloat32, {10});
  Buffer t = ir::MakeBuffer("t", DataType::kFloat32, {11}, "local");
  Var io = ir::MakeVar("io"), ii = ir::MakeVar("ii"), vi = ir::MakeVar("vi"),
      wi = ir::MakeVar("wi");
  Expr i = io * 4 + ii;
  ir::Stmt fill = testing::MakeBlock(
      "fill", {{vi, 10, IterKind::kSpatial, i}},
      ir::MakeStore(t, {vi + 1}, ir::Load(x, {vi}) * ir::FloatImm(2.0)), nullptr, {}, i < 10);
  ir::Stmt copy =
      testing::MakeBlock("copy", {{wi, 10, IterKind::kSpatial, i}},
                         ir::MakeStore(out, {wi}, ir::Load(t, {wi + 1})), nullptr, {}, i < 10);
  KernelFunction kernel = testing::Kernel(
      "shifted", {x, out},
      testing::Root(testing::Loop(io, 3, testing::Loop(ii, 4, ir::MakeSeq({fill, copy}))), {t}));
  KernelFunction relaxed = backends::RelaxLocalPredicates(kernel);
  EXPECT_EQ(ir::PrintKernel(relaxed), ir::PrintKernel(kernel));
  ExpectMatchesReference(kernel);
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

// packed_matmul's b[j / 16, k, j % 16] read by 8-lane vectors of a 16-column tile (the AVX2 6x16
// tile): the second vector starts at j = 16 t + 8, in the middle of a panel, and still loads
// contiguously (codegen: floordiv/floormod of an index whose lanes stay inside one panel).
TEST(CodegenRegisterTile, HalfPanelVectorsOfAPackedOperandStayContiguous) {
  KernelFunction kernel = kernels::LowerOpCall("pmm", "packed_matmul", {},
                                               {F32({6, 16}), F32({4, 16, 16})}, F32({6, 64}));
  Schedule s(kernel);
  BlockRV block = s.GetBlock("matmul");
  std::vector<LoopRV> loops = s.GetLoops(block);
  std::vector<LoopRV> j = s.Split(loops[1], {-1, 2, 8});
  s.Reorder({j[0], loops[0], loops[2], j[1], j[2]});
  s.Unroll(j[1]);
  s.Vectorize(j[2]);
  ExpectMatchesReference(s.function());
  std::string ir = backends::EmitLlvmIr({s.function()});
  EXPECT_EQ(Count(ir, "llvm.masked.gather"), 0u) << ir;
  EXPECT_GT(Count(ir, "<8 x float>"), 0u);
}

// The default schedule of a packed_matmul on AVX2: a register tile (accumulators in a "local"
// buffer) whose vector tile stays inside the 16-wide panels (no gathers), results equal to the
// reference.
TEST(CodegenRegisterTile, DefaultScheduleOfAPackedMatmulKeepsVectorsInsidePanels) {
  KernelFunction kernel = kernels::LowerOpCall("pmm", "packed_matmul", {},
                                               {F32({24, 32}), F32({4, 32, 16})}, F32({24, 64}));
  Schedule s = kernels::ApplyDefaultSchedule(
      kernel,
      kernels::DefaultScheduleOptions{
          .vector_lanes = 8, .vector_registers = 16, .parallel_min_work = 64, .num_threads = 2});
  ExpectMatchesReference(s.function());
  std::string ir = backends::EmitLlvmIr({s.function()});
  EXPECT_EQ(Count(ir, "llvm.masked.gather"), 0u) << ir;
  std::string scheduled = ir::PrintKernel(s.function());
  EXPECT_NE(scheduled.find(" local)"), std::string::npos) << scheduled;
  EXPECT_NE(scheduled.find("in 16 vectorized"), std::string::npos) << scheduled;  // one panel
}

}  // namespace
}  // namespace tandem
