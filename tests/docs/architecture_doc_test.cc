// The documents a newcomer reads first keep up with the tree: every source folder has its own
// paragraph in docs/architecture.md (a bold `folder/` entry), and the README stays a short guide
// (current numbers go to docs/performance.md, history to commit messages).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tandem {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every folder holding source files under the top-level source folders, as "kernels/search/".
std::vector<std::string> SourceFolders() {
  const fs::path root(TANDEM_SOURCE_DIR);
  std::vector<std::string> folders;
  for (const char* top : {"ir", "frontend", "kernels", "backends", "tuning", "passes", "pipelines",
                          "report", "tools", "bench", "fuzz", "include", "plugins", "python"}) {
    if (!fs::is_directory(root / top)) continue;
    folders.push_back(std::string(top) + "/");
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      if (!entry.is_directory()) continue;
      bool has_source = false;
      for (const auto& file : fs::directory_iterator(entry.path())) {
        std::string extension = file.path().extension().string();
        has_source = has_source || extension == ".cc" || extension == ".h";
      }
      if (has_source) folders.push_back(fs::relative(entry.path(), root).string() + "/");
    }
  }
  std::sort(folders.begin(), folders.end());
  return folders;
}

TEST(ArchitectureDoc, EverySourceFolderHasAParagraph) {
  std::string doc = ReadFile(fs::path(TANDEM_SOURCE_DIR) / "docs/architecture.md");
  ASSERT_FALSE(doc.empty()) << "docs/architecture.md is missing";
  std::vector<std::string> folders = SourceFolders();
  EXPECT_GT(folders.size(), 20u);  // the walk found the tree
  for (const std::string& folder : folders) {
    EXPECT_NE(doc.find("**`" + folder + "`**"), std::string::npos)
        << "docs/architecture.md has no paragraph starting **`" << folder << "`**";
  }
}

TEST(ArchitectureDoc, ReadmeStaysAShortGuide) {
  std::ifstream readme(fs::path(TANDEM_SOURCE_DIR) / "README.md");
  ASSERT_TRUE(readme) << "README.md is missing";
  size_t lines = 0;
  for (std::string line; std::getline(readme, line);) ++lines;
  EXPECT_LE(lines, 250u) << "README.md is a guide for a newcomer; tables of results belong in "
                            "docs/performance.md and design in docs/";
}

}  // namespace
}  // namespace tandem
