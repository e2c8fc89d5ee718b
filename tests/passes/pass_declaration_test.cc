// The one declaration of a pass (passes/pass_declaration.h): the registry entry, the typed
// options parsed from pipeline text, the checks and the generated reference all come from it;
// docs/passes.md is what the registry generates.
#include "passes/pass_declaration.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/error.h"
#include "passes/pass_docs.h"
#include "passes/pipeline_text.h"

namespace tandem::passes {
namespace {

struct DemoOptions {
  int64_t count = 3;
  bool enabled = true;
  double scale = 1.5;
  std::string mode = "fast";
  std::vector<int64_t> sizes = {1, 2};
};

PassDeclaration<DemoOptions> DemoDeclaration() {
  return {.name = "Demo",
          .summary = "A pass for the declaration tests.",
          .required = {"InferType"},
          .arguments = {{"count", &DemoOptions::count, "how many"},
                        {"enabled", &DemoOptions::enabled, "1: on"},
                        {"scale", &DemoOptions::scale, "a factor"},
                        {"mode", &DemoOptions::mode, "fast | slow"},
                        {"sizes", &DemoOptions::sizes, "a list"}},
          .check = [](const DemoOptions& o) {
            if (o.count < 0) throw ir::Error("Demo: count must not be negative");
          }};
}

// A registry with InferType and Demo, whose run stores the options it got in module attributes.
PassRegistry DemoRegistry() {
  PassRegistry registry;
  RegisterAllPasses(registry);
  RegisterFunctionPass(registry, DemoDeclaration(),
                       [](const ir::IRModule& module, PassContext&, const DemoOptions& o) {
                         ir::IRModule out = module;
                         out.attrs().Set("count", o.count);
                         out.attrs().Set("enabled", int64_t{o.enabled ? 1 : 0});
                         out.attrs().Set("scale", o.scale);
                         out.attrs().Set("mode", o.mode);
                         out.attrs().Set("sizes", o.sizes);
                         return out;
                       });
  return registry;
}

TEST(PassDeclaration, SpecsTakeKindsAndDefaultsFromTheOptionsStruct) {
  std::vector<ir::AttrSpec> specs = DemoDeclaration().Specs();
  ASSERT_EQ(specs.size(), 5u);
  EXPECT_EQ(specs[0].name, "count");
  EXPECT_EQ(specs[0].kind, ir::AttrKind::kInt);
  EXPECT_EQ(specs[0].default_value, ir::AttrValue(int64_t{3}));
  EXPECT_EQ(specs[1].kind, ir::AttrKind::kInt);  // a bool is an int 0/1
  EXPECT_EQ(specs[1].default_value, ir::AttrValue(int64_t{1}));
  EXPECT_EQ(specs[2].kind, ir::AttrKind::kFloat);
  EXPECT_EQ(specs[2].default_value, ir::AttrValue(1.5));
  EXPECT_EQ(specs[3].kind, ir::AttrKind::kString);
  EXPECT_EQ(specs[3].default_value, ir::AttrValue(std::string("fast")));
  EXPECT_EQ(specs[4].kind, ir::AttrKind::kInts);
  EXPECT_EQ(specs[4].default_value, ir::AttrValue(std::vector<int64_t>{1, 2}));
  EXPECT_EQ(specs[4].doc, "a list");
}

TEST(PassDeclaration, ParsesGivenArgumentsOverTheDefaults) {
  DemoOptions o = DemoDeclaration().Parse({{"enabled", int64_t{0}}, {"scale", int64_t{2}}});
  EXPECT_EQ(o.count, 3);
  EXPECT_FALSE(o.enabled);
  EXPECT_EQ(o.scale, 2.0);  // an integer is accepted for a float
  EXPECT_EQ(o.mode, "fast");
  EXPECT_EQ(o.sizes, (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(DemoDeclaration().Parse({{"enabled", int64_t{7}}}).enabled);  // nonzero is true
}

TEST(PassDeclaration, ParseRejectsUnknownNamesAndWrongKinds) {
  try {
    DemoDeclaration().Parse({{"bogus", int64_t{1}}});
    FAIL() << "expected an error";
  } catch (const ir::Error& e) {
    EXPECT_NE(e.message().find("pass 'Demo' has no argument 'bogus'"), std::string::npos)
        << e.message();
  }
  try {
    DemoDeclaration().Parse({{"count", std::string("many")}});
    FAIL() << "expected an error";
  } catch (const ir::Error& e) {
    EXPECT_NE(e.message().find("argument 'count' must be int but is \"many\""), std::string::npos)
        << e.message();
  }
}

TEST(PassDeclaration, RegisteredPassRunsWithTheParsedOptionsAndPrintsItsTextUnchanged) {
  PassRegistry registry = DemoRegistry();
  const PassDef& def = registry.Get("Demo");
  EXPECT_EQ(def.doc, "A pass for the declaration tests.");
  EXPECT_EQ(def.required, std::vector<std::string>{"InferType"});
  EXPECT_FALSE(def.is_tuning);
  std::string text = "InferType, Demo(mode=\"slow\", count=5, enabled=0)";
  PassPtr pipeline = ParsePipeline(text, registry);
  EXPECT_EQ(PrintPipeline(*pipeline), text);  // the arguments as given, in their order
  const Pass& demo = *pipeline->nested().at(1);
  EXPECT_EQ(demo.info().required, std::vector<std::string>{"InferType"});
  PassContext context;
  ir::IRModule out = context.RunPipeline(*pipeline, ir::IRModule());
  EXPECT_EQ(out.attrs().GetInt("count", -1), 5);
  EXPECT_EQ(out.attrs().GetInt("enabled", -1), 0);
  EXPECT_EQ(out.attrs().GetFloat("scale", -1), 1.5);
  EXPECT_EQ(out.attrs().GetString("mode", ""), "slow");
}

TEST(PassDeclaration, RegistryReportsWrongKindsUnknownArgumentsAndFailedChecks) {
  PassRegistry registry = DemoRegistry();
  auto message = [&](const std::string& text) -> std::string {
    try {
      ParsePipeline(text, registry);
    } catch (const ir::Error& e) {
      return e.message();
    }
    return "no error";
  };
  EXPECT_NE(message("Demo(count=\"x\")").find("argument 'count' must be int but is \"x\""),
            std::string::npos);
  EXPECT_NE(message("Demo(sizes=3)").find("argument 'sizes' must be int list but is 3"),
            std::string::npos);
  EXPECT_NE(message("Demo(cuont=1)")
                .find("pass 'Demo' has no argument 'cuont' (its arguments: count, enabled, "
                      "scale, mode, sizes)"),
            std::string::npos);
  EXPECT_NE(message("Demo(count=-1)").find("Demo: count must not be negative"), std::string::npos);
}

TEST(PassDeclaration, MarkdownListsEachPassWithItsArgumentTable) {
  PassRegistry registry;
  RegisterFunctionPass(registry, DemoDeclaration(),
                       [](const ir::IRModule& m, PassContext&, const DemoOptions&) { return m; });
  std::string markdown = PassRegistryMarkdown(registry);
  EXPECT_NE(markdown.find("## Demo\n\nA pass for the declaration tests.\n\nheuristic pass; "
                          "requires InferType.\n"),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("| `count` | int | `3` | how many |\n"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("| `mode` | string | `\"fast\"` | fast \\| slow |\n"), std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("| `sizes` | int list | `[1,2]` | a list |\n"), std::string::npos)
      << markdown;
  std::string text = PassRegistryText(registry);
  EXPECT_NE(text.find("Demo  [heuristic pass; requires InferType]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    count=3 (int): how many\n"), std::string::npos) << text;
}

TEST(PassDeclaration, DocsPassesMdIsWhatTheRegistryGenerates) {
  std::filesystem::path path = std::filesystem::path(TANDEM_SOURCE_DIR) / "docs" / "passes.md";
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_TRUE(content.str() == PassRegistryMarkdown(PassRegistry::Global()))
      << path.string()
      << " differs from the pass declarations; regenerate it with\n"
         "  build/tools/tandem pipelines --passes-markdown > docs/passes.md";
}

}  // namespace
}  // namespace tandem::passes
