#include "frontend/onnx_file.h"

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/file_read.h"

namespace tandem::frontend {

std::string ReadFileBytes(const std::string& path, const std::string& what) {
  std::string bytes = ir::ReadRegularFile(path, what);
  if (bytes.empty()) throw ir::Error(fmt::format("{} {} is empty", what, path), {.file = path});
  return bytes;
}

}  // namespace tandem::frontend
