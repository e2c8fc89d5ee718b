// The kernel design space (kernels/search): design spaces of typical kernels, programs sampled
// from them computing what the unscheduled kernel computes (interpreted and compiled through
// LLVM), traces that serialize and replay, mutators that change one decision, the SSRSRS
// structure of a tiled matmul, and rules that can be added by users.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>

#include "backends/llvm/codegen.h"
#include "backends/reference/kernel_interpreter.h"
#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_printer.h"
#include "ir/kernel/kernel_structural.h"
#include "kernels/compute/lower.h"
#include "kernels/default_schedule.h"
#include "kernels/default_schedule/register_tiling.h"
#include "kernels/schedule/tree_util.h"
#include "kernels/search/search_space.h"
#include "kernels/search/search_util.h"
#include "tests/common/op_cases.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem::kernels {
namespace {

using testing::F32;
using testing::LowerOp;

struct Workload {
  std::string label;
  ir::KernelFunction kernel;
  int samples = 50;
};

ir::KernelFunction ElementwiseChain() {
  ir::GraphBuilder b("chain");
  ir::ValueId x = b.Input("x", F32({16, 48}));
  ir::ValueId bias = b.Input("bias", F32({48}));
  ir::ValueId e = b.Call("exp", {x});
  ir::ValueId t = b.Call("tanh", {e});
  ir::ValueId a = b.Call("add", {t, bias});
  ir::ValueId r = b.Call("relu", {a});
  return LowerGraphFunction(b.Finish(r), "chain");
}

std::vector<Workload> Workloads() {
  std::vector<int64_t> pad1{1, 1, 1, 1};
  return {
      {"matmul", testing::Matmul(64, 96, 128), 50},
      {"conv_bias_relu", testing::ConvBiasRelu(8, 16, 10), 50},
      {"depthwise_conv",
       LowerOp("conv2d", {F32({1, 16, 12, 12}), F32({16, 1, 3, 3})},
               ir::Attrs{{"padding", pad1}, {"groups", int64_t{16}}}),
       50},
      {"softmax", LowerOp("softmax", {F32({4, 64})}), 50},
      {"layer_norm", LowerOp("layer_norm", {F32({8, 64}), F32({64}), F32({64})}), 50},
      {"max_pool",
       LowerOp("max_pool2d", {F32({1, 8, 16, 16})},
               ir::Attrs{{"pool_size", std::vector<int64_t>{3, 3}},
                         {"strides", std::vector<int64_t>{2, 2}},
                         {"padding", pad1}}),
       50},
      {"elementwise_chain", ElementwiseChain(), 50},
  };
}

SearchSpace Space() {
  return DefaultCpuSearchSpace(SearchTarget{});
}

std::vector<ir::Tensor> Inputs(const ir::KernelFunction& kernel) {
  return testing::RandomArgs(kernel, 11);
}

// Programs drawn round-robin from the design spaces; at most a quarter may be rejected.
std::vector<Schedule> Sample(const ir::KernelFunction& kernel, const SearchSpace& space, int count,
                             uint64_t seed) {
  std::vector<Schedule> spaces = GenerateDesignSpaces(kernel, space, seed);
  EXPECT_FALSE(spaces.empty());
  RandomState random(seed);
  std::vector<Schedule> programs;
  int attempts = 0;
  while (static_cast<int>(programs.size()) < count && attempts < count * 4 / 3 + 4) {
    const Schedule& design = spaces[static_cast<size_t>(attempts) % spaces.size()];
    ++attempts;
    if (auto program = SampleProgram(kernel, design.trace(), space, random)) {
      programs.push_back(*program);
    }
  }
  EXPECT_EQ(static_cast<int>(programs.size()), count) << kernel.name << ": too many rejected";
  return programs;
}

// Compiles the programs (in one module) and expects each to compute `want` from `inputs`:
// all of them without LLVM optimizations (fast to compile), the first `optimized` also with
// the default optimization level.
void ExpectCompiledMatch(const std::vector<ir::KernelFunction>& programs,
                         const std::vector<ir::Tensor>& inputs, const std::vector<ir::Tensor>& want,
                         const std::string& label, size_t optimized = 3) {
  for (bool fast : {true, false}) {
    std::vector<ir::KernelFunction> renamed;
    for (size_t i = 0; i < programs.size() && (fast || i < optimized); ++i) {
      renamed.push_back(programs[i]);
      renamed.back().name = label + "_" + std::to_string(i);
    }
    if (renamed.empty()) continue;
    backends::CodegenOptions options;
    if (fast) options.opt_level = 0;
    std::unique_ptr<backends::CompiledModule> module = backends::CompileKernels(renamed, options);
    for (size_t i = 0; i < renamed.size(); ++i) {
      std::vector<ir::Tensor> got = module->Run(renamed[i].name, inputs, true);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        EXPECT_LT(ir::RelativeError(got[k], want[k]), 1e-4)
            << label << " program " << i << " (opt level " << options.opt_level << "):\n"
            << ir::PrintKernel(programs[i]);
      }
    }
  }
}

// ExpectCompiledMatch of one program against the unscheduled kernel.
void ExpectComputesKernel(const ir::KernelFunction& kernel, const ir::KernelFunction& program) {
  std::vector<ir::Tensor> inputs = testing::RandomArgs(kernel, 3);
  ExpectCompiledMatch({program}, inputs, backends::RunKernelReference(kernel, inputs, true),
                      kernel.name, 1);
}

class SampledPrograms : public ::testing::TestWithParam<size_t> {};

TEST_P(SampledPrograms, ComputeTheReferenceAndReplayFromJson) {
  Workload w = Workloads()[GetParam()];
  SCOPED_TRACE(w.label);
  SearchSpace space = Space();
  std::vector<Schedule> programs = Sample(w.kernel, space, w.samples, 1);
  std::vector<ir::Tensor> inputs = Inputs(w.kernel);
  std::vector<ir::Tensor> want = backends::RunKernelReference(w.kernel, inputs, true);
  std::vector<ir::KernelFunction> functions;
  std::set<uint64_t> distinct;
  for (size_t i = 0; i < programs.size(); ++i) {
    const Schedule& p = programs[i];
    functions.push_back(p.function());
    distinct.insert(ir::StructuralHash(p.function()));
    // The trace survives JSON and replays to the same program.
    ir::Trace parsed = ir::Trace::FromJson(p.trace().ToJson());
    ASSERT_EQ(parsed, p.trace());
    std::optional<Schedule> replayed = ReplayProgram(w.kernel, parsed, space);
    ASSERT_TRUE(replayed.has_value()) << p.trace().ToText();
    EXPECT_EQ(ir::StructuralDiff(replayed->function(), p.function()), "");
    EXPECT_EQ(replayed->trace(), p.trace());
    // One through the interpreter (bounds-checked), all through LLVM below.
    if (i == 0) {
      std::vector<ir::Tensor> got = backends::RunKernelReference(p.function(), inputs, true);
      EXPECT_LT(ir::RelativeError(got[0], want[0]), 1e-4) << ir::PrintKernel(p.function());
    }
  }
  EXPECT_GT(distinct.size(), programs.size() / 4) << "the samples hardly differ";
  ExpectCompiledMatch(functions, inputs, want, w.label);
}

INSTANTIATE_TEST_SUITE_P(Workloads, SampledPrograms,
                         ::testing::Range(size_t{0}, Workloads().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return Workloads()[info.param].label;
                         });

// Every op of the shared case table: programs sampled from each design space compute what the
// unscheduled kernel computes (interpreted, so that an out-of-bounds access is an error).
TEST(OpCases, SampledProgramsKeepTheirResults) {
  SearchSpace space = Space();
  int programs = 0;
  struct Compiled {
    ir::KernelFunction program;
    std::vector<ir::Tensor> inputs, want;
    std::string label;
  };
  std::vector<Compiled> compiled;
  for (const tandem::testing::Case& c : tandem::testing::AllCases()) {
    SCOPED_TRACE(c.op + "/" + c.label);
    ir::GraphFunction function = tandem::testing::BuildCall(c);
    const ir::Node& call = function.node(function.Find("result"));
    ir::KernelFunction kernel = LowerOpCall("kernel", c.op, call.attrs, c.inputs, call.type);
    std::vector<ir::Tensor> inputs = tandem::testing::CaseInputs(c, 7);
    std::vector<ir::Tensor> want = backends::RunKernelReference(kernel, inputs, true);
    std::vector<Schedule> spaces = GenerateDesignSpaces(kernel, space, 3);
    RandomState random(4);
    for (size_t i = 0; i < std::max<size_t>(2, spaces.size()); ++i) {
      std::optional<Schedule> p =
          SampleProgram(kernel, spaces[i % spaces.size()].trace(), space, random);
      if (!p) continue;
      ++programs;
      std::vector<ir::Tensor> got = backends::RunKernelReference(p->function(), inputs, true);
      for (size_t k = 0; k < want.size(); ++k) {
        EXPECT_LE(ir::RelativeError(got[k], want[k]), 1e-4) << p->trace().ToText();
      }
      compiled.push_back({p->function(), inputs, want, c.op + "/" + c.label});
      compiled.back().program.name = "case" + std::to_string(compiled.size());
    }
  }
  EXPECT_GT(programs, 100);
  // And through LLVM (one module, unoptimized to keep it quick).
  std::vector<ir::KernelFunction> functions;
  for (const Compiled& c : compiled) functions.push_back(c.program);
  std::unique_ptr<backends::CompiledModule> module =
      backends::CompileKernels(functions, backends::CodegenOptions{.opt_level = 0});
  for (const Compiled& c : compiled) {
    std::vector<ir::Tensor> got = module->Run(c.program.name, c.inputs, true);
    for (size_t k = 0; k < c.want.size(); ++k) {
      EXPECT_LE(ir::RelativeError(got[k], c.want[k]), 1e-4) << c.label << "\n"
                                                            << ir::PrintKernel(c.program);
    }
  }
}

// The trace up to its postprocessing part.
ir::Trace DesignSpaceOf(const ir::Trace& trace) {
  const auto& instructions = trace.instructions();
  for (size_t i = 0; i < instructions.size(); ++i) {
    if (instructions[i].kind == "enter_postproc") return trace.Prefix(i);
  }
  return trace;
}

// The kind and decision of every instruction of the design part.
std::vector<std::pair<std::string, std::optional<ir::AttrValue>>> Decisions(
    const ir::Trace& trace) {
  std::vector<std::pair<std::string, std::optional<ir::AttrValue>>> out;
  ir::Trace design = DesignSpaceOf(trace);
  for (const ir::Instruction& inst : design.instructions()) {
    out.emplace_back(inst.kind, inst.decision);
  }
  return out;
}

// The instructions of `a` and `b` that differ (same length expected).
std::vector<size_t> Differences(const ir::Trace& a, const ir::Trace& b) {
  std::vector<size_t> out;
  EXPECT_EQ(a.size(), b.size());
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (!(a.instructions()[i] == b.instructions()[i])) out.push_back(i);
  }
  return out;
}

TEST(Mutators, ChangeExactlyOneDecisionAndKeepResults) {
  SearchSpace space = Space();
  std::map<std::string, int> mutated_counts;
  for (size_t index : {size_t{0}, size_t{1}, size_t{3}}) {  // matmul, conv_bias_relu, softmax
    Workload w = Workloads()[index];
    SCOPED_TRACE(w.label);
    std::vector<ir::Tensor> inputs = Inputs(w.kernel);
    std::vector<ir::Tensor> want = backends::RunKernelReference(w.kernel, inputs, true);
    RandomState random(5);
    std::vector<ir::KernelFunction> results;
    for (const Schedule& program : Sample(w.kernel, space, 6, 2)) {
      for (const auto& [mutator, probability] : space.mutators) {
        std::optional<ir::Trace> mutated = mutator->Apply(program.trace(), w.kernel, random);
        if (!mutated) continue;
        ++mutated_counts[mutator->name()];
        std::vector<size_t> changed = Differences(program.trace(), *mutated);
        ASSERT_EQ(changed.size(), 1u) << mutator->name();
        ir::Instruction before = program.trace().instructions()[changed[0]];
        ir::Instruction after = mutated->instructions()[changed[0]];
        EXPECT_NE(before.decision, after.decision) << mutator->name();
        before.decision = after.decision;
        EXPECT_EQ(before, after) << mutator->name() << " changed more than the decision";
        if (std::optional<Schedule> replayed = ReplayProgram(w.kernel, *mutated, space)) {
          // The same decisions (handle names may differ: a location that became a loop
          // names one more handle).
          EXPECT_EQ(Decisions(replayed->trace()), Decisions(DesignSpaceOf(*mutated)));
          results.push_back(replayed->function());
        }
      }
    }
    ExpectCompiledMatch(results, inputs, want, w.label + "_mutated", 2);
  }
  for (const char* name :
       {"mutate_tile_size", "mutate_parallel", "mutate_unroll", "mutate_compute_location"}) {
    EXPECT_GT(mutated_counts[name], 0) << name << " never applied";
  }
}

// Forces the decisions of the matmul's design space: i = 2*4*2*4, j = 2*3*2*8, k = 16*8,
// parallel extent 32, no unrolling.
ir::Trace ForcedMatmulTrace(const ir::Trace& design) {
  ir::Trace trace = design;
  std::vector<std::vector<int64_t>> tiles = {{2, 4, 2, 4}, {2, 3, 2, 8}, {16, 8}};
  size_t tile = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    const ir::Instruction& inst = trace.instructions()[i];
    if (inst.kind == "sample_perfect_tile") {
      trace = trace.WithDecision(i, tiles.at(tile++));
    } else if (inst.kind == "sample_categorical") {
      const std::vector<int64_t>& candidates = inst.attrs.GetInts("candidates");
      int64_t wanted = candidates.front() == 0 ? 0 : 32;  // unroll depths start with 0
      auto it = std::find(candidates.begin(), candidates.end(), wanted);
      EXPECT_NE(it, candidates.end());
      trace = trace.WithDecision(i, int64_t{it - candidates.begin()});
    }
  }
  EXPECT_EQ(tile, tiles.size());
  return trace;
}

// The matmul's one design space (seed 3) with its decisions forced (ForcedMatmulTrace).
ir::Trace ForcedMatmulDesign(const ir::KernelFunction& kernel, const SearchSpace& space) {
  std::vector<Schedule> spaces = GenerateDesignSpaces(kernel, space, 3);
  EXPECT_EQ(spaces.size(), 1u);
  return ForcedMatmulTrace(spaces.at(0).trace());
}

std::vector<const ir::ForNode*> LoopsOf(const ir::KernelFunction& fn, const std::string& block) {
  return EnclosingLoops(GetBlockPath(fn, block));
}

TEST(MultiLevelTiling, MatmulGetsTheSsrsrsLoopNest) {
  ir::KernelFunction kernel = testing::Matmul(64, 96, 128);
  SearchSpace space = Space();
  ir::Trace trace = ForcedMatmulDesign(kernel, space);

  // Before postprocessing: S0 S1 R0 S2 R1 S3 with the forced extents, the write-back of the
  // local accumulator under the last S1 loop.
  Schedule tiled = Schedule::Replay(kernel, trace);
  std::vector<const ir::ForNode*> loops = LoopsOf(tiled.function(), "matmul");
  std::vector<int64_t> extents;
  for (const ir::ForNode* loop : loops) extents.push_back(loop->extent);
  EXPECT_EQ(extents, (std::vector<int64_t>{2, 2, 4, 3, 16, 2, 2, 8, 4, 8}));
  const auto* realize =
      ir::As<ir::BlockRealizeNode>(GetBlockPath(tiled.function(), "matmul").target);
  // Which iterator (0: i, 1: j, 2: k) each loop feeds.
  std::vector<int> feeds;
  for (const ir::ForNode* loop : loops) {
    int iterator = -1;
    for (size_t k = 0; k < realize->iter_values.size(); ++k) {
      if (ir::UsesVar(realize->iter_values[k], loop->loop_var)) iterator = static_cast<int>(k);
    }
    feeds.push_back(iterator);
  }
  EXPECT_EQ(feeds, (std::vector<int>{0, 1, 0, 1, 2, 0, 1, 2, 0, 1}));
  EXPECT_EQ(realize->block->writes[0].buffer->scope, "local");
  std::vector<const ir::ForNode*> write_back = LoopsOf(tiled.function(), "output_local");
  ASSERT_GE(write_back.size(), 4u);
  EXPECT_EQ(write_back[3], loops[3]) << "the write-back runs under the last S1 loop";
  EXPECT_EQ(write_back.back()->extent, 16);  // j2 * j3

  // After postprocessing: S0 and the first S1 loop fused into one parallel loop (2*2*4 <= 32,
  // * 3 would exceed it), the S3 loop of j vectorized, the init decomposed.
  std::optional<Schedule> program = ReplayProgram(kernel, trace, space);
  ASSERT_TRUE(program.has_value());
  loops = LoopsOf(program->function(), "matmul");
  ASSERT_EQ(loops.size(), 8u);
  EXPECT_EQ(loops[0]->for_kind, ir::ForKind::kParallel);
  EXPECT_EQ(loops[0]->extent, 16);
  EXPECT_EQ(loops.back()->for_kind, ir::ForKind::kVectorized);
  EXPECT_EQ(loops.back()->extent, 8);
  EXPECT_TRUE(FindBlock(program->function(), "matmul_init").has_value());
  ExpectComputesKernel(kernel, program->function());
}

// The index of the sample_categorical instruction that multi_level_tiling's
// "tandem.panels_outer" annotation takes its value from, if the trace has one.
std::optional<size_t> PanelsOuterDecision(const ir::Trace& trace) {
  std::vector<size_t> decisions = search::CategoricalsAnnotating(trace, search::kPanelsOuterKey);
  if (decisions.size() != 1) return std::nullopt;
  return decisions[0];
}

// The S0 order decision. The parallel loop fuses S0 and the first S1 loop (2 * 2 * 4 = 16
// iterations). In iterator order (i0, j0, i1) the column panel of b (48 KB) changes every 4
// iterations (j0 = floormod(floordiv(loop, 4), 2)); with panels outer (j0, i0, i1) every 8
// (j0 = floordiv(loop, 8)), so each thread's 8 iterations share one panel. rewrite_prefetch
// gives the loop that distance. Both compute the matmul.
TEST(MultiLevelTiling, PanelsOuterDecisionOrdersTheParallelLoopByWeightPanels) {
  ir::KernelFunction kernel = testing::Matmul(64, 96, 128);
  SearchSpace space = Space();
  ir::Trace forced = ForcedMatmulDesign(kernel, space);
  std::optional<size_t> panels = PanelsOuterDecision(forced);
  ASSERT_TRUE(panels.has_value()) << forced.ToText();
  for (int64_t decision : {0, 1}) {
    SCOPED_TRACE(decision);
    std::optional<Schedule> program =
        ReplayProgram(kernel, forced.WithDecision(*panels, decision), space);
    ASSERT_TRUE(program.has_value());
    std::vector<const ir::ForNode*> loops = LoopsOf(program->function(), "matmul");
    ASSERT_EQ(loops[0]->for_kind, ir::ForKind::kParallel);
    EXPECT_EQ(loops[0]->extent, 16);
    EXPECT_EQ(loops[0]->annotations.GetInt(ir::kPrefetchDistanceKey, 0), decision == 1 ? 8 : 4)
        << ir::PrintKernel(program->function());
    ExpectComputesKernel(kernel, program->function());
  }
  // mutate_parallel flips it too (beside the parallel extent, the other decision that shapes the
  // parallel loop).
  MutatorPtr mutate = MakeMutator("mutate_parallel", SearchTarget{});
  RandomState random(3);
  bool flipped = false;
  for (int attempt = 0; attempt < 32 && !flipped; ++attempt) {
    std::optional<ir::Trace> mutated = mutate->Apply(forced, kernel, random);
    flipped = mutated &&
              mutated->instructions()[*panels].decision != forced.instructions()[*panels].decision;
  }
  EXPECT_TRUE(flipped);
}

// A 3x3 channels-last convolution, 16 to 32 channels on an 8x8 map, padded by one.
ir::KernelFunction ChannelsLastConvolution3x3() {
  return LowerOp("conv2d", {testing::F32({1, 8, 8, 16}), testing::F32({3, 3, 16, 32})},
                 ir::Attrs{{"data_layout", std::string("NHWC")},
                           {"kernel_layout", std::string("HWIO")},
                           {"padding", std::vector<int64_t>{1, 1, 1, 1}}});
}

// A channels-last convolution of a batch of one: its S0 loops are n (extent 1, bound to no
// iterator), h0, w0 and co0. Panels outer puts co0 (the weights move with it) first and keeps
// the others in order; iterator order leaves n first. Both compute the convolution.
TEST(MultiLevelTiling, PanelsOuterPutsAConvolutionsOutputChannelsFirst) {
  ir::KernelFunction kernel = ChannelsLastConvolution3x3();
  SearchSpace space = Space();
  std::vector<Schedule> spaces = GenerateDesignSpaces(kernel, space, 3);
  ASSERT_EQ(spaces.size(), 1u);
  // h, w, co, ci, kh, kw.
  std::vector<std::vector<int64_t>> tiles = {{2, 2, 1, 2}, {2, 2, 1, 2}, {2, 1, 1, 16},
                                             {4, 4},       {3, 1},       {3, 1}};
  ir::Trace trace = spaces[0].trace();
  size_t tile = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (trace.instructions()[i].kind == "sample_perfect_tile" && tile < tiles.size()) {
      trace = trace.WithDecision(i, tiles[tile++]);
    }
  }
  std::optional<size_t> panels = PanelsOuterDecision(trace);
  ASSERT_EQ(tile, tiles.size()) << trace.ToText();
  ASSERT_TRUE(panels.has_value()) << trace.ToText();
  for (int64_t decision : {0, 1}) {
    SCOPED_TRACE(decision);
    Schedule s = Schedule::Replay(kernel, trace.WithDecision(*panels, decision));
    ASSERT_TRUE(MakePostprocessor("rewrite_panel_order", SearchTarget{})->Apply(s));
    std::vector<const ir::ForNode*> loops = LoopsOf(s.function(), "conv2d");
    const auto* realize = ir::As<ir::BlockRealizeNode>(GetBlockPath(s.function(), "conv2d").target);
    // Iterators n, h, w, co: which one the outermost loop feeds.
    bool feeds_co = ir::UsesVar(realize->iter_values[3], loops[0]->loop_var);
    EXPECT_EQ(feeds_co, decision == 1) << ir::PrintKernel(s.function());
    EXPECT_EQ(loops[1]->extent, decision == 1 ? 1 : 2) << ir::PrintKernel(s.function());
    ExpectComputesKernel(kernel, s.function());
  }
}

// The seed switch of multi_level_tiling: drawn anew with the switch on, every sample's S3
// factors are the default schedule's register tile along each spatial loop (the largest divisor
// at most it) and the reductions other than the input channels (kh, kw: their loads step a
// whole pixel) stay whole in R0; with it off the innermost factors vary. Both compute the
// convolution.
TEST(MultiLevelTiling, SeedSwitchStartsSamplesFromTheDefaultRegisterTile) {
  ir::KernelFunction kernel = ChannelsLastConvolution3x3();
  SearchSpace space = Space();
  std::vector<Schedule> spaces = GenerateDesignSpaces(kernel, space, 5);
  ASSERT_EQ(spaces.size(), 1u);
  ir::Trace design = search::DesignPart(spaces[0].trace());
  // The switch: the sample_categorical whose value the tile samples take as their second input.
  std::optional<size_t> seed_switch;
  std::vector<size_t> tiles;
  for (size_t i = 0; i < design.size(); ++i) {
    const ir::Instruction& inst = design.instructions()[i];
    if (inst.kind != "sample_perfect_tile") continue;
    tiles.push_back(i);
    if (inst.inputs.size() < 2) continue;
    for (size_t j = 0; j < i; ++j) {
      const std::vector<std::string>& outputs = design.instructions()[j].outputs;
      if (std::find(outputs.begin(), outputs.end(), inst.inputs[1]) != outputs.end()) {
        seed_switch = j;
      }
    }
  }
  ASSERT_TRUE(seed_switch.has_value()) << design.ToText();
  ASSERT_EQ(tiles.size(), 6u) << design.ToText();  // h, w, co, ci, kh, kw
  // The planned register tile of the pristine block, as the default schedule plans it.
  const auto* realize = ir::As<ir::BlockRealizeNode>(GetBlockPath(kernel, "conv2d").target);
  std::optional<default_schedule::RegisterTile> plan = default_schedule::PlanRegisterTile(
      realize->block, SearchTarget{}.vector_lanes, 32, SearchTarget{}.num_cores);
  ASSERT_TRUE(plan.has_value());
  auto largest_divisor = [](int64_t extent, int64_t at_most) {
    for (int64_t d = std::min(extent, at_most); d > 1; --d) {
      if (extent % d == 0) return d;
    }
    return int64_t{1};
  };
  for (int64_t on : {1, 0}) {
    SCOPED_TRACE(on);
    ir::Trace trace = design.WithDecision(*seed_switch, on);
    for (size_t i : tiles) trace.mutable_instructions()[i].decision.reset();
    std::set<std::vector<int64_t>> innermost;
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      Schedule s = Schedule::Replay(kernel, trace, seed);
      std::vector<int64_t> inner;
      std::vector<std::vector<int64_t>> factors;
      for (size_t i : tiles) {
        factors.push_back(std::get<std::vector<int64_t>>(*s.trace().instructions()[i].decision));
        // The input channels' R1 (the fourth tile) is sampled either way.
        if (factors.size() != 4) inner.push_back(factors.back().back());
      }
      innermost.insert(inner);
      if (on == 1) {
        // Iterators n (extent 1, not split), h, w, co, ci, kh, kw.
        for (int axis = 1; axis <= 3; ++axis) {
          int64_t tile = axis == plan->vector_axis      ? plan->vector_tile
                         : axis == plan->broadcast_axis ? plan->broadcast_tile
                         : axis == plan->second_axis    ? plan->second_tile
                                                        : 1;
          EXPECT_EQ(
              inner[static_cast<size_t>(axis - 1)],
              largest_divisor(realize->block->iter_vars[static_cast<size_t>(axis)].extent, tile))
              << "axis " << axis;
        }
        EXPECT_EQ(factors[4], (std::vector<int64_t>{3, 1}));
        EXPECT_EQ(factors[5], (std::vector<int64_t>{3, 1}));
      }
      std::optional<Schedule> program = ReplayProgram(kernel, s.trace(), space);
      ASSERT_TRUE(program.has_value());
      ExpectComputesKernel(kernel, program->function());
    }
    if (on == 1) {
      EXPECT_EQ(innermost.size(), 1u);
    } else {
      EXPECT_GT(innermost.size(), 1u);
    }
  }
}

TEST(MultiLevelTiling, EpilogueMovesWithItsTileLevelDecision) {
  ir::KernelFunction kernel = testing::ConvBiasRelu(4, 8, 8);
  SearchSpace space = Space();
  std::vector<Schedule> spaces = GenerateDesignSpaces(kernel, space, 4);
  ASSERT_EQ(spaces.size(), 1u);
  const ir::Trace& design = spaces[0].trace();
  // Serial, so that no parallel loop fuses the tile levels away.
  ir::Trace trace = design;
  std::vector<size_t> levels;
  for (size_t i = 0; i < design.size(); ++i) {
    const ir::Instruction& inst = design.instructions()[i];
    if (inst.kind != "sample_categorical") continue;
    if (inst.attrs.GetInts("candidates") == std::vector<int64_t>{1, 2}) {
      levels.push_back(i);
    } else if (inst.attrs.GetInts("candidates").front() == 1) {
      trace = trace.WithDecision(i, int64_t{0});
    }
  }
  ASSERT_EQ(levels.size(), 1u) << design.ToText();
  std::set<size_t> depths;
  for (int64_t decision : {0, 1}) {
    std::optional<Schedule> program =
        ReplayProgram(kernel, trace.WithDecision(levels[0], decision), space);
    ASSERT_TRUE(program.has_value());
    // The epilogue (add with relu reverse-inlined) sits under a tile loop of the convolution.
    std::vector<const ir::ForNode*> conv = LoopsOf(program->function(), "conv2d");
    std::vector<const ir::ForNode*> add = LoopsOf(program->function(), "add");
    size_t shared = 0;
    while (shared < add.size() && shared < conv.size() && add[shared] == conv[shared]) ++shared;
    EXPECT_GT(shared, 0u) << ir::PrintKernel(program->function());
    depths.insert(shared);
    ExpectComputesKernel(kernel, program->function());
  }
  EXPECT_EQ(depths.size(), 2u) << "both tile levels give the same placement";
}

TEST(SearchSpace, RulesAreRegisteredByName) {
  std::vector<std::string> rules = ScheduleRuleNames();
  for (const char* name : {"auto_inline", "multi_level_tiling", "random_compute_location",
                           "parallel_vectorize_unroll", "add_rfactor", "multi_level_tiling_gpu",
                           "cross_thread_reduction", "auto_bind", "auto_unroll"}) {
    EXPECT_NE(std::find(rules.begin(), rules.end(), name), rules.end()) << name;
    EXPECT_EQ(MakeScheduleRule(name, SearchTarget{})->name(), name);
  }
  for (const std::string& name : PostprocessorNames()) {
    EXPECT_EQ(MakePostprocessor(name, SearchTarget{})->name(), name);
  }
  for (const std::string& name : MutatorNames()) {
    EXPECT_EQ(MakeMutator(name, SearchTarget{})->name(), name);
  }
  EXPECT_EQ(PostprocessorNames().size(), 7u);
  EXPECT_EQ(MutatorNames().size(), 5u);
  try {
    MakeScheduleRule("multi_level_tilling", SearchTarget{});
    ADD_FAILURE() << "an unknown rule name was accepted";
  } catch (const ir::Error& e) {
    EXPECT_NE(e.message().find("multi_level_tiling"), std::string::npos) << e.message();
  }
}

// A user rule: annotates every block it visits.
class MarkBlocks : public ScheduleRule {
 public:
  std::string name() const override { return "mark_blocks"; }
  std::vector<Schedule> Apply(const Schedule& schedule, const BlockRV& block) const override {
    if (schedule.BlockName(block) == "root" ||
        !FindBlock(schedule.function(), schedule.BlockName(block))) {
      return {schedule};
    }
    Schedule s = schedule;
    s.Annotate(block, "marked", int64_t{1});
    return {s};
  }
};

TEST(SearchSpace, UserRuleIsAppendedWithoutTouchingOthers) {
  RegisterScheduleRule("mark_blocks",
                       [](const SearchTarget&) { return std::make_shared<MarkBlocks>(); });
  SearchSpace space = Space();
  space.rules.push_back(MakeScheduleRule("mark_blocks", SearchTarget{}));
  ir::KernelFunction kernel = testing::Matmul(32, 32, 32);
  std::vector<Schedule> spaces = GenerateDesignSpaces(kernel, space, 1);
  ASSERT_EQ(spaces.size(), 1u);
  RandomState random(2);
  std::optional<Schedule> program = SampleProgram(kernel, spaces[0].trace(), space, random);
  ASSERT_TRUE(program.has_value());
  const auto* matmul =
      ir::As<ir::BlockRealizeNode>(GetBlockPath(program->function(), "matmul").target);
  EXPECT_TRUE(matmul->block->annotations.Has("marked"));
  EXPECT_TRUE(matmul->block->annotations.Has("tandem.tiling"));  // the built-in rules still ran
  ExpectComputesKernel(kernel, program->function());
}

TEST(SearchSpace, RFactorAddsDesignSpacesForRowReductions) {
  ir::KernelFunction kernel = LowerOp("softmax", {F32({4, 64})});
  std::vector<Schedule> spaces = GenerateDesignSpaces(kernel, Space(), 1);
  EXPECT_GE(spaces.size(), 3u);
  int factored = 0;
  for (const Schedule& s : spaces) {
    factored += FindBlock(s.function(), "softmax_exp_sum_rf").has_value() ? 1 : 0;
  }
  EXPECT_GT(factored, 0);
  EXPECT_LT(factored, static_cast<int>(spaces.size())) << "the unfactored space is kept";
}

TEST(VerifyProgram, RejectsPoorVectorWidthsAndBadAnnotations) {
  SearchTarget target;
  PostprocessorPtr verify = MakePostprocessor("verify_program", target);
  ir::KernelFunction kernel = testing::Matmul(8, 12, 8);
  Schedule good(kernel);
  {
    BlockRV b = good.GetBlock("matmul");
    std::vector<LoopRV> loops = good.GetLoops(b);
    std::vector<LoopRV> parts = good.Split(loops[1], {3, 4});
    good.Reorder({loops[0], parts[0], loops[2], parts[1]});
    good.Vectorize(parts[1]);
  }
  EXPECT_TRUE(verify->Apply(good));
  Schedule three(kernel);
  {
    BlockRV b = three.GetBlock("matmul");
    std::vector<LoopRV> loops = three.GetLoops(b);
    std::vector<LoopRV> parts = three.Split(loops[1], {4, 3});
    three.Reorder({loops[0], parts[0], loops[2], parts[1]});
    three.Vectorize(parts[1]);
  }
  EXPECT_FALSE(verify->Apply(three));
  Schedule serial(kernel);
  serial.Annotate(serial.GetBlock("root"), "tandem.parallel", int64_t{0});
  EXPECT_FALSE(verify->Apply(serial));
}

// Regressions of the schedule's replay that the search space relies on.
TEST(ScheduleReplay, ResampledComputeLocationMovesTheBlock) {
  ir::KernelFunction kernel = LowerOp("softmax", {F32({4, 64})});
  Schedule s(kernel);
  BlockRV b = s.GetBlock("softmax_exp_sum");
  s.ComputeAt(b, s.SampleComputeLocation(b, -1));  // stays at the root
  size_t index = 1;
  ASSERT_EQ(s.trace().instructions()[index].kind, "sample_compute_location");
  Schedule moved = Schedule::Replay(kernel, s.trace().WithDecision(index, int64_t{0}));
  // Now under the consumer's outer loop: the loop around softmax_exp_sum also holds softmax.
  std::vector<const ir::ForNode*> loops = LoopsOf(moved.function(), "softmax_exp_sum");
  ASSERT_FALSE(loops.empty());
  EXPECT_EQ(loops[0], LoopsOf(moved.function(), "softmax")[0]);
  EXPECT_LT(testing::CompareKernels(kernel, moved.function()), 1e-5);
}

TEST(ScheduleReplay, SampledAnnotationFollowsItsDecision) {
  ir::KernelFunction kernel = testing::Matmul(8, 8, 8);
  Schedule s(kernel);
  BlockRV root = s.GetBlock("root");
  s.Annotate(root, "depth", s.SampleCategorical({0, 16, 64}, {1, 1, 1}, 1));
  s.EnterPostprocessing();
  auto depth = [](const Schedule& schedule) {
    const auto* r = ir::As<ir::BlockRealizeNode>(schedule.function().body);
    return r->block->annotations.GetInt("depth");
  };
  EXPECT_EQ(depth(s), 16);
  Schedule replayed = Schedule::Replay(kernel, ir::Trace::FromJson(s.trace().ToJson()));
  EXPECT_EQ(replayed.trace(), s.trace());
  EXPECT_EQ(depth(Schedule::Replay(kernel, s.trace().WithDecision(1, int64_t{2}))), 64);
}

}  // namespace
}  // namespace tandem::kernels

namespace tandem::kernels {
namespace {

// Kernel tuning offers each kernel's default schedule as a candidate (so tuning never ends
// slower than the untuned build), and apply-history-best replays recorded traces with
// ReplayProgram: every default schedule must replay to exactly the default-scheduled kernel (the
// search space's postprocessors, which prune samples, must not reject or change it) and keep
// computing what the unscheduled kernel computes.
TEST(DefaultSchedule, ReplaysThroughTheSearchSpace) {
  SearchSpace space = Space();
  std::vector<std::string> rejected;
  for (const tandem::testing::Case& c : tandem::testing::AllCases()) {
    SCOPED_TRACE(c.op + "/" + c.label);
    ir::GraphFunction function = tandem::testing::BuildCall(c);
    const ir::Node& call = function.node(function.Find("result"));
    ir::KernelFunction kernel = LowerOpCall("kernel", c.op, call.attrs, c.inputs, call.type);
    Schedule scheduled = ApplyDefaultSchedule(kernel);
    std::optional<Schedule> replayed = ReplayProgram(kernel, scheduled.trace(), space);
    if (!replayed) {
      rejected.push_back(c.op + "/" + c.label);
      continue;
    }
    EXPECT_TRUE(ir::StructuralEqual(replayed->function(), scheduled.function()));
    std::vector<ir::Tensor> inputs = tandem::testing::CaseInputs(c, 5);
    std::vector<ir::Tensor> want = backends::RunKernelReference(kernel, inputs, true);
    std::vector<ir::Tensor> got = backends::RunKernelReference(replayed->function(), inputs, true);
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_LE(ir::RelativeError(got[k], want[k]), 1e-4);
    }
  }
  EXPECT_TRUE(rejected.empty()) << fmt::format("{}", fmt::join(rejected, ", "));
}

}  // namespace
}  // namespace tandem::kernels
