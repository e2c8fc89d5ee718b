// ReadRegularFile: only regular files are read; a named pipe, directory or device is an Error
// naming the path and what it is. A FIFO must never block the reader: should the old behaviour
// come back, the test writer opens the pipe's other end so that the test fails instead of hanging.
#include "ir/file_read.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

#include "ir/error.h"
#include "tests/common/temp_path.h"

namespace tandem::ir {
namespace {

namespace fs = std::filesystem;

std::string ErrorOf(const std::string& path) {
  try {
    ReadRegularFile(path, "test file");
  } catch (const Error& e) {
    EXPECT_EQ(e.where().file, path);
    return e.message();
  }
  ADD_FAILURE() << path << " was read";
  return "";
}

TEST(ReadRegularFile, ReadsARegularFile) {
  fs::path path = testing::UniqueTempPath("read_regular.txt");
  std::ofstream(path) << "hello\n";
  EXPECT_EQ(ReadRegularFile(path.string(), "test file"), "hello\n");
  fs::remove(path);
}

TEST(ReadRegularFile, MissingDirectoryAndDeviceAreErrors) {
  fs::path dir = testing::UniqueTempPath("read_regular_dir");
  fs::create_directories(dir);
  EXPECT_NE(ErrorOf(dir.string()).find("is a directory, not a regular file"), std::string::npos);
  EXPECT_NE(ErrorOf((dir / "absent").string()).find("does not exist"), std::string::npos);
  EXPECT_NE(ErrorOf("/dev/zero").find("test file /dev/zero is a character device"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(ReadRegularFile, NamedPipeIsAnErrorNotAHang) {
  fs::path dir = testing::UniqueTempPath("read_regular_fifo");
  fs::create_directories(dir);
  std::string fifo = (dir / "input_0.pb").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto reader = std::async(std::launch::async, [&] { return ErrorOf(fifo); });
  if (reader.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "reading a named pipe blocked";
    int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // releases the blocked reader
    if (fd >= 0) ::close(fd);
  }
  std::string message = reader.get();
  EXPECT_NE(message.find(fifo + " is a named pipe (FIFO)"), std::string::npos) << message;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tandem::ir
