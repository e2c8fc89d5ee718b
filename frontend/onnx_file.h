// Reading whole binary files for the ONNX front end, with errors that say what is wrong.
#pragma once

#include <string>

namespace tandem::frontend {

// Reads the regular file at `path` into a string (ir::ReadRegularFile). `what` describes it in
// errors ("ONNX model", "tensor file"). Throws Error naming the path when the file does not
// exist, is not a regular file (a directory, a named pipe ...), cannot be read, or is empty.
std::string ReadFileBytes(const std::string& path, const std::string& what);

}  // namespace tandem::frontend
