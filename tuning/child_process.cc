#include "tuning/child_process.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

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

bool WriteAll(int fd, const std::string& data) {
  size_t written = 0;
  while (written < data.size()) {
    ssize_t n = write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<size_t>(n);
  }
  return true;
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
