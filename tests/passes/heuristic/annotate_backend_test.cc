// AnnotateBackend: which nodes get the `backend` annotation, argument errors, pipeline text, and
// that the annotated module computes exactly the same.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "tests/passes/rewrite_test_util.h"

namespace tandem::passes {
namespace {

using rewrite_testing::ExpectRewrite;

constexpr const char* kModule = R"(
graph @main(%x: f32[1,1,3,3]) -> f32[6,2] {
  %w = constant f32[2,1,1,1] [1.0, 2.0]
  %c = conv2d(%x, %w)
  %r = relu(%c)
  %f = reshape(%r) {newshape=[6,3]}
  %v = constant f32[2,3] [1.0, 0.0, -1.0, 0.5, 2.0, 0.25]
  %d = dense(%f, %v)
  return %d
})";

TEST(AnnotateBackend, DefaultAnnotatesEveryOpCallWithLlvm) {
  ExpectRewrite("AnnotateBackend", kModule, R"(
graph @main(%x: f32[1,1,3,3]) -> f32[6,2] {
  %w = constant f32[2,1,1,1] [1.0, 2.0]
  %c = conv2d(%x, %w) @{backend="llvm"}
  %r = relu(%c) @{backend="llvm"}
  %f = reshape(%r) {newshape=[6,3]} @{backend="llvm"}
  %v = constant f32[2,3] [1.0, 0.0, -1.0, 0.5, 2.0, 0.25]
  %d = dense(%f, %v) @{backend="llvm"}
  return %d
})");
}

TEST(AnnotateBackend, OnlyListedOpsAndReplacesEarlierChoices) {
  std::string input = kModule;
  // relu already carries a backend: it is not listed, so it keeps it.
  input.replace(input.find("%r = relu(%c)"), 13, "%r = relu(%c) @{backend=\"cublas\", group=1}");
  ExpectRewrite("AnnotateBackend(backend=\"onednn\", ops=\" conv2d, dense\")", input, R"(
graph @main(%x: f32[1,1,3,3]) -> f32[6,2] {
  %w = constant f32[2,1,1,1] [1.0, 2.0]
  %c = conv2d(%x, %w) @{backend="onednn"}
  %r = relu(%c) @{backend="cublas", group=1}
  %f = reshape(%r) {newshape=[6,3]}
  %v = constant f32[2,3] [1.0, 0.0, -1.0, 0.5, 2.0, 0.25]
  %d = dense(%f, %v) @{backend="onednn"}
  return %d
})");
  // Listing relu replaces its earlier choice and keeps its other annotations.
  ExpectRewrite("AnnotateBackend(backend=\"reference\", ops=\"relu\")", input, R"(
graph @main(%x: f32[1,1,3,3]) -> f32[6,2] {
  %w = constant f32[2,1,1,1] [1.0, 2.0]
  %c = conv2d(%x, %w)
  %r = relu(%c) @{backend="reference", group=1}
  %f = reshape(%r) {newshape=[6,3]}
  %v = constant f32[2,3] [1.0, 0.0, -1.0, 0.5, 2.0, 0.25]
  %d = dense(%f, %v)
  return %d
})");
}

TEST(AnnotateBackend, ArgumentErrorsAndPipelineText) {
  auto error_of = [](const std::string& text) {
    try {
      ParsePipeline(text);
    } catch (const ir::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("AnnotateBackend(ops=\"conv2d,dens\")").find("unknown op 'dens'"),
            std::string::npos)
      << error_of("AnnotateBackend(ops=\"conv2d,dens\")");
  EXPECT_NE(error_of("AnnotateBackend(ops=\"conv2d,,dense\")").find("empty op name"),
            std::string::npos);
  EXPECT_NE(error_of("AnnotateBackend(backend=\"\")").find("backend must not be empty"),
            std::string::npos);
  EXPECT_NE(error_of("AnnotateBackend(backend=3)").find("must be string"), std::string::npos);
  std::string text = "AnnotateBackend(backend=\"onednn\", ops=\"conv2d,dense\")";
  EXPECT_EQ(PrintPipeline(*ParsePipeline(text)), text);
}

TEST(AnnotateBackend, ChangesNothingButAnnotations) {
  for (const std::string& name : rewrite_testing::ModelNames()) {
    SCOPED_TRACE(name);
    const ir::IRModule& model = rewrite_testing::Model(name);
    ir::IRModule out =
        rewrite_testing::Run("AnnotateBackend(backend=\"onednn\", ops=\"conv2d,dense\")", model);
    const ir::GraphFunction& before = model.Get("main");
    const ir::GraphFunction& after = out.Get("main");
    ASSERT_EQ(after.nodes.size(), before.nodes.size());
    int annotated = 0;
    ir::GraphFunction stripped = after;
    for (size_t i = 0; i < after.nodes.size(); ++i) {
      const ir::Node& node = after.nodes[i];
      bool listed = node.kind == ir::NodeKind::kCall && (node.op == "conv2d" || node.op == "dense");
      EXPECT_EQ(node.annotations.Has("backend"), listed) << node.name;
      if (listed) {
        EXPECT_EQ(node.annotations.GetString("backend"), "onednn");
        ++annotated;
      }
      stripped.nodes[i].annotations = before.nodes[i].annotations;
    }
    EXPECT_GT(annotated, 0);
    EXPECT_TRUE(ir::StructuralEqual(stripped, before)) << ir::StructuralDiff(stripped, before);
  }
}

}  // namespace
}  // namespace tandem::passes
