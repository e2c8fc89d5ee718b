// Legalize on IR text: a fused conv2d + add + relu group and a standalone softmax become two
// call_kernel nodes and two kernel functions. The whole legalized module (graph and kernel
// bodies, with and without default schedules) is checked against the expected text in
// tests/passes/data/, and the legalized module computes what the graph computed (reference
// interpreter on random inputs).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "backends/reference/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "passes/pass.h"
#include "passes/pipeline_text.h"

namespace tandem::passes {
namespace {

// conv2d + add + relu (one fusion group after FuseOps) followed by softmax (opaque: alone).
constexpr const char* kInput = R"(
graph @main(%x: f32[1,3,5,5], %w: f32[4,3,3,3], %b: f32[4,1,1]) -> f32[1,4,5,5] {
  %c = conv2d(%x, %w) {padding=[1,1,1,1]} : f32[1,4,5,5]
  %a = add(%c, %b) : f32[1,4,5,5]
  %r = relu(%a) : f32[1,4,5,5]
  %s = softmax(%r) : f32[1,4,5,5]
  return %s
})";

std::string ReadFile(const std::string& name) {
  std::string path = std::string(TANDEM_SOURCE_DIR) + "/tests/passes/data/" + name;
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << "cannot read " << path;
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Runs `pipeline` on kInput for a fixed target (4 threads, 256-bit vectors: the default schedule
// depends on both), so the expected text does not depend on the machine.
ir::IRModule Legalized(const std::string& pipeline) {
  PassContext context;
  context.verify_each = true;
  context.target = ir::ParseTarget("llvm -threads=4 -vector-bits=256");
  return context.RunPipeline(*ParsePipeline(pipeline), ir::ParseModule(kInput, "input"));
}

// The legalized module prints exactly as `expected_file` and parses back equal to it; it
// computes what the input graph computes.
void ExpectLegalizedText(const std::string& pipeline, const std::string& expected_file) {
  SCOPED_TRACE(pipeline);
  ir::IRModule got = Legalized(pipeline);
  std::string text = ir::PrintModule(got);
  std::string expected = ReadFile(expected_file);
  EXPECT_EQ(text, expected) << "the legalized module differs from tests/passes/data/"
                            << expected_file << "; it is now:\n"
                            << text;
  ir::IRModule want = ir::ParseModule(expected, expected_file);
  EXPECT_TRUE(ir::StructuralEqual(got, want)) << ir::StructuralDiff(got, want);

  int kernel_calls = 0;
  for (const ir::Node& node : got.Get("main").nodes) {
    EXPECT_NE(node.kind, ir::NodeKind::kCall) << node.name << " was not legalized";
    kernel_calls += node.kind == ir::NodeKind::kCallKernel;
  }
  EXPECT_EQ(kernel_calls, 2);
  EXPECT_EQ(got.kernel_functions().size(), 2u);

  ir::IRModule input = ir::ParseModule(kInput, "input");
  for (uint64_t seed : {1, 2}) {
    auto inputs = backends::RandomInputs(input.Get("main"), seed);
    auto reference = backends::RunReference(input, inputs);
    auto legalized = backends::RunReference(got, inputs);
    auto reparsed = backends::RunReference(want, inputs);
    ASSERT_EQ(legalized.size(), 1u);
    EXPECT_LT(ir::RelativeError(legalized[0], reference[0]), 1e-5);
    EXPECT_LT(ir::RelativeError(reparsed[0], reference[0]), 1e-5);
  }
}

TEST(Legalize, FusedGroupAndSoftmaxUnscheduled) {
  ExpectLegalizedText("InferType, FuseOps, Legalize(default_schedule=0)",
                      "legalize_unscheduled.tir");
}

TEST(Legalize, FusedGroupAndSoftmaxWithDefaultSchedules) {
  ExpectLegalizedText("InferType, FuseOps, Legalize", "legalize_scheduled.tir");
}

}  // namespace
}  // namespace tandem::passes
