// The pass infrastructure: pipeline text, registry errors, dependency checks, no hidden gating,
// instruments, crash reproducers, nested pipelines, named pipelines.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/common/temp_path.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "passes/instruments.h"
#include "passes/pass_registry.h"
#include "passes/pipeline_text.h"
#include "pipelines/pipeline_registry.h"

namespace tandem::passes {
namespace {

ir::TensorType F32(ir::Shape s) { return ir::TensorType{std::move(s), ir::DataType::kFloat32, ""}; }

ir::IRModule SmallModule() {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", F32({2, 3}));
  ir::ValueId y = b.Call("relu", {x});
  ir::IRModule m;
  m.Add(b.Finish(y));
  return m;
}

// A pass that counts its runs and marks the module.
class MarkPass : public Pass {
 public:
  MarkPass(std::string name, std::vector<std::string> required, int* runs, PassArguments args = {})
      : Pass(std::move(args)), info_{std::move(name), std::move(required), false}, runs_(runs) {}
  const PassInfo& info() const override { return info_; }
  ir::IRModule Run(const ir::IRModule& module, PassContext&) const override {
    ++*runs_;
    ir::IRModule out = module;
    out.attrs().Set("ran_" + info_.name, int64_t{1});
    return out;
  }

 private:
  PassInfo info_;
  int* runs_;
};

// A tuning-like pass that evaluates `choices` candidates with its eval passes through a nested
// pipeline, the way tuning passes do.
class MockTuning : public Pass {
 public:
  MockTuning(PassArguments args, std::vector<PassPtr> eval)
      : Pass(std::move(args)), eval_(std::move(eval)) {}
  const PassInfo& info() const override {
    static PassInfo info{"MockTuning", {}, true};
    return info;
  }
  std::vector<PassPtr> nested() const override { return eval_; }
  ir::IRModule Run(const ir::IRModule& module, PassContext& context) const override {
    ir::IRModule best = module;
    for (int64_t c = 0; c < IntArgument("choices", 2); ++c) {
      best = context.RunPipeline(Sequential(eval_), module);
    }
    return best;
  }

 private:
  std::vector<PassPtr> eval_;
};

PassRegistry TestRegistry(int* runs) {
  PassRegistry r;
  RegisterAllPasses(r);
  r.Register(PassDef{.name = "A",
                     .arguments = {{"level", ir::AttrKind::kInt, int64_t{1}, ""},
                                   {"scale", ir::AttrKind::kFloat, 1.0, ""},
                                   {"mode", ir::AttrKind::kString, std::string("x"), ""}},
                     .create = [runs](PassArguments a, std::vector<PassPtr>) -> PassPtr {
                       return std::make_shared<MarkPass>("A", std::vector<std::string>{}, runs, a);
                     }});
  r.Register(PassDef{.name = "NeedsA",
                     .create = [runs](PassArguments a, std::vector<PassPtr>) -> PassPtr {
                       return std::make_shared<MarkPass>("NeedsA", std::vector<std::string>{"A"}, runs, a);
                     }});
  r.Register(PassDef{.name = "MockTuning",
                     .arguments = {{"choices", ir::AttrKind::kInt, int64_t{2}, ""}},
                     .is_tuning = true,
                     .takes_eval_passes = true,
                     .create = [](PassArguments a, std::vector<PassPtr> eval) -> PassPtr {
                       return std::make_shared<MockTuning>(std::move(a), std::move(eval));
                     }});
  return r;
}

TEST(PipelineText, RoundTripsCanonicalText) {
  int runs = 0;
  PassRegistry r = TestRegistry(&runs);
  for (std::string text : {
           "A",
           "InferType, FoldConstant, DeadCodeElimination, Legalize",
           "A(level=3, scale=0.5, mode=\"fast\"), NeedsA",
           "MockTuning(choices=3, eval=[MockTuning(eval=[A(level=2)]), NeedsA])",
           "A, MockTuning(eval=[A]), FoldConstant(max_bytes=1024)",
       }) {
    EXPECT_EQ(PrintPipeline(*ParsePipeline(text, r)), text);
  }
  // Whitespace is free; true/false are 1/0; ints are accepted for floats.
  EXPECT_EQ(PrintPipeline(*ParsePipeline(" A( level = 2 ,scale=2 ) ,NeedsA ", r)),
            "A(level=2, scale=2.0), NeedsA");
  std::string tree = PrintPipelineTree(*ParsePipeline("MockTuning(eval=[A, NeedsA])", r));
  EXPECT_NE(tree.find("MockTuning  [tuning]\n  eval:\n    A\n    NeedsA\n"), std::string::npos) << tree;
}

TEST(PipelineText, ErrorsNameWhatIsWrong) {
  int runs = 0;
  PassRegistry r = TestRegistry(&runs);
  auto error_of = [&](const std::string& text) {
    try {
      ParsePipeline(text, r);
    } catch (const ir::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("InferTyp").find("did you mean InferType"), std::string::npos);
  EXPECT_NE(error_of("A(levl=2)").find("has no argument 'levl'"), std::string::npos);
  EXPECT_NE(error_of("A(level=\"x\")").find("must be int"), std::string::npos);
  EXPECT_NE(error_of("A(eval=[NeedsA])").find("takes no eval passes"), std::string::npos);
  EXPECT_NE(error_of("A(level=2").find("expected ')'"), std::string::npos);
  EXPECT_NE(error_of("A,, B").find("column 3"), std::string::npos);
  EXPECT_NE(error_of("A(level=2, level=3)").find("given twice"), std::string::npos);
  EXPECT_NE(error_of("A(mode=fast)").find("quote strings"), std::string::npos);
}

TEST(PassContext, RequiredPassMustRunEarlier) {
  int runs = 0;
  PassRegistry r = TestRegistry(&runs);
  PassContext context;
  try {
    context.RunPipeline(*ParsePipeline("NeedsA, A", r), SmallModule());
    FAIL() << "expected a dependency error";
  } catch (const ir::Error& e) {
    std::string text = e.what();
    EXPECT_NE(text.find("'NeedsA' requires pass 'A'"), std::string::npos) << text;
  }
  EXPECT_EQ(runs, 0);  // validation happens before anything runs
  EXPECT_NO_THROW(context.RunPipeline(*ParsePipeline("A, NeedsA", r), SmallModule()));
  // Eval passes see the passes before the tuning pass.
  EXPECT_NO_THROW(context.RunPipeline(*ParsePipeline("A, MockTuning(eval=[NeedsA])", r), SmallModule()));
  EXPECT_THROW(context.RunPipeline(*ParsePipeline("MockTuning(eval=[NeedsA]), A", r), SmallModule()),
               ir::Error);
}

TEST(PassContext, EveryPassInASequenceRuns) {
  // The seed's C4 example: a pass placed in a sequence runs, whatever the context says.
  int runs = 0;
  PassRegistry r = TestRegistry(&runs);
  PassContext context;
  ir::IRModule out = context.RunPipeline(*ParsePipeline("InferType, A(level=4)", r), SmallModule());
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(out.attrs().Has("ran_A"));
  // Direct invocation gives the same result as a sequence.
  ir::IRModule direct = ParsePipeline("A(level=4)", r)->Run(SmallModule(), context);
  EXPECT_TRUE(direct.attrs().Has("ran_A"));
}

TEST(PassContext, NestedPipelinesReturnValuesAndAreInstrumented) {
  int runs = 0;
  PassRegistry r = TestRegistry(&runs);
  PassContext context;
  auto timing = std::make_shared<TimingInstrument>();
  context.instruments.push_back(timing);
  ir::IRModule in = SmallModule();
  ir::IRModule out = context.RunPipeline(*ParsePipeline("MockTuning(choices=3, eval=[A])", r), in);
  EXPECT_EQ(runs, 3);
  EXPECT_FALSE(in.attrs().Has("ran_A"));  // the input is a value: untouched
  EXPECT_TRUE(out.attrs().Has("ran_A"));
  ASSERT_EQ(timing->rows().size(), 2u);
  EXPECT_EQ(timing->rows()[0].pass, "A");
  EXPECT_EQ(timing->rows()[0].depth, 1);
  EXPECT_EQ(timing->rows()[0].runs, 3);
  EXPECT_EQ(timing->rows()[1].pass, "MockTuning");
  EXPECT_NE(timing->Report().find("MockTuning"), std::string::npos);
}

// A pass that leaves a stale type behind.
class BreakTypes : public Pass {
 public:
  const PassInfo& info() const override {
    static PassInfo info{"BreakTypes", {}, false};
    return info;
  }
  ir::IRModule Run(const ir::IRModule& module, PassContext&) const override {
    ir::GraphFunction fn = module.Get("main");
    fn.nodes.back().type = F32({7});
    ir::IRModule out = module;
    out.Add(fn);
    return out;
  }
};

TEST(PassContext, VerifierNamesThePassThatBrokeTheIR) {
  PassContext context;
  context.verify_each = true;
  Sequential seq({ParsePipeline("InferType"), std::make_shared<BreakTypes>(), ParsePipeline("InferType")});
  try {
    context.RunPipeline(seq, SmallModule());
    FAIL() << "expected a verifier error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.where().pass, "BreakTypes");
    EXPECT_NE(std::string(e.what()).find("broke an IR invariant"), std::string::npos) << e.what();
  }
  context.verify_each = false;
  EXPECT_NO_THROW(context.RunPipeline(seq, SmallModule()));  // InferType repairs it
}

class Fails : public Pass {
 public:
  const PassInfo& info() const override {
    static PassInfo info{"Fails", {}, false};
    return info;
  }
  ir::IRModule Run(const ir::IRModule&, PassContext&) const override {
    throw ir::Error("something went wrong");
  }
};

TEST(PassContext, CrashReproducerHoldsInputAndPipeline) {
  PassContext context;
  std::filesystem::path dir = tandem::testing::UniqueTempPath("tandem_reproducer_test");
  std::filesystem::remove_all(dir);
  context.reproducer_dir = dir.string();
  Sequential seq({ParsePipeline("InferType"), std::make_shared<Fails>()});
  try {
    context.RunPipeline(seq, SmallModule());
    FAIL() << "expected an error";
  } catch (const ir::Error& e) {
    std::string text = e.what();
    EXPECT_EQ(e.where().pass, "Fails");
    auto at = text.find("[reproducer: ");
    ASSERT_NE(at, std::string::npos) << text;
    std::string path = text.substr(at + 13, text.find(']', at) - at - 13);
    std::ifstream in(path);
    std::stringstream content;
    content << in.rdbuf();
    EXPECT_NE(content.str().find("pipeline: Fails"), std::string::npos);
    EXPECT_NE(content.str().find("something went wrong"), std::string::npos);
    EXPECT_NE(content.str().find(ir::PrintModule(SmallModule())), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

// Hostile nesting is an error naming the limit and the column, never a stack overflow.
TEST(PipelineText, DeepNestingIsAClearError) {
  int runs = 0;
  PassRegistry r = TestRegistry(&runs);
  auto expect_error = [&](const std::string& text, int column, const std::string& message) {
    try {
      ParsePipeline(text, r);
      ADD_FAILURE() << "expected an error";
    } catch (const ir::Error& e) {
      EXPECT_EQ(e.where().line, 1);
      EXPECT_EQ(e.where().column, column) << e.what();
      EXPECT_NE(e.message().find(message), std::string::npos) << e.what();
    }
  };
  const std::string open = "A(level=";
  expect_error(open + std::string(100000, '[') + "1" + std::string(100000, ']') + ")",
               static_cast<int>(open.size()) + 2, "a list may hold integers only");
  std::string evals;
  for (int i = 0; i < 100000; ++i) evals += "MockTuning(eval=[";
  expect_error(evals + "A", 64 * 17 + 1, "eval=[...] nested deeper than 64 levels");
  std::string fine = "A";
  for (int i = 0; i < 63; ++i) fine = "MockTuning(eval=[" + fine + "])";
  EXPECT_EQ(PrintPipeline(*ParsePipeline(fine, r)), fine);
}

TEST(PipelineRegistry, DeepNestingInAFileNamesTheFileLineAndColumn) {
  std::string evals;
  for (int i = 0; i < 100000; ++i) evals += "TuneLayout(eval=[";
  pipelines::PipelineRegistry r;
  try {
    r.LoadText("[deep]\ndescription = hostile\npasses = " + evals + "InferType\n", "deep.pipelines");
    FAIL() << "expected an error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.where().file, "deep.pipelines");
    EXPECT_EQ(e.where().line, 3);
    EXPECT_EQ(e.where().column, 10 + 64 * 17) << e.what();
    EXPECT_NE(e.message().find("eval=[...] nested deeper than 64 levels"), std::string::npos)
        << e.what();
  }
  try {
    r.LoadText("[deep]\npasses = TuneKernels(trials=" + std::string(100000, '[') + "\n", "d.pipelines");
    FAIL() << "expected an error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.where().line, 2);
    EXPECT_NE(e.message().find("a list may hold integers only"), std::string::npos) << e.what();
  }
}

TEST(PipelineRegistry, BuiltinsParseAndUsersRegisterTheirOwn) {
  auto& global = pipelines::PipelineRegistry::Global();
  for (const auto& def : global.List()) {
    EXPECT_NO_THROW(global.Create(def.name, ir::Target{.kind = def.target_kind.empty() ? "llvm" : def.target_kind}))
        << def.name;
    EXPECT_FALSE(def.description.empty()) << def.name;
  }
  pipelines::PipelineRegistry r;
  r.LoadText(R"(
# two variants of one pipeline
[mine]
description = generic
passes = InferType, FoldConstant

[mine@cuda]
description = for CUDA
passes = InferType
)", "test.pipelines");
  EXPECT_EQ(r.Get("mine").text, "InferType, FoldConstant");
  EXPECT_EQ(r.Get("mine", ir::Target{.kind = "cuda"}).text, "InferType");
  EXPECT_THROW(r.Get("other"), ir::Error);
  try {
    r.LoadText("[bad]\npasses = NoSuchPass\n", "bad.pipelines");
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.where().line, 2);  // the passes line, at the pass's column
    EXPECT_EQ(e.where().column, 10);
    EXPECT_NE(std::string(e.what()).find("unknown pass 'NoSuchPass'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem::passes
