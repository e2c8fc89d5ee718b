#include "ir/file_read.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ir/error.h"

namespace tandem::ir {

namespace {

// "a directory", "a named pipe (FIFO)" ...; empty for a regular file.
std::string NotRegularKind(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Closes the descriptor on every path out of ReadRegularFile.
struct FileDescriptor {
  int fd;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string NotRegularFileKind(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return "";
  return NotRegularKind(info.st_mode);
}

std::string ReadRegularFile(const std::string& path, const std::string& what) {
  ErrorLocation where{.file = path};
  auto fail = [&](const std::string& reason) -> Error {
    return Error(fmt::format("{} {} {}", what, path, reason), where);
  };
  auto check_regular = [&](const struct stat& info) {
    std::string kind = NotRegularKind(info.st_mode);
    if (!kind.empty()) throw fail(fmt::format("is {}, not a regular file", kind));
  };
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) throw fail("does not exist");
    throw fail(fmt::format("cannot be opened: {}", std::strerror(errno)));
  }
  check_regular(info);
  // O_NONBLOCK: should the path be replaced by a FIFO after the check, opening it cannot block;
  // the fstat below then rejects it.
  FileDescriptor file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (file.fd < 0) throw fail(fmt::format("cannot be opened: {}", std::strerror(errno)));
  if (::fstat(file.fd, &info) != 0)
    throw fail(fmt::format("cannot be read: {}", std::strerror(errno)));
  check_regular(info);
  std::string bytes;
  bytes.reserve(static_cast<size_t>(info.st_size));
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(file.fd, buffer, sizeof(buffer));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw fail(fmt::format("cannot be read: {}", std::strerror(errno)));
    }
    bytes.append(buffer, static_cast<size_t>(n));
  }
  return bytes;
}

}  // namespace tandem::ir
