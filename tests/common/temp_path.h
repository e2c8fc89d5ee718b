// A path in the temporary folder that no other process uses: the name with this process's id
// inserted before its extension, so that test programs run at the same time on one machine
// (two build trees, ctest -j) never share a file.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace tandem::testing {

inline std::filesystem::path UniqueTempPath(const std::string& name) {
  std::filesystem::path path(name);
  std::string unique =
      path.stem().string() + "_" + std::to_string(::getpid()) + path.extension().string();
  return std::filesystem::temp_directory_path() / unique;
}

}  // namespace tandem::testing
