// Every op's compute definition against the op's reference semantics: for each case the call is
// built with GraphBuilder, run with the graph reference interpreter on random inputs, lowered
// with LowerOpCall, run with the kernel interpreter and compared. Every registered op must have
// cases in the shared table (tests/common/op_cases.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "ir/op_registry.h"
#include "kernels/compute/lower.h"
#include "tests/common/op_cases.h"
#include "tests/kernels/compute_test_util.h"

namespace tandem::kernels {
namespace {

using tandem::testing::AllCases;
using tandem::testing::BuildCall;
using tandem::testing::Case;
using tandem::testing::CaseInputs;

class OpCompute : public ::testing::TestWithParam<Case> {};

TEST_P(OpCompute, MatchesReference) {
  const Case& c = GetParam();
  ir::GraphFunction function = BuildCall(c);
  const ir::Node& call = function.node(function.Find("result"));
  std::vector<ir::Tensor> inputs = CaseInputs(c, 7);
  std::vector<ir::Tensor> expected = backends::RunReference(function, inputs);
  ir::KernelFunction kernel = LowerOpCall("kernel", c.op, call.attrs, c.inputs, call.type);
  testing::ExpectWellFormed(kernel);
  EXPECT_EQ(kernel.params.size(), c.inputs.size() + expected.size());
  EXPECT_EQ(static_cast<size_t>(kernel.num_outputs), expected.size());
  std::vector<ir::Tensor> actual = backends::RunKernelReference(kernel, inputs, true);
  testing::ExpectSameTensors(actual, expected);
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  return info.param.op + "_" + info.param.label;
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpCompute, ::testing::ValuesIn(AllCases()), CaseName);

TEST(ComputeTable, EveryRegisteredOpHasAComputeAndTestCases) {
  std::map<std::string, int> counts;
  for (const Case& c : AllCases()) ++counts[c.op];
  for (const std::string& op : ir::OpRegistry::Global().Names()) {
    EXPECT_TRUE(HasCompute(op)) << op << " has no compute definition";
    EXPECT_GE(counts[op], 2) << op << " needs at least two test cases in tests/common/op_cases.h";
  }
  for (const auto& [op, count] : counts) {
    EXPECT_NE(ir::OpRegistry::Global().Find(op), nullptr) << "test case of unknown op " << op;
  }
}

}  // namespace
}  // namespace tandem::kernels
