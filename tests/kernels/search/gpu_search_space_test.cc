// The GPU design space (kernels::DefaultGpuSearchSpace) without a GPU: for every op case of the
// shared table (tests/common/op_cases.h), programs sampled from each design space
//   1. spread every launch with work over threads (no launch with more than one spatial
//      iteration left unbound) within the target's threads per block;
//   2. compute what the unscheduled kernel computes in the kernel interpreter, which simulates
//      the launches' thread blocks (and fails on threads racing on an element or sharing a
//      thread's local element);
//   3. replay from their trace's JSON to the same program.
// Also: a matmul's design spaces include both the register-tile and the shared-memory structure;
// the mutators change one decision each and the programs they make that pass the
// postprocessors still compute the kernel; the search target round-trips through JSON; the
// default space follows the target's kind. (PTX of the sampled programs is checked with ptxas in
// tests/backends/cuda/gpu_search_space_ptxas_test.cc.)
#include <gtest/gtest.h>

#include <set>

#include "backends/reference/kernel_interpreter.h"
#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_printer.h"
#include "ir/kernel/kernel_structural.h"
#include "kernels/compute/lower.h"
#include "kernels/schedule/block_analysis.h"
#include "kernels/search/search_space.h"
#include "kernels/search/search_util.h"
#include "tests/common/op_cases.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem::kernels {
namespace {

using tandem::testing::Case;

constexpr double kTolerance = 1e-4;

SearchTarget Target() {
  return GpuSearchTarget("sm_80");
}

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = tandem::testing::AllCases();
  return cases;
}

ir::KernelFunction KernelOf(const Case& c) {
  ir::GraphFunction function = tandem::testing::BuildCall(c);
  const ir::Node& call = function.node(function.Find("result"));
  return LowerOpCall("kernel", c.op, call.attrs, c.inputs, call.type);
}

// Why a launch of `program` leaves work to one thread or has too many threads; empty if none.
std::string LaunchProblem(const ir::KernelFunction& program, const SearchTarget& target) {
  for (const ir::Stmt& launch : search::TopLevelStatements(program)) {
    int64_t threads = 1;
    ir::VisitStmtTree(launch, [&](const ir::Stmt& s) {
      const auto* loop = ir::As<ir::ForNode>(s);
      if (loop && ir::IsThreadBinding(loop->for_kind) && !ir::IsBlockIndex(loop->for_kind)) {
        threads = std::max(threads, loop->extent);
      }
    });
    if (threads > target.max_threads_per_block) return "too many threads per block";
    if (search::HasThreadBinding(launch)) continue;
    for (const std::string& name : search::BlocksUnder(launch)) {
      if (SpatialExtent(FindRealize(program, name)->block) > 1) {
        return "block " + name + " runs on one thread";
      }
    }
  }
  return "";
}

// Programs drawn from each design space: up to `per_space` valid ones, 8 draws per space at most.
std::vector<Schedule> SamplePrograms(const ir::KernelFunction& kernel, const SearchSpace& space,
                                     size_t per_space, uint64_t seed, int* rejected = nullptr) {
  std::vector<Schedule> programs;
  RandomState random(seed);
  for (const Schedule& design : GenerateDesignSpaces(kernel, space, seed)) {
    size_t valid = 0;
    for (int draw = 0; draw < 8 && valid < per_space; ++draw) {
      if (std::optional<Schedule> p = SampleProgram(kernel, design.trace(), space, random)) {
        programs.push_back(*p);
        ++valid;
      } else if (rejected) {
        ++*rejected;
      }
    }
  }
  return programs;
}

class GpuOpCases : public ::testing::TestWithParam<size_t> {};

TEST_P(GpuOpCases, SampledProgramsBindThreadsAndMatchTheReference) {
  const Case& c = Cases()[GetParam()];
  ir::KernelFunction kernel = KernelOf(c);
  SearchSpace space = DefaultGpuSearchSpace(Target());
  std::vector<Schedule> programs = SamplePrograms(kernel, space, 2, 3);
  ASSERT_FALSE(programs.empty()) << "no valid program in the GPU space of\n"
                                 << ir::PrintKernel(kernel);
  std::vector<ir::Tensor> inputs = tandem::testing::CaseInputs(c, 7);
  std::vector<ir::Tensor> want = backends::RunKernelReference(kernel, inputs, true);
  for (const Schedule& p : programs) {
    SCOPED_TRACE(p.trace().ToText());
    // 1. Threads.
    EXPECT_EQ(LaunchProblem(p.function(), Target()), "") << ir::PrintKernel(p.function());
    // 2. The thread-block simulation.
    try {
      std::vector<ir::Tensor> got = backends::RunKernelReference(p.function(), inputs, true);
      for (size_t k = 0; k < want.size(); ++k) {
        EXPECT_LE(ir::RelativeError(got[k], want[k]), kTolerance) << ir::PrintKernel(p.function());
      }
    } catch (const ir::Error& e) {
      ADD_FAILURE() << "the kernel interpreter failed: " << e.what() << "\n"
                    << ir::PrintKernel(p.function());
    }
    // 3. JSON and replay.
    ir::Trace parsed = ir::Trace::FromJson(p.trace().ToJson());
    ASSERT_EQ(parsed, p.trace());
    std::string why;
    std::optional<Schedule> replayed = ReplayProgram(kernel, parsed, space, &why);
    ASSERT_TRUE(replayed.has_value()) << why;
    EXPECT_EQ(ir::StructuralDiff(replayed->function(), p.function()), "");
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, GpuOpCases, ::testing::Range<size_t>(0, Cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return Cases()[info.param].op + "_" + Cases()[info.param].label;
                         });

TEST(GpuSearchSpace, MatmulHasRegisterAndSharedMemoryStructures) {
  ir::KernelFunction kernel = testing::Matmul(64, 64, 64);
  SearchSpace space = DefaultGpuSearchSpace(Target());
  std::set<std::string> structures;
  for (const Schedule& p : SamplePrograms(kernel, space, 4, 1)) {
    bool shared = false;
    for (const ir::Instruction& inst : p.trace().instructions()) {
      if (inst.kind == "cache_read" && inst.attrs.GetString("scope", "") == "shared") shared = true;
    }
    const ir::BlockRealizeNode* matmul = FindRealize(p.function(), "matmul");
    ASSERT_TRUE(matmul);
    EXPECT_EQ(matmul->block->annotations.GetString("tandem.tiling", ""), "SSSRRSRS");
    structures.insert(shared ? "shared" : "registers");
  }
  EXPECT_EQ(structures, (std::set<std::string>{"registers", "shared"}));
}

// The kind and decision of every instruction before the postprocessing part.
std::vector<std::pair<std::string, std::optional<ir::AttrValue>>> Decisions(
    const ir::Trace& trace) {
  std::vector<std::pair<std::string, std::optional<ir::AttrValue>>> out;
  ir::Trace design = search::DesignPart(trace);
  for (const ir::Instruction& inst : design.instructions()) {
    out.emplace_back(inst.kind, inst.decision);
  }
  return out;
}

TEST(GpuSearchSpace, MutatorsChangeOneDecisionAndKeepResults) {
  SearchSpace space = DefaultGpuSearchSpace(Target());
  std::map<std::string, int> applied, valid;
  for (const ir::KernelFunction& kernel :
       {testing::Matmul(32, 64, 32), testing::LowerOp("softmax", {testing::F32({4, 256})})}) {
    SCOPED_TRACE(kernel.name);
    std::vector<ir::Tensor> inputs = testing::RandomArgs(kernel, 11);
    std::vector<ir::Tensor> want = backends::RunKernelReference(kernel, inputs, true);
    RandomState random(5);
    for (const Schedule& program : SamplePrograms(kernel, space, 3, 2)) {
      for (const auto& [mutator, probability] : space.mutators) {
        std::optional<ir::Trace> mutated = mutator->Apply(program.trace(), kernel, random);
        if (!mutated) continue;
        ++applied[mutator->name()];
        size_t changed = 0;
        for (size_t i = 0; i < mutated->size(); ++i) {
          ir::Instruction before = program.trace().instructions()[i];
          const ir::Instruction& after = mutated->instructions()[i];
          if (before == after) continue;
          ++changed;
          EXPECT_NE(before.decision, after.decision) << mutator->name();
          before.decision = after.decision;
          EXPECT_EQ(before, after) << mutator->name() << " changed more than a decision";
        }
        EXPECT_EQ(changed, 1u) << mutator->name();
        std::optional<Schedule> replayed = ReplayProgram(kernel, *mutated, space);
        if (!replayed) continue;  // the postprocessors reject it: never measured
        ++valid[mutator->name()];
        EXPECT_EQ(Decisions(replayed->trace()), Decisions(*mutated));
        EXPECT_EQ(LaunchProblem(replayed->function(), Target()), "");
        std::vector<ir::Tensor> got =
            backends::RunKernelReference(replayed->function(), inputs, true);
        EXPECT_LE(ir::RelativeError(got[0], want[0]), kTolerance)
            << mutator->name() << "\n"
            << ir::PrintKernel(replayed->function());
      }
    }
  }
  for (const char* name : {"mutate_tile_size", "mutate_thread_extent", "mutate_unroll"}) {
    EXPECT_GT(applied[name], 0) << name << " never applied";
    EXPECT_GT(valid[name], 0) << name << " never made a valid program";
  }
}

TEST(GpuSearchSpace, DefaultSpaceFollowsTheTarget) {
  auto names = [](const SearchSpace& space) {
    std::vector<std::string> out;
    for (const ScheduleRulePtr& rule : space.rules) out.push_back(rule->name());
    return out;
  };
  std::vector<std::string> gpu = names(DefaultSearchSpace(Target()));
  EXPECT_EQ(gpu, (std::vector<std::string>{"auto_inline", "cross_thread_reduction",
                                           "multi_level_tiling_gpu", "auto_bind", "auto_unroll"}));
  EXPECT_EQ(names(DefaultSearchSpace(SearchTarget{})),
            names(DefaultCpuSearchSpace(SearchTarget{})));
}

TEST(SearchTarget, GpuTargetsAndJsonRoundTrip) {
  SearchTarget sm90 = GpuSearchTarget("sm_90");
  EXPECT_TRUE(sm90.gpu);
  EXPECT_EQ(sm90.sm_count, 132);
  EXPECT_EQ(GpuSearchTarget("sm_80").sm_count, 108);
  EXPECT_THROW(GpuSearchTarget("sm_75"), ir::Error);
  SearchTarget cpu;
  cpu.vector_lanes = 8;
  cpu.unroll_depths = {0, 32};
  cpu.core = CpuCoreModel{.fma_per_cycle = 1,
                          .l1_data_ways = 8,
                          .l1_data_bytes = 32 << 10,
                          .l2_ways = 8,
                          .l2_bytes = 1 << 20};
  for (const SearchTarget& target : {sm90, cpu}) {
    std::string json = SearchTargetToJson(target);
    EXPECT_EQ(SearchTargetFromJson(json), target) << json;
  }
  // A missing field keeps its default; a wrong type names the field.
  EXPECT_EQ(SearchTargetFromJson("{}"), SearchTarget{});
  try {
    SearchTargetFromJson(R"({"warp_size": "thirty-two"})");
    ADD_FAILURE() << "a string warp size was accepted";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("warp_size"), std::string::npos) << e.what();
  }
  EXPECT_THROW(SearchTargetFromJson("[1, 2]"), ir::Error);
  EXPECT_THROW(SearchTargetFromJson("not json"), ir::Error);
}

}  // namespace
}  // namespace tandem::kernels
