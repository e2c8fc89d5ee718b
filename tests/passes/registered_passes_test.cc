// Every registered pass is documented and tested: a doc line for `tandem pipelines` and the docs,
// a doc line for each argument, a source file named after it, and a test that names it. A pass
// registered without them fails here, naming what is missing.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "passes/pass_registry.h"

namespace tandem::passes {
namespace {

namespace fs = std::filesystem;

// "DeadCodeElimination" -> "dead_code_elimination" (the file-naming rule: one pass per file,
// named after it).
std::string SnakeCase(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool upper = std::isupper(static_cast<unsigned char>(c)) != 0;
    bool after_lower = i > 0 && std::islower(static_cast<unsigned char>(name[i - 1])) != 0;
    bool before_lower =
        i + 1 < name.size() && std::islower(static_cast<unsigned char>(name[i + 1]));
    bool after_upper = i > 0 && std::isupper(static_cast<unsigned char>(name[i - 1])) != 0;
    if (upper && i > 0 && (after_lower || (after_upper && before_lower))) out += '_';
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// The text of every test source under tests/.
std::string AllTestSources() {
  std::string text;
  for (const auto& entry :
       fs::recursive_directory_iterator(fs::path(TANDEM_SOURCE_DIR) / "tests")) {
    if (!entry.is_regular_file()) continue;
    std::string extension = entry.path().extension().string();
    if (extension != ".cc" && extension != ".h") continue;
    std::ifstream in(entry.path());
    std::stringstream content;
    content << in.rdbuf();
    text += content.str();
  }
  return text;
}

TEST(RegisteredPasses, SnakeCaseFollowsTheFileNames) {
  EXPECT_EQ(SnakeCase("DeadCodeElimination"), "dead_code_elimination");
  EXPECT_EQ(SnakeCase("CombineParallelConv2D"), "combine_parallel_conv2d");
  EXPECT_EQ(SnakeCase("TuneCodegenFlags"), "tune_codegen_flags");
  EXPECT_EQ(SnakeCase("InferType"), "infer_type");
}

// What is missing for each pass of `registry`: its doc line, a doc line per argument, a file
// passes/**/<snake_case name>.cc (one pass per file, named after it, so that a newcomer finds any
// pass by name), a test under tests/ that names it.
std::vector<std::string> MissingDocsFilesAndTests(const PassRegistry& registry,
                                                  const std::string& test_sources) {
  std::vector<std::string> missing;
  std::set<std::string> files;
  for (const auto& entry :
       fs::recursive_directory_iterator(fs::path(TANDEM_SOURCE_DIR) / "passes")) {
    files.insert(entry.path().filename().string());
  }
  for (const std::string& name : registry.Names()) {
    const PassDef& def = registry.Get(name);
    if (def.doc.empty()) missing.push_back(name + ": no doc line");
    for (const ir::AttrSpec& argument : def.arguments) {
      if (argument.doc.empty()) missing.push_back(name + "(" + argument.name + "=...): no doc");
    }
    if (!files.count(SnakeCase(name) + ".cc")) {
      missing.push_back(name + ": no file passes/**/" + SnakeCase(name) + ".cc");
    }
    if (test_sources.find(name) == std::string::npos) {
      missing.push_back(name + ": no test under tests/ names it");
    }
  }
  return missing;
}

TEST(RegisteredPasses, EachHasADocLineArgumentDocsAFileAndATest) {
  ASSERT_FALSE(PassRegistry::Global().Names().empty());
  std::vector<std::string> missing =
      MissingDocsFilesAndTests(PassRegistry::Global(), AllTestSources());
  EXPECT_TRUE(missing.empty()) << ::testing::PrintToString(missing);
}

TEST(RegisteredPasses, AnUndocumentedUntestedPassIsReported) {
  PassRegistry registry;
  registry.Register(
      PassDef{.name = "Zq9Undocumented",
              .doc = "",
              .arguments = {{"level", ir::AttrKind::kInt, int64_t{1}, ""}},
              .create = [](PassArguments, std::vector<PassPtr>) -> PassPtr { return nullptr; }});
  std::vector<std::string> missing = MissingDocsFilesAndTests(registry, "no pass named here");
  EXPECT_EQ(missing, (std::vector<std::string>{
                         "Zq9Undocumented: no doc line", "Zq9Undocumented(level=...): no doc",
                         "Zq9Undocumented: no file passes/**/zq9undocumented.cc",
                         "Zq9Undocumented: no test under tests/ names it"}));
}

}  // namespace
}  // namespace tandem::passes
