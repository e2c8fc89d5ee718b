#include "tuning/measure/child_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <thread>

#include "backends/runtime/thread_pool.h"

namespace tandem::tuning {

void PrepareForkedChild(int fd, pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
  for (int signal_number : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS}) {
    signal(signal_number, SIG_DFL);
  }
  signal(SIGPIPE, SIG_IGN);
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  if (fd > 3) close_range(3, static_cast<unsigned>(fd - 1), 0);
  close_range(static_cast<unsigned>(fd + 1), ~0U, 0);
}

void StartThreadPoolAfterFork(int num_threads) {
  int threads =
      num_threads > 0 ? num_threads : static_cast<int>(std::thread::hardware_concurrency());
  backends::ThreadPool::ResetGlobalAfterFork();
  backends::ThreadPool::Global().SetNumThreads(
      std::clamp(threads, 1, backends::ThreadPool::kMaxThreads));
}

bool WriteAll(int fd, const std::string& data) {
  size_t written = 0;
  while (written < data.size()) {
    ssize_t n = send(fd, data.data() + written, data.size() - written, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<size_t>(n);
  }
  return true;
}

ChildClock::time_point DeadlineAfter(double seconds) {
  return ChildClock::now() + std::chrono::duration_cast<ChildClock::duration>(
                                 std::chrono::duration<double>(std::min(seconds, 365 * 86400.0)));
}

ReadOutcome ReadUntil(int fd, ChildClock::time_point deadline, std::string& received,
                      const std::function<bool(const std::string&)>& complete) {
  char chunk[65536];
  while (true) {
    if (complete && complete(received)) return ReadOutcome::kComplete;
    ChildClock::time_point now = ChildClock::now();
    if (now >= deadline) return ReadOutcome::kDeadline;
    auto wait_ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    pollfd request{fd, POLLIN, 0};
    int ready = poll(&request, 1, static_cast<int>(std::min<int64_t>(wait_ms, 1000 * 1000)));
    if (ready <= 0) continue;  // EINTR or no data yet: the deadline decides
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return ReadOutcome::kEnd;
    received.append(chunk, static_cast<size_t>(n));
  }
}

std::optional<int> WaitUntil(pid_t pid, ChildClock::time_point deadline) {
  while (true) {
    int status = 0;
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR) return 0;  // cannot happen for our own child
    if (ChildClock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void KillAndReap(pid_t pid) {
  kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

std::string DescribeCrash(int status, const std::string& process) {
  if (WIFSIGNALED(status)) {
    int signal_number = WTERMSIG(status);
    return fmt::format("crashed: signal {} ({})", signal_number, SignalName(signal_number));
  }
  if (WIFEXITED(status)) {
    return fmt::format("crashed: the {} exited with status {}", process, WEXITSTATUS(status));
  }
  return fmt::format("crashed: the {} ended with wait status {}", process, status);
}

std::string SignalName(int signal_number) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* abbreviation = sigabbrev_np(signal_number)) {
    return fmt::format("SIG{}", abbreviation);
  }
#endif
  const char* description = strsignal(signal_number);
  return description ? description : "unknown signal";
}

}  // namespace tandem::tuning
