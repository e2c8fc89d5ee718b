// Compacted guarded loops compiled (kernels/compact_guarded_loops.h): a fused loop whose body
// runs where some of its digits are below run-time bounds visits those iterations, and only
// those, in the same order as the kernel interpreter, which runs the loop as written; serial
// and parallel, at bounds that pass nothing, some, and everything.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/llvm/codegen.h"
#include "backends/reference/kernel_interpreter.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_parser.h"
#include "kernels/compact_guarded_loops.h"

namespace tandem {
namespace {

// One loop fusing four (2, 3, 5, 4: f = a * 60 + b * 20 + c * 4 + d) whose body runs where
// `guard` holds and writes f * 1000 + (serial loop) how many iterations ran up to this one, or
// (parallel loop, whose iterations must be independent) 1, at its iteration's position.
ir::KernelFunction Marks(bool parallel, const std::string& guard) {
  std::string count = parallel ? "%visits[0] = 1.0" : "%visits[0] = %visits[0] + 1.0";
  std::string visits = parallel ? "1.0" : "%visits[0]";
  return ir::ParseKernel(std::string(R"(
kernel @marks(%limit: i64[1]) -> (%out: f32[2, 3, 5, 4], %visits: f32[1]) {
  block root() {
    for %f in 120 )") + (parallel ? "parallel" : "") +
                         R"( {
      if )" + guard + R"( {
        block mark(%a: spatial 2 = floordiv(%f, 60), %b: spatial 3 = floormod(floordiv(%f, 20), 3), %c: spatial 5 = floormod(floordiv(%f, 4), 5), %d: spatial 4 = floormod(%f, 4))
            reads(%visits[0])
            writes(%visits[0], %out[%a, %b, %c, %d]) {
          )" + (parallel ? "" : count) +
                         R"(
          %out[%a, %b, %c, %d] = )" +
                         visits + R"( + cast<f32>(%f) * 1000.0
        }
      }
    }
  }
}
)");
}

// Whether the loop over %f has a compacted form.
bool Compacts(const ir::KernelFunction& kernel) {
  const ir::ForNode* loop = nullptr;
  ir::VisitStmtTree(kernel.body, [&](const ir::Stmt& s) {
    const auto* candidate = ir::As<ir::ForNode>(s);
    if (candidate && candidate->loop_var->name == "f") loop = candidate;
  });
  return loop && kernels::CompactGuardedLoop(*loop).has_value();
}

// Runs `kernel` compiled and interpreted at each limit and compares every output element
// (positions not visited keep -1).
void ExpectSameVisits(const ir::KernelFunction& kernel) {
  ASSERT_TRUE(Compacts(kernel));
  std::unique_ptr<backends::CompiledModule> module = backends::CompileKernels({kernel});
  for (int64_t limit : {-3, 0, 1, 2, 3, 4, 6, 9, 10, 11, 40}) {
    SCOPED_TRACE("limit = " + std::to_string(limit));
    ir::Tensor bound = ir::Tensor::FromInt64s({1}, {limit});
    ir::Tensor compiled_out = ir::Tensor::FromFloats({2, 3, 5, 4}, std::vector<float>(120, -1));
    ir::Tensor compiled_visits = ir::Tensor::FromFloats({1}, {0});
    ir::Tensor reference_out = ir::Tensor::FromFloats({2, 3, 5, 4}, std::vector<float>(120, -1));
    ir::Tensor reference_visits = ir::Tensor::FromFloats({1}, {0});
    module->Run(kernel.name, {bound, compiled_out, compiled_visits});
    backends::RunKernelReference(kernel, {bound, reference_out, reference_visits});
    for (int64_t i = 0; i < 120; ++i) {
      EXPECT_EQ(compiled_out.data<float>()[i], reference_out.data<float>()[i]) << "position " << i;
    }
    EXPECT_EQ(compiled_visits.data<float>()[0], reference_visits.data<float>()[0]);
  }
}

// d < limit - 1 and 2c + 1 < limit: two bounded digits under two unbounded ones.
constexpr const char* kTwoBounds =
    "floormod(floordiv(%f, 4), 5) * 2 + 1 < %limit[0] && floormod(%f, 4) < %limit[0] - 1";

TEST(CodegenCompactedLoop, ASerialLoopVisitsTheActiveIterationsInOrder) {
  ExpectSameVisits(Marks(/*parallel=*/false, kTwoBounds));
}

TEST(CodegenCompactedLoop, AParallelLoopVisitsTheActiveIterations) {
  ExpectSameVisits(Marks(/*parallel=*/true, kTwoBounds));
}

TEST(CodegenCompactedLoop, ConditionsThatBoundNoDigitStillHold) {
  // The middle digit b bounded, with a prefix bound on f and a bound on the outermost digit
  // that every value passes.
  ExpectSameVisits(Marks(/*parallel=*/false,
                         "floormod(floordiv(%f, 20), 3) < %limit[0] && %f < %limit[0] * 11 && "
                         "floordiv(%f, 60) < 2"));
}

TEST(CodegenCompactedLoop, ABoundOnAnOuterLoopVariableIsTakenPerOuterIteration) {
  // The bound of the inner loop's digit moves with the outer loop (a vectorized one, whose
  // lanes the code generator may run one by one, or as vectors: where the bound differs between
  // lanes, the inner loop runs as written).
  ir::KernelFunction kernel = ir::ParseKernel(R"(
kernel @lanes(%limit: i64[1]) -> (%out: f32[8, 12]) {
  block root() {
    for %v in 8 vectorized {
      for %f in 12 {
        if floormod(%f, 4) < %v + %limit[0] {
          block mark(%a: spatial 8 = %v, %b: spatial 12 = %f)
              writes(%out[%a, %b]) {
            %out[%a, %b] = cast<f32>(%b) + 1.0
          }
        }
      }
    }
  }
}
)");
  ASSERT_TRUE(Compacts(kernel));
  std::unique_ptr<backends::CompiledModule> module = backends::CompileKernels({kernel});
  for (int64_t limit : {-2, 0, 1, 3}) {
    SCOPED_TRACE("limit = " + std::to_string(limit));
    ir::Tensor bound = ir::Tensor::FromInt64s({1}, {limit});
    ir::Tensor compiled = ir::Tensor::FromFloats({8, 12}, std::vector<float>(96, -1));
    ir::Tensor reference = ir::Tensor::FromFloats({8, 12}, std::vector<float>(96, -1));
    module->Run(kernel.name, {bound, compiled});
    backends::RunKernelReference(kernel, {bound, reference});
    for (int64_t i = 0; i < 96; ++i) {
      EXPECT_EQ(compiled.data<float>()[i], reference.data<float>()[i]) << "position " << i;
    }
  }
}

}  // namespace
}  // namespace tandem
