#include "frontend/onnx_file.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "ir/error.h"

namespace tandem::frontend {

std::string ReadFileBytes(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  ir::ErrorLocation where{.file = path};
  std::error_code error;
  fs::file_status status = fs::status(path, error);
  if (error || !fs::exists(status)) {
    throw ir::Error(fmt::format("{} {} does not exist", what, path), where);
  }
  if (fs::is_directory(status)) {
    throw ir::Error(fmt::format("{} {} is a directory, not a file", what, path), where);
  }
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw ir::Error(fmt::format("cannot open {} {}", what, path), where);
  std::streamoff size = in.tellg();
  if (size < 0) throw ir::Error(fmt::format("cannot read {} {}", what, path), where);
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), size);
  if (in.gcount() != size) throw ir::Error(fmt::format("cannot read {} {}", what, path), where);
  if (bytes.empty()) throw ir::Error(fmt::format("{} {} is empty", what, path), where);
  return bytes;
}

}  // namespace tandem::frontend
