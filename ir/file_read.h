// Reading input files named by the user.
//
// Only a regular file is opened for reading: a named pipe, directory, device or socket is an
// Error naming the path and what it is, so that a FIFO in place of a model or a tensor file can
// never block the reader.
#pragma once

#include <string>

namespace tandem::ir {

// The whole content of the regular file `path`. `what` names the file in errors ("ONNX
// model", "pipeline file"). Throws Error (with `path` as the location's file) when the file does
// not exist, is not a regular file, or cannot be read.
std::string ReadRegularFile(const std::string& path, const std::string& what);

// What `path` is when it exists but is not a regular file ("a directory", "a named pipe
// (FIFO)" ...); empty when it is a regular file or does not exist.
std::string NotRegularFileKind(const std::string& path);

}  // namespace tandem::ir
