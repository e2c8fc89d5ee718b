// Paths in the temporary folder that no other process uses: the name with this process's id
// inserted before its extension, so that test programs run at the same time on one machine
// (two build trees, ctest -j) never share a file.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace tandem::testing {

inline std::filesystem::path UniqueTempPath(const std::string& name) {
  std::filesystem::path path(name);
  std::string unique =
      path.stem().string() + "_" + std::to_string(::getpid()) + path.extension().string();
  return std::filesystem::temp_directory_path() / unique;
}

// A UniqueTempPath that owns what is created at it: the file or folder is removed (with
// everything under it) when the object is destroyed, so tests leave nothing behind.
class ScopedTempPath {
 public:
  explicit ScopedTempPath(const std::string& name) : path_(UniqueTempPath(name)) {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ~ScopedTempPath() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScopedTempPath(const ScopedTempPath&) = delete;
  ScopedTempPath& operator=(const ScopedTempPath&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace tandem::testing
