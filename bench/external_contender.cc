#include "bench/external_contender.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>

#include "ir/error.h"

namespace tandem::bench {

ExternalContender::ExternalContender(std::string name, const std::string& command)
    : name_(std::move(name)) {
  // One socket pair rather than two pipes: writes to it use MSG_NOSIGNAL, so an engine that
  // died is an error here and not a SIGPIPE ending this process.
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    throw ir::Error(fmt::format("external contender '{}': socketpair: {}", name_, strerror(errno)));
  }
  pid_ = fork();
  if (pid_ == 0) {
    // Only async-signal-safe calls until exec (dup2 clears close-on-exec on the copies).
    dup2(ends[1], STDIN_FILENO);
    dup2(ends[1], STDOUT_FILENO);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int error = errno;
  close(ends[1]);
  if (pid_ < 0) {
    close(ends[0]);
    throw ir::Error(fmt::format("external contender '{}': fork: {}", name_, strerror(error)));
  }
  socket_ = ends[0];
  std::string first = ReadLine();
  if (first != "ready") {
    Stop();
    throw ir::Error(fmt::format("external contender '{}' ({}) did not get ready: {}", name_,
                                command, first.empty() ? "it ended" : "it said '" + first + "'"));
  }
}

bool ExternalContender::Send(const std::string& line) {
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = send(socket_, line.data() + done, line.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

ExternalContender::~ExternalContender() {
  Stop();
}

void ExternalContender::Stop() {
  if (socket_ >= 0) {
    Send("quit\n");
    shutdown(socket_, SHUT_WR);  // end of input also ends it
    close(socket_);
    socket_ = -1;
  }
  if (pid_ > 0) {
    int status = 0;
    // A well-behaved engine ends on "quit"; one that does not within a few seconds is killed.
    for (int wait = 0; wait < 50; ++wait) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      usleep(100 * 1000);
    }
    kill(pid_, SIGKILL);
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
}

std::string ExternalContender::ReadLine() {
  // A silent engine must not hang the benchmark: each line has to come within the deadline.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kLineTimeoutSeconds);
  while (true) {
    size_t end = pending_.find('\n');
    if (end != std::string::npos) {
      std::string line = pending_.substr(0, end);
      pending_.erase(0, end + 1);
      return line;
    }
    if (socket_ < 0) return "";
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      throw ir::Error(
          fmt::format("external contender '{}' sent no line for {} s", name_, kLineTimeoutSeconds));
    }
    pollfd request{socket_, POLLIN, 0};
    int ready = poll(&request, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline check above decides
    char buffer[4096];
    ssize_t n = recv(socket_, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // the engine ended: what it sent without a newline is its last line
      std::string line = std::move(pending_);
      pending_.clear();
      return line;
    }
    pending_.append(buffer, static_cast<size_t>(n));
  }
}

std::vector<double> ExternalContender::RunBlock(int repeats) {
  if (socket_ < 0 || repeats < 1 || !Send(fmt::format("run {}\n", repeats))) {
    throw ir::Error(fmt::format("external contender '{}' is not running", name_));
  }
  std::string line = ReadLine();
  std::istringstream in(line);
  std::vector<double> times;
  for (double t; in >> t;) times.push_back(t);
  if (static_cast<int>(times.size()) != repeats || !in.eof()) {
    throw ir::Error(fmt::format("external contender '{}' answered 'run {}' with '{}'", name_,
                                repeats, line.empty() ? "nothing (it ended)" : line));
  }
  return times;
}

}  // namespace tandem::bench
